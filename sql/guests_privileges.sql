-- Who may aggregate a source (README "Security"): its owner (the role that created it),
-- superusers, and the roles the owner granted SELECT on the source's view
-- stoatflow_source.<source>. Privileges of PostgreSQL's own kind: GRANT, REVOKE, relacl.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
DROP ROLE IF EXISTS gp_alice;
DROP ROLE IF EXISTS gp_bob;
DROP ROLE IF EXISTS gp_carol;
RESET client_min_messages;
\set SHOW_CONTEXT never
CREATE ROLE gp_alice;
CREATE ROLE gp_bob;
CREATE ROLE gp_carol;
CREATE SCHEMA gp_alice_space AUTHORIZATION gp_alice;
CREATE SCHEMA gp_bob_space AUTHORIZATION gp_bob;
GRANT EXECUTE ON FUNCTION stoatflow.create_source(text, text, text, text, text, text, interval, interval,
    text, jsonb, text, jsonb, interval) TO gp_alice;
GRANT EXECUTE ON FUNCTION stoatflow.drop_source(text, boolean, boolean) TO gp_alice;
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text,
    interval, text, text, text) TO gp_alice, gp_bob, gp_carol;
GRANT EXECUTE ON FUNCTION stoatflow.drop_aggregation(text, boolean, boolean) TO gp_alice, gp_bob;

-- The schema: no privilege for PUBLIC, CREATE for its owner (the extension's) only.
SELECT n.nspowner = e.extowner AS owned_by_extension_owner,
       (SELECT count(*) FROM aclexplode(n.nspacl) a WHERE a.grantee = 0) AS public_privileges,
       (SELECT count(*) FROM aclexplode(n.nspacl) a
         WHERE a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner) AS others_with_create
  FROM pg_namespace n, pg_extension e WHERE n.nspname = 'stoatflow_source' AND e.extname = 'stoatflow';

-- alice's sources; each gets its view, owned by her ("PageViews" needs quotes)
SET ROLE gp_alice;
SELECT stoatflow.create_source('pageviews', 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0', kafka_options => '{"sasl.password": "hunter2"}');
SELECT stoatflow.create_source('PageViews', 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0');
RESET ROLE;
SELECT c.relname, c.relkind, c.relowner::regrole, c.reloptions, c.relacl
  FROM pg_class c WHERE c.relnamespace = 'stoatflow_source'::regnamespace ORDER BY c.relname COLLATE "C";
-- alice may name her views and pass that on: USAGE on the schema WITH GRANT OPTION, no CREATE
SELECT a.grantee::regrole, a.privilege_type, a.is_grantable
  FROM pg_namespace n, aclexplode(n.nspacl) a
 WHERE n.nspname = 'stoatflow_source' AND a.grantee <> n.nspowner ORDER BY 1, 2;
-- the view shows its source's rows of stoatflow.sources, kafka_options masked
SET ROLE gp_alice;
SELECT source_name, topic, partition, committed_offset, lag, kafka_options FROM stoatflow_source.pageviews;
SELECT source_name FROM stoatflow_source."PageViews";
-- her own source she aggregates without any grant
SELECT stoatflow.create_aggregation('alice_pv', 'pageviews', stoatflow.tumbling('10 seconds'), 'count(*) AS n',
    'gp_alice_space.pv');
RESET ROLE;

-- bob may call create_aggregation, but not over alice's source: 42501, and the hint says what
-- alice runs to allow it
SET ROLE gp_bob;
SELECT stoatflow.create_aggregation('bob_pv', 'pageviews', stoatflow.tumbling('10 seconds'), 'count(*) AS n',
    'gp_bob_space.pv');
\echo :LAST_ERROR_SQLSTATE
-- he cannot read the view, nor create anything in the schema
SELECT count(*) FROM stoatflow_source.pageviews;
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW stoatflow_source.bobs AS SELECT 1 AS x;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- alice runs the hint's GRANTs; bob aggregates
SET ROLE gp_alice;
GRANT USAGE ON SCHEMA stoatflow_source TO gp_bob; GRANT SELECT ON stoatflow_source.pageviews TO gp_bob;
RESET ROLE;
SELECT c.relname, c.relacl FROM pg_class c
 WHERE c.relnamespace = 'stoatflow_source'::regnamespace ORDER BY c.relname COLLATE "C";
SET ROLE gp_bob;
SELECT stoatflow.create_aggregation('bob_pv', 'pageviews', stoatflow.tumbling('10 seconds'), 'count(*) AS n',
    'gp_bob_space.pv');
-- with SELECT on the view he sees that source only
SELECT source_name, partition FROM stoatflow_source.pageviews;
CREATE VIEW gp_bob_space.pv_lag AS SELECT partition, lag FROM stoatflow_source.pageviews;
-- the other source stays alice's (its hint quotes the name)
SELECT stoatflow.create_aggregation('bob_pv2', 'PageViews', stoatflow.tumbling('10 seconds'), 'count(*) AS n',
    'gp_bob_space.pv2');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM stoatflow_source."PageViews";
\echo :LAST_ERROR_SQLSTATE
-- hostile: SELECT is all he got; the view is not his to change, pass on, or replace
ALTER VIEW stoatflow_source.pageviews RENAME TO "PageViews2";
\echo :LAST_ERROR_SQLSTATE
ALTER VIEW stoatflow_source.pageviews SET (security_barrier = false);
\echo :LAST_ERROR_SQLSTATE
DROP VIEW stoatflow_source.pageviews;
\echo :LAST_ERROR_SQLSTATE
CREATE OR REPLACE VIEW stoatflow_source.pageviews AS SELECT * FROM stoatflow.sources;
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE stoatflow_source.bobs (x int);
\echo :LAST_ERROR_SQLSTATE
GRANT SELECT ON stoatflow_source.pageviews TO gp_carol;
RESET ROLE;
SET ROLE gp_carol;
SELECT stoatflow.create_aggregation('carol_pv', 'pageviews', stoatflow.tumbling('10 seconds'), 'count(*) AS n',
    'public.carol_pv');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- the owner of a source creates nothing in the schema either, nor redefines her view
SET ROLE gp_alice;
CREATE OR REPLACE VIEW stoatflow_source.pageviews AS SELECT * FROM stoatflow.sources;
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE stoatflow_source.alices (x int);
\echo :LAST_ERROR_SQLSTATE

-- alice revokes: bob's next aggregation is refused, the one he has keeps running
REVOKE SELECT ON stoatflow_source.pageviews FROM gp_bob;
RESET ROLE;
SET ROLE gp_bob;
SELECT stoatflow.create_aggregation('bob_pv3', 'pageviews', stoatflow.tumbling('1 minute'), 'count(*) AS n',
    'gp_bob_space.pv3');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT aggregation_name, owner FROM stoatflow.aggregation ORDER BY aggregation_name;
SELECT processed FROM stoatflow.process_records('pageviews', '[{"value": {"user": "u", "ts": 1000}}]');
SELECT key, n FROM gp_bob_space.pv;

-- a superuser aggregates any source
SELECT stoatflow.create_aggregation('su_pv', 'PageViews', stoatflow.tumbling('10 seconds'), 'count(*) AS n',
    'public.su_pv');

-- drop_source drops the view; views others built on it only with cascade
SET ROLE gp_bob;
SELECT stoatflow.drop_aggregation('bob_pv', drop_sink => true);
RESET ROLE;
SET ROLE gp_alice;
SELECT stoatflow.drop_aggregation('alice_pv', drop_sink => true);
SELECT stoatflow.drop_source('pageviews');
\echo :LAST_ERROR_SQLSTATE
SELECT to_regclass('stoatflow_source.pageviews') IS NOT NULL AS view_kept;
SELECT stoatflow.drop_source('pageviews', cascade => true);
RESET ROLE;
SELECT to_regclass('stoatflow_source.pageviews') AS view_left, to_regclass('gp_bob_space.pv_lag') AS bobs_view_left;
SELECT stoatflow.drop_aggregation('su_pv', drop_sink => true);
SET ROLE gp_alice;
SELECT stoatflow.drop_source('PageViews');
RESET ROLE;
SELECT count(*) AS views_left FROM pg_class c WHERE c.relnamespace = 'stoatflow_source'::regnamespace;
-- with her last source alice's USAGE on the schema went, and the USAGE she gave bob
SELECT r AS role, has_schema_privilege(r, 'stoatflow_source', 'USAGE') AS usage
  FROM unnest(ARRAY['gp_alice', 'gp_bob']) r;

DROP SCHEMA gp_alice_space CASCADE;
DROP SCHEMA gp_bob_space CASCADE;
REVOKE ALL ON FUNCTION stoatflow.create_source(text, text, text, text, text, text, interval, interval,
    text, jsonb, text, jsonb, interval) FROM gp_alice;
REVOKE ALL ON FUNCTION stoatflow.drop_source(text, boolean, boolean) FROM gp_alice;
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text,
    interval, text, text, text) FROM gp_alice, gp_bob, gp_carol;
REVOKE ALL ON FUNCTION stoatflow.drop_aggregation(text, boolean, boolean) FROM gp_alice, gp_bob;
DROP ROLE gp_alice;
DROP ROLE gp_bob;
DROP ROLE gp_carol;
