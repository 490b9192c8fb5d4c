-- Extensions' aggregates in windows (README "Expressions and PostgreSQL aggregates"): distinct users per 5 minutes with hll, p95
-- latency per minute with tdigest (Debian: postgresql-15-hll, postgresql-15-tdigest; skipped
-- with a message only where those packages are not installed). Their states are internal,
-- stored through serialfunc/deserialfunc and merged through combinefunc (sessions); the
-- results are compared with PostgreSQL's GROUP BY over the same records — tdigest, whose
-- result depends on the order values are folded, within the spread of the same aggregate over
-- three different orders.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
SELECT count(*) = 2 AS have_sketches FROM pg_available_extensions WHERE name IN ('hll', 'tdigest') \gset
\if :have_sketches
SET client_min_messages = warning;
CREATE EXTENSION hll;
CREATE EXTENSION tdigest;
RESET client_min_messages;

SELECT stoatflow.create_source('web', 'web', '127.0.0.1:9092', event_time => 'ts',
    max_out_of_orderness => '0',
    columns => 'user_id text, ts bigint, latency_ms double precision, page text');
SELECT stoatflow.create_aggregation('users_5m', 'web', stoatflow.tumbling('5 minutes'),
    'public.hll_cardinality(public.hll_add_agg(public.hll_hash_text(user_id))) AS users, count(*) AS views',
    'users_5m', group_by => 'page');
SELECT stoatflow.create_aggregation('p95_1m', 'web', stoatflow.tumbling('1 minute'),
    'public.tdigest_percentile(latency_ms, 100, 0.95) AS p95, count(latency_ms) AS n',
    'p95_1m', group_by => 'page');
-- sessions merge hll states (hll_union_internal) as windows join
SELECT stoatflow.create_aggregation('users_session', 'web', stoatflow.session('30 seconds'),
    'public.hll_cardinality(public.hll_add_agg(public.hll_hash_text(user_id))) AS users, count(*) AS views',
    'users_session', group_by => 'page');
SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_attribute a WHERE a.attrelid = 'p95_1m'::regclass AND a.attnum > 0 ORDER BY a.attnum;

-- 4,000 records over 20 minutes, 3 pages, 300 users, latencies with NULLs, in time order;
-- fed in four calls (each restores the states from their serialized form)
SELECT setseed(0.7);
CREATE TABLE web_records AS
SELECT i AS seq, 'u' || (random() * 300)::int AS user_id, 1700000000000 + i * 300 AS ts,
       CASE WHEN random() < 0.05 THEN NULL ELSE round((random() * random() * 2000)::numeric, 3)::float8 END AS latency_ms,
       '/p/' || (random() * 2)::int AS page
  FROM generate_series(1, 4000) i;
SELECT sum(processed) AS processed, sum(dead_letters) AS dead_letters
  FROM generate_series(0, 3) part,
       LATERAL stoatflow.process_records('web', (
           SELECT jsonb_agg(jsonb_build_object('value', to_jsonb(r) - 'seq') ORDER BY r.seq)
             FROM web_records r WHERE r.seq > part * 1000 AND r.seq <= (part + 1) * 1000)) p;

-- distinct users: exactly what hll gives over the same rows in SQL
SELECT count(*) AS windows,
       count(*) FILTER (WHERE o.users IS DISTINCT FROM s.users OR o.views IS DISTINCT FROM s.views) AS mismatches
  FROM (SELECT page AS key, to_timestamp(((ts / 300000) * 300000) / 1000.0) AS window_start,
               public.hll_cardinality(public.hll_add_agg(public.hll_hash_text(user_id))) AS users,
               count(*) AS views
          FROM web_records GROUP BY 1, 2) o
  FULL JOIN users_5m s USING (key, window_start);
-- and close to the true distinct count (hll's error is ~1-2 % at this size)
SELECT bool_and(abs(s.users - o.exact) <= 0.05 * o.exact) AS within_5_percent
  FROM users_5m s JOIN (SELECT page AS key, to_timestamp(((ts / 300000) * 300000) / 1000.0) AS window_start,
                               count(DISTINCT user_id) AS exact FROM web_records GROUP BY 1, 2) o
       USING (key, window_start);

-- p95 per minute: within the spread of tdigest over three input orders
WITH o AS (
    SELECT page AS key, to_timestamp(((ts / 60000) * 60000) / 1000.0) AS window_start,
           public.tdigest_percentile(latency_ms, 100, 0.95 ORDER BY seq) AS p_seq,
           public.tdigest_percentile(latency_ms, 100, 0.95 ORDER BY seq DESC) AS p_rev,
           public.tdigest_percentile(latency_ms, 100, 0.95 ORDER BY md5(seq::text)) AS p_mix,
           count(latency_ms) AS n
      FROM web_records GROUP BY 1, 2)
SELECT count(*) AS windows,
       count(*) FILTER (WHERE o.n IS DISTINCT FROM s.n
                           OR s.p95 < least(p_seq, p_rev, p_mix) - 1e-12 * abs(s.p95)
                           OR s.p95 > greatest(p_seq, p_rev, p_mix) + 1e-12 * abs(s.p95)) AS outside_spread
  FROM o FULL JOIN p95_1m s USING (key, window_start);
-- and an estimate of the 95th percentile: between the true 90th and 99th
SELECT bool_and(s.p95 BETWEEN o.p90 AND o.p99) AS p95_between_p90_and_p99
  FROM p95_1m s JOIN (SELECT page AS key, to_timestamp(((ts / 60000) * 60000) / 1000.0) AS window_start,
                             percentile_disc(0.90) WITHIN GROUP (ORDER BY latency_ms) AS p90,
                             percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ms) AS p99
                        FROM web_records GROUP BY 1, 2) o USING (key, window_start);

-- sessions: every page is one session (records every 300 ms), its users counted over merges
SELECT key, users = (SELECT public.hll_cardinality(public.hll_add_agg(public.hll_hash_text(user_id)))
                       FROM web_records r WHERE r.page = s.key) AS users_match,
       views = (SELECT count(*) FROM web_records r WHERE r.page = s.key) AS views_match
  FROM users_session s ORDER BY key;

-- the sketches' states are stored serialized in the segment tables: window_state finalizes them
SELECT count(*) > 0 AS has_open_windows, bool_and(users > 0) AS finalized
  FROM stoatflow.window_state('users_5m', NULL::users_5m);

SELECT stoatflow.drop_source('web', "cascade" => true);
DROP TABLE users_5m, p95_1m, users_session, web_records;
DROP EXTENSION hll;
DROP EXTENSION tdigest;
\else
\echo 'skipped: the hll and tdigest extensions are not installed (postgresql-15-hll, postgresql-15-tdigest)'
\endif
