-- alter_aggregation (README "Altering an aggregation"): grace, emit and retention of running
-- aggregations changed in place through the mock broker; the worker keeps their state, never
-- reopens a closed window, and is exact while records flow. Then the refusals, a non-owner, a
-- dropped aggregation and an alter racing a drop.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
DROP ROLE IF EXISTS alt_owner;
DROP ROLE IF EXISTS alt_guest;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
\getenv brokers KAFKA_BROKERS

-- W is the newest event time (no out-of-orderness allowance, one partition).
SELECT stoatflow.create_source('alt', 'e2e_alter', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
BEGIN;
SELECT stoatflow.create_aggregation('alt_grace', 'alt', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'alt_grace');
SELECT stoatflow.create_aggregation('alt_lower', 'alt', stoatflow.tumbling('10 seconds', '20 seconds'),
    'count(*) AS n', 'alt_lower', emit => 'on_window_close');
SELECT stoatflow.create_aggregation('alt_u2c', 'alt', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'alt_u2c');
SELECT stoatflow.create_aggregation('alt_c2u', 'alt', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'alt_c2u', emit => 'on_window_close');
COMMIT;
-- W = 15 s: [0, 10 s) closed for grace 0, open for grace 20 s; [10 s, 20 s) open everywhere
\! printf '%s\n' '{"user":"u","ts":1000}' '{"user":"u","ts":2000}' '{"user":"u","ts":11000}' '{"user":"u","ts":15000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('alt', '60 seconds');
CREATE VIEW alt_sinks AS
  SELECT 'alt_grace' AS agg, window_start, n, final FROM alt_grace
  UNION ALL SELECT 'alt_lower', window_start, n, final FROM alt_lower
  UNION ALL SELECT 'alt_u2c', window_start, n, final FROM alt_u2c
  UNION ALL SELECT 'alt_c2u', window_start, n, final FROM alt_c2u;
SELECT agg, extract(epoch FROM window_start) AS start_s, n, final FROM alt_sinks ORDER BY 1, 2;

-- The changes (a grace above the retention raises a minimal retention, with a notice)
SELECT stoatflow.alter_aggregation('alt_grace', grace => '10 seconds');
SELECT stoatflow.alter_aggregation('alt_lower', grace => '0');
SELECT stoatflow.alter_aggregation('alt_u2c', emit => 'on_window_close');
SELECT stoatflow.alter_aggregation('alt_c2u', emit => 'on_window_update');
SELECT aggregation_name, grace_ms, emit, retention_ms, segment_interval_ms FROM stoatflow.aggregation
 WHERE aggregation_name LIKE 'alt\_%' ORDER BY 1;

-- One record at 4 s, W stays 15 s. alt_grace: [0, 10 s) closed before the alter and stays so
-- (the record is late although the new grace would take it); alt_lower: the lowered grace
-- closes [0, 10 s) at this commit; alt_c2u: its open window is written at this commit.
\! printf '%s\n' '{"user":"u","ts":4000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('alt', '60 seconds');
SELECT agg, extract(epoch FROM window_start) AS start_s, n, final FROM alt_sinks ORDER BY 1, 2;

-- W = 21 s, then a record at 12 s: late under the old grace 0 of alt_grace, on time under 10 s
\! printf '%s\n' '{"user":"u","ts":21000}' '{"user":"u","ts":12000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('alt', '60 seconds');
SELECT agg, extract(epoch FROM window_start) AS start_s, n, final FROM alt_sinks ORDER BY 1, 2;
SELECT aggregation_name, records_in, dropped_late_window FROM stoatflow.stats
 WHERE source_name = 'alt' ORDER BY 1;

-- Retention: within what the segments allow (segments of 60 s: at most 120001 ms), and refused
-- past it, saying why and what to do
SELECT stoatflow.alter_aggregation('alt_grace', retention => '2 minutes');
SELECT retention_ms, segment_interval_ms FROM stoatflow.aggregation WHERE aggregation_name = 'alt_grace';
-- (errors as SQLSTATE, message and hint)
CREATE FUNCTION alt_try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; hint text;
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
    RETURN st || ': ' || msg || coalesce(' HINT: ' || nullif(hint, ''), '');
END $$;
SELECT alt_try($$SELECT stoatflow.alter_aggregation('alt_grace', retention => '1 hour')$$);
-- refusals: below the minimum, bad values, unknown, NULL
SELECT alt_try($$SELECT stoatflow.alter_aggregation('alt_grace', retention => '5 seconds')$$);
SELECT alt_try($$SELECT stoatflow.alter_aggregation('alt_grace', grace => '-1 second')$$);
SELECT alt_try($$SELECT stoatflow.alter_aggregation('alt_grace', grace => '1 month')$$);
SELECT alt_try($$SELECT stoatflow.alter_aggregation('alt_grace', grace => '4000 days')$$);
SELECT alt_try($$SELECT stoatflow.alter_aggregation('alt_grace', emit => 'sometimes')$$);
SELECT alt_try($$SELECT stoatflow.alter_aggregation('no_such_aggregation', grace => '1 second')$$);
SELECT alt_try($$SELECT stoatflow.alter_aggregation(NULL, grace => '1 second')$$);
-- nothing to change: a NOTICE
SELECT stoatflow.alter_aggregation('alt_grace');
SELECT stoatflow.alter_aggregation('alt_grace', grace => '10 seconds', emit => 'on_window_update');
-- nothing of that changed the catalog
SELECT aggregation_name, grace_ms, emit, retention_ms FROM stoatflow.aggregation
 WHERE aggregation_name = 'alt_grace';

-- Not the owner: refused like drop_aggregation; the owner's role may
CREATE ROLE alt_owner;
CREATE ROLE alt_guest;
GRANT EXECUTE ON FUNCTION stoatflow.alter_aggregation(text, interval, text, interval) TO alt_guest, alt_owner;
UPDATE stoatflow.aggregation SET owner = 'alt_owner' WHERE aggregation_name = 'alt_u2c';
GRANT SELECT, INSERT, UPDATE, DELETE ON alt_u2c TO alt_owner;  -- it writes the sink as its owner
SET ROLE alt_guest;
SELECT alt_try($$SELECT stoatflow.alter_aggregation('alt_u2c', grace => '1 second')$$);
RESET ROLE;
SET ROLE alt_owner;
SELECT stoatflow.alter_aggregation('alt_u2c', grace => '1 second');
RESET ROLE;
SELECT grace_ms FROM stoatflow.aggregation WHERE aggregation_name = 'alt_u2c';

-- A dropped aggregation, and an alter racing a drop: the drop waits for the alter's commit,
-- then drops; the worker goes on with the others
SET client_min_messages = warning;  -- the drop NOTICE counts rows the worker's timing decides
SELECT stoatflow.drop_aggregation('alt_lower');
RESET client_min_messages;
SELECT alt_try($$SELECT stoatflow.alter_aggregation('alt_lower', grace => '1 second')$$);
BEGIN;
SELECT stoatflow.alter_aggregation('alt_c2u', grace => '1 second');
\! psql -X -q -d contrib_regression -c "SELECT stoatflow.drop_aggregation('alt_c2u')" > alt_drop.out 2>&1 &
DO $$ BEGIN
    FOR i IN 1 .. 200 LOOP
        EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity
                           WHERE query LIKE '%drop_aggregation(''alt_c2u'')%' AND wait_event_type = 'Lock');
        PERFORM pg_sleep(0.05);
    END LOOP;
END $$;
SELECT count(*) AS drop_waiting FROM pg_stat_activity
 WHERE query LIKE '%drop_aggregation(''alt_c2u'')%' AND wait_event_type = 'Lock';
COMMIT;
DO $$ BEGIN
    FOR i IN 1 .. 200 LOOP
        EXIT WHEN NOT EXISTS (SELECT 1 FROM stoatflow.aggregation WHERE aggregation_name = 'alt_c2u');
        PERFORM pg_sleep(0.05);
    END LOOP;
END $$;
SELECT aggregation_name FROM stoatflow.aggregation WHERE aggregation_name LIKE 'alt\_%' ORDER BY 1;
SELECT alt_try($$SELECT stoatflow.alter_aggregation('alt_c2u', grace => '2 seconds')$$);
\! printf '%s\n' '{"user":"u","ts":31000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('alt', '60 seconds');
SELECT agg, extract(epoch FROM window_start) AS start_s, n, final FROM alt_sinks
 WHERE agg IN ('alt_grace', 'alt_u2c') ORDER BY 1, 2;

-- Altered while records flow: 3,000 records in event-time order over 5 minutes of 30 keys,
-- produced in 6 batches with an alter after each (grace up, emit to close, grace down, emit back,
-- retention), never waiting for the worker. No record is late under any of these graces, so
-- the sink must equal a GROUP BY over what was produced.
CREATE TABLE alt_flow_events (k text, ts bigint);
INSERT INTO alt_flow_events SELECT 'k' || (i % 30), i * 100 FROM generate_series(0, 2999) i;
SELECT stoatflow.create_source('alt_flow', 'e2e_alter_flow', :'brokers', key => 'k', event_time => 'ts',
    max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('alt_flow_10s', 'alt_flow', stoatflow.tumbling('10 seconds', '1 second'),
    'count(*) AS n, sum(ts) AS total', 'alt_flow_10s');
\! seq 0 499 | awk '{printf "{\"k\":\"k%d\",\"ts\":%d}\n", $1 % 30, $1 * 100}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter_flow -p 0 >/dev/null 2>&1
SELECT stoatflow.alter_aggregation('alt_flow_10s', grace => '30 seconds');
\! seq 500 999 | awk '{printf "{\"k\":\"k%d\",\"ts\":%d}\n", $1 % 30, $1 * 100}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter_flow -p 0 >/dev/null 2>&1
SELECT stoatflow.alter_aggregation('alt_flow_10s', emit => 'on_window_close');
\! seq 1000 1499 | awk '{printf "{\"k\":\"k%d\",\"ts\":%d}\n", $1 % 30, $1 * 100}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter_flow -p 0 >/dev/null 2>&1
SELECT stoatflow.alter_aggregation('alt_flow_10s', grace => '0');
\! seq 1500 1999 | awk '{printf "{\"k\":\"k%d\",\"ts\":%d}\n", $1 % 30, $1 * 100}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter_flow -p 0 >/dev/null 2>&1
SELECT stoatflow.alter_aggregation('alt_flow_10s', emit => 'on_window_update');
\! seq 2000 2499 | awk '{printf "{\"k\":\"k%d\",\"ts\":%d}\n", $1 % 30, $1 * 100}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter_flow -p 0 >/dev/null 2>&1
SELECT stoatflow.alter_aggregation('alt_flow_10s', retention => '90 seconds');
\! seq 2500 2999 | awk '{printf "{\"k\":\"k%d\",\"ts\":%d}\n", $1 % 30, $1 * 100}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_alter_flow -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('alt_flow', '60 seconds');
SELECT records_in, dropped_late_window FROM stoatflow.stats WHERE aggregation_name = 'alt_flow_10s';
-- sink vs reference: rows missing or different on either side (none), and the totals
(SELECT key, window_start, n, total FROM alt_flow_10s
 EXCEPT SELECT k, to_timestamp((ts / 10000) * 10), count(*), sum(ts) FROM alt_flow_events GROUP BY 1, 2)
UNION ALL
(SELECT k, to_timestamp((ts / 10000) * 10), count(*), sum(ts) FROM alt_flow_events GROUP BY 1, 2
 EXCEPT SELECT key, window_start, n, total FROM alt_flow_10s);
SELECT count(*) AS windows, sum(n) AS records, count(*) FILTER (WHERE final) AS final_windows FROM alt_flow_10s;

-- the worker never crashed meanwhile
SELECT source_name, status FROM stoatflow.sources WHERE source_name LIKE 'alt%' GROUP BY 1, 2 ORDER BY 1;

SET client_min_messages = warning;  -- the drop NOTICEs differ by broker and timing
SELECT stoatflow.drop_source('alt_flow', "cascade" => true);
SELECT stoatflow.drop_source('alt', "cascade" => true);
RESET client_min_messages;
DROP VIEW alt_sinks;
DROP TABLE alt_grace, alt_lower, alt_u2c, alt_c2u, alt_flow_10s, alt_flow_events;
DROP FUNCTION alt_try(text);
REVOKE EXECUTE ON FUNCTION stoatflow.alter_aggregation(text, interval, text, interval) FROM alt_guest, alt_owner;
DROP ROLE alt_owner;
DROP ROLE alt_guest;
