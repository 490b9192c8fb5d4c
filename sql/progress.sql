-- README "Progress": the progress columns of stoatflow.sources and stoatflow.stats, their types,
-- what they show before anything is consumed (NULL, or the committed lag), and how the views
-- turn a worker's entries of the progress board (stoatflow._worker_progress()) into records/s,
-- lag, lag_time, eta and the status 'catching_up' / 'paused'. No broker: the entries are written
-- by hand (_test_worker_progress; the source's worker fails before it claims any);
-- test/faults/progress.sh runs real workers.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never

-- the new columns and their types, last in each view
SELECT table_name, column_name, data_type
  FROM information_schema.columns
 WHERE table_schema = 'stoatflow' AND table_name IN ('sources', 'stats')
   AND column_name IN ('records_per_second', 'lag', 'lag_time', 'eta', 'progress_at')
 ORDER BY table_name, ordinal_position;

-- before consuming: no rate, no eta, no lag (nothing committed, nothing read)
SELECT stoatflow.create_source('pg_src', 'pg_topic', '127.0.0.1:9', key => 'k', event_time => 'ts');
SELECT stoatflow.create_aggregation('pg_agg', 'pg_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'pg_agg');
SELECT partition, lag, records_per_second, lag_time, eta, progress_at FROM stoatflow.sources
 WHERE source_name = 'pg_src';
SELECT lag, records_per_second, lag_time, eta, progress_at FROM stoatflow.stats
 WHERE aggregation_name = 'pg_agg';

-- a worker's entries: partition 0 far behind (catching up), partition 1 caught up
SELECT stoatflow._test_worker_progress(source_id, 0, 0, p, o, 4000000, r,
       (extract(epoch FROM now() - interval '1 hour') * 1000)::bigint, true)
  FROM stoatflow.source, (VALUES (0, 1000000, 20000.0), (1, 4000000, 30000.0)) v(p, o, r)
 WHERE source_name = 'pg_src';
BEGIN;
INSERT INTO stoatflow.source_status (source_id, status)
SELECT source_id, 'running' FROM stoatflow.source WHERE source_name = 'pg_src'
ON CONFLICT (source_id) DO UPDATE SET status = 'running', last_error = NULL;
-- the partitions show before the worker's first commit; eta = lag / rate
SELECT partition, status, committed_offset, high_watermark, lag, records_per_second,
       lag_time BETWEEN interval '59 minutes' AND interval '61 minutes' AS lag_time_1h, eta,
       progress_at > now() - interval '1 minute' AS fresh
  FROM stoatflow.sources WHERE source_name = 'pg_src' ORDER BY partition;
-- the aggregation: the sums over its worker's partitions
SELECT status, lag, records_per_second,
       lag_time BETWEEN interval '59 minutes' AND interval '61 minutes' AS lag_time_1h, eta
  FROM stoatflow.stats WHERE aggregation_name = 'pg_agg';
-- a committed position beside the live one: the live lag wins
INSERT INTO stoatflow.partition_offset (source_id, topic, partition, next_offset)
SELECT source_id, 'pg_topic', 0, 10 FROM stoatflow.source WHERE source_name = 'pg_src';
SELECT partition, committed_offset, lag FROM stoatflow.sources WHERE source_name = 'pg_src' ORDER BY partition;
-- paused: 0 records/s, no eta, status 'paused' in both views
UPDATE stoatflow.source SET paused = true WHERE source_name = 'pg_src';
SELECT partition, status, records_per_second, eta FROM stoatflow.sources WHERE source_name = 'pg_src' ORDER BY partition;
SELECT status, records_per_second, eta FROM stoatflow.stats WHERE aggregation_name = 'pg_agg';
ROLLBACK;
-- caught up: 'running', no eta; the entry of partition 0 is the same one, rewritten
SELECT stoatflow._test_worker_progress(source_id, 0, 0, p, 4000000, 4000000, 100.0, NULL, false)
  FROM stoatflow.source, generate_series(0, 1) p WHERE source_name = 'pg_src';
SELECT count(*) AS entries FROM stoatflow._worker_progress() w JOIN stoatflow.source s USING (source_id)
 WHERE s.source_name = 'pg_src';
SELECT partition, lag, lag_time, eta FROM stoatflow.sources WHERE source_name = 'pg_src' ORDER BY partition;
SELECT lag, records_per_second, eta FROM stoatflow.stats WHERE aggregation_name = 'pg_agg';

-- a backfilling aggregation shows its backfill worker's entries, not the source worker's
INSERT INTO stoatflow.partition_offset (source_id, topic, partition, next_offset)
SELECT source_id, 'pg_topic', 0, 100 FROM stoatflow.source WHERE source_name = 'pg_src';
SELECT stoatflow.create_aggregation('pg_bf', 'pg_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'pg_bf', start_from => 'earliest');
SELECT stoatflow._test_worker_progress(s.source_id, a.aggregation_id, 0, 0, 40, 100, 50.0, NULL, false)
  FROM stoatflow.source s JOIN stoatflow.aggregation a USING (source_id)
 WHERE s.source_name = 'pg_src' AND a.aggregation_name = 'pg_bf';
SELECT aggregation_name, status, lag, records_per_second, lag_time, eta
  FROM stoatflow.stats WHERE aggregation_name LIKE 'pg%' ORDER BY 1;
-- the backfill's entries freed (it joined): its row shows the source worker's
SELECT stoatflow._test_worker_progress(s.source_id, a.aggregation_id, 0, 0, NULL, NULL, NULL, NULL, NULL)
  FROM stoatflow.source s JOIN stoatflow.aggregation a USING (source_id)
 WHERE s.source_name = 'pg_src' AND a.aggregation_name = 'pg_bf';
SELECT aggregation_name, lag, records_per_second FROM stoatflow.stats WHERE aggregation_name LIKE 'pg%' ORDER BY 1;
-- refused: a NULL key, source 0
SELECT stoatflow._test_worker_progress(NULL, 0, 0, 0, 1, 1, 1, 1, true);
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow._test_worker_progress(0, 0, 0, 0, 1, 1, 1, 1, true);
\echo :LAST_ERROR_SQLSTATE

-- hostile: nobody but superusers writes the board; the views stay readable by everyone
CREATE ROLE progress_nobody;
SET ROLE progress_nobody;
SELECT stoatflow._test_worker_progress(1, 0, 0, 0, 0, 0, 0, 0, true);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) >= 0 AS readable FROM stoatflow.sources, stoatflow.stats;
SELECT count(*) >= 0 AS readable FROM stoatflow._worker_progress();
RESET ROLE;
DROP ROLE progress_nobody;

-- a dropped source's entries are not shown (its views' rows are gone with it)
SELECT stoatflow.drop_source('pg_src', true);
SELECT count(*) AS shown FROM stoatflow.sources WHERE source_name = 'pg_src';
