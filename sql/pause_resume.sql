-- README "Pausing a source" and "Removing a pipeline", through Kafka: a paused source commits,
-- stops consuming and shows 'paused'; records produced while it is paused are consumed once
-- after resume_source (the sink exact); wait_caught_up on a paused source returns false at
-- once with a NOTICE. Only the source's owner (or a superuser) pauses, resumes or drops it.
-- drop_source / drop_aggregation with missing_ok, and the NOTICE naming the sink that stays
-- with its rows not final. Hostile: a role that is not the owner, a source whose worker is in
-- 'error', a drop while paused.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
\getenv brokers KAFKA_BROKERS
SET timezone = 'UTC';
-- The worker's own status (stoatflow.sources shows 'paused' from the catalog at once).
CREATE FUNCTION worker_status_becomes(src text, want text, secs integer) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. secs * 10 LOOP
        IF (SELECT st.status FROM stoatflow.source_status st JOIN stoatflow.source s USING (source_id)
             WHERE s.source_name = src) = want THEN
            RETURN true;
        END IF;
        PERFORM pg_sleep(0.1);
    END LOOP;
    RETURN false;
END $$;
-- 100 records: keys k0..k4, one a second from 0 s
\! python3 -c "import json;[print(json.dumps({'u':'k%d'%(i%5),'t':i*1000})) for i in range(100)]" | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_pause -p 0 >/dev/null 2>&1
SELECT stoatflow.create_source('pz', 'e2e_pause', :'brokers', columns => 'u text, t bigint',
    key => 'u', event_time => 'to_timestamp(t / 1000.0)', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('pz_agg', 'pz', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'pz_agg');
SELECT stoatflow.wait_caught_up('pz', '60 seconds');
SELECT records_in FROM stoatflow.stats WHERE aggregation_name = 'pz_agg';

-- Pause: 'paused' at once in stoatflow.sources, then in the worker's own status once it
-- committed and stopped consuming.
SELECT stoatflow.pause_source('pz');
SELECT status, committed_offset FROM stoatflow.sources WHERE source_name = 'pz';
SELECT worker_status_becomes('pz', 'paused', 20);
-- already paused: a NOTICE, not an error
SELECT stoatflow.pause_source('pz');
-- 50 records while paused: none is consumed
\! python3 -c "import json;[print(json.dumps({'u':'k%d'%(i%5),'t':i*1000})) for i in range(100, 150)]" | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_pause -p 0 >/dev/null 2>&1
SELECT pg_sleep(1.5);
SELECT status, committed_offset FROM stoatflow.sources WHERE source_name = 'pz';
SELECT records_in FROM stoatflow.stats WHERE aggregation_name = 'pz_agg';
-- wait_caught_up on a paused source: false at once, with a NOTICE
SELECT clock_timestamp() AS t0 \gset
SELECT stoatflow.wait_caught_up('pz', '30 seconds');
SELECT clock_timestamp() - :'t0'::timestamptz < interval '5 seconds' AS at_once;

-- Not the owner: refused (42501), the hint naming who may; a superuser or the owner may.
CREATE ROLE pz_other;
GRANT EXECUTE ON FUNCTION stoatflow.pause_source(text), stoatflow.resume_source(text),
    stoatflow.drop_source(text, boolean, boolean),
    stoatflow.drop_aggregation(text, boolean, boolean) TO pz_other;
SET ROLE pz_other;
SELECT stoatflow.resume_source('pz');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.pause_source('pz');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_source('pz', "cascade" => true);
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_source('pz', "cascade" => true, missing_ok => true);
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_aggregation('pz_agg', missing_ok => true);
\echo :LAST_ERROR_SQLSTATE
-- unknown sources: an error naming them (42704)
SELECT stoatflow.pause_source('pz_nope');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.resume_source('pz_nope');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT status FROM stoatflow.sources WHERE source_name = 'pz';
-- NULL: refused (22023)
SELECT stoatflow.pause_source(NULL);
\echo :LAST_ERROR_SQLSTATE

-- Resume: the 50 records of the pause are consumed, once each; the sink is exact.
SELECT stoatflow.resume_source('pz');
SELECT stoatflow.resume_source('pz');
SELECT stoatflow.wait_caught_up('pz', '60 seconds');
SELECT status, committed_offset FROM stoatflow.sources WHERE source_name = 'pz';
SELECT records_in FROM stoatflow.stats WHERE aggregation_name = 'pz_agg';
-- per window: 10 records (2 of each key); the last window (140 s) is still open
SELECT count(*) AS windows, sum(n) AS records, min(n), max(n),
       count(*) FILTER (WHERE NOT final) AS not_final,
       max(window_start) FILTER (WHERE NOT final) AS open_window
  FROM (SELECT window_start, sum(n) AS n, bool_and(final) AS final FROM pz_agg GROUP BY 1) w;
SELECT count(*) AS sink_rows, count(*) FILTER (WHERE NOT final) AS rows_not_final FROM pz_agg;

-- Removal. missing_ok: a NOTICE instead of the error.
SELECT stoatflow.drop_aggregation('pz_nope');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_aggregation('pz_nope', missing_ok => true);
SELECT stoatflow.drop_source('pz_nope');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_source('pz_nope', missing_ok => true);
-- missing_ok does not pass over aggregations that use the source
SELECT stoatflow.drop_source('pz', missing_ok => true);
\echo :LAST_ERROR_SQLSTATE
-- A drop while paused: the NOTICE names the sink that stays and its rows not final (the
-- windows still open, that will not change any more).
SELECT stoatflow.pause_source('pz');
SELECT stoatflow.drop_aggregation('pz_agg');
-- Whether the broker removes the consumer group differs between brokers (Apache Kafka does,
-- librdkafka's mock cluster has no DeleteGroups: the NOTICE says which); either way the source
-- is dropped (test/faults/drop_group.sh checks the group on the broker).
SET client_min_messages = warning;
SELECT stoatflow.drop_source('pz');
RESET client_min_messages;
SELECT count(*) AS sources_left FROM stoatflow.source WHERE source_name = 'pz';
SELECT count(*) AS sink_rows, count(*) FILTER (WHERE NOT final) AS rows_not_final FROM pz_agg;
SELECT stoatflow.drop_source('pz', missing_ok => true);

-- A second aggregation, its sink dropped with it: nothing stays, nothing to say.
SELECT stoatflow.create_source('pz2', 'e2e_pause', '127.0.0.1:1', columns => 'u text, t bigint',
    key => 'u', event_time => 'to_timestamp(t / 1000.0)');
SELECT stoatflow.create_aggregation('pz2_a', 'pz2', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'pz2_a');
SELECT stoatflow.create_aggregation('pz2_b', 'pz2', stoatflow.tumbling('1 minute'),
    'count(*) AS n', 'pz2_b');
SELECT stoatflow.drop_aggregation('pz2_b', drop_sink => true);
SELECT to_regclass('pz2_b') IS NULL AS sink_dropped;
-- Pausing a source whose worker is in 'error' (its broker does not answer): 'paused' at once,
-- and the worker shows 'paused' after its back-off; resume brings the error back; the drop of
-- a source whose worker never reached its broker has no consumer group to remove.
SELECT worker_status_becomes('pz2', 'error', 30);
SELECT stoatflow.pause_source('pz2');
SELECT status FROM stoatflow.sources WHERE source_name = 'pz2';
SELECT worker_status_becomes('pz2', 'paused', 30);
SELECT stoatflow.wait_caught_up('pz2', '1 second');
SELECT stoatflow.resume_source('pz2');
SELECT worker_status_becomes('pz2', 'error', 30);
SELECT stoatflow.drop_source('pz2', "cascade" => true);
DROP TABLE pz_agg, pz2_a;
DROP FUNCTION worker_status_becomes(text, text, integer);
DROP OWNED BY pz_other;
DROP ROLE pz_other;
