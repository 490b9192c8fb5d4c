-- README "Time and the watermark", through Kafka: with an event_time expression the consume
-- thread only extracts records and the main thread judges them later; the end of a partition
-- seen meanwhile must not release the partition before its records were judged. Two
-- partitions of in-order records that both hold data when the source starts: none is late
-- (before, 2 of 10 runs dropped 500-800 of them as late_window).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
\getenv brokers KAFKA_BROKERS
\! python3 -c "import json;[print(json.dumps({'u':'k%d'%(i%7),'t':i*1000})) for i in range(2000)]" | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_race -p 0 >/dev/null 2>&1
\! python3 -c "import json;[print(json.dumps({'u':'k%d'%(i%7),'t':i*1000})) for i in range(2000)]" | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_race -p 1 >/dev/null 2>&1
SELECT stoatflow.create_source('race', 'e2e_race', :'brokers', columns => 'u text, t bigint',
    key => 'u', event_time => 'to_timestamp(t / 1000.0)', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('race_agg', 'race', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'race_agg');
SELECT stoatflow.wait_caught_up('race', '120 seconds');
SELECT records_in, dropped_late_window FROM stoatflow.stats WHERE aggregation_name = 'race_agg';
-- every 10 s window holds its 10 records of each partition (over the 7 keys)
SELECT count(*) AS windows, min(total), max(total)
  FROM (SELECT window_start, sum(n) AS total FROM race_agg GROUP BY 1) w;
SET client_min_messages = warning;  -- the consumer group's removal depends on the broker (README "Removing a pipeline")
SELECT stoatflow.drop_source('race', "cascade" => true);
RESET client_min_messages;
DROP TABLE race_agg;
-- The race is one of timing: 30 more sources over the same records, one after another (each its
-- own consumer group, from the earliest offset), every one judged on its own.
CREATE TABLE race_runs (run integer, records_in bigint, dropped_late_window bigint, windows bigint);
SET client_min_messages = warning;  -- the consumer group's removal depends on the broker (README "Removing a pipeline")
\set ECHO none
\pset tuples_only on
SELECT q FROM generate_series(1, 30) r,
  LATERAL (VALUES
    (1, format($f$SELECT stoatflow.create_source('race_%s', 'e2e_race', %L, columns => 'u text, t bigint',
         key => 'u', event_time => 'to_timestamp(t / 1000.0)', max_out_of_orderness => '0')$f$, r, :'brokers')),
    (2, format($f$SELECT stoatflow.create_aggregation('race_agg_%s', 'race_%s', stoatflow.tumbling('10 seconds'),
         'count(*) AS n', 'race_agg_%s')$f$, r, r, r)),
    (3, format($f$SELECT stoatflow.wait_caught_up('race_%s', '120 seconds')$f$, r)),
    (4, format($f$INSERT INTO race_runs SELECT %s, records_in, dropped_late_window,
         (SELECT count(DISTINCT window_start) FROM race_agg_%s) FROM stoatflow.stats
          WHERE aggregation_name = 'race_agg_%s'$f$, r, r, r)),
    (5, format($f$SELECT stoatflow.drop_source('race_%s', "cascade" => true)$f$, r)),
    (6, format('DROP TABLE race_agg_%s', r))) v(step, q)
 ORDER BY r, step \gexec
\pset tuples_only off
\set ECHO all
RESET client_min_messages;
SELECT count(*) AS runs, min(records_in), max(records_in),
       sum(dropped_late_window) AS late_drops, min(windows), max(windows)
  FROM race_runs;
DROP TABLE race_runs;
