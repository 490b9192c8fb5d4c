-- A source's view stoatflow_source.<source> (README "Monitoring") mirrors its rows of
-- stoatflow.sources, the progress columns included (README "Progress"): same columns (all but
-- brokers), same values, written by hand on the progress board (_test_worker_progress; no
-- broker). The view keeps its privilege rule: a role without SELECT on it reads nothing.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never

SELECT stoatflow.create_source('svp_src', 'svp_topic', '127.0.0.1:9', key => 'k', event_time => 'ts');
SELECT stoatflow.create_aggregation('svp_agg', 'svp_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'svp_agg');

-- the columns: those of stoatflow.sources but brokers, the progress columns last
SELECT column_name, data_type FROM information_schema.columns
 WHERE table_schema = 'stoatflow_source' AND table_name = 'svp_src' ORDER BY ordinal_position;
SELECT (SELECT array_agg(column_name::text ORDER BY column_name) FROM information_schema.columns
         WHERE table_schema = 'stoatflow' AND table_name = 'sources' AND column_name <> 'brokers')
     = (SELECT array_agg(column_name::text ORDER BY column_name) FROM information_schema.columns
         WHERE table_schema = 'stoatflow_source' AND table_name = 'svp_src') AS same_columns;

-- a worker's entries: partition 0 behind, partition 1 caught up; the view shows them as
-- stoatflow.sources does
SELECT stoatflow._test_worker_progress(source_id, 0, 0, p, o, 4000000, r,
       (extract(epoch FROM now() - interval '1 hour') * 1000)::bigint, p = 0)
  FROM stoatflow.source, (VALUES (0, 1000000, 20000.0), (1, 4000000, 30000.0)) v(p, o, r)
 WHERE source_name = 'svp_src';
BEGIN;
INSERT INTO stoatflow.source_status (source_id, status)
SELECT source_id, 'running' FROM stoatflow.source WHERE source_name = 'svp_src'
ON CONFLICT (source_id) DO UPDATE SET status = 'running', last_error = NULL;
SELECT partition, status, lag, records_per_second,
       lag_time BETWEEN interval '59 minutes' AND interval '61 minutes' AS lag_time_1h, eta,
       progress_at > now() - interval '1 minute' AS fresh
  FROM stoatflow_source.svp_src ORDER BY partition;
-- row for row the same as stoatflow.sources (now() is the same within the transaction)
SELECT count(*) AS differing FROM (
  (SELECT partition, status, lag, records_per_second, lag_time, eta, progress_at FROM stoatflow_source.svp_src
   EXCEPT SELECT partition, status, lag, records_per_second, lag_time, eta, progress_at
            FROM stoatflow.sources WHERE source_name = 'svp_src')
  UNION ALL
  (SELECT partition, status, lag, records_per_second, lag_time, eta, progress_at
     FROM stoatflow.sources WHERE source_name = 'svp_src'
   EXCEPT SELECT partition, status, lag, records_per_second, lag_time, eta, progress_at FROM stoatflow_source.svp_src)) d;
-- paused: 0 records/s and no eta here too
UPDATE stoatflow.source SET paused = true WHERE source_name = 'svp_src';
SELECT partition, status, records_per_second, eta FROM stoatflow_source.svp_src ORDER BY partition;
ROLLBACK;

-- the privilege rule stays: without SELECT on the view, nothing is read; a grant opens it
CREATE ROLE svp_reader;
SET ROLE svp_reader;
SELECT count(*) FROM stoatflow_source.svp_src;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT USAGE ON SCHEMA stoatflow_source TO svp_reader;
GRANT SELECT ON stoatflow_source.svp_src TO svp_reader;
SET ROLE svp_reader;
SELECT partition, records_per_second FROM stoatflow_source.svp_src ORDER BY partition;
RESET ROLE;
SELECT relname, relacl IS NOT NULL AS has_grants,
       pg_get_userbyid(relowner) = current_user AS owned_by_creator
  FROM pg_class WHERE oid = 'stoatflow_source.svp_src'::regclass;

-- re-created in place (as the upgrade does for an existing view): owner, grants and a view built
-- on it stay
CREATE VIEW svp_on_top AS SELECT partition, eta FROM stoatflow_source.svp_src;
SELECT stoatflow._create_source_view('svp_src', current_user::regrole);
SET ROLE svp_reader;
SELECT count(*) AS rows_read FROM stoatflow_source.svp_src;
RESET ROLE;
SELECT count(*) AS on_top_rows FROM svp_on_top;
DROP VIEW svp_on_top;

SET client_min_messages = warning;
SELECT stoatflow.drop_source('svp_src', true);
RESET client_min_messages;
REVOKE USAGE ON SCHEMA stoatflow_source FROM svp_reader;
DROP ROLE svp_reader;
DROP TABLE svp_agg;
