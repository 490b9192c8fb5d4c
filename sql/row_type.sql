-- A row type per source (README "Expressions and PostgreSQL aggregates"): the columns list at declaration, the conversion corpus
-- (the C++ fast lane held against PostgreSQL's input functions), and records decoded into rows
-- with their dead letters, hostile types included.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

-- Declaration: names, types resolved by PostgreSQL, paths.
SELECT stoatflow.create_source('rt', 'orders', '127.0.0.1:9092',
    columns => 'user_id text, amount numeric(10,2), qty integer, price double precision,
                ts timestamp with time zone, ok boolean, tags varchar(20)[],
                city text PATH ''$.address.city'', "Zip Code" text PATH ''$.address."zip code"'',
                items jsonb',
    key => 'user_id', event_time => 'ts');
SELECT jsonb_pretty(columns), format_options FROM stoatflow.source WHERE source_name = 'rt';
-- metadata columns may be the key and the event time
SELECT stoatflow.create_source('rt2', 'orders', '127.0.0.1:9092', columns => 'a int',
    key => 'kafka_key', event_time => 'kafka_timestamp');
SELECT stoatflow.create_source('rt3', 'orders', '127.0.0.1:9092', columns => 'a int, t bigint',
    key => 'a', event_time => 't');
-- refusals
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => '');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a text,, b int');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a no_such_type');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a int4(', key => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a integer junk');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a int, A text');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'kafka_offset bigint');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a int PATH ''$.a[0]''');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a int PATH ''a.b''');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a record');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a int', key => 'b');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a int, t text', event_time => 't');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a jsonb', key => 'a');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', format_options => '{"delimiter": ","}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', format_options => '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS refused_left_nothing FROM stoatflow.source WHERE source_name = 'x';

-- Types are resolved along the caller's search_path at declaration and stored as format_type
-- gives them outside it: a type that shadows a builtin is kept schema-qualified, and the
-- worker (search_path pinned) reads back that very type; a temporary type is refused.
CREATE SCHEMA shadow;
CREATE DOMAIN shadow.text AS pg_catalog.text CHECK (VALUE <> 'forbidden');
CREATE DOMAIN shadow.pct AS numeric CHECK (VALUE BETWEEN 0 AND 100);
SET search_path = shadow, pg_catalog;
SELECT stoatflow.create_source('rt_shadow', 'orders', '127.0.0.1:9092', columns => 'a text, b pct, c pg_catalog.text');
RESET search_path;
SELECT c->>'name' AS name, c->>'type' AS type
  FROM stoatflow.source s, jsonb_array_elements(s.columns) c WHERE s.source_name = 'rt_shadow';
CREATE DOMAIN pg_temp.tmp AS int;
SELECT stoatflow.create_source('x', 'orders', '127.0.0.1:9092', columns => 'a pg_temp.tmp');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_source(s) FROM unnest(ARRAY['rt', 'rt2', 'rt3', 'rt_shadow']) s;

-- The conversion corpus: each JSON value into each type through both lanes. The C++ lane may
-- leave a value to PostgreSQL (lane 'pg'); what it claims (lane 'fast') must equal PostgreSQL's
-- own result, and a value PostgreSQL rejects must never be claimed.
CREATE TEMP TABLE corpus (type text, json text);
INSERT INTO corpus
SELECT t, j FROM unnest(ARRAY['smallint', 'integer', 'bigint', 'numeric']) t,
  unnest(ARRAY['0', '-0', '12', '"12"', '" 12 "', '"+1"', '"-1"', '"00012"', '1.5', '"1.5"',
               '1e5', '"1E-3"', '"1_000"', '""', '" "', '"+"', '"-"', '"0x10"', '"١٢"',
               '"NaN"', '"Infinity"', '"-inf"', '"\t7\n"', '"7 7"', '"32767"', '"32768"',
               '"-32768"', '"-32769"', '"2147483647"', '"2147483648"', '"-2147483648"',
               '"-2147483649"', '"9223372036854775807"', '"9223372036854775808"',
               '"-9223372036854775808"', '"-9223372036854775809"',
               '99999999999999999999999999999999999999', '100000000000000000000000000000000000000',
               '-12345678901234567890123456789012345678', '"000000000000000000000000000000000000000001"',
               'true', 'null', '{"a": 1}', '[1]']) j
UNION ALL
SELECT t, j FROM unnest(ARRAY['real', 'double precision']) t,
  unnest(ARRAY['0', '-0', '0.0e10', '1.5', '"1.5"', '" 1.5"', '"\u002e5"', '"+1"', '1e5',
               '"1E-3"', '1e308', '1e309', '-1e309', '1e-310', '1e-400', '3.4028235e38',
               '3.4028236e38', '1e-38', '1.17549435e-38', '1e-46', '"NaN"', '"Infinity"', '"-inf"',
               '0.1', '0.30000000000000004', '123456789012345678901234567890',
               '2.2250738585072014e-308', '4.9e-324', '"1,5"', '""', 'true', '"abc"']) j
UNION ALL
SELECT 'boolean', j FROM unnest(ARRAY['true', 'false', '"t"', '"TRUE"', '"  true "', '"yes"', '"y"',
  '"on"', '"off"', '"o"', '"of"', '"1"', '"0"', '"tr"', '"nope"', '""', '1', '0', 'null',
  '"Yes"', '"N"', '"false "']) j
UNION ALL
SELECT 'text', j FROM unnest(ARRAY['"plain"', '""', '"h\u00e9 ☃ \ud83d\ude00"', '"tab\there"',
  '"nul\u0000byte"', '12.50', '-0', '1E+2', 'true', 'false', '{"b": [1, 2.0], "a": null}',
  '[ 1 , "x" ]', 'null']) j
UNION ALL
SELECT 'timestamp with time zone', j FROM unnest(ARRAY['0', '1700000000123', '-62135596800000',
  '253402300799999', '253402300800000', '1.5', '1700000000123.4567', '"2026-11-30T10:00:00Z"',
  '"2026-11-30T10:00:00+02:00"', '"2026-11-30 10:00:00-05"', '"2026-11-30T10:00:00.123456Z"',
  '"2026-11-30T10:00:00.1234567Z"', '"2026-11-30T10:00:00"', '"2016-12-31T23:59:60Z"',
  '"2026-02-29T00:00:00Z"', '"2024-02-29T00:00:00Z"', '"0001-01-01T00:00:00Z"',
  '"0000-01-01T00:00:00Z"', '"2026-11-30t10:00:00z"', '"2026-11-30T10:00:00+0530"',
  '"2026-11-30T10:00:00+15:59"', '"2026-11-30T10:00:00+16:00"', '"epoch"', 'true',
  '1e400']) j
UNION ALL
SELECT t, j FROM unnest(ARRAY['jsonb', 'varchar(3)', 'numeric(5,2)', 'date', 'integer[]', 'uuid']) t,
  unnest(ARRAY['"abcd"', '12.345', 'true', '{"k": "v"}', '[1,2]', '"{1,2}"', '"2026-01-02"',
               '"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"']) j;

CREATE FUNCTION pg_lane(t text, j text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN stoatflow._test_convert(t, j);
EXCEPTION WHEN others THEN
    RETURN 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE TEMP TABLE verdict AS
SELECT type, json, stoatflow._test_fast_convert(type, json) AS fast, pg_lane(type, json) AS pg
  FROM corpus;
-- The proof: no claim differs from PostgreSQL, no claim where PostgreSQL refuses.
SELECT type, json, fast, pg FROM verdict WHERE fast IS NOT NULL AND fast IS DISTINCT FROM pg;
-- How much the lane claims per type (it must claim the common forms).
SELECT type, count(*) FILTER (WHERE fast IS NOT NULL) AS fast, count(*) AS cases
  FROM verdict GROUP BY type ORDER BY type;
-- Every case, with the lane that answers it.
SELECT type, json, CASE WHEN fast IS NULL THEN 'pg' ELSE 'fast' END AS lane, pg AS result
  FROM verdict ORDER BY type, json COLLATE "C";

-- Records into rows: nested paths, absent members NULL, metadata, dead letters naming the column.
SELECT r FROM unnest(stoatflow._test_decode(
    'user_id text, amount numeric, qty int, city text PATH ''$.address.city'', ts timestamptz, tags jsonb',
    ARRAY['{"user_id": "u1", "amount": 12.50, "qty": 2, "address": {"city": "Oslo"}, "ts": 1700000000000, "tags": ["a"]}',
          '{"user_id": 7, "amount": "3", "qty": "4", "ts": "2026-11-30T10:00:00+01:00"}',
          '{"user_id": "u3", "qty": 1.5}',
          '{"user_id": "u4", "amount": true}',
          '{"user_id": "u5", "address": "not an object", "ts": "2026-11-30 10:00:00"}',
          '{"user_id": "u6", "tags": {"x": 1}, "address": {"city": null}}',
          'not json',
          '[1]',
          '{"user_id": "u9", "ts": "yesterday-ish"}'],
    ARRAY['k1', '<NULL>', 'k3', 'k4', 'k5', 'k6', 'k7', 'k8', 'k9'])) WITH ORDINALITY AS t(r, n)
 ORDER BY n;

-- Hostile types: a domain whose CHECK raises, one whose CHECK fails, NOT NULL on an absent
-- member: dead letters bad_value; the good records of the same batch are kept.
CREATE FUNCTION boom(v int) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF v = 13 THEN RAISE EXCEPTION 'unlucky % from a user function', v USING ERRCODE = 'P0013'; END IF;
    RETURN v >= 0;
END $$;
CREATE DOMAIN lucky AS int CHECK (boom(VALUE));
CREATE DOMAIN needed AS text NOT NULL;
SELECT r FROM unnest(stoatflow._test_decode('v lucky, w needed',
    ARRAY['{"v": 1, "w": "a"}', '{"v": 13, "w": "b"}', '{"v": -1, "w": "c"}', '{"v": 2}',
          '{"v": 3, "w": "d"}'])) WITH ORDINALITY AS t(r, n) ORDER BY n;
-- The subtransactions left nothing behind: the session goes on.
SELECT 1 AS still_fine;

-- Through the record path and the commit step (process_records): values the fast lane leaves
-- to PostgreSQL — a domain whose CHECK calls user code that raises, a boolean key (its text
-- output is PostgreSQL's), an event time without an offset, columns nothing reads (their values
-- must convert all the same) — take the main thread's way, as the source's owner; bad values
-- are dead letters, the rest lands in the sink.
SELECT stoatflow.create_source('rt_slow', 'events', '127.0.0.1:9092',
    columns => 'v lucky, flag boolean, at timestamptz PATH ''$.t.at'', note varchar(3), extra jsonb',
    key => 'flag', event_time => 'at', max_out_of_orderness => '0', future_limit => NULL);
SELECT stoatflow.create_aggregation('rt_slow_agg', 'rt_slow', stoatflow.tumbling('1 minute'),
    'count(*) AS n, sum(v) AS total', 'rt_slow_agg');
SELECT * FROM stoatflow.process_records('rt_slow', '[
    {"value": {"v": 1, "flag": true, "t": {"at": "2026-11-30T10:00:01Z"}}},
    {"value": {"v": 13, "flag": true, "t": {"at": "2026-11-30T10:00:02Z"}}},
    {"value": {"v": -1, "flag": "no", "t": {"at": "2026-11-30 10:00:03"}}},
    {"value": {"v": 2, "flag": "yes", "t": {"at": "2026-11-30 10:00:04"}}},
    {"value": {"flag": false, "t": {"at": "2026-11-30T10:00:05+00:00"}}},
    {"value": {"v": 4, "t": {"at": "2026-11-30T10:00:06Z"}}},
    {"value": {"v": 5, "flag": 1, "t": {"at": "2026-11-30T10:00:07Z"}}},
    {"value": {"v": 7, "flag": "t", "t": {"at": "2026-11-30T10:00:08Z"}, "note": "toolong"}},
    {"raw": "{\"v\": 8, \"flag\": \"t\", \"t\": {\"at\": \"2026-11-30T10:00:09Z\"}, \"extra\": {\"s\": \"\\u0000\"}}"},
    {"value": {"v": 9, "flag": "t", "t": {"at": "2026-11-30T10:00:10Z"}, "note": "ok", "extra": [1]}},
    {"value": {"v": 6, "flag": "t", "t": {"at": "2026-11-30T10:02:00Z"}}}]');
SELECT key, window_start, n, total, final FROM rt_slow_agg ORDER BY 1, 2;
SELECT "offset", reason, detail FROM stoatflow.dead_letters WHERE source_name = 'rt_slow' ORDER BY 1;
SELECT stoatflow.drop_source('rt_slow', "cascade" => true);
DROP TABLE rt_slow_agg;
