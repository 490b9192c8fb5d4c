-- drop_aggregation of a backfilling aggregation whose backfill worker is stuck in the owner's
-- code (README "Removing a pipeline"): a sink trigger that loops forever. The drop cancels the
-- backfill worker instead of waiting for it (before, it waited as long as the loop ran: the
-- statement_timeout below turns that into an error), the worker leaves within seconds, and the
-- source's own aggregation goes on.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
\getenv brokers KAFKA_BROKERS

SELECT stoatflow.create_source('bfd', 'e2e_bfdrop', :'brokers', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('bfd_main', 'bfd', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'bfd_main');
\! printf '%s\n' '{"user":"u","ts":1000}' '{"user":"v","ts":2000}' '{"user":"u","ts":11000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_bfdrop -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('bfd', '60 seconds');

-- the backfill's sink gets a trigger that marks its start (a sequence: not rolled back) and loops
CREATE SEQUENCE bfd_entered;
CREATE FUNCTION bfd_stuck() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nextval('public.bfd_entered');
    LOOP END LOOP;
END $$;
BEGIN;
SELECT stoatflow.create_aggregation('bfd_bf', 'bfd', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'bfd_bf', start_from => 'earliest');
CREATE TRIGGER bfd_stuck BEFORE INSERT OR UPDATE ON bfd_bf FOR EACH ROW EXECUTE FUNCTION bfd_stuck();
COMMIT;
SELECT aggregation_name, status FROM stoatflow.stats WHERE aggregation_name LIKE 'bfd%' ORDER BY 1;
DO $$ BEGIN
    FOR i IN 1 .. 600 LOOP
        EXIT WHEN (SELECT is_called FROM public.bfd_entered);
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT is_called AS backfill_in_the_loop FROM bfd_entered;
SELECT count(*) AS backfill_workers FROM pg_stat_activity WHERE backend_type = 'stoatflow backfill bfd_bf';

-- hostile: a role that may call drop_aggregation but does not own the aggregation interrupts
-- nothing (an interrupted worker would start over and enter the trigger again); its call waits
-- for the catalog row like any drop, then would be refused (statement_timeout ends the wait)
CREATE ROLE bfd_other;
GRANT EXECUTE ON FUNCTION stoatflow.drop_aggregation(text, boolean, boolean) TO bfd_other;
SET ROLE bfd_other;
SET statement_timeout = '2s';
SELECT stoatflow.drop_aggregation('bfd_bf');
\echo :LAST_ERROR_SQLSTATE
RESET statement_timeout;
RESET ROLE;
SELECT pg_sleep(1);
SELECT last_value AS trigger_entered FROM bfd_entered;

-- the drop returns, and the backfill worker is gone soon after
SET statement_timeout = '20s';
SET client_min_messages = warning;
SELECT stoatflow.drop_aggregation('bfd_bf', drop_sink => true);
RESET client_min_messages;
RESET statement_timeout;
DO $$ BEGIN
    FOR i IN 1 .. 100 LOOP
        EXIT WHEN NOT EXISTS (SELECT 1 FROM pg_stat_activity
                               WHERE backend_type = 'stoatflow backfill bfd_bf');
        PERFORM pg_sleep(0.1);
        PERFORM pg_stat_clear_snapshot();  -- pg_stat_activity is read once per transaction
    END LOOP;
END $$;
SELECT count(*) AS backfill_workers FROM pg_stat_activity WHERE backend_type = 'stoatflow backfill bfd_bf';
SELECT count(*) AS backfills FROM stoatflow.backfill;
SELECT to_regclass('bfd_bf') IS NULL AS sink_dropped;

-- the source's aggregation goes on
\! printf '%s\n' '{"user":"u","ts":25000}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_bfdrop -p 0 >/dev/null 2>&1
SELECT stoatflow.wait_caught_up('bfd', '60 seconds');
SELECT extract(epoch FROM window_start) AS start_s, sum(n) AS n, bool_and(final) AS final FROM bfd_main GROUP BY 1 ORDER BY 1;

SET client_min_messages = warning;
SELECT stoatflow.drop_source('bfd', "cascade" => true);
RESET client_min_messages;
DROP FUNCTION bfd_stuck();
DROP SEQUENCE bfd_entered;
REVOKE ALL ON FUNCTION stoatflow.drop_aggregation(text, boolean, boolean) FROM bfd_other;
DROP ROLE bfd_other;
