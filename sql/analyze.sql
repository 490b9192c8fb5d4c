-- Declaration-time analysis (README "Expressions and PostgreSQL aggregates"): key, event_time, group_by, filter and the aggregate
-- list analyzed by PostgreSQL against a source's row; which aggregates qualify, every refusal
-- with what is missing and an alternative, errors with positions in the user's text, and name
-- lookup that a caller's search_path cannot hijack.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

\set cols '[{"name": "user_id", "type": "text", "path": ["user", "id"]}, {"name": "price", "type": "numeric(10,2)", "path": ["price"]}, {"name": "qty", "type": "integer", "path": ["qty"]}, {"name": "status", "type": "integer", "path": ["status"]}, {"name": "ts", "type": "timestamp with time zone", "path": ["ts"]}, {"name": "ms", "type": "bigint", "path": ["ms"]}, {"name": "page", "type": "text", "path": ["page"]}, {"name": "ok", "type": "boolean", "path": ["ok"]}, {"name": "items", "type": "jsonb", "path": ["items"]}]'
\set a 'SELECT role, ordinal, name, type, detail->>''unit'' AS unit FROM stoatflow._analyze'
\set c 'SELECT name AS aggregate, type AS state, detail->>''transfn'' AS transfn, detail->>''combinefn'' AS combinefn, detail->>''serialfn'' AS serialfn, detail->>''finalfn'' AS finalfn, detail->>''initval'' AS initval, detail->>''transfn_strict'' AS strict FROM stoatflow._analyze'

-- internal: not executable by PUBLIC
SELECT has_function_privilege('public', 'stoatflow._analyze(jsonb, text, text, text, text, text, text)', 'EXECUTE');

-- the seed's aggregate list: expressions over aggregates, FILTER, default names
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL,
   'sum(price * qty) AS revenue, count(*) FILTER (WHERE status >= 500) AS errors,
    sum(price * qty) / nullif(count(*), 0) AS avg_order, count(*), sum(qty), max(kafka_offset)');
-- every call's state: built-ins with a state type that has send/receive, or internal with
-- serialization (avg over numeric); min over text; bool_and
:c(:'cols', 'session', NULL, NULL, NULL, NULL,
   'avg(price) AS avg_price, min(page) AS first_page, bool_and(ok) AS all_ok')
  WHERE role = 'call';
-- what the worker needs per call of the seed's list
:c(:'cols', 'tumbling', NULL, NULL, NULL, NULL,
   'sum(price * qty) AS revenue, count(*) FILTER (WHERE status >= 500) AS errors, sum(qty), max(kafka_offset)')
  WHERE role = 'call';
-- the analyzed trees are there for the worker (nodeToString, Vars over the row)
SELECT role, tree LIKE '{OPEXPR %' AS opexpr FROM stoatflow._analyze(:'cols', 'tumbling', NULL, NULL, NULL, NULL,
   'sum(price * qty) / nullif(count(*), 0) AS avg_order') WHERE role = 'aggregate';

-- key, event_time, filter, group_by
:a(:'cols', 'hopping', 'coalesce(user_id, kafka_key)', 'ts', 'lower(page) AS page, kafka_topic, status / 100 AS class',
   'page <> ''/p/0'' AND kafka_partition < 4', 'count(*)');
:a(:'cols', 'tumbling', NULL, 'ms', 'user_id', NULL, 'count(*)') WHERE role <> 'call';
:a(:'cols', 'tumbling', NULL, NULL, 'lower(page) AS p', NULL, 'count(*)') WHERE role = 'group_by';
:a(:'cols', 'tumbling', NULL, 'page', NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, 'ts::timestamp', NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, 'qty', 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, 'count(*) > 1', 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', 'user_id, page', NULL, NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', 'user_id AS u', NULL, NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, 'lower(page), status + 1', NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE

-- names (README "Semantics"): an item that is not one aggregate over one column or count(*) needs AS
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*), sum(price * qty)');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) FILTER (WHERE ok)');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*), count(*)');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, 'page AS device', NULL, 'count(*) AS device');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) AS window_start');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) AS key');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) AS "a_name_that_is_longer_than_sixty_three_bytes_and_would_be_truncated"');
\echo :LAST_ERROR_SQLSTATE

:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) AS a_name_that_is_longer_than_sixty_three_bytes_and_would_be_truncated');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) AS "x", sum(qty) /* a_comment_that_is_longer_than_sixty_three_bytes_and_is_just_fine */ AS "q"');
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) FILTER (WHERE page IN (''/a_string_that_is_longer_than_sixty_three_bytes_and_is_just_fine'', E''it\''s a_string'', $q$a_dollar_quoted_string_that_is_longer_than_sixty_three_bytes$q$)) AS c') WHERE role = 'aggregate';

-- errors carry positions in the user's text
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) AS n, sum(pricee * qty) AS revenue');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) AS n, sum(qty AS s');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) AS n, user_id');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, '');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, '*');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) FROM pg_authid');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, NULL);
\echo :LAST_ERROR_SQLSTATE

-- column references reach the row only, never a table
CREATE TABLE orders (amount integer);
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'sum(orders.amount) AS s');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'sum((SELECT amount FROM orders LIMIT 1)) AS s');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'sum((SELECT amount FROM public.orders LIMIT 1)) AS s');
\echo :LAST_ERROR_SQLSTATE

-- what a window cannot run: DISTINCT (hll), ordered-set aggregates (tdigest), ORDER BY in a
-- call, window functions, set-returning and volatile functions, nested aggregates
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'count(*) AS n, count(DISTINCT user_id) AS users');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'percentile_cont(0.95) WITHIN GROUP (ORDER BY price) AS p95');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'rank(5) WITHIN GROUP (ORDER BY qty) AS r');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'max(qty ORDER BY ts) AS m');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'sum(qty) OVER () AS w');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'generate_series(1, count(*)) AS g');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'sum(qty * random()) AS r');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'sum(count(*)) AS s');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', 'random()::text', NULL, NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE

-- states PostgreSQL 15 cannot store: internal without serialization functions
SELECT a.aggfnoid::regprocedure, a.aggtranstype::regtype, a.aggserialfn, a.aggcombinefn
  FROM pg_aggregate a
 WHERE a.aggfnoid IN ('string_agg(text, text)'::regprocedure, 'array_agg(anynonarray)'::regprocedure,
                      'jsonb_agg(anyelement)'::regprocedure)
 ORDER BY 1::text;
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'string_agg(page, '','') AS pages');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'array_agg(qty) AS qtys');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'jsonb_agg(items) AS items');
\echo :LAST_ERROR_SQLSTATE

-- user-defined aggregates: qualify when storable; sessions and sliding windows need a combine
CREATE FUNCTION public.add_qty(bigint, integer) RETURNS bigint LANGUAGE sql IMMUTABLE
  AS 'SELECT $1 + coalesce($2, 0)';
CREATE AGGREGATE public.qty_total(integer) (SFUNC = public.add_qty, STYPE = bigint, INITCOND = '0');
CREATE AGGREGATE public.qty_sum(integer) (SFUNC = public.add_qty, STYPE = bigint, INITCOND = '0',
  COMBINEFUNC = pg_catalog.int8pl);
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'public.qty_total(qty)');
:c(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'public.qty_total(qty)') WHERE role = 'call';
:a(:'cols', 'session', NULL, NULL, NULL, NULL, 'public.qty_total(qty) AS total');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'sliding', NULL, NULL, NULL, NULL, 'public.qty_total(qty) AS total');
\echo :LAST_ERROR_SQLSTATE
:a(:'cols', 'session', NULL, NULL, NULL, NULL, 'public.qty_sum(qty) AS total');
-- names outside pg_catalog are schema-qualified (the lookup path is pg_catalog, pg_temp)
:a(:'cols', 'tumbling', NULL, NULL, NULL, NULL, 'qty_sum(qty) AS total');
\echo :LAST_ERROR_SQLSTATE

-- a caller's search_path cannot hijack a built-in: a more specific operator and a same-named
-- function in the caller's own schema, first on its path, are not picked up
CREATE FUNCTION public.evil_mul(numeric, integer) RETURNS numeric LANGUAGE sql IMMUTABLE AS 'SELECT 0::numeric';
CREATE OPERATOR public.* (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = public.evil_mul);
CREATE FUNCTION public.lower(text) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT ''evil''';
SET search_path = public, pg_catalog;
SELECT price * qty AS hijacked_in_plain_sql, lower('A') AS hijacked_too
  FROM (VALUES (2.00::numeric(10,2), 3)) AS v(price, qty);
SELECT role,
       position(':opno ' || (SELECT o.oid FROM pg_catalog.pg_operator o
                              WHERE o.oprnamespace = 'public'::regnamespace AND o.oprname = '*') || ' ' IN tree) = 0
         AS not_evil_operator,
       position(':funcid ' || 'public.lower(text)'::regprocedure::oid || ' ' IN tree) = 0 AS not_evil_function,
       position(':funcid ' || 'pg_catalog.lower(text)'::regprocedure::oid || ' ' IN tree) > 0 AS builtin_lower
  FROM stoatflow._analyze(:'cols', 'tumbling', NULL, NULL, 'lower(page)', NULL, 'sum(price * qty) AS revenue')
 WHERE role IN ('group_by', 'aggregate');
-- asked for by name, it is used
SELECT role, position(':funcid ' || 'public.lower(text)'::regprocedure::oid || ' ' IN tree) > 0 AS evil_by_name
  FROM stoatflow._analyze(:'cols', 'tumbling', NULL, NULL, 'public.lower(page)', NULL, 'count(*)')
 WHERE role = 'group_by';
RESET search_path;

-- the columns as stoatflow.source stores them: anything else is refused
:a('{}', 'tumbling', NULL, NULL, NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a('[{"name": "x"}]', 'tumbling', NULL, NULL, NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a('[{"name": "x", "type": "no_such_type"}]', 'tumbling', NULL, NULL, NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a('[{"name": "kafka_key", "type": "text"}]', 'tumbling', NULL, NULL, NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE
:a('[]', 'tumbling', NULL, NULL, 'kafka_key', NULL, 'count(*) FILTER (WHERE kafka_headers ? ''trace'') AS traced');
:a('[]', 'rolling', NULL, NULL, NULL, NULL, 'count(*)');
\echo :LAST_ERROR_SQLSTATE

-- hll and tdigest (Debian: postgresql-15-hll, postgresql-15-tdigest), when installed
SELECT count(*) = 2 AS have_sketches FROM pg_available_extensions WHERE name IN ('hll', 'tdigest') \gset
\if :have_sketches
SET client_min_messages = warning;
CREATE EXTENSION hll;
CREATE EXTENSION tdigest;
RESET client_min_messages;
:c(:'cols', 'session', NULL, NULL, NULL, NULL,
   'public.hll_cardinality(public.hll_add_agg(public.hll_hash_text(user_id))) AS users,
    public.tdigest_percentile(qty, 100, 0.95) AS p95') WHERE role = 'call';
:a(:'cols', 'session', NULL, NULL, NULL, NULL,
   'public.hll_cardinality(public.hll_add_agg(public.hll_hash_text(user_id))) AS users,
    public.tdigest_percentile(qty, 100, 0.95) AS p95') WHERE role = 'aggregate';
\else
\echo 'skipped: the hll and tdigest extensions are not installed (postgresql-15-hll, postgresql-15-tdigest)'
\endif
-- Leave no hostile or test objects behind for the tests that follow.
DROP OPERATOR public.* (numeric, integer);
DROP FUNCTION public.evil_mul(numeric, integer), public.lower(text);
DROP AGGREGATE public.qty_total(integer), public.qty_sum(integer);
DROP FUNCTION public.add_qty(bigint, integer);
DROP TABLE orders;
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS hll;
DROP EXTENSION IF EXISTS tdigest;
RESET client_min_messages;
