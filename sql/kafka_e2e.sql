-- End to end through Kafka: records produced with kcat into the test broker (mock or Apache Kafka), consumed by
-- the source's background worker, windowed, committed; wait_caught_up() makes it
-- deterministic. One source feeds four aggregations (one per window kind, both emit
-- strategies); then late and malformed records; then an idle partition.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
\getenv brokers KAFKA_BROKERS

-- The records exist before the source starts: both partitions hold data, so the watermark
-- waits for both (each partition is in event-time order; the watermark is their minimum).
\! printf '%s\n' '{"user":"u1","ts":"2026-11-30T10:01:00Z","amount":1}' '{"user":"u1","ts":"2026-11-30T10:02:30Z","amount":2}' '{"user":"u1","ts":"2026-11-30T10:04:00Z","amount":3}' '{"user":"u1","ts":"2026-11-30T10:06:00Z","amount":4}' '{"user":"u1","ts":"2026-11-30T10:30:00Z","amount":5}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_pageviews -p 0 >/dev/null 2>&1
\! printf '%s\n' '{"user":"u2","ts":"2026-11-30T10:00:30Z","amount":10}' '{"user":"u2","ts":"2026-11-30T10:03:00Z","amount":20}' '{"user":"u2","ts":"2026-11-30T10:08:00Z","amount":30}' '{"user":"u2","ts":"2026-11-30T10:31:00Z","amount":40}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_pageviews -p 1 >/dev/null 2>&1

SELECT stoatflow.create_source('pv', 'e2e_pageviews', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '10 seconds');
-- one transaction: the worker sees all four aggregations at once (each from the first record)
BEGIN;
SELECT stoatflow.create_aggregation('pv_tumbling', 'pv', stoatflow.tumbling('5 minutes'),
    'count(*) AS views, sum(amount) AS revenue', 'e2e_tumbling');
SELECT stoatflow.create_aggregation('pv_hopping', 'pv', stoatflow.hopping('10 minutes', '5 minutes'),
    'count(*) AS views', 'e2e_hopping', emit => 'on_window_close');
SELECT stoatflow.create_aggregation('pv_sliding', 'pv', stoatflow.sliding('5 minutes'),
    'count(*) AS views', 'e2e_sliding');
SELECT stoatflow.create_aggregation('pv_session', 'pv', stoatflow.session('5 minutes'),
    'count(*) AS views, sum(amount) AS revenue', 'e2e_session', emit => 'on_window_close');
COMMIT;
SELECT stoatflow.wait_caught_up('pv', '60 seconds');

-- W = 10:31:00 (partition 1) … but partition 0 ends at 10:30:00: W = 10:30:00 − 10 s
SELECT watermark FROM stoatflow.stats WHERE aggregation_name = 'pv_tumbling';
SELECT key, window_start, window_end, views, revenue, event_time, final FROM e2e_tumbling ORDER BY 1, 2;
-- freshness: wall time from a window's close point to its emission, measured per commit
SELECT aggregation_name, freshness_lag BETWEEN '0' AND '30 seconds' AS fresh, last_commit_at IS NOT NULL AS committed
  FROM stoatflow.stats WHERE source_name = 'pv' ORDER BY 1;
-- on_window_close: only closed windows, all final
SELECT key, window_start, window_end, views, final FROM e2e_hopping ORDER BY 1, 2;
SELECT key, window_start, window_end, views, final FROM e2e_sliding ORDER BY 1, 2;
SELECT key, window_start, window_end, views, revenue, event_time, final FROM e2e_session ORDER BY 1, 2;

-- A late record (10:01:30 after W passed 10:05), a malformed one and one without time
\! printf '%s\n' '{"user":"u1","ts":"2026-11-30T10:01:30Z","amount":100}' 'this is not json' '{"user":"u1","amount":7}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_pageviews -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('pv', '60 seconds');
SELECT aggregation_name, records_in, dropped_late_window, dropped_late_session, dead_letters
  FROM stoatflow.stats WHERE source_name = 'pv' ORDER BY 1;
SELECT partition, "offset", reason, payload FROM stoatflow.dead_letters WHERE source_name = 'pv' ORDER BY 1, 2;
-- the late record changed nothing
SELECT key, window_start, views, revenue, final FROM e2e_tumbling WHERE key = 'u1' ORDER BY 2;
-- the source and its partitions, as the worker reports them
SELECT source_name, status, partition, committed_offset, high_watermark, lag FROM stoatflow.sources
 WHERE source_name = 'pv' ORDER BY partition;
SELECT backend_type FROM pg_stat_activity WHERE backend_type IN ('stoatflow launcher', 'stoatflow source pv') ORDER BY 1;

-- An idle partition holds the watermark back; idle_timeout releases it.
-- Partition 0 runs to 100 s, partition 1 stops at 5 s.
\! for t in 0 10000 20000 30000 40000 50000 60000 70000 80000 90000 100000; do echo "{\"user\":\"a\",\"ts\":$t}"; done | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_idle -p 0 >/dev/null 2>&1
\! printf '%s\n' '{"user":"b","ts":0}' '{"user":"b","ts":5000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_idle -p 1 >/dev/null 2>&1
SELECT stoatflow.create_source('idle_hold', 'e2e_idle', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
SELECT stoatflow.create_source('idle_release', 'e2e_idle', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0', idle_timeout => '1 second');
SELECT stoatflow.create_aggregation('idle_hold_10s', 'idle_hold', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'idle_hold_10s');
SELECT stoatflow.create_aggregation('idle_release_10s', 'idle_release', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'idle_release_10s');
SELECT stoatflow.wait_caught_up('idle_hold', '60 seconds'), stoatflow.wait_caught_up('idle_release', '60 seconds');
-- partition 1 is silent: after idle_timeout (1 s) it no longer holds idle_release back
-- (polled, at most 20 s; idle_hold has no timeout and stays)
DO $$ BEGIN
    FOR i IN 1 .. 200 LOOP
        EXIT WHEN (SELECT bool_and(idle) FROM stoatflow.sources WHERE source_name = 'idle_release')
              AND (SELECT watermark FROM stoatflow.stats WHERE aggregation_name = 'idle_release_10s')
                  = timestamptz 'epoch' + interval '100 seconds';
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT pg_sleep(0.5);
SELECT aggregation_name, extract(epoch FROM watermark) AS watermark_s FROM stoatflow.stats
 WHERE aggregation_name LIKE 'idle%' ORDER BY 1;
SELECT count(*) FILTER (WHERE final) AS final_windows, count(*) AS windows FROM idle_hold_10s;
SELECT count(*) FILTER (WHERE final) AS final_windows, count(*) AS windows FROM idle_release_10s;
SELECT partition, idle FROM stoatflow.sources WHERE source_name = 'idle_release' ORDER BY 1;

-- A sink dropped under a running aggregation stalls only that aggregation (README "Security"): the source
-- keeps consuming, a sibling stays fresh, stats shows the error; once the sink is created again
-- (same name, same shape) the aggregation writes every window it owes and converges exactly.
SELECT stoatflow.create_source('sinkgone', 'e2e_faults', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
-- both in one transaction: they start together (an aggregation added to a running source starts
-- at the source's position, README Limits)
BEGIN;
SELECT stoatflow.create_aggregation('sinkgone_a', 'sinkgone', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'sinkgone_a');
SELECT stoatflow.create_aggregation('sinkgone_sibling', 'sinkgone', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'sinkgone_sibling');
COMMIT;
\! echo '{"user":"a","ts":1000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_faults -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('sinkgone', '60 seconds');
SELECT key, n FROM sinkgone_a;
DROP TABLE sinkgone_a;
\! printf '%s\n' '{"user":"a","ts":2000}' '{"user":"a","ts":12000}' '{"user":"b","ts":13000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_faults -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('sinkgone', '60 seconds') AS source_keeps_going;
DO $$ BEGIN
    FOR i IN 1 .. 200 LOOP
        EXIT WHEN (SELECT last_error FROM stoatflow.stats WHERE aggregation_name = 'sinkgone_a') IS NOT NULL;
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT aggregation_name, status, last_error, sink_owed FROM stoatflow.stats
 WHERE source_name = 'sinkgone' ORDER BY 1;
SELECT DISTINCT status, last_error FROM stoatflow.sources WHERE source_name = 'sinkgone';
SELECT key, n, final FROM sinkgone_sibling ORDER BY key, window_start;
-- the user re-creates the sink: the aggregation finds it by name and catches up
CREATE TABLE sinkgone_a (key text, window_start timestamptz, window_end timestamptz, n bigint,
    event_time timestamptz, final boolean, PRIMARY KEY (key, window_start));
DO $$ BEGIN
    FOR i IN 1 .. 600 LOOP
        EXIT WHEN (SELECT last_error IS NULL AND sink_owed = 0 FROM stoatflow.stats WHERE aggregation_name = 'sinkgone_a');
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT aggregation_name, status, last_error, sink_owed FROM stoatflow.stats
 WHERE source_name = 'sinkgone' ORDER BY 1;
SELECT key, n, final FROM sinkgone_a ORDER BY key, window_start;
-- the same rows as the sibling, which never failed
SELECT count(*) AS differences FROM (
    (SELECT key, window_start, n, final FROM sinkgone_a EXCEPT SELECT key, window_start, n, final FROM sinkgone_sibling)
    UNION ALL
    (SELECT key, window_start, n, final FROM sinkgone_sibling EXCEPT SELECT key, window_start, n, final FROM sinkgone_a)) d;
SET client_min_messages = warning;  -- the consumer group's removal depends on the broker (README "Removing a pipeline")
SELECT stoatflow.drop_source('sinkgone', cascade => true);
RESET client_min_messages;
DROP TABLE sinkgone_a, sinkgone_sibling;

-- wait_caught_up honours its timeout when the broker cannot be reached
SELECT stoatflow.create_source('nowhere', 'e2e_idle', '127.0.0.1:1');
SELECT stoatflow.wait_caught_up('nowhere', '1 second');
SELECT stoatflow.wait_caught_up('no_such_source');
\echo :LAST_ERROR_SQLSTATE

SET client_min_messages = warning;  -- the consumer group's removal depends on the broker (README "Removing a pipeline")
SELECT stoatflow.drop_source('pv', cascade => true);
SELECT stoatflow.drop_source('idle_hold', cascade => true);
SELECT stoatflow.drop_source('idle_release', cascade => true);
RESET client_min_messages;
SELECT stoatflow.drop_source('nowhere');
DROP TABLE e2e_tumbling, e2e_hopping, e2e_sliding, e2e_session, idle_hold_10s, idle_release_10s;
-- workers of dropped sources stop (polled: at most 20 s)
DO $$ BEGIN
    FOR i IN 1 .. 200 LOOP
        EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow source%');
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT count(*) AS source_workers FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow source%';

-- Through the real worker (README "Security"): a database-level search_path pointing at a schema with a
-- shadowing now() and =, and a sink trigger that redirects search_path. The worker connects as
-- the bootstrap superuser; it pins its own path right after connecting, runs the trigger as the
-- sink's owner in a security-restricted operation, and qualifies its SQL: nothing of mallory's
-- ever runs as a superuser.
SET client_min_messages = warning;
DROP ROLE IF EXISTS sf_e2e_mallory;
RESET client_min_messages;
CREATE ROLE sf_e2e_mallory;
CREATE SCHEMA e2e_evil AUTHORIZATION sf_e2e_mallory;
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) TO sf_e2e_mallory;
CREATE TABLE public.e2e_superuser_calls (fn text, by_role text);
GRANT INSERT ON public.e2e_superuser_calls TO PUBLIC;
SET ROLE sf_e2e_mallory;
CREATE FUNCTION e2e_evil.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        INSERT INTO public.e2e_superuser_calls VALUES ('now', current_user);
        EXECUTE 'ALTER ROLE sf_e2e_mallory SUPERUSER';
    END IF;
    RETURN pg_catalog.now();
END $$;
CREATE FUNCTION e2e_evil.texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        INSERT INTO public.e2e_superuser_calls VALUES ('=', current_user);
        EXECUTE 'ALTER ROLE sf_e2e_mallory SUPERUSER';
    END IF;
    RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
CREATE OPERATOR e2e_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = e2e_evil.texteq);
CREATE FUNCTION e2e_evil.hijack() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'e2e_evil, pg_catalog', false);
    RETURN NEW;
END $$;
RESET ROLE;
ALTER DATABASE contrib_regression SET search_path = e2e_evil, pg_catalog, public;
SELECT stoatflow.create_source('evil_src', 'e2e_faults', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
GRANT SELECT ON stoatflow_source.evil_src TO sf_e2e_mallory;  -- (may aggregate the source: README "Security")
SET ROLE sf_e2e_mallory;
SELECT stoatflow.create_aggregation('evil_agg', 'evil_src', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'e2e_evil.counts');
CREATE TRIGGER hijack BEFORE INSERT OR UPDATE ON e2e_evil.counts FOR EACH ROW EXECUTE FUNCTION e2e_evil.hijack();
RESET ROLE;
\! printf '%s\n' '{"user":"m","ts":100000}' '{"user":"m","ts":101000}' '{"user":"m","ts":125000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_faults -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('evil_src', '60 seconds');
SELECT key, n, final FROM e2e_evil.counts WHERE key = 'm' ORDER BY window_start;
SELECT rolsuper AS mallory_is_superuser FROM pg_roles WHERE rolname = 'sf_e2e_mallory';
SELECT count(*) AS calls_as_superuser FROM public.e2e_superuser_calls;
ALTER DATABASE contrib_regression RESET search_path;
SET client_min_messages = warning;  -- the consumer group's removal depends on the broker (README "Removing a pipeline")
SELECT stoatflow.drop_source('evil_src', cascade => true);
RESET client_min_messages;
DROP SCHEMA e2e_evil CASCADE;
DROP TABLE public.e2e_superuser_calls;
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) FROM sf_e2e_mallory;
DROP ROLE sf_e2e_mallory;

-- More sources than background worker slots (max_worker_processes = 8 in this instance: the
-- launcher and PostgreSQL's logical replication launcher take two): the ones without a slot
-- show waiting_for_worker with a hint, instead of nothing.
SELECT stoatflow.create_source('slot_' || i, 'e2e_idle', :'brokers') FROM generate_series(1, 8) i;
DO $$ BEGIN
    FOR i IN 1 .. 300 LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM stoatflow.sources WHERE status = 'waiting_for_worker');
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT count(*) > 0 AS some_wait, bool_and(last_error ~ 'max_worker_processes') AS with_hint
  FROM stoatflow.sources WHERE status = 'waiting_for_worker';
SELECT stoatflow.drop_source('slot_' || i) FROM generate_series(1, 8) i;
DO $$ BEGIN
    FOR i IN 1 .. 600 LOOP  -- 60 s: a slot freed by the drops may first start a worker that then finds its source gone
        EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow source%');
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT count(*) AS source_workers FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow source%';
