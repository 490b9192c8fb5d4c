-- README "Roll-ups", through Kafka: an aggregation whose source is a tumbling aggregation reads
-- that aggregation's closed windows, in the commit that makes them final. 1 minute -> 1 hour and
-- the chain 1 minute -> 10 minutes -> 1 hour equal the direct 10-minute and 1-hour aggregations
-- row for row (EXCEPT both ways empty), with records out of order within grace, records late
-- beyond every grace, malformed records and a hostile key; a roll-up added to a running upstream
-- starts from its sink. Refused: a session upstream, windows
-- that are no whole number of upstream windows, avg and count, an average column, an unknown
-- column, a session roll-up, filter, start_from, an upstream still backfilling, a caller who may
-- not read the upstream; an upstream with roll-ups cannot be dropped.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
\getenv brokers KAFKA_BROKERS
SET timezone = 'UTC';
-- An aggregation's first commit (its worker runs it, after a roll-up started from its sink).
CREATE FUNCTION ru_committed(agg text, secs integer) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. secs * 10 LOOP
        IF (SELECT p.last_commit_at IS NOT NULL FROM stoatflow.aggregation_progress p
              JOIN stoatflow.aggregation a USING (aggregation_id) WHERE a.aggregation_name = agg) THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.1);
    END LOOP;
    RETURN false;
END $$;

-- 1,600 records from 10:00 (one every 7 s: 3 h 6 min), then one at 16:00 that closes them all.
-- (test/rollup/events.py, copied beside the tests by test/pg_regress.sh)
\! python3 events.py 0 1600 | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_rollup -p 0 >/dev/null 2>&1
\! echo '{"user": "end", "ts": 1796054400000, "amount": 0}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_rollup -p 0 >/dev/null 2>&1

SELECT stoatflow.create_source('ru', 'e2e_rollup', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
BEGIN;
SELECT stoatflow.create_aggregation('ru_m1', 'ru', stoatflow.tumbling('1 minute', '30 seconds'),
    'count(*), sum(amount), min(amount), max(amount), avg(amount)', 'ru_m1',
    emit => 'on_window_close');
SELECT stoatflow.create_aggregation('ru_m10', 'ru', stoatflow.tumbling('10 minutes', '30 seconds'),
    'count(*), sum(amount), min(amount), max(amount)', 'ru_m10');
SELECT stoatflow.create_aggregation('ru_h1', 'ru', stoatflow.tumbling('1 hour', '30 seconds'),
    'count(*), sum(amount), min(amount), max(amount)', 'ru_h1');
-- the roll-ups: 1 minute -> 1 hour, and the chain 1 minute -> 10 minutes -> 1 hour
SELECT stoatflow.create_aggregation('ru_h1_of_m1', 'ru_m1', stoatflow.tumbling('1 hour'),
    'sum(count) AS count, sum(sum_amount) AS sum_amount, min(min_amount) AS min_amount, '
    'max(max_amount) AS max_amount', 'ru_h1_of_m1');
SELECT stoatflow.create_aggregation('ru_m10_of_m1', 'ru_m1', stoatflow.tumbling('10 minutes'),
    'sum(count) AS count, sum(sum_amount) AS sum_amount, min(min_amount) AS min_amount, '
    'max(max_amount) AS max_amount', 'ru_m10_of_m1', emit => 'on_window_close');
SELECT stoatflow.create_aggregation('ru_h1_of_m10', 'ru_m10_of_m1', stoatflow.tumbling('1 hour'),
    'sum(count) AS count, sum(sum_amount) AS sum_amount, min(min_amount) AS min_amount, '
    'max(max_amount) AS max_amount', 'ru_h1_of_m10');
COMMIT;
SELECT stoatflow.wait_caught_up('ru', '60 seconds');

-- The direct aggregations: 3 full hours and one started (10:00 .. 13:06), 4 keys and the hostile
-- one; late records dropped by the minute and the hour alike; the malformed ones dead letters.
SELECT count(*) AS final_hours, count(DISTINCT key) AS keys, sum(count) AS records
  FROM ru_h1 WHERE final AND key <> 'end';
SELECT aggregation_name, records_in, dropped_late_window FROM stoatflow.stats
 WHERE source_name = 'ru' ORDER BY aggregation_name;
SELECT count(*) AS dead_letters FROM stoatflow.dead_letters WHERE source_name = 'ru';
SELECT DISTINCT key FROM ru_h1_of_m10 WHERE key NOT IN ('k0', 'k1', 'k2', 'k3') ORDER BY 1;

-- 1 minute -> 1 hour equals the direct hour, row for row (both ways empty).
CREATE VIEW ru_direct_h AS SELECT key, window_start, window_end, count, sum_amount, min_amount,
    max_amount FROM ru_h1 WHERE final;
SELECT count(*) FROM ru_direct_h;
SELECT * FROM ru_direct_h EXCEPT SELECT key, window_start, window_end, count, sum_amount,
    min_amount, max_amount FROM ru_h1_of_m1 WHERE final;
SELECT key, window_start, window_end, count, sum_amount, min_amount, max_amount
  FROM ru_h1_of_m1 WHERE final EXCEPT SELECT * FROM ru_direct_h;
-- the chain of three equals it too, and its middle the direct 10 minutes
SELECT * FROM ru_direct_h EXCEPT SELECT key, window_start, window_end, count, sum_amount,
    min_amount, max_amount FROM ru_h1_of_m10 WHERE final;
SELECT key, window_start, window_end, count, sum_amount, min_amount, max_amount
  FROM ru_h1_of_m10 WHERE final EXCEPT SELECT * FROM ru_direct_h;
SELECT count(*) FROM ru_m10 WHERE final;
(SELECT key, window_start, window_end, count, sum_amount, min_amount, max_amount FROM ru_m10
  WHERE final EXCEPT SELECT key, window_start, window_end, count, sum_amount, min_amount,
  max_amount FROM ru_m10_of_m1)
UNION ALL
(SELECT key, window_start, window_end, count, sum_amount, min_amount, max_amount FROM ru_m10_of_m1
  EXCEPT SELECT key, window_start, window_end, count, sum_amount, min_amount, max_amount FROM ru_m10
  WHERE final);
-- A roll-up writes a window once it is final: on_window_close leaves no open row, and the
-- roll-up's hour 16:00 (fed nothing yet: the upstream's 16:00 minute is still open) is absent.
SELECT count(*) FILTER (WHERE NOT final) AS open_rows FROM ru_m10_of_m1;
SELECT count(*) FROM ru_h1_of_m1 WHERE key = 'end';
-- the sink's types: sums of counts are numeric, min and max double precision
SELECT column_name, data_type FROM information_schema.columns
 WHERE table_name = 'ru_h1_of_m1' ORDER BY ordinal_position;

-- A roll-up added to a running upstream starts from the upstream's sink: the final minutes of
-- the hour still open when it was created, then the minutes closing after. 16:01 .. 16:40 first,
-- the roll-up, then 16:40 .. 16:59 and a record at 19:00 that closes the hour.
\! python3 -c "import json;[print(json.dumps({'user':'k%d'%(i%4),'ts':1796054460000+i*12000,'amount':i})) for i in range(200)]" | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_rollup -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('ru', '60 seconds');
SELECT stoatflow.create_aggregation('ru_h1_later', 'ru_m1', stoatflow.tumbling('1 hour'),
    'sum(count) AS count, sum(sum_amount) AS sum_amount, min(min_amount) AS min_amount, '
    'max(max_amount) AS max_amount', 'ru_h1_later');
SELECT ru_committed('ru_h1_later', 30);
\! python3 -c "import json;[print(json.dumps({'user':'k%d'%(i%4),'ts':1796054460000+i*12000,'amount':i})) for i in range(200, 290)]" | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_rollup -p 0 >/dev/null 2>&1
\! echo '{"user": "end", "ts": 1796065200000, "amount": 0}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_rollup -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('ru', '60 seconds');
-- the hour 16:00 equals the direct one; nothing of the hours closed before it existed
SELECT key, window_start, count, sum_amount, min_amount, max_amount, final FROM ru_h1_later
 ORDER BY 1, 2;
SELECT key, window_start, window_end, count, sum_amount, min_amount, max_amount FROM ru_h1
 WHERE final AND window_start >= '2026-11-30 16:00+00'
EXCEPT SELECT key, window_start, window_end, count, sum_amount, min_amount, max_amount
  FROM ru_h1_later WHERE final;
SELECT key, window_start, window_end, count, sum_amount, min_amount, max_amount
  FROM ru_h1_later WHERE final
EXCEPT SELECT key, window_start, window_end, count, sum_amount, min_amount, max_amount FROM ru_h1
 WHERE final;
-- Hostile: the upstream's sink changed by hand (a final row of its own, with a NULL count, a sum
-- beyond bigint, NaN and Infinity) is read as it is, and nothing breaks.
INSERT INTO ru_m1 (key, window_start, window_end, count, sum_amount, min_amount, max_amount,
                   event_time, final)
VALUES ('evil', '2026-11-30 18:00+00', '2026-11-30 18:01+00', NULL, 1e30, 'NaN', 'Infinity',
        '2026-11-30 18:00+00', true);
SELECT stoatflow.create_aggregation('ru_h1_evil', 'ru_m1', stoatflow.tumbling('1 hour'),
    'sum(count) AS count, sum(sum_amount) AS sum_amount, min(min_amount) AS min_amount, '
    'max(max_amount) AS max_amount', 'ru_h1_evil');
SELECT ru_committed('ru_h1_evil', 30);
\! echo '{"user": "end", "ts": 1796072400000, "amount": 0}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_rollup -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('ru', '60 seconds');
SELECT key, window_start, count, sum_amount, min_amount, max_amount, final FROM ru_h1_evil
 ORDER BY 1, 2;
SELECT status FROM stoatflow.stats WHERE aggregation_name = 'ru_h1_evil';

-- Refusals, each naming why.
SELECT stoatflow.create_aggregation('ru_sess', 'ru', stoatflow.session('5 minutes'),
    'count(*)', 'ru_sess');
SELECT stoatflow.create_aggregation('ru_bad', 'ru_sess', stoatflow.tumbling('1 hour'),
    'sum(count)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m10', stoatflow.tumbling('15 minutes'),
    'sum(count)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m10', stoatflow.hopping('1 hour', '5 minutes'),
    'sum(count)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m1', stoatflow.tumbling('1 hour'),
    'avg(sum_amount)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m1', stoatflow.tumbling('1 hour'),
    'max(avg_amount)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m1', stoatflow.tumbling('1 hour'),
    'count(*)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m1', stoatflow.tumbling('1 hour'),
    'sum(amount)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m1', stoatflow.session('1 hour'),
    'sum(count)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m1', stoatflow.tumbling('1 hour'),
    'sum(count)', 'ru_bad', filter => 'count > 1');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m1', stoatflow.tumbling('1 hour'),
    'sum(count)', 'ru_bad', start_from => 'earliest');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('ru_bad', 'no_such_thing', stoatflow.tumbling('1 hour'),
    'sum(count)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
-- an upstream still backfilling (added to the running source in this transaction)
BEGIN;
SELECT stoatflow.create_aggregation('ru_late', 'ru', stoatflow.tumbling('1 minute'), 'count(*)',
    'ru_late');
SELECT stoatflow.create_aggregation('ru_bad', 'ru_late', stoatflow.tumbling('1 hour'),
    'sum(count)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- a role that may neither read the upstream's sink nor is its owner
CREATE ROLE ru_other;
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow."window", text, text,
    text, interval, text, text, text) TO ru_other;
SET ROLE ru_other;
\set VERBOSITY terse
SELECT stoatflow.create_aggregation('ru_bad', 'ru_m1', stoatflow.tumbling('1 hour'),
    'sum(count)', 'ru_bad');
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- an upstream run by PostgreSQL's executor (an expression): its states are no built-in cells
SELECT stoatflow.create_source('ru_cols', 'e2e_rollup', :'brokers',
    columns => 'user text, ts bigint, amount integer', key => 'user',
    event_time => 'to_timestamp(ts / 1000.0)');
SELECT stoatflow.create_aggregation('ru_x', 'ru_cols', stoatflow.tumbling('1 minute'),
    'sum(amount * 2) AS twice', 'ru_x');
SELECT stoatflow.create_aggregation('ru_bad', 'ru_x', stoatflow.tumbling('1 hour'),
    'sum(twice)', 'ru_bad');
\echo :LAST_ERROR_SQLSTATE
SET client_min_messages = warning;
SELECT stoatflow.drop_source('ru_cols', "cascade" => true);
RESET client_min_messages;
DROP TABLE ru_x;
-- the grace of an upstream may be raised, not lowered (its roll-ups' watermark would pass
-- windows not yet delivered to them)
SELECT stoatflow.alter_aggregation('ru_m1', grace => '10 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT grace_ms FROM stoatflow.aggregation WHERE aggregation_name = 'ru_m1';
-- nothing of the refused ones was created
SELECT count(*) FROM stoatflow.aggregation WHERE aggregation_name = 'ru_bad';
SELECT to_regclass('ru_bad');

-- An upstream with roll-ups is not dropped (the roll-ups named); without them it is.
SELECT stoatflow.drop_aggregation('ru_m10_of_m1');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_aggregation('ru_h1_of_m10');
SELECT stoatflow.drop_aggregation('ru_m10_of_m1');
SELECT aggregation_name FROM stoatflow.aggregation a JOIN stoatflow.source s USING (source_id)
 WHERE s.source_name = 'ru' ORDER BY 1;
-- drop_source with cascade takes the rest, roll-ups and upstreams in one transaction
SET client_min_messages = warning;
SELECT stoatflow.drop_source('ru', "cascade" => true);
RESET client_min_messages;
SELECT count(*) FROM stoatflow.aggregation WHERE aggregation_name LIKE 'ru\_%';
DROP VIEW ru_direct_h;
DROP FUNCTION ru_committed(text, integer);
DROP TABLE ru_m1, ru_m10, ru_h1, ru_h1_of_m1, ru_m10_of_m1, ru_h1_of_m10, ru_sess, ru_h1_later, ru_h1_evil;
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow."window", text, text,
    text, interval, text, text, text) FROM ru_other;
DROP ROLE ru_other;
