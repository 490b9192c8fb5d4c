-- start_from and start_offset (README "Backfill and start_from"): which declarations backfill,
-- the values taken (normalized to UTC) and refused, each with its SQLSTATE. No broker: the
-- catalog rows are what is asserted (the scenarios test/faults/backfill*.sh and start_from.sh
-- run the workers).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'Europe/Berlin';

-- start_offset: a timestamp is kept in UTC; anything else is refused
SELECT stoatflow.create_source('bf_src', 'bf_topic', '127.0.0.1:9', key => 'k', event_time => 'ts',
    start_offset => 'latest');
SELECT stoatflow.create_source('bf_ts', 'bf_topic', '127.0.0.1:9', start_offset => '2026-11-01 01:00:00');
SELECT source_name, start_offset FROM stoatflow.source WHERE source_name LIKE 'bf%' ORDER BY 1;
SELECT stoatflow.create_source('bf_bad', 'bf_topic', '127.0.0.1:9', start_offset => 'yesterday at noon');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bf_bad', 'bf_topic', '127.0.0.1:9', start_offset => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bf_bad', 'bf_topic', '127.0.0.1:9', start_offset => 'earliest''; DROP TABLE stoatflow.source; --');
\echo :LAST_ERROR_SQLSTATE

-- a new source (no committed offset): its first aggregation starts with it; a start other than
-- the source's start_offset needs an aggregation that starts with the source
SELECT stoatflow.create_aggregation('bf_first', 'bf_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'bf_first', start_from => 'earliest');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('bf_first', 'bf_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'bf_first', start_from => 'latest');
SELECT stoatflow.create_aggregation('bf_with', 'bf_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'bf_with');
SELECT stoatflow.create_aggregation('bf_old', 'bf_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'bf_old', start_from => 'earliest');
SELECT stoatflow.create_aggregation('bf_badfrom', 'bf_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'bf_badfrom', start_from => 'the beginning');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('bf_badfrom', 'bf_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'bf_badfrom', start_from => '');
\echo :LAST_ERROR_SQLSTATE

-- a running source (its worker committed an offset; here written by hand): NULL and
-- 'earliest' and a timestamp backfill, 'latest' starts at the source's position
INSERT INTO stoatflow.partition_offset (source_id, topic, partition, next_offset)
SELECT source_id, 'bf_topic', 0, 100 FROM stoatflow.source WHERE source_name = 'bf_src';
SELECT stoatflow.create_aggregation('bf_null', 'bf_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'bf_null');
SELECT stoatflow.create_aggregation('bf_latest', 'bf_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'bf_latest', start_from => 'latest');
SELECT stoatflow.create_aggregation('bf_time', 'bf_src', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'bf_time', start_from => '2026-11-01 00:30:00+01');
SELECT a.aggregation_name, a.start_from AS declared, b.start_from AS backfill_from, b.hold_requested, b.held
  FROM stoatflow.aggregation a LEFT JOIN stoatflow.backfill b USING (aggregation_id)
 WHERE a.aggregation_name LIKE 'bf%' ORDER BY a.aggregation_id;
SELECT aggregation_name, status FROM stoatflow.stats WHERE aggregation_name LIKE 'bf%' ORDER BY 1;

-- a dropped aggregation takes its backfill with it
SELECT stoatflow.drop_aggregation('bf_null');
SELECT count(*) AS backfills FROM stoatflow.backfill b JOIN stoatflow.aggregation a USING (aggregation_id)
 WHERE a.source_id = (SELECT source_id FROM stoatflow.source WHERE source_name = 'bf_src');

SET client_min_messages = warning;
SELECT stoatflow.drop_source('bf_src', "cascade" => true);
SELECT stoatflow.drop_source('bf_ts');
RESET client_min_messages;
SELECT count(*) AS left_over FROM stoatflow.backfill;
