-- User code is a guest, judged at declaration (README "Expressions and PostgreSQL aggregates",
-- "create_aggregation"): an aggregate whose support functions are VOLATILE is refused, naming
-- the function; names resolve along the caller's search_path, as a view's, and are stored
-- qualified so the worker's pinned path finds the same objects; a sink that would fail every
-- write (an extra NOT NULL column without a default) is refused by the rule every write uses.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

-- later tests name segment tables by aggregation id: the sequence is left as found
SELECT last_value AS agg_seq, is_called AS agg_seq_called
  FROM stoatflow.aggregation_aggregation_id_seq \gset
SELECT stoatflow.create_source('gd', 'gd', '127.0.0.1:9092', event_time => 'ts',
    max_out_of_orderness => '0', columns => 'user_id text, ts bigint, qty integer, page text');
CREATE FUNCTION feed(recs jsonb) RETURNS TABLE (processed bigint, dead_letters bigint)
LANGUAGE sql AS $$ SELECT processed, dead_letters FROM stoatflow.process_records('gd', recs) $$;
CREATE FUNCTION rec(u text, ts bigint, qty integer, page text) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('value', jsonb_build_object('user_id', u, 'ts', ts, 'qty', qty, 'page', page)) $$;

------------------------------------------------------------------------------------------
-- 1. Support functions must not be VOLATILE (they run per record and again on a replay).
CREATE TABLE sfunc_calls (n integer);
CREATE FUNCTION public.noisy_add(bigint, integer) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    INSERT INTO sfunc_calls VALUES ($2);
    RETURN $1 + $2;
END $$;
CREATE AGGREGATE public.noisy_sum(integer) (SFUNC = public.noisy_add, STYPE = bigint, INITCOND = '0');
-- the aggregate's own pg_proc row says nothing about its transition function
SELECT provolatile FROM pg_proc WHERE oid = 'public.noisy_sum(integer)'::regprocedure;
SELECT stoatflow.create_aggregation('noisy', 'gd', stoatflow.tumbling('1 minute'),
    'public.noisy_sum(qty) AS total', 'noisy_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS declared FROM stoatflow.aggregation WHERE aggregation_name = 'noisy';
-- the same function declared IMMUTABLE (a plain sum) is accepted
CREATE FUNCTION public.quiet_add(bigint, integer) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN $1 + $2;
END $$;
CREATE AGGREGATE public.quiet_sum(integer) (SFUNC = public.quiet_add, STYPE = bigint, INITCOND = '0');
SELECT stoatflow.create_aggregation('quiet', 'gd', stoatflow.tumbling('1 minute'),
    'public.quiet_sum(qty) AS total', 'quiet_sink', group_by => 'page');
-- a VOLATILE final function is refused too
CREATE FUNCTION public.noisy_final(bigint) RETURNS bigint LANGUAGE sql VOLATILE AS 'SELECT $1';
CREATE AGGREGATE public.final_sum(integer) (SFUNC = public.quiet_add, STYPE = bigint,
    INITCOND = '0', FINALFUNC = public.noisy_final);
SELECT stoatflow.create_aggregation('noisy_final', 'gd', stoatflow.tumbling('1 minute'),
    'public.final_sum(qty) AS total', 'noisy_final_sink');
\echo :LAST_ERROR_SQLSTATE
-- and a VOLATILE combine function (the analysis every path uses: _analyze shows it too)
CREATE FUNCTION public.noisy_combine(bigint, bigint) RETURNS bigint LANGUAGE sql VOLATILE AS 'SELECT $1 + $2';
CREATE AGGREGATE public.combine_sum(integer) (SFUNC = public.quiet_add, STYPE = bigint,
    INITCOND = '0', COMBINEFUNC = public.noisy_combine);
SELECT name FROM stoatflow._analyze((SELECT columns FROM stoatflow.source WHERE source_name = 'gd'),
    'session', NULL, NULL, NULL, NULL, 'count(*), public.combine_sum(qty) AS total');
\echo :LAST_ERROR_SQLSTATE
-- a volatile function in an expression stays refused
SELECT stoatflow.create_aggregation('noisy_expr', 'gd', stoatflow.tumbling('1 minute'),
    'count(*)', 'noisy_expr_sink', group_by => 'page || random()::text');
\echo :LAST_ERROR_SQLSTATE
-- an extension's own functions are its author's: hll's transition functions are VOLATILE by
-- omission in its install script, and its aggregates qualify (part 2)
-- made VOLATILE after declaration: the re-analysis (worker start, process_records) refuses it
ALTER FUNCTION public.quiet_add(bigint, integer) VOLATILE;
SELECT * FROM feed(jsonb_build_array(rec('u1', 1000, 2, '/a')));
ALTER FUNCTION public.quiet_add(bigint, integer) IMMUTABLE;
SELECT * FROM feed(jsonb_build_array(rec('u1', 1000, 2, '/a'), rec('u2', 2000, 3, '/a')));
SELECT key, total FROM quiet_sink ORDER BY key;
SELECT stoatflow.drop_aggregation('quiet', drop_sink => true);

------------------------------------------------------------------------------------------
-- 2. Names resolve along the caller's search_path and are stored qualified.
SELECT count(*) = 1 AS have_hll FROM pg_available_extensions WHERE name = 'hll' \gset
\if :have_hll
SET client_min_messages = warning;
CREATE EXTENSION hll SCHEMA public;
RESET client_min_messages;
SHOW search_path;
-- hll's transition function is VOLATILE (by omission), yet an extension's functions qualify
SELECT provolatile FROM pg_proc WHERE oid = 'public.hll_add_trans0(internal, public.hll_hashval)'::regprocedure;
-- the documented spelling, unqualified: hll is in public, on the caller's path
SELECT stoatflow.create_aggregation('users_1m', 'gd', stoatflow.tumbling('1 minute'),
    'hll_cardinality(hll_add_agg(hll_hash_text(user_id))) AS users, count(*)', 'users_1m',
    group_by => 'page');
-- stored qualified: the worker's pinned path (pg_catalog, pg_temp) finds the same functions
SELECT group_by, aggregates FROM stoatflow.aggregation WHERE aggregation_name = 'users_1m';
SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_attribute a WHERE a.attrelid = 'users_1m'::regclass AND a.attnum > 0 ORDER BY a.attnum;
CREATE TABLE hll_rows AS SELECT * FROM (VALUES ('u1', 1000, '/a'), ('u2', 2000, '/a'),
    ('u1', 3000, '/a'), ('u3', 4000, '/b'), ('u4', 5000, '/a')) v(user_id, ts, page);
SELECT * FROM feed((SELECT jsonb_agg(rec(user_id, ts, 1, page)) FROM hll_rows));
-- the same distinct counts as SQL's hll over the same rows
SELECT s.key, s.users, s.count,
       s.users = (SELECT hll_cardinality(hll_add_agg(hll_hash_text(h.user_id)))
                    FROM hll_rows h WHERE h.page = s.key) AS same_as_sql
  FROM users_1m s ORDER BY s.key;
-- with hll off the path, the unqualified spelling is what SQL would say
SET search_path = pg_catalog;
SELECT stoatflow.create_aggregation('users_nopath', 'gd', stoatflow.tumbling('1 minute'),
    'hll_cardinality(hll_add_agg(hll_hash_text(user_id))) AS users', 'public.users_nopath');
\echo :LAST_ERROR_SQLSTATE
RESET search_path;
SELECT stoatflow.drop_aggregation('users_1m', drop_sink => true);
DROP TABLE hll_rows;
DROP EXTENSION hll;
\else
\echo 'hll is not installed: skipped'
\endif

-- a function of the caller's that shadows a built-in: what the caller's path resolves at
-- declaration is stored, as in a view. pg_catalog is implicitly first on a path that does not
-- list it, so `lower` is the built-in there; listed after public, public's lower wins.
CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT ''shadow''';
CREATE VIEW lower_builtin AS SELECT lower('A') AS l;
SELECT stoatflow.create_aggregation('lower_builtin', 'gd', stoatflow.tumbling('1 minute'),
    'count(*)', 'lower_builtin_sink', group_by => 'lower(page)');
SET search_path = public, pg_catalog;
CREATE VIEW lower_shadow AS SELECT lower('A') AS l;
SELECT stoatflow.create_aggregation('lower_shadow', 'gd', stoatflow.tumbling('1 minute'),
    'count(*)', 'lower_shadow_sink', group_by => 'lower(page)');
RESET search_path;
SELECT pg_get_viewdef('lower_builtin'::regclass) AS builtin_view,
       pg_get_viewdef('lower_shadow'::regclass) AS shadow_view;
SELECT aggregation_name, group_by FROM stoatflow.aggregation
 WHERE aggregation_name LIKE 'lower%' ORDER BY 1;
-- the worker's pinned path re-analyzes the stored texts to the same functions
SELECT * FROM feed(jsonb_build_array(rec('u1', 61000, 1, '/P/1')));
SELECT 'builtin' AS agg, key, count FROM lower_builtin_sink
UNION ALL SELECT 'shadow', key, count FROM lower_shadow_sink ORDER BY 1, 2;
-- a more specific operator of the caller's: SQL on the same path picks it, and so does the
-- declaration, stored as OPERATOR(public.*): the worker runs what the declaration resolved
CREATE FUNCTION public.zero_mul(numeric, integer) RETURNS numeric LANGUAGE sql IMMUTABLE AS 'SELECT 0::numeric';
CREATE OPERATOR public.* (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = public.zero_mul);
SELECT 2::numeric * 3 AS plain_sql, 2::numeric * 3.0 AS numeric_times_numeric;
SELECT stoatflow.create_aggregation('mul', 'gd', stoatflow.tumbling('1 minute'),
    'sum(qty::numeric * qty) AS by_caller, sum(qty::numeric * qty::numeric) AS by_builtin', 'mul_sink',
    group_by => 'page');
SELECT aggregates FROM stoatflow.aggregation WHERE aggregation_name = 'mul';
SELECT * FROM feed(jsonb_build_array(rec('u1', 62000, 3, '/m')));
SELECT key, by_caller, by_builtin FROM mul_sink;
SELECT stoatflow.drop_aggregation('mul', drop_sink => true);
DROP OPERATOR public.* (numeric, integer);
DROP FUNCTION public.zero_mul(numeric, integer);
-- a source's key expression too
SET search_path = public, pg_catalog;
SELECT stoatflow.create_source('gd_key', 'gd_key', '127.0.0.1:9092', key => 'lower(page)',
    columns => 'page text');
RESET search_path;
SELECT key_path FROM stoatflow.source WHERE source_name = 'gd_key';
SELECT stoatflow.drop_source('gd_key');
SELECT stoatflow.drop_aggregation('lower_builtin', drop_sink => true);
SELECT stoatflow.drop_aggregation('lower_shadow', drop_sink => true);
DROP VIEW lower_builtin, lower_shadow;
DROP FUNCTION public.lower(text);

------------------------------------------------------------------------------------------
-- 3. A sink is judged at declaration by the rule every write uses.
-- an extra NOT NULL column without a default would fail every write: refused, naming it
CREATE TABLE notes_sink (key text, window_start timestamptz, window_end timestamptz,
    count bigint, event_time timestamptz, final boolean NOT NULL DEFAULT false,
    note text NOT NULL, PRIMARY KEY (key, window_start));
SELECT stoatflow.create_aggregation('notes', 'gd', stoatflow.tumbling('1 minute'),
    'count(*)', 'notes_sink', group_by => 'page');
\echo :LAST_ERROR_SQLSTATE
-- with a default it is accepted, and the pipeline writes rows
ALTER TABLE notes_sink ALTER COLUMN note SET DEFAULT '';
SELECT stoatflow.create_aggregation('notes', 'gd', stoatflow.tumbling('1 minute'),
    'count(*)', 'notes_sink', group_by => 'page');
SELECT * FROM feed(jsonb_build_array(rec('u1', 121000, 1, '/n')));
SELECT key, count, note FROM notes_sink ORDER BY key;
SELECT stoatflow.drop_aggregation('notes');
-- an extra nullable column, an identity column and a generated one are fine
CREATE TABLE extra_sink (key text, window_start timestamptz, window_end timestamptz,
    count bigint, event_time timestamptz, final boolean NOT NULL DEFAULT false,
    comment text, id bigint GENERATED ALWAYS AS IDENTITY,
    doubled bigint GENERATED ALWAYS AS (count * 2) STORED, PRIMARY KEY (key, window_start));
SELECT stoatflow.create_aggregation('extra', 'gd', stoatflow.tumbling('1 minute'),
    'count(*)', 'extra_sink', group_by => 'page');
SELECT * FROM feed(jsonb_build_array(rec('u1', 181000, 1, '/x')));
SELECT key, count, comment, doubled FROM extra_sink ORDER BY key;
-- the same rule before every write: a NOT NULL column added later stops the writes clearly
ALTER TABLE extra_sink ADD COLUMN required text NOT NULL DEFAULT 'x';
ALTER TABLE extra_sink ALTER COLUMN required DROP DEFAULT;
SELECT * FROM feed(jsonb_build_array(rec('u1', 182000, 1, '/x')));
SELECT status, last_error FROM stoatflow.stats WHERE aggregation_name = 'extra';
SELECT stoatflow.drop_aggregation('extra', drop_sink => true);
SELECT stoatflow.drop_source('gd', "cascade" => true);
DROP TABLE notes_sink, sfunc_calls;
DROP AGGREGATE public.noisy_sum(integer), public.quiet_sum(integer), public.final_sum(integer),
    public.combine_sum(integer);
DROP FUNCTION public.noisy_add(bigint, integer), public.quiet_add(bigint, integer),
    public.noisy_final(bigint), public.noisy_combine(bigint, bigint), feed(jsonb),
    rec(text, bigint, integer, text);
SELECT setval('stoatflow.aggregation_aggregation_id_seq', :agg_seq, :'agg_seq_called'::boolean) > 0 AS id_sequence_restored;
