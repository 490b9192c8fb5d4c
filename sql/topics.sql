-- Several topics per source (README "Expressions and PostgreSQL aggregates"): `topic => 'a, b'` is one source with one watermark over
-- every partition of every topic; offsets, partition status and dead letters name their topic.
-- First the declaration and its errors, then records through process_records (restored from
-- the committed state on every call), then end to end through Kafka: two topics of 2 and 3
-- partitions, the same keys in both, checked against plain SQL over the records.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
\getenv brokers KAFKA_BROKERS

-- the list: whitespace around names ignored, stored as names joined by ', '
SELECT stoatflow.create_source('two', E' web_activity ,\tpurchases\n', '127.0.0.1:9092',
    max_out_of_orderness => '0');
SELECT source_name, topic, topics FROM stoatflow.source WHERE source_name = 'two';
SELECT source_name, topic, topics, partition FROM stoatflow.sources WHERE source_name = 'two';
-- one topic: as in 0.1
SELECT stoatflow.create_source('one', 'pageviews', '127.0.0.1:9092');
SELECT source_name, topic, topics FROM stoatflow.source WHERE source_name = 'one';

-- refused lists, each with its SQLSTATE
SELECT stoatflow.create_source('bad', 'a,,b', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bad', 'a, b,', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bad', 'a, b, a', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bad', 'a, b c', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bad', 'a, ..', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bad', '', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bad', NULL, '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bad', repeat('x', 250), '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bad', (SELECT string_agg('t' || i, ',') FROM generate_series(1, 65) i), '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('max64', (SELECT string_agg('t' || i, ',') FROM generate_series(1, 64) i), '127.0.0.1:9092');
SELECT cardinality(topics) FROM stoatflow.source WHERE source_name = 'max64';
SELECT count(*) AS refused_sources FROM stoatflow.source WHERE source_name = 'bad';
SELECT stoatflow.drop_source('max64');
SELECT stoatflow.drop_source('one');

------------------------------------------------------------------------------------------
-- Records of two topics through the pipeline (process_records: "topic" names the record's
-- topic, default the first). Partition 0 of each topic is a partition of its own: offsets,
-- the watermark and dead letters keep them apart, and each call restores them from the
-- committed state (what a restarted worker does).
SELECT stoatflow.create_aggregation('two_10s', 'two', stoatflow.tumbling('10 seconds'),
    'count(*) AS n, sum(amount) AS total', 'two_10s');
CREATE FUNCTION trec(topic text, p integer, u text, ts bigint, amount integer) RETURNS jsonb
LANGUAGE sql AS $$ SELECT jsonb_build_object('topic', topic, 'partition', p, 'key', u,
    'timestamp', ts, 'value', jsonb_build_object('amount', amount)) $$;
-- web_activity/0 reaches 25 s; purchases/0 only 12 s: W (12 s) waits for purchases
SELECT processed, dead_letters, watermark FROM stoatflow.process_records('two', jsonb_build_array(
    trec('web_activity', 0, 'u1', 1000, 1), trec('purchases', 0, 'u1', 2000, 10),
    trec('web_activity', 0, 'u1', 25000, 2), trec('purchases', 0, 'u1', 12000, 20)));
SELECT po.topic, po.partition, po.next_offset FROM stoatflow.partition_offset po
  JOIN stoatflow.source s USING (source_id) WHERE s.source_name = 'two' ORDER BY 1, 2;
SELECT key, extract(epoch FROM window_start) AS ws, n, total, final FROM two_10s ORDER BY 1, 2;
-- a second call restores both topics' partitions (W = min(26 s, 30 s)) and continues each
-- topic's partition 0 at its own offset; a bad record (its dead letter names its topic), a
-- record without "topic" (the first topic), and an unknown topic
SELECT processed, dead_letters, watermark FROM stoatflow.process_records('two', jsonb_build_array(
    trec('purchases', 0, 'u1', 30000, 30), jsonb_build_object('topic', 'purchases', 'partition', 1, 'raw', 'not json'),
    jsonb_build_object('partition', 0, 'key', 'u2', 'timestamp', 26000, 'value', '{"amount": 5}'::jsonb)));
SELECT po.topic, po.partition, po.next_offset FROM stoatflow.partition_offset po
  JOIN stoatflow.source s USING (source_id) WHERE s.source_name = 'two' ORDER BY 1, 2;
SELECT topic, partition, "offset", reason FROM stoatflow.dead_letters WHERE source_name = 'two';
SELECT key, extract(epoch FROM window_start) AS ws, n, total, final FROM two_10s ORDER BY 1, 2;
SELECT * FROM stoatflow.process_records('two', jsonb_build_array(trec('orders', 0, 'u1', 1, 1)));
\echo :LAST_ERROR_SQLSTATE
SELECT source_name, topic, partition, committed_offset FROM stoatflow.sources
 WHERE source_name = 'two' ORDER BY topic, partition;
SELECT stoatflow.drop_source('two', cascade => true);
DROP TABLE two_10s;
DROP FUNCTION trec;

------------------------------------------------------------------------------------------
-- End to end through Kafka: e2e_multi_a (2 partitions) and e2e_multi_b (3 partitions), the
-- same users in both. The records are a table here; kcat produces them, and the sink is
-- checked against GROUP BY over that table.
CREATE TABLE mt_records (topic text, partition integer, seq integer, usr text, ts bigint, amount integer);
-- every partition in event-time order, so nothing is late: topic a to 100 s, topic b's
-- partitions 0 and 1 to 100 s, but partition 2 of b only to 30 s (the slow one)
INSERT INTO mt_records
SELECT t, p, i, 'u' || ((i * 7 + p) % 5), i * 1000 + p * 100 + CASE t WHEN 'e2e_multi_a' THEN 0 ELSE 50 END,
       (i * 13 + p * 3) % 17
  FROM (VALUES ('e2e_multi_a', 0), ('e2e_multi_a', 1), ('e2e_multi_b', 0), ('e2e_multi_b', 1), ('e2e_multi_b', 2)) tp(t, p),
       generate_series(0, 100) i
 WHERE NOT (t = 'e2e_multi_b' AND p = 2 AND i > 30);
CREATE FUNCTION mt_payloads(t text, p integer, from_seq integer DEFAULT 0) RETURNS SETOF text
LANGUAGE sql AS $$ SELECT jsonb_build_object('user', usr, 'ts', ts, 'amount', amount)::text
    FROM mt_records WHERE topic = t AND partition = p AND seq >= from_seq ORDER BY seq $$;
\copy (SELECT mt_payloads('e2e_multi_a', 0)) TO PROGRAM 'kcat -P -q -b "$KAFKA_BROKERS" -t e2e_multi_a -p 0 >/dev/null 2>&1'
\copy (SELECT mt_payloads('e2e_multi_a', 1)) TO PROGRAM 'kcat -P -q -b "$KAFKA_BROKERS" -t e2e_multi_a -p 1 >/dev/null 2>&1'
\copy (SELECT mt_payloads('e2e_multi_b', 0)) TO PROGRAM 'kcat -P -q -b "$KAFKA_BROKERS" -t e2e_multi_b -p 0 >/dev/null 2>&1'
\copy (SELECT mt_payloads('e2e_multi_b', 1)) TO PROGRAM 'kcat -P -q -b "$KAFKA_BROKERS" -t e2e_multi_b -p 1 >/dev/null 2>&1'
\copy (SELECT mt_payloads('e2e_multi_b', 2)) TO PROGRAM 'kcat -P -q -b "$KAFKA_BROKERS" -t e2e_multi_b -p 2 >/dev/null 2>&1'
SELECT stoatflow.create_source('mt', 'e2e_multi_a, e2e_multi_b', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('mt_10s', 'mt', stoatflow.tumbling('10 seconds'),
    'count(*) AS n, sum(amount) AS total', 'mt_10s');
SELECT stoatflow.wait_caught_up('mt', '60 seconds');
-- the oracle: windows per user over the records of both topics
CREATE VIEW mt_expected AS
SELECT usr AS key, timestamptz 'epoch' + (ts / 10000 * 10) * interval '1 second' AS window_start,
       count(*) AS n, sum(amount) AS total
  FROM mt_records GROUP BY 1, 2;
-- W = the slowest partition's newest record (b/2 at 30 s), over both topics
CREATE VIEW mt_check AS
SELECT (SELECT watermark FROM stoatflow.stats WHERE aggregation_name = 'mt_10s') AS watermark,
       (SELECT timestamptz 'epoch' + min(m) * interval '1 millisecond'
          FROM (SELECT max(ts) AS m FROM mt_records GROUP BY topic, partition) x) AS expected_watermark,
       (SELECT count(*) FROM ((SELECT key, window_start, n, total FROM mt_10s EXCEPT SELECT * FROM mt_expected)
           UNION ALL (SELECT * FROM mt_expected EXCEPT SELECT key, window_start, n, total FROM mt_10s)) d) AS differences,
       (SELECT count(*) FROM mt_10s) AS windows,
       (SELECT count(*) FILTER (WHERE final) FROM mt_10s) AS final_windows,
       -- a window is final exactly when W passed its end, with every partition of both topics
       (SELECT count(*) FROM mt_10s, stoatflow.stats s WHERE s.aggregation_name = 'mt_10s'
           AND final IS DISTINCT FROM (window_end <= s.watermark)) AS wrong_final;
SELECT * FROM mt_check;
SELECT topic, partition, committed_offset, high_watermark, lag FROM stoatflow.sources
 WHERE source_name = 'mt' ORDER BY topic, partition;
SELECT topic, count(*) AS records FROM mt_records GROUP BY 1 ORDER BY 1;

-- The worker restarts (terminated; the launcher starts it again): it resumes every partition
-- of both topics at its committed offset. Then the slow partition catches up to 100 s and a
-- bad record arrives on topic b: nothing lost or doubled, W moves on, the dead letter names
-- its topic.
CREATE TEMP TABLE mt_old AS SELECT pid FROM pg_stat_activity WHERE backend_type = 'stoatflow source mt';
SELECT count(*) AS workers, bool_and(pg_terminate_backend(pid)) AS terminated FROM mt_old;
DO $$ BEGIN
    FOR i IN 1 .. 300 LOOP
        PERFORM pg_sleep(0.1);
        EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type = 'stoatflow source mt'
                             AND pid NOT IN (SELECT pid FROM mt_old));
    END LOOP;
END $$;
SELECT count(*) AS restarted FROM pg_stat_activity WHERE backend_type = 'stoatflow source mt'
   AND pid NOT IN (SELECT pid FROM mt_old);
INSERT INTO mt_records
SELECT 'e2e_multi_b', 2, i, 'u' || ((i * 7 + 2) % 5), i * 1000 + 250, (i * 13 + 6) % 17 FROM generate_series(31, 100) i;
\copy (SELECT mt_payloads('e2e_multi_b', 2, 31)) TO PROGRAM 'kcat -P -q -b "$KAFKA_BROKERS" -t e2e_multi_b -p 2 >/dev/null 2>&1'
\! echo 'not json' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_multi_b -p 1 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('mt', '60 seconds');
SELECT * FROM mt_check;
SELECT topic, partition, committed_offset, lag FROM stoatflow.sources
 WHERE source_name = 'mt' ORDER BY topic, partition;
SELECT topic, partition, "offset", reason FROM stoatflow.dead_letters WHERE source_name = 'mt';
SELECT aggregation_name, records_in, dropped_late, dead_letters FROM stoatflow.stats WHERE source_name = 'mt';

SET client_min_messages = warning;  -- the consumer group's removal depends on the broker (README "Removing a pipeline")
SELECT stoatflow.drop_source('mt', cascade => true);
RESET client_min_messages;
DROP VIEW mt_check, mt_expected;
DROP TABLE mt_10s, mt_records;
DROP FUNCTION mt_payloads;
DO $$ BEGIN
    FOR i IN 1 .. 200 LOOP
        EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow source%');
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT count(*) AS source_workers FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow source%';
