-- A backfill's join (README "Backfill and start_from") that meets a change of its aggregation:
-- alter_aggregation commits after the backfill worker saw its source hold and before its join
-- commit, which therefore writes nothing (the aggregations changed). The worker must not take
-- that for a join: it starts over from its last commit, in the same process, and joins then.
-- (Before, it logged that it had joined and left; the launcher started a second worker.) The
-- moment is made by stopping the workers (SIGSTOP, from the server: COPY TO PROGRAM) while the
-- hand-over waits; where a stopped worker was decides whether its join or its next commit sees
-- the change first, so three backfills in turn.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
\getenv brokers KAFKA_BROKERS

SELECT stoatflow.create_source('bjr', 'e2e_bfrace', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('bjr_main', 'bjr', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'bjr_main');
\! printf '%s\n' '{"user":"u","ts":1000}' '{"user":"v","ts":2000}' '{"user":"u","ts":11000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_bfrace -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('bjr', '60 seconds');

CREATE TABLE bjr_seen (round integer, step text, pid integer, hold_requested boolean, held boolean);
CREATE FUNCTION bjr_signal(sig text, pid integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', format('cat >/dev/null; kill -%s %s', sig, pid));
END $$;
DO $$
DECLARE
    src_pid integer;
    bf_pid integer;
    agg text;
BEGIN
    FOR r IN 1 .. 3 LOOP
        agg := 'bjr_bf' || r;
        -- the source's worker stopped: the backfill asks it to hold and waits
        src_pid := (SELECT pid FROM pg_stat_activity WHERE backend_type = 'stoatflow source bjr');
        PERFORM bjr_signal('STOP', src_pid);
        PERFORM stoatflow.create_aggregation(agg, 'bjr', stoatflow.tumbling('10 seconds'),
            'count(*) AS n', agg, start_from => 'earliest');
        COMMIT;
        -- asked, and its records committed (stopped then, it holds no row lock the source's
        -- worker would wait for)
        FOR i IN 1 .. 600 LOOP
            EXIT WHEN EXISTS (SELECT 1 FROM stoatflow.backfill b
                                JOIN stoatflow.backfill_offset o USING (aggregation_id)
                               WHERE b.hold_requested AND o.next_offset = 3);
            PERFORM pg_sleep(0.05);
            COMMIT;
        END LOOP;
        bf_pid := (SELECT pid FROM pg_stat_activity WHERE backend_type = 'stoatflow backfill ' || agg);
        INSERT INTO bjr_seen SELECT r, 'asked', bf_pid, b.hold_requested, b.held FROM stoatflow.backfill b;
        -- the backfill worker stopped, the source's worker goes on and holds
        PERFORM bjr_signal('STOP', bf_pid);
        PERFORM bjr_signal('CONT', src_pid);
        COMMIT;
        FOR i IN 1 .. 600 LOOP
            EXIT WHEN EXISTS (SELECT 1 FROM stoatflow.backfill WHERE held);
            PERFORM pg_sleep(0.05);
            COMMIT;
        END LOOP;
        INSERT INTO bjr_seen SELECT r, 'held', bf_pid, b.hold_requested, b.held FROM stoatflow.backfill b;
        -- altered while the backfill worker is stopped (continued in a second, in case the alter
        -- waits for it); its next look sees the hold and joins
        EXECUTE format('COPY (SELECT 1) TO PROGRAM %L',
                       format('cat >/dev/null; (sleep 1; kill -CONT %s) >/dev/null 2>&1 &', bf_pid));
        PERFORM stoatflow.alter_aggregation(agg, grace => '5 seconds');
        COMMIT;
        FOR i IN 1 .. 1500 LOOP
            INSERT INTO bjr_seen SELECT r, 'joining', pid FROM pg_stat_activity
             WHERE backend_type = 'stoatflow backfill ' || agg;
            EXIT WHEN NOT EXISTS (SELECT 1 FROM stoatflow.backfill);
            PERFORM pg_sleep(0.02);
            COMMIT;
        END LOOP;
        COMMIT;
    END LOOP;
END $$;
-- whatever happened above, no worker of this test stays stopped
SELECT count(bjr_signal('CONT', pid)) >= 1 AS continued FROM pg_stat_activity
 WHERE backend_type IN ('stoatflow source bjr', 'stoatflow backfill bjr_bf1', 'stoatflow backfill bjr_bf2',
                        'stoatflow backfill bjr_bf3');
SELECT round, step, hold_requested, held FROM bjr_seen WHERE step <> 'joining' ORDER BY round, step;
SELECT count(*) AS backfills FROM stoatflow.backfill;
-- one backfill worker each, from its start to its join
SELECT s.round, count(DISTINCT s.pid) AS backfill_workers, bool_and(s.pid = a.pid) AS the_first
  FROM bjr_seen s JOIN bjr_seen a ON a.round = s.round AND a.step = 'asked'
 WHERE s.step = 'joining' GROUP BY s.round ORDER BY 1;
SELECT aggregation_name, status FROM stoatflow.stats WHERE aggregation_name LIKE 'bjr%' ORDER BY 1;
SELECT aggregation_name, grace_ms FROM stoatflow.aggregation WHERE aggregation_name LIKE 'bjr%' ORDER BY 1;

-- the joined aggregations go on in the source's worker, with every record once
\! printf '%s\n' '{"user":"u","ts":25000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_bfrace -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('bjr', '60 seconds');
SELECT extract(epoch FROM window_start) AS start_s, sum(n) AS n FROM bjr_main GROUP BY 1 ORDER BY 1;
-- each joined sink equals the source's first aggregation's (final aside: their grace differs)
SELECT r, count(*) AS differing FROM (
  (SELECT r, key, window_start, window_end, n, event_time FROM bjr_main, generate_series(1, 3) r
   EXCEPT ALL
   (SELECT 1, key, window_start, window_end, n, event_time FROM bjr_bf1
    UNION ALL SELECT 2, key, window_start, window_end, n, event_time FROM bjr_bf2
    UNION ALL SELECT 3, key, window_start, window_end, n, event_time FROM bjr_bf3))
  UNION ALL
  ((SELECT 1, key, window_start, window_end, n, event_time FROM bjr_bf1
    UNION ALL SELECT 2, key, window_start, window_end, n, event_time FROM bjr_bf2
    UNION ALL SELECT 3, key, window_start, window_end, n, event_time FROM bjr_bf3)
   EXCEPT ALL
   SELECT r, key, window_start, window_end, n, event_time FROM bjr_main, generate_series(1, 3) r)) d
 GROUP BY r ORDER BY r;
SELECT (SELECT count(*) FROM bjr_bf1) AS rows_1, (SELECT count(*) FROM bjr_bf2) AS rows_2,
       (SELECT count(*) FROM bjr_bf3) AS rows_3;

SET client_min_messages = warning;
SELECT stoatflow.drop_source('bjr', "cascade" => true);
RESET client_min_messages;
DROP TABLE bjr_main, bjr_bf1, bjr_bf2, bjr_bf3, bjr_seen;
DROP FUNCTION bjr_signal(text, integer);
