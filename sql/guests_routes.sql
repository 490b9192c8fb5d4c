-- Every route judges values per aggregation (README "Views and tables", dead_letters; "Columns",
-- Conversion): with columns, a value that converts but cannot be aggregated (a numeric integer
-- of 39+ digits, NaN) is a dead letter of the aggregations reading it only; its siblings fold
-- the record, in the fast path and in executor mode; a record is one of the source only when no
-- aggregation can use it. And the functions that read the clock are refused in expressions
-- (README "Expressions and PostgreSQL aggregates"). Synchronous, through process_records.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

CREATE FUNCTION r_feed(source text, recs jsonb)
RETURNS TABLE (processed bigint, dead_letters bigint)
LANGUAGE sql AS $$ SELECT processed, dead_letters FROM stoatflow.process_records(source,
    (SELECT jsonb_agg(jsonb_build_object('value', r) ORDER BY n)
       FROM jsonb_array_elements(recs) WITH ORDINALITY AS t(r, n))) $$;
CREATE FUNCTION r_dead(source text)
RETURNS TABLE ("offset" bigint, reason text, detail text)
LANGUAGE sql AS $$ SELECT "offset", reason, detail FROM stoatflow.dead_letters
    WHERE source_name = source ORDER BY "offset", detail $$;

CREATE TABLE r_recs (n int, r jsonb);
INSERT INTO r_recs VALUES
 (1, '{"u": "x", "ts": 1764496801000, "a": 5, "b": 1}'),
 (2, '{"u": "x", "ts": 1764496802000, "a": 1234567890123456789012345678901234567890, "b": 2}'),
 (3, '{"u": "y", "ts": 1764496803000, "a": "NaN", "b": 3}'),
 (4, '{"u": "x", "ts": 1764496804000, "a": "7", "b": 4}'),
 (5, '{"u": "y", "ts": 1764496805000, "b": 5}'),
 (6, '{"u": "y", "ts": 1764496806000, "a": "-1234567890123456789012345678901234567890", "b": 6}'),
 (7, '{"u": "x", "ts": 1764496807000, "a": "abc", "b": 7}'),
 (8, '{"u": "y", "ts": 1764496808000, "a": 11, "b": 8}');
-- the records each aggregation can use: a 38-digit-or-shorter finite a (or none) for sum_a;
-- every record whose columns convert for sum_b and cnt (record 7's "abc" is not a numeric)
CREATE VIEW r_good_a AS SELECT n, r FROM r_recs WHERE n IN (1, 4, 5, 8);
CREATE VIEW r_rows AS SELECT n, r FROM r_recs WHERE n <> 7;

------------------------------------------------------------------------------------------
-- Fast path: sum_a reads a, sum_b and cnt do not.
SELECT stoatflow.create_source('r_fast', 'r_fast', '127.0.0.1:9092',
    columns => 'u text, ts bigint, a numeric, b integer', key => 'u', event_time => 'ts',
    max_out_of_orderness => '0', future_limit => NULL);
SELECT stoatflow.create_aggregation('sum_a', 'r_fast', stoatflow.tumbling('1 hour'),
    'sum(a) AS s', 'r_sum_a');
SELECT stoatflow.create_aggregation('sum_b', 'r_fast', stoatflow.tumbling('1 hour'),
    'sum(b) AS s', 'r_sum_b');
SELECT stoatflow.create_aggregation('cnt', 'r_fast', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'r_cnt');
SELECT * FROM r_feed('r_fast', (SELECT jsonb_agg(r ORDER BY n) FROM r_recs));
-- one dead letter of sum_a per bad a (naming it); record 7 is one of the source (bad_value)
SELECT * FROM r_dead('r_fast');
SELECT aggregation_name, records_in FROM stoatflow.stats
 WHERE source_name = 'r_fast' ORDER BY aggregation_name;
-- each sink equals SQL over the records its aggregation can use
SELECT s.key, s.s, s.s = (SELECT sum((r->>'a')::numeric) FROM r_good_a WHERE r->>'u' = s.key)
       AS same
  FROM r_sum_a s ORDER BY s.key;
SELECT s.key, s.s, s.s = (SELECT sum((r->>'b')::int) FROM r_rows WHERE r->>'u' = s.key) AS same
  FROM r_sum_b s ORDER BY s.key;
SELECT s.key, s.n, s.n = (SELECT count(*) FROM r_rows WHERE r->>'u' = s.key) AS same
  FROM r_cnt s ORDER BY s.key;

-- Every aggregation reads the bad column: the record is a dead letter of the source.
SELECT stoatflow.create_source('r_all', 'r_all', '127.0.0.1:9092',
    columns => 'u text, ts bigint, a numeric, b integer', key => 'u', event_time => 'ts',
    max_out_of_orderness => '0', future_limit => NULL);
SELECT stoatflow.create_aggregation('all_sum', 'r_all', stoatflow.tumbling('1 hour'),
    'sum(a) AS s', 'r_all_sum');
SELECT stoatflow.create_aggregation('all_max', 'r_all', stoatflow.tumbling('1 hour'),
    'max(a) AS m, count(*) AS n', 'r_all_max');
SELECT * FROM r_feed('r_all', (SELECT jsonb_agg(r ORDER BY n) FROM r_recs));
SELECT * FROM r_dead('r_all');
SELECT s.key, s.n, s.n = (SELECT count(*) FROM r_good_a WHERE r->>'u' = s.key) AS same
  FROM r_all_max s ORDER BY s.key;

------------------------------------------------------------------------------------------
-- Executor mode (an aggregation with a filter): the fast-path siblings as above, and the
-- executor's aggregation reads a through PostgreSQL (NaN is a numeric to it).
SELECT stoatflow.create_source('r_exec', 'r_exec', '127.0.0.1:9092',
    columns => 'u text, ts bigint, a numeric, b integer', key => 'u', event_time => 'ts',
    max_out_of_orderness => '0', future_limit => NULL);
SELECT stoatflow.create_aggregation('x_sum_a', 'r_exec', stoatflow.tumbling('1 hour'),
    'sum(a) AS s', 'r_x_sum_a');
SELECT stoatflow.create_aggregation('x_cnt', 'r_exec', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'r_x_cnt');
SELECT stoatflow.create_aggregation('x_filtered', 'r_exec', stoatflow.tumbling('1 hour'),
    'count(*) AS n, sum(b) AS sb', 'r_x_filtered', filter => 'b > 1');
SELECT * FROM r_feed('r_exec', (SELECT jsonb_agg(r ORDER BY n) FROM r_recs));
SELECT * FROM r_dead('r_exec');
SELECT aggregation_name, records_in FROM stoatflow.stats
 WHERE source_name = 'r_exec' ORDER BY aggregation_name;
SELECT s.key, s.s, s.s = (SELECT sum((r->>'a')::numeric) FROM r_good_a WHERE r->>'u' = s.key)
       AS same
  FROM r_x_sum_a s ORDER BY s.key;
SELECT s.key, s.n, s.n = (SELECT count(*) FROM r_rows WHERE r->>'u' = s.key) AS same
  FROM r_x_cnt s ORDER BY s.key;
SELECT s.key, s.n, s.sb,
       (s.n, s.sb) = (SELECT count(*), sum((r->>'b')::int) FROM r_rows
                       WHERE r->>'u' = s.key AND (r->>'b')::int > 1) AS same
  FROM r_x_filtered s ORDER BY s.key;

------------------------------------------------------------------------------------------
-- The clock: refused in filter, group_by, key, event_time and aggregate arguments (the result
-- would depend on when a record is processed); stable functions that do not read it are fine.
SELECT stoatflow.create_source('r_clock', 'r_clock', '127.0.0.1:9092',
    columns => 'u text, ts bigint, a numeric, b integer', key => 'u', event_time => 'ts');
SELECT stoatflow.create_aggregation('c1', 'r_clock', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'r_c1',
    filter => 'to_timestamp(ts/1000.0) > now() - interval ''1 day''');
SELECT stoatflow.create_aggregation('c2', 'r_clock', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'r_c2', group_by => 'current_date');
SELECT stoatflow.create_aggregation('c3', 'r_clock', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'r_c3', group_by => 'u, extract(hour from localtimestamp) AS h');
SELECT stoatflow.create_aggregation('c4', 'r_clock', stoatflow.tumbling('1 hour'),
    'max(ts - extract(epoch from statement_timestamp())) AS m', 'r_c4');
SELECT stoatflow.create_aggregation('c5', 'r_clock', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'r_c5', filter => 'transaction_timestamp() > ''2020-01-01''');
SELECT stoatflow.create_aggregation('c6', 'r_clock', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'r_c6', filter => 'current_time > ''00:00''');
-- a volatile one keeps its own refusal
SELECT stoatflow.create_aggregation('c7', 'r_clock', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'r_c7', filter => 'clock_timestamp() > ''2020-01-01''');
SELECT stoatflow.create_source('r_clock_t', 'r_clock_t', '127.0.0.1:9092',
    columns => 'u text, ts bigint', key => 'u', event_time => 'now()');
SELECT stoatflow.create_source('r_clock_k', 'r_clock_k', '127.0.0.1:9092',
    columns => 'u text, ts bigint', key => 'u || current_timestamp', event_time => 'ts');
SELECT count(*) FROM stoatflow.sources WHERE source_name LIKE 'r_clock_%';
SELECT count(*) FROM stoatflow.aggregation WHERE aggregation_name LIKE 'c_';
-- accepted: stable or immutable, not the clock
SELECT stoatflow.create_aggregation('c_ok', 'r_clock', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'r_c_ok', group_by => 'date_trunc(''hour'', to_timestamp(ts/1000.0)) AS h',
    filter => 'to_timestamp(ts/1000.0) > ''2020-01-01''::timestamptz');
SELECT * FROM r_feed('r_clock', '[{"u": "x", "ts": 1764496801000}, {"u": "x", "ts": 1764500401000}]');
SELECT h, n FROM r_c_ok ORDER BY h;

SELECT stoatflow.drop_source('r_fast', true);
SELECT stoatflow.drop_source('r_all', true);
SELECT stoatflow.drop_source('r_exec', true);
SELECT stoatflow.drop_source('r_clock', true);
