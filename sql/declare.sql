-- Declaring sources, windows and aggregations: the SQL surface of README "SQL reference" and every
-- validation error it names, each with its SQLSTATE.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

-- sources
SELECT stoatflow.create_source('pv', 'pageviews', '127.0.0.1:9092', key => 'user_id', event_time => 'ts');
SELECT source_name, topic, format, key_path, event_time_path, max_out_of_orderness_ms,
       idle_timeout_ms, start_offset FROM stoatflow.source;
SELECT stoatflow.create_source('pv', 'pageviews', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('bad name', 'pageviews', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'bad topic!', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', format => 'xml');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', start_offset => 'middle');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', max_out_of_orderness => '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', max_out_of_orderness => '1 month');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', idle_timeout => '0');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', 'kafka1:9092,,kafka2:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', 'kafka1:99999');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', 'kafka 1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', key => 'user..id');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', kafka_options => '{"no.such.option": "1"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', kafka_options => '{"security.protocol": "carrier_pigeon"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', kafka_options => '{"enable.auto.commit": "true"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '127.0.0.1:9092', kafka_options => '[1]');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('s2', 'pageviews', '[::1]:9092,PLAINTEXT://kafka-2.local:9093',
    kafka_options => '{"client.id": "stoat", "socket.timeout.ms": 5000}', idle_timeout => '30 seconds');
SELECT source_name, brokers, idle_timeout_ms, kafka_options FROM stoatflow.source WHERE source_name = 's2';

-- windows: values of type stoatflow.window
SELECT stoatflow.tumbling('5 minutes');
SELECT stoatflow.hopping('10 minutes', '2 minutes', grace => '30 seconds');
SELECT stoatflow.sliding('10 minutes', '1 minute');
SELECT stoatflow.session('30 minutes');
SELECT stoatflow.tumbling('0');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.tumbling('-5 minutes');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.tumbling('5 minutes', '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.hopping('10 minutes', '0');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.hopping('10 minutes', '11 minutes');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.sliding('0');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.session('-1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.session('1 minute', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.tumbling('1 month');
\echo :LAST_ERROR_SQLSTATE

-- aggregations: the sink is created with the right columns and primary key
SELECT stoatflow.create_aggregation('views_5m', 'pv', stoatflow.tumbling('5 minutes'),
    'count(*) AS views, sum(amount) AS revenue, max(latency_ms), count(amount), avg("user".score), min(''a.b'')',
    'views_5m');
\d views_5m
SELECT aggregation_name, kind, size_ms, advance_ms, grace_ms, agg_functions, agg_fields, agg_columns,
       sink, emit, retention_ms, segment_interval_ms FROM stoatflow.aggregation;
-- retention and segment interval: max(retention/2, 60 s, window length)
SELECT stoatflow.create_aggregation('sess', 'pv', stoatflow.session('30 seconds', '10 seconds'),
    'count(*)', 'sess_sink', emit => 'on_window_close', retention => '10 minutes');
SELECT aggregation_name, emit, retention_ms, segment_interval_ms FROM stoatflow.aggregation
 WHERE aggregation_name = 'sess';

-- every declaration error
SELECT stoatflow.create_aggregation('views_5m', 'pv', stoatflow.tumbling('5 minutes'), 'count(*)', 'other');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'nope', stoatflow.tumbling('5 minutes'), 'count(*)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'median(x)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*) AS n, sum(x) AS n', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'sum(x), sum(x)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*) AS final', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'sum(*)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'sum(x + 1)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'sum(x) FROM pg_authid', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(DISTINCT x)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'x', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'sum(''a..b'')', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), '', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*)', 'a1_sink', emit => 'sometimes');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes', '1 minute'), 'count(*)', 'a1_sink', retention => '5 minutes');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.sliding('5 minutes'), 'count(*)', 'a1_sink', retention => '9 minutes');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', ROW('tumbling', '0', '0', '0')::stoatflow.window, 'count(*)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', ROW('fractal', '1 minute', NULL, '0')::stoatflow.window, 'count(*)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', NULL, 'count(*)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('bad-name', 'pv', stoatflow.tumbling('5 minutes'), 'count(*)', 'a1_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*)', 'no_such_schema.t');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*)', 'views_5m');
\echo :LAST_ERROR_SQLSTATE
-- an existing sink must have the right shape
CREATE TABLE wrong1 (key text, window_start timestamptz, window_end timestamptz, n bigint);
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*) AS n', 'wrong1');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE wrong2 (key text, window_start timestamptz, window_end timestamptz, n integer,
    event_time timestamptz, final boolean, PRIMARY KEY (key, window_start));
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*) AS n', 'wrong2');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE wrong3 (key text, window_start timestamptz, window_end timestamptz, n bigint,
    event_time timestamptz, final boolean);
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*) AS n', 'wrong3');
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW wrong4 AS SELECT 1 AS x;
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*) AS n', 'wrong4');
\echo :LAST_ERROR_SQLSTATE
-- a compatible existing table is accepted (extra columns are left alone)
CREATE SCHEMA rollups;
CREATE TABLE rollups.right1 (key text, window_start timestamptz, window_end timestamptz, n bigint,
    event_time timestamptz, final boolean, note text DEFAULT 'x', PRIMARY KEY (key, window_start));
SELECT stoatflow.create_aggregation('a1', 'pv', stoatflow.tumbling('5 minutes'), 'count(*) AS n', 'rollups.right1');
SELECT aggregation_name, sink FROM stoatflow.aggregation ORDER BY aggregation_id;

-- a source still in use
SELECT stoatflow.drop_source('pv');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_source('nope');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_aggregation('nope');
\echo :LAST_ERROR_SQLSTATE
-- drop_aggregation keeps the sink unless asked
SELECT stoatflow.drop_aggregation('a1');
SELECT count(*) FROM rollups.right1;
SELECT stoatflow.drop_aggregation('sess', drop_sink => true);
SELECT to_regclass('sess_sink');
-- cascade drops the aggregations (their sinks stay)
SELECT stoatflow.drop_source('pv', cascade => true);
SELECT count(*) FROM stoatflow.aggregation;
SELECT to_regclass('views_5m');
SELECT stoatflow.drop_source('s2');
SELECT count(*) FROM stoatflow.source;
DROP TABLE views_5m, wrong1, wrong2, wrong3, rollups.right1;
DROP VIEW wrong4;
DROP SCHEMA rollups;
