-- An aggregation's executor (README "Expressions and PostgreSQL aggregates"): key, group_by, filter and aggregate items run over
-- payloads by the worker's code, each key's states folded in two halves and sent through
-- serialize, deserialize, copy and merge (or a second fold without combinefunc) before
-- finalization, held against PostgreSQL's own GROUP BY over the same rows. Every comparison
-- prints the number of keys checked and the mismatches (empty when all agree).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

-- internal: not executable by PUBLIC
SELECT has_function_privilege('public', 'stoatflow._test_executor(text, text, text, text, text, text, text[])', 'EXECUTE');

-- the rows: hand-written ones with NULLs everywhere, then 200 random ones
CREATE TEMP TABLE ev (id int, u text, dev text, i int, b bigint, n numeric, d double precision,
                      ok boolean, ts timestamptz);
INSERT INTO ev VALUES
  (1, 'Ann', 'mobile', 1, 10, 1.5, 0.1, true, '2024-01-01 10:00+00'),
  (2, 'ann', 'mobile', NULL, NULL, NULL, NULL, NULL, '2024-01-01 11:00+00'),
  (3, 'bob', NULL, 2147483647, 9223372036854775807, 12345678901234567890.123456789, 1e150, false, '2024-01-02 00:00+00'),
  (4, 'bob', 'web', -1, 1, 0.000000001, 1e149, true, NULL),
  (5, 'bob', 'web', -5, -50, -7.25, 2.5, true, '2024-01-02 23:59:59.999+00'),
  (6, 'carl', 'web', NULL, 3, NULL, 3.75, NULL, '2024-01-03 00:00+00'),
  (7, 'dora', 'tv', 0, 0, 0, 0, false, '2024-01-03 00:00+00'),
  (8, 'Émile', 'tv', 7, 7, 7, 7, true, '2024-01-04 12:00+00'),
  (9, 'a "quoted", \name', 'tv', 3, 4, 5, 6, true, '2024-01-04 12:00+00');
SELECT setseed(0.42);
INSERT INTO ev
SELECT 100 + g,
       CASE WHEN random() < 0.05 THEN NULL ELSE 'u' || (random() * 12)::int END,
       CASE WHEN random() < 0.05 THEN NULL ELSE (ARRAY['mobile', 'web', 'tv'])[1 + (random() * 2)::int] END,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 2000 - 1000)::int END,
       CASE WHEN random() < 0.1 THEN NULL ELSE (random() * 1e12)::bigint END,
       CASE WHEN random() < 0.1 THEN NULL ELSE round((random() * 1000 - 500)::numeric, 3) END,
       CASE WHEN random() < 0.1 THEN NULL ELSE random() * 1000 - 500 END,
       CASE WHEN random() < 0.1 THEN NULL ELSE random() < 0.7 END,
       CASE WHEN random() < 0.05 THEN NULL ELSE '2024-01-01'::timestamptz + random() * interval '5 days' END
  FROM generate_series(1, 200) g;
CREATE TEMP VIEW pay AS
SELECT array_agg(jsonb_build_object('u', u, 'dev', dev, 'i', i, 'b', b, 'n', n, 'd', d, 'ok', ok,
                                    'ts', ts)::text ORDER BY id) AS p FROM ev;
CREATE TEMP TABLE cfg AS
SELECT 'u text, dev text, i integer, b bigint, n numeric, d double precision, ok boolean, ts timestamptz'::text AS cols;

-- got (the executor) against want (a query of jsonb rows): rows paired by their key fields;
-- fields in `approx` (double precision) agree within 1e-12 relative, all others exactly.
CREATE FUNCTION pg_temp.same(g jsonb, w jsonb, approx text[]) RETURNS boolean LANGUAGE sql AS $$
  SELECT g IS NOT NULL AND w IS NOT NULL
     AND (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(g) k)
         = (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(w) k)
     AND (SELECT bool_and(g->k = w->k OR (k = ANY (approx) AND g->>k IS NOT NULL AND w->>k IS NOT NULL
              AND abs((g->>k)::float8 - (w->>k)::float8)
                  <= 1e-12 * greatest(abs((g->>k)::float8), abs((w->>k)::float8))))
            FROM jsonb_object_keys(w) k)
$$;
CREATE FUNCTION pg_temp.check(kind text, key text, group_by text, filter text, aggregates text,
                              want text, keys text[], approx text[] DEFAULT '{}')
RETURNS TABLE (keys_checked bigint, mismatches jsonb) LANGUAGE plpgsql AS $$
DECLARE
  g jsonb[];
  w jsonb[];
BEGIN
  SELECT array_agg(j) INTO g
    FROM stoatflow._test_executor((SELECT cols FROM cfg), kind, key, group_by, filter, aggregates,
                                  (SELECT p FROM pay)) j
   WHERE NOT j ? 'dead_letter' AND NOT j ? 'filtered';
  EXECUTE 'SELECT array_agg(j) FROM (' || want || ') q(j)' INTO w;
  RETURN QUERY
  WITH gg AS (SELECT x, (SELECT jsonb_object_agg(k, x->k) FROM unnest(keys) k) AS kx FROM unnest(g) x),
       ww AS (SELECT x, (SELECT jsonb_object_agg(k, x->k) FROM unnest(keys) k) AS kx FROM unnest(w) x),
       pairs AS (SELECT gg.x AS gx, ww.x AS wx FROM gg FULL JOIN ww ON gg.kx = ww.kx)
  SELECT (SELECT count(*) FROM ww),
         (SELECT jsonb_agg(jsonb_build_object('got', gx, 'want', wx)) FROM pairs
           WHERE NOT pg_temp.same(gx, wx, approx));
END $$;

-- sum, avg, min, max, count over integer, bigint, numeric (exact) and double precision
SELECT * FROM pg_temp.check('tumbling', NULL, 'u', NULL,
  'sum(i), avg(i) AS avg_i, min(i), max(i), count(i), sum(b), avg(b) AS avg_b, min(b), max(b),
   sum(n), avg(n) AS avg_n, min(n), max(n), count(*)',
  $$SELECT jsonb_build_object('key', u, 'sum_i', sum(i)::text, 'avg_i', avg(i)::text,
      'min_i', min(i)::text, 'max_i', max(i)::text, 'count_i', count(i)::text,
      'sum_b', sum(b)::text, 'avg_b', avg(b)::text, 'min_b', min(b)::text, 'max_b', max(b)::text,
      'sum_n', sum(n)::text, 'avg_n', avg(n)::text, 'min_n', min(n)::text, 'max_n', max(n)::text,
      'count', count(*)::text) FROM ev WHERE u IS NOT NULL GROUP BY u$$, '{key}');
SELECT * FROM pg_temp.check('tumbling', NULL, 'u', NULL,
  'sum(d), avg(d) AS avg_d, min(d), max(d), stddev(d) AS sd_d, variance(d) AS var_d,
   stddev(i) AS sd_i, variance(n) AS var_n, stddev_pop(b) AS sdp_b',
  $$SELECT jsonb_build_object('key', u, 'sum_d', sum(d)::text, 'avg_d', avg(d)::text,
      'min_d', min(d)::text, 'max_d', max(d)::text, 'sd_d', stddev(d)::text, 'var_d', variance(d)::text,
      'sd_i', stddev(i)::text, 'var_n', variance(n)::text, 'sdp_b', stddev_pop(b)::text)
      FROM ev WHERE u IS NOT NULL GROUP BY u$$, '{key}', '{sum_d,avg_d,sd_d,var_d}');
-- FILTER, expressions over aggregates, bool_and/bool_or, min/max over text
SELECT * FROM pg_temp.check('session', NULL, 'dev', NULL,
  'count(*) FILTER (WHERE i > 0) AS pos, sum(i) / nullif(count(*), 0) AS ratio,
   sum(n) * 2 + count(b) AS mix, bool_and(ok), bool_or(ok) AS any_ok, min(u), max(u),
   sum(i) FILTER (WHERE ok) AS ok_sum, coalesce(max(ts), ''epoch'') AS last_ts',
  $$SELECT jsonb_build_object('key', dev, 'pos', (count(*) FILTER (WHERE i > 0))::text,
      'ratio', (sum(i) / nullif(count(*), 0))::text, 'mix', (sum(n) * 2 + count(b))::text,
      'bool_and_ok', left(bool_and(ok)::text, 1), 'any_ok', left(bool_or(ok)::text, 1), 'min_u', min(u)::text,
      'max_u', max(u)::text, 'ok_sum', (sum(i) FILTER (WHERE ok))::text,
      'last_ts', coalesce(max(ts), 'epoch')::text)
      FROM ev WHERE dev IS NOT NULL GROUP BY dev$$, '{key}');
-- a computed key (the source's key, column "key"), and a computed lone group_by
SELECT * FROM pg_temp.check('tumbling', 'lower(u)', NULL, NULL, 'count(*), sum(i)',
  $$SELECT jsonb_build_object('key', lower(u), 'count', count(*)::text, 'sum_i', sum(i)::text)
      FROM ev WHERE u IS NOT NULL GROUP BY lower(u)$$, '{key}');
SELECT * FROM pg_temp.check('tumbling', NULL, 'upper(dev) || ''!'' AS d', NULL, 'max(n)',
  $$SELECT jsonb_build_object('d', upper(dev) || '!', 'max_n', max(n)::text)
      FROM ev WHERE dev IS NOT NULL GROUP BY upper(dev) || '!'$$, '{d}');
-- a composite group_by with timestamptz and date items, and a filter
SELECT * FROM pg_temp.check('hopping', NULL,
  'dev, date_trunc(''day'', ts) AS day, ts::date AS date, ok', 'i IS NULL OR i > -500',
  'count(*), sum(d), min(ts)',
  $$SELECT jsonb_build_object('dev', dev, 'day', date_trunc('day', ts)::text, 'date', (ts::date)::text,
      'ok', left(ok::text, 1), 'count', count(*)::text, 'sum_d', sum(d)::text, 'min_ts', min(ts)::text)
      FROM ev WHERE dev IS NOT NULL AND ts IS NOT NULL AND ok IS NOT NULL
       AND (i IS NULL OR i > -500) GROUP BY dev, date_trunc('day', ts), ts::date, ok$$, '{dev,day,date,ok}', '{sum_d}');

-- what does not fold: NULL key parts and bad values are dead letters, the filter counts
SELECT j FROM stoatflow._test_executor((SELECT cols FROM cfg), 'tumbling', NULL, 'dev, u', 'ok',
    'count(*)', (SELECT p FROM pay) || ARRAY['{"u": "x", "dev": "web", "i": "seven"}', '[1,']) j
 WHERE NOT j ? 'dev' AND (j->>'offset' IS NULL OR (j->>'offset')::int < 9 OR (j->>'offset')::int > 208);
-- several key columns are encoded as one JSON array of their texts and decoded back exactly
SELECT j FROM stoatflow._test_executor('a text, b text', 'tumbling', NULL, 'a, b', NULL, 'count(*)',
    ARRAY['{"a": "x\"y", "b": "[\"p\",\"q\"]"}', '{"a": "x", "b": "y\"],[\"z"}', '{"a": "x\\", "b": "\u0001"}',
          '{"a": "", "b": ""}', '{"a": "x\"y", "b": "[\"p\",\"q\"]"}']) j;

-- values GROUP BY takes as equal are one key: numeric scales, float zero's sign
SELECT j FROM stoatflow._test_executor('n numeric, f double precision, r real', 'tumbling', NULL,
    'n, f, r', NULL, 'count(*)',
    ARRAY['{"n": 1.0, "f": -0.0, "r": 0}', '{"n": 1.00, "f": 0, "r": -0.0}', '{"n": 1, "f": 0.0, "r": 0}',
          '{"n": 10, "f": 1e-300, "r": 1.5}', '{"n": 1e3, "f": 1, "r": -1}', '{"n": 1000.000, "f": 1, "r": -1}']) j;
SELECT j FROM stoatflow._test_executor('n numeric(10,3)', 'tumbling', 'n', NULL, NULL, 'count(*)',
    ARRAY['{"n": 1.0}', '{"n": 1.00}', '{"n": "NaN"}', '{"n": 0.0}', '{"n": -0.000}']) j;

-- not runnable: jsonb_agg's state cannot be stored (PostgreSQL 15)
SELECT * FROM stoatflow._test_executor((SELECT cols FROM cfg), 'tumbling', NULL, 'u', NULL,
    'jsonb_agg(i) AS items', (SELECT p FROM pay));
\echo :LAST_ERROR_SQLSTATE

-- state bytes (the state tables' and the sink writer's input): a round trip, an empty
-- window, and damaged bytes (cut short at every length, one byte overwritten at every
-- position): the framing check raises XX001, the receive functions their own errors; nothing
-- crashes
\set c '''v int, n numeric, t text'''
\set a '''sum(v), avg(n) AS a, min(t), count(*), stddev(v::float8) AS sd'''
\set p 'ARRAY[''{"v": 1, "n": 1.5, "t": "x"}'', ''{"v": 2, "n": 2.5, "t": "a"}'', ''{"v": null}'']'
SELECT stoatflow._test_finalize(:c, :a, stoatflow._test_state_bytes(:c, :a, :p));
SELECT stoatflow._test_finalize(:c, :a, stoatflow._test_state_bytes(:c, :a, '{}'));
SELECT stoatflow._test_finalize(:c, :a, substring(stoatflow._test_state_bytes(:c, :a, :p) from 1 for 20));
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow._test_finalize(:c, :a, stoatflow._test_state_bytes(:c, :a, :p) || '\x00'::bytea);
SELECT stoatflow._test_finalize(:c, :a, '\x02'::bytea);
SELECT stoatflow._test_finalize(:c, :a, '\x0103010101'::bytea);
CREATE FUNCTION pg_temp.try_finalize(c text, a text, b bytea) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM stoatflow._test_finalize(c, a, b);
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE;
END $$;
WITH s AS (SELECT stoatflow._test_state_bytes(:c, :a, :p) AS b),
muts AS (
  SELECT 'cut' AS how, substring(b from 1 for k) AS m FROM s, generate_series(0, length(b) - 1) k
  UNION ALL SELECT 'ff', overlay(b placing '\xff'::bytea from k for 1) FROM s, generate_series(1, length(b)) k
  UNION ALL SELECT '00', overlay(b placing '\x00'::bytea from k for 1) FROM s, generate_series(1, length(b)) k)
SELECT how, count(*) AS cases, count(*) FILTER (WHERE outcome = 'ok') AS read,
       count(*) FILTER (WHERE outcome = 'XX001') AS corrupted,
       count(*) FILTER (WHERE outcome NOT IN ('ok', 'XX001')) AS refused
  FROM (SELECT how, pg_temp.try_finalize(:c, :a, m) AS outcome FROM muts) x GROUP BY how ORDER BY how;
SELECT 'alive' AS server;

-- user-defined aggregates in a schema: SQL transition functions, with and without
-- combinefunc, strict without initcond (the first input is the state), by-reference and
-- polymorphic states (array_append's expanded arrays), a transition that returns NULL
CREATE SCHEMA udagg;
CREATE FUNCTION udagg.add(int, int) RETURNS int LANGUAGE sql IMMUTABLE STRICT AS 'SELECT $1 + $2';
CREATE AGGREGATE udagg.total(int) (sfunc = udagg.add, stype = int, initcond = '0', combinefunc = udagg.add);
CREATE AGGREGATE udagg.biggest(int) (sfunc = int4larger, stype = int, combinefunc = int4larger);
CREATE AGGREGATE udagg.cat(text) (sfunc = textcat, stype = text, initcond = '');
CREATE AGGREGATE udagg.arr(anycompatible) (sfunc = array_append, stype = anycompatiblearray,
    initcond = '{}', combinefunc = array_cat);
CREATE FUNCTION udagg.capped(int, int) RETURNS int LANGUAGE sql IMMUTABLE
    AS 'SELECT CASE WHEN $2 > 900 THEN NULL ELSE coalesce($1, 0) + coalesce($2, 0) END';
CREATE AGGREGATE udagg.capped_sum(int) (sfunc = udagg.capped, stype = int);
-- strict, and NULL for good after a multiple of 7 (a NULL state is not "no input yet")
CREATE FUNCTION udagg.stop(int, int) RETURNS int LANGUAGE sql IMMUTABLE STRICT
    AS 'SELECT CASE WHEN $2 % 7 = 0 THEN NULL ELSE $1 + $2 END';
CREATE AGGREGATE udagg.stop_sum(int) (sfunc = udagg.stop, stype = int);
CREATE AGGREGATE udagg.stop_sum0(int) (sfunc = udagg.stop, stype = int, initcond = '0');
-- with combinefuncs: the second half merged
SELECT * FROM pg_temp.check('session', NULL, 'u', NULL,
  'udagg.total(i) AS total, udagg.biggest(i) AS biggest, udagg.arr(i) AS arr, udagg.arr(dev) AS devs',
  $$SELECT jsonb_build_object('key', u, 'total', udagg.total(i)::text, 'biggest', udagg.biggest(i)::text,
      'arr', udagg.arr(i ORDER BY id)::text, 'devs', udagg.arr(dev ORDER BY id)::text)
      FROM ev WHERE u IS NOT NULL GROUP BY u$$, '{key}');
-- without: the second half folded into the copy
SELECT * FROM pg_temp.check('tumbling', NULL, 'u', NULL,
  'udagg.cat(dev) AS devs, udagg.capped_sum(i) AS capped, udagg.stop_sum(i) AS stop,
   udagg.stop_sum0(i) AS stop0, udagg.total(i) AS total',
  $$SELECT jsonb_build_object('key', u, 'devs', udagg.cat(dev ORDER BY id)::text,
      'capped', udagg.capped_sum(i ORDER BY id)::text, 'stop', udagg.stop_sum(i ORDER BY id)::text,
      'stop0', udagg.stop_sum0(i ORDER BY id)::text, 'total', udagg.total(i)::text)
      FROM ev WHERE u IS NOT NULL GROUP BY u$$, '{key}');
SELECT count(*) FILTER (WHERE s IS NULL) AS stopped, count(*) FILTER (WHERE s IS NOT NULL) AS running
  FROM (SELECT udagg.stop_sum(i ORDER BY id) s FROM ev GROUP BY u) x;
-- an aggregate whose transition raises: a clean ERROR, and the server is still there
CREATE FUNCTION udagg.fragile(int, int) RETURNS int LANGUAGE sql IMMUTABLE STRICT
    AS 'SELECT $1 + 100 / ($2 - 7)';
CREATE AGGREGATE udagg.fragile_sum(int) (sfunc = udagg.fragile, stype = int, initcond = '0',
    combinefunc = udagg.add);
SELECT count(*) FROM stoatflow._test_executor((SELECT cols FROM cfg), 'tumbling', NULL, 'u', NULL,
    'udagg.fragile_sum(i) AS f', (SELECT p FROM pay));
\echo :LAST_ERROR_SQLSTATE
-- integer overflow in a transition, the same; in an argument, the record is a dead letter
SELECT count(*) FROM stoatflow._test_executor('v integer', 'tumbling', 'kafka_topic', NULL, NULL,
    'udagg.total(v) AS t', ARRAY['{"v": 2147483647}', '{"v": 1}']);
\echo :LAST_ERROR_SQLSTATE
SELECT j FROM stoatflow._test_executor('v bigint', 'tumbling', 'kafka_topic', NULL, NULL,
    'sum(v * 2) AS s', ARRAY['{"v": 4611686018427387904}', '{"v": 4}']) j;
SELECT 'alive' AS server;
-- an aggregate its caller may not execute
REVOKE EXECUTE ON FUNCTION udagg.total(int) FROM PUBLIC;
CREATE ROLE stoatflow_exec_nobody;
GRANT USAGE ON SCHEMA udagg TO stoatflow_exec_nobody;
GRANT EXECUTE ON FUNCTION stoatflow._test_executor(text, text, text, text, text, text, text[])
    TO stoatflow_exec_nobody;
SET ROLE stoatflow_exec_nobody;
SELECT stoatflow._test_executor('v integer', 'tumbling', 'kafka_topic', NULL, NULL, 'udagg.total(v) AS t',
    ARRAY['{"v": 1}']);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- hll and tdigest (Debian: postgresql-15-hll, postgresql-15-tdigest), when installed
SELECT count(*) = 2 AS have_sketches FROM pg_available_extensions WHERE name IN ('hll', 'tdigest') \gset
\if :have_sketches
SET client_min_messages = warning;
CREATE EXTENSION hll;
CREATE EXTENSION tdigest;
RESET client_min_messages;
SELECT * FROM pg_temp.check('session', NULL, 'dev', NULL,
  'public.hll_cardinality(public.hll_add_agg(public.hll_hash_text(u))) AS users',
  $$SELECT jsonb_build_object('key', dev, 'users',
      public.hll_cardinality(public.hll_add_agg(public.hll_hash_text(u)))::text)
      FROM ev WHERE dev IS NOT NULL GROUP BY dev$$, '{key}');
-- a t-digest's percentile is an estimate: close to the exact one
WITH got AS (
  SELECT j->>'key' AS dev, (j->>'p50')::float8 AS p50
    FROM stoatflow._test_executor((SELECT cols FROM cfg), 'session', NULL, 'dev', NULL,
         'public.tdigest_percentile(d, 100, 0.5) AS p50', (SELECT p FROM pay)) j
   WHERE j ? 'key'),
want AS (SELECT dev, percentile_cont(0.5) WITHIN GROUP (ORDER BY d) AS p50 FROM ev
          WHERE dev IS NOT NULL GROUP BY dev)
SELECT count(*) AS keys, count(*) FILTER (WHERE abs(got.p50 - want.p50) > 50) AS far
  FROM got FULL JOIN want USING (dev);
SET client_min_messages = warning;
DROP EXTENSION hll;
DROP EXTENSION tdigest;
RESET client_min_messages;
\else
\echo 'skipped: the hll and tdigest extensions are not installed (postgresql-15-hll, postgresql-15-tdigest)'
\endif

DROP SCHEMA udagg CASCADE;
REVOKE EXECUTE ON FUNCTION stoatflow._test_executor(text, text, text, text, text, text, text[])
    FROM stoatflow_exec_nobody;
DROP ROLE stoatflow_exec_nobody;
