-- Safety inside the user's database (README "Security"): hostile roles, tables and records. Each block is
-- an attack or a careless change, and the assertion that nothing escalated, nothing crashed
-- and only the aggregation concerned was affected. The commits are driven by process_records,
-- which runs the worker's own commit code in this backend (as a superuser, like the worker).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
DROP ROLE IF EXISTS sf_mallory;
DROP ROLE IF EXISTS sf_reader;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
CREATE ROLE sf_mallory;
CREATE ROLE sf_reader;
CREATE SCHEMA mallory AUTHORIZATION sf_mallory;
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) TO sf_mallory;
GRANT EXECUTE ON FUNCTION stoatflow.drop_aggregation(text, boolean, boolean) TO sf_mallory;
CREATE FUNCTION rec(u text, ts bigint, amount numeric DEFAULT 1) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('value', jsonb_build_object('user', u, 'ts', ts, 'amount', amount)) $$;
SELECT stoatflow.create_source('safe', 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0', future_limit => NULL);
-- (the source's owner lets mallory aggregate it: README "Security")
GRANT SELECT ON stoatflow_source.safe TO sf_mallory;

------------------------------------------------------------------------------------------
-- 1. A sink trigger that redirects search_path to shadow now() with a function that grants
--    superuser when a superuser runs it. The trigger runs as mallory in a security-restricted
--    operation, and the worker's SQL is pinned and qualified: nothing of hers runs as superuser.
------------------------------------------------------------------------------------------
SET ROLE sf_mallory;
CREATE FUNCTION mallory.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE sf_mallory SUPERUSER';
    END IF;
    RETURN pg_catalog.now();
END $$;
CREATE FUNCTION mallory.hijack() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'mallory, pg_catalog', false);
    RETURN NEW;
END $$;
SELECT stoatflow.create_aggregation('m_esc', 'safe', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'mallory.esc');
CREATE TRIGGER hijack BEFORE INSERT OR UPDATE ON mallory.esc FOR EACH ROW EXECUTE FUNCTION mallory.hijack();
RESET ROLE;
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('a', 1000), rec('a', 2000)));
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('a', 12000)));
SELECT rolsuper AS mallory_is_superuser FROM pg_roles WHERE rolname = 'sf_mallory';
SELECT current_setting('search_path') AS my_search_path;
SELECT key, n, final FROM mallory.esc ORDER BY window_start;

------------------------------------------------------------------------------------------
-- 2. The CVE-2018-1058 pattern against a SECURITY DEFINER function executable by PUBLIC: an
--    operator and a function in mallory's schema, first on her search_path. Every definer
--    function pins search_path in its definition.
------------------------------------------------------------------------------------------
SET ROLE sf_mallory;
CREATE FUNCTION mallory.texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE sf_mallory SUPERUSER';
    END IF;
    RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
CREATE OPERATOR mallory.= (LEFTARG = text, RIGHTARG = text, FUNCTION = mallory.texteq);
SET search_path = mallory, pg_catalog;
SELECT stoatflow.wait_caught_up('safe', '100 milliseconds');
SELECT count(*) >= 0 AS read_stats FROM stoatflow.stats;
RESET search_path;
RESET ROLE;
SELECT rolsuper AS mallory_is_superuser FROM pg_roles WHERE rolname = 'sf_mallory';
-- every SECURITY DEFINER function of the extension pins search_path
SELECT p.oid::regprocedure AS definer_without_search_path
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'stoatflow'
 WHERE p.prosecdef AND NOT coalesce(p.proconfig::text[] && ARRAY['search_path=pg_catalog, pg_temp'], false);
-- what PUBLIC may execute: the public functions only, never an internal helper
SELECT p.oid::regprocedure AS executable_by_public
  FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'stoatflow'
 WHERE has_function_privilege('sf_reader', p.oid, 'EXECUTE')
 ORDER BY p.oid::regprocedure::text;

------------------------------------------------------------------------------------------
-- 3. Code the worker runs as an aggregation's owner may not call stoatflow at all: inside a
--    security-restricted operation its idea of "the caller" would be the worker's superuser.
------------------------------------------------------------------------------------------
SET ROLE sf_mallory;
CREATE FUNCTION mallory.sneak() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM stoatflow.create_aggregation('m_stolen', 'safe', stoatflow.tumbling('1 minute'), 'count(*)', 'public.stolen');
    RETURN NEW;
END $$;
SELECT stoatflow.create_aggregation('m_sneak', 'safe', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'mallory.sneak');
CREATE TRIGGER sneak BEFORE INSERT ON mallory.sneak FOR EACH ROW EXECUTE FUNCTION mallory.sneak();
RESET ROLE;
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('b', 13000)));
SELECT count(*) AS stolen_aggregations FROM stoatflow.aggregation WHERE aggregation_name = 'm_stolen';
SELECT status, last_error FROM stoatflow.stats WHERE aggregation_name = 'm_sneak';
-- the failing sink held back nothing else: m_esc got the same record
SELECT key, n FROM mallory.esc WHERE key = 'b';
SET ROLE sf_mallory;
SELECT stoatflow.drop_aggregation('m_sneak', drop_sink => true);
RESET ROLE;

------------------------------------------------------------------------------------------
-- 4. window_state shows what SELECT shows: with row-level security it refuses.
------------------------------------------------------------------------------------------
SET ROLE sf_mallory;
GRANT USAGE ON SCHEMA mallory TO sf_reader;
GRANT SELECT ON mallory.esc TO sf_reader;
ALTER TABLE mallory.esc ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_a ON mallory.esc FOR SELECT TO sf_reader USING (key = 'a');
RESET ROLE;
SET ROLE sf_reader;
SELECT DISTINCT key FROM mallory.esc ORDER BY 1;
SELECT key FROM stoatflow.window_state('m_esc', NULL::mallory.esc);
\echo :LAST_ERROR_SQLSTATE
-- stats and sources are readable by any role
SELECT aggregation_name, status FROM stoatflow.stats WHERE aggregation_name = 'm_esc';
SELECT DISTINCT source_name FROM stoatflow.sources WHERE source_name = 'safe';
RESET ROLE;

------------------------------------------------------------------------------------------
-- 5. kafka_options never runs code; file options need file-reading privileges.
------------------------------------------------------------------------------------------
GRANT EXECUTE ON FUNCTION stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb, text, jsonb, interval) TO sf_mallory;
SET ROLE sf_mallory;
SELECT stoatflow.create_source('evil1', 'events', '127.0.0.1:9092', kafka_options => '{"plugin.library.paths": "/tmp/evil.so"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('evil2', 'events', '127.0.0.1:9092', kafka_options => '{"sasl.kerberos.kinit.cmd": "touch /tmp/pwned"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('evil3', 'events', '127.0.0.1:9092', kafka_options => '{"ssl.ca.location": "/etc/passwd"}');
\echo :LAST_ERROR_SQLSTATE
-- her own source she may drop; a source carrying others' aggregations she may not cascade
SELECT stoatflow.create_source('mallorys', 'events', '127.0.0.1:9092');
RESET ROLE;
SELECT stoatflow.create_source('evil4', 'events', '127.0.0.1:9092', kafka_options => '{"plugin.library.paths": "/tmp/evil.so"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('files_ok', 'events', '127.0.0.1:9092', kafka_options => '{"ssl.ca.location": "/etc/ssl/certs"}');
SELECT stoatflow.drop_source('files_ok');
GRANT EXECUTE ON FUNCTION stoatflow.drop_source(text, boolean, boolean) TO sf_mallory;
SELECT stoatflow.create_aggregation('on_mallorys', 'mallorys', stoatflow.tumbling('1 minute'), 'count(*)', 'public.on_mallorys');
SET ROLE sf_mallory;
SELECT stoatflow.drop_source('safe', cascade => true);
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_source('mallorys', cascade => true);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT stoatflow.drop_aggregation('on_mallorys', drop_sink => true);
SET ROLE sf_mallory;
SELECT stoatflow.drop_source('mallorys');
RESET ROLE;
SELECT count(*) AS aggregations_left FROM stoatflow.aggregation a JOIN stoatflow.source s USING (source_id)
 WHERE s.source_name = 'safe';

------------------------------------------------------------------------------------------
-- 6. Names PostgreSQL would truncate are refused, never truncated.
------------------------------------------------------------------------------------------
SELECT stoatflow.create_aggregation('longname', 'safe', stoatflow.tumbling('10 seconds'), 'count(*) AS n',
    'public.' || repeat('s', 64));
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('longcol', 'safe', stoatflow.tumbling('10 seconds'),
    'count(*) AS ' || repeat('c', 64), 'public.longcol');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation(repeat('a', 64), 'safe', stoatflow.tumbling('10 seconds'), 'count(*)', 'public.x');
\echo :LAST_ERROR_SQLSTATE

------------------------------------------------------------------------------------------
-- 7. A reserved word as a column name: quoted everywhere, rewrites included.
------------------------------------------------------------------------------------------
SELECT stoatflow.create_aggregation('kw', 'safe', stoatflow.tumbling('10 seconds'),
    'count(*) AS "order", sum(amount) AS "end", max(amount) AS "user"', 'public.kw');
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('k', 21000, 5)));
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('k', 22000, 7)));
SELECT key, "order", "end", "user", final FROM public.kw ORDER BY window_start;

------------------------------------------------------------------------------------------
-- 8. ALTER TABLE under a running aggregation: a clear error on that aggregation, no crash,
--    never a value in a column of another type; repaired, it converges (resync_sink).
------------------------------------------------------------------------------------------
SELECT stoatflow.create_aggregation('alt', 'safe', stoatflow.tumbling('10 seconds'),
    'count(*) AS n, sum(amount) AS total', 'public.alt');
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('x', 31000, 1)));
ALTER TABLE public.alt ALTER COLUMN n TYPE text;
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('x', 32000, 1), rec('y', 41000, 1)));
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'alt';
ALTER TABLE public.alt ALTER COLUMN n TYPE bigint USING n::bigint;
ALTER TABLE public.alt ALTER COLUMN total TYPE integer;
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('y', 42000, 1)));
SELECT status, last_error FROM stoatflow.stats WHERE aggregation_name = 'alt';
SELECT key, n, total FROM public.alt ORDER BY key, window_start;
ALTER TABLE public.alt ALTER COLUMN total TYPE numeric;
ALTER TABLE public.alt DROP COLUMN n;
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('y', 43000, 1)));
SELECT status, last_error FROM stoatflow.stats WHERE aggregation_name = 'alt';
ALTER TABLE public.alt ADD COLUMN n bigint;
ALTER TABLE public.alt ADD COLUMN note text NOT NULL DEFAULT 'x';
ALTER TABLE public.alt ALTER COLUMN note DROP DEFAULT;
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('y', 44000, 1), rec('w', 44000, 1)));
SELECT status, last_error FROM stoatflow.stats WHERE aggregation_name = 'alt';
ALTER TABLE public.alt DROP COLUMN note;
SELECT processed FROM stoatflow.process_records('safe', '[]');
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'alt';
-- the column dropped above lost its values: resync_sink rewrites every window from the state
SELECT stoatflow.resync_sink('alt') AS rewritten;
SELECT key, n, total, final FROM public.alt ORDER BY key, window_start;
-- dropped and re-created under the same name: found again by name
DROP TABLE public.alt;
SELECT processed FROM stoatflow.process_records('safe', jsonb_build_array(rec('z', 45000, 1)));
SELECT status, last_error FROM stoatflow.stats WHERE aggregation_name = 'alt';
CREATE TABLE public.alt (key text, window_start timestamptz, window_end timestamptz, n bigint,
    total numeric, event_time timestamptz, final boolean, PRIMARY KEY (key, window_start));
SELECT processed FROM stoatflow.process_records('safe', '[]');
SELECT stoatflow.resync_sink('alt') AS rewritten;
SELECT key, n, total, final FROM public.alt ORDER BY key, window_start;
-- TRUNCATE, then resync_sink: every window back
TRUNCATE public.alt;
SELECT stoatflow.resync_sink('alt') AS rewritten;
SELECT key, n, total, final FROM public.alt ORDER BY key, window_start;
-- only the owner may resync
GRANT EXECUTE ON FUNCTION stoatflow.resync_sink(text) TO sf_mallory;
SET ROLE sf_mallory;
SELECT stoatflow.resync_sink('alt');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

------------------------------------------------------------------------------------------
-- 9. Records built to break it: a long key, a date far in the future, huge integers.
------------------------------------------------------------------------------------------
SELECT stoatflow.create_source('recs', 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('recs_a', 'recs', stoatflow.tumbling('10 seconds'),
    'count(*) AS n, sum(amount) AS total', 'public.recs_a');
SELECT * FROM stoatflow.process_records('recs', jsonb_build_array(rec('ok', 1000, 1),
    rec(repeat('k', 3000), 1500, 1), rec('ok', 2000, 2)));
SELECT * FROM stoatflow.process_records('recs', '[{"value": {"user": "ok", "ts": "9999-01-01T00:00:00Z", "amount": 1}},
    {"value": {"user": "ok", "ts": "3000-01-01T00:00:00Z", "amount": 1}},
    {"value": {"user": "ok", "ts": 2500, "amount": 1180591620717411303424}},
    {"value": {"user": "ok", "ts": 2600, "amount": 18446744073709551617}},
    {"value": {"user": "ok", "ts": 2700, "amount": 99999999999999999999999999999999999999}},
    {"value": {"user": "ok", "ts": 2800, "amount": 99999999999999999999999999999999999999}},
    {"value": {"user": "ok", "ts": 2900, "amount": 999999999999999999999999999999999999999}}]');
SELECT reason, left(split_part(detail, ' is ', 1), 60) AS detail FROM stoatflow.dead_letters WHERE source_name = 'recs' ORDER BY "offset";
SELECT key, n, total, total = 3 + 1180591620717411303424 + 18446744073709551617
    + 2 * 99999999999999999999999999999999999999::numeric AS exact FROM public.recs_a;
SELECT watermark FROM stoatflow.stats WHERE aggregation_name = 'recs_a';
-- one window per record is bounded: hopping refuses more than the documented 1,000
SELECT stoatflow.hopping('1 minute', '1 millisecond');
\echo :LAST_ERROR_SQLSTATE
SELECT (stoatflow.hopping('1 day', '2 minutes')).kind;

-- windows that opened and closed within one commit have state too: window_state shows them
SELECT processed FROM stoatflow.process_records('recs', jsonb_build_array(rec('oc', 3000), rec('oc', 25000)));
SELECT key, n, total, final FROM stoatflow.window_state('recs_a', NULL::public.recs_a) ORDER BY window_start, key;
-- monitoring never fails because a segment table is gone (dropped by expiry while read)
SELECT format('DROP TABLE stoatflow_state.%I', relname) AS drop_segment
  FROM stoatflow.segment g JOIN stoatflow.aggregation a USING (aggregation_id)
 WHERE a.aggregation_name = 'recs_a' LIMIT 1 \gset
:drop_segment;
SELECT live_segments, state_bytes FROM stoatflow.stats WHERE aggregation_name = 'recs_a';
SET client_min_messages = warning;
SELECT stoatflow.drop_source('recs', cascade => true);
RESET client_min_messages;
SELECT stoatflow.drop_source('safe', cascade => true);
DROP TABLE public.recs_a, public.kw, public.alt;
DROP SCHEMA mallory CASCADE;
DROP FUNCTION rec(text, bigint, numeric);
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) FROM sf_mallory;
REVOKE ALL ON FUNCTION stoatflow.drop_aggregation(text, boolean, boolean) FROM sf_mallory;
REVOKE ALL ON FUNCTION stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb, text, jsonb, interval) FROM sf_mallory;
REVOKE ALL ON FUNCTION stoatflow.drop_source(text, boolean, boolean) FROM sf_mallory;
REVOKE ALL ON FUNCTION stoatflow.resync_sink(text) FROM sf_mallory;
DROP ROLE sf_mallory;
DROP ROLE sf_reader;
