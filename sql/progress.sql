-- README "Progress": the progress columns of stoatflow.sources and stoatflow.stats, their types,
-- what they show before anything is consumed (NULL, or the committed lag), and how the views
-- turn a worker's published row (stoatflow.worker_progress) into records/s, lag, lag_time, eta
-- and the status 'catching_up' / 'paused'. No broker: the rows are written by hand, inside a
-- transaction the (failing) worker never sees; test/faults/progress.sh runs real workers.
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

-- a worker's rows: partition 0 far behind (catching up), partition 1 caught up
BEGIN;
UPDATE stoatflow.source_status SET status = 'running', last_error = NULL
 WHERE source_id = (SELECT source_id FROM stoatflow.source WHERE source_name = 'pg_src');
INSERT INTO stoatflow.source_status (source_id, status)
SELECT source_id, 'running' FROM stoatflow.source WHERE source_name = 'pg_src'
ON CONFLICT (source_id) DO NOTHING;
INSERT INTO stoatflow.worker_progress (source_id, worker, topic, partition, next_offset, high_watermark,
                                       lag, records_per_second, newest_event_ms, behind, updated_at)
SELECT source_id, 0, 'pg_topic', p, o, 4000000, 4000000 - o, r,
       extract(epoch FROM now() - interval '1 hour')::bigint * 1000, true, now()
  FROM stoatflow.source, (VALUES (0, 1000000, 20000.0), (1, 4000000, 30000.0)) v(p, o, r)
 WHERE source_name = 'pg_src';
-- the partitions show before the worker's first commit; eta = lag / rate
SELECT partition, status, committed_offset, high_watermark, lag, records_per_second,
       lag_time BETWEEN interval '59 minutes' AND interval '61 minutes' AS lag_time_1h, eta
  FROM stoatflow.sources WHERE source_name = 'pg_src' ORDER BY partition;
-- the aggregation: the sums over its worker's partitions
SELECT status, lag, records_per_second,
       lag_time BETWEEN interval '59 minutes' AND interval '61 minutes' AS lag_time_1h, eta
  FROM stoatflow.stats WHERE aggregation_name = 'pg_agg';
-- caught up: 'running', no eta
UPDATE stoatflow.worker_progress SET behind = false, lag = 0, next_offset = 4000000
 WHERE source_id = (SELECT source_id FROM stoatflow.source WHERE source_name = 'pg_src');
SELECT partition, status, lag, eta FROM stoatflow.sources WHERE source_name = 'pg_src' ORDER BY partition;
SELECT status, lag, eta FROM stoatflow.stats WHERE aggregation_name = 'pg_agg';
-- a committed position beside the live one: the live lag wins
INSERT INTO stoatflow.partition_offset (source_id, topic, partition, next_offset)
SELECT source_id, 'pg_topic', 0, 10 FROM stoatflow.source WHERE source_name = 'pg_src';
SELECT partition, committed_offset, lag FROM stoatflow.sources WHERE source_name = 'pg_src' ORDER BY partition;
-- paused: 0 records/s, no eta, status 'paused' in both views
UPDATE stoatflow.worker_progress SET behind = true, lag = 5
 WHERE source_id = (SELECT source_id FROM stoatflow.source WHERE source_name = 'pg_src');
UPDATE stoatflow.source SET paused = true WHERE source_name = 'pg_src';
SELECT partition, status, records_per_second, eta FROM stoatflow.sources WHERE source_name = 'pg_src' ORDER BY partition;
SELECT status, records_per_second, eta FROM stoatflow.stats WHERE aggregation_name = 'pg_agg';
ROLLBACK;

-- a backfilling aggregation shows its backfill worker's rows, not the source worker's
INSERT INTO stoatflow.partition_offset (source_id, topic, partition, next_offset)
SELECT source_id, 'pg_topic', 0, 100 FROM stoatflow.source WHERE source_name = 'pg_src';
SELECT stoatflow.create_aggregation('pg_bf', 'pg_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'pg_bf', start_from => 'earliest');
BEGIN;
INSERT INTO stoatflow.worker_progress (source_id, worker, topic, partition, next_offset, high_watermark,
                                       lag, records_per_second, newest_event_ms, behind, updated_at)
SELECT s.source_id, w.worker, 'pg_topic', 0, w.o, 100, 100 - w.o, 50.0, NULL, false, now()
  FROM stoatflow.source s,
       (VALUES (0, 100), ((SELECT aggregation_id FROM stoatflow.aggregation WHERE aggregation_name = 'pg_bf'), 40)) w(worker, o)
 WHERE s.source_name = 'pg_src';
SELECT aggregation_name, status, lag, records_per_second, lag_time, eta
  FROM stoatflow.stats WHERE aggregation_name LIKE 'pg%' ORDER BY 1;
ROLLBACK;

-- hostile: the table is not anyone's to write; the views stay readable by everyone
CREATE ROLE progress_nobody;
SET ROLE progress_nobody;
INSERT INTO stoatflow.worker_progress (source_id, worker, topic, partition, next_offset, lag, behind, updated_at)
VALUES (1, 0, 't', 0, 0, 0, true, now());
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) >= 0 AS readable FROM stoatflow.sources, stoatflow.stats;
RESET ROLE;
DROP ROLE progress_nobody;

-- a dropped source takes its rows
INSERT INTO stoatflow.worker_progress (source_id, worker, topic, partition, next_offset, lag, behind, updated_at)
SELECT source_id, 0, 'pg_topic', 0, 0, 0, false, now() FROM stoatflow.source WHERE source_name = 'pg_src';
SELECT count(*) AS rows_before FROM stoatflow.worker_progress;
SELECT stoatflow.drop_source('pg_src', true);
SELECT count(*) AS rows_left FROM stoatflow.worker_progress;
