-- ALTER EXTENSION UPDATE from 0.2 re-creates the view stoatflow_source.<source> of every existing
-- source with the progress columns (README "Monitoring", "Upgrading"), through the function
-- create_source uses: the view stays what it was (owner, grants, comment, views built on it,
-- not a member of the extension) and gains records_per_second, lag_time, eta, progress_at last.
-- The sources are declared as 0.2's create_source does (its catalog row, then its view by 0.2's
-- _create_source_view), in a database of their own: no worker runs them.
SET client_min_messages = warning;
CREATE DATABASE stoatflow_svu;
CREATE ROLE svu_owner;
CREATE ROLE svu_reader;
RESET client_min_messages;

\c stoatflow_svu
SET client_min_messages = warning;
CREATE EXTENSION stoatflow VERSION '0.2';
RESET client_min_messages;
\set SHOW_CONTEXT never
-- one source of a role that is no superuser, one with a hostile name (quotes, a semicolon, spaces)
INSERT INTO stoatflow.source (source_name, topic, brokers, format, max_out_of_orderness_ms,
                              start_offset, kafka_options, created_by, kafka_options_masked, topics)
VALUES ('svu_src', 'svu_t', '127.0.0.1:9', 'json', 0, 'earliest', '{}', 'svu_owner', '{}', '{svu_t}'),
       ('svu "odd"; src', 'svu_t2', '127.0.0.1:9', 'json', 0, 'earliest', '{}', current_user::regrole,
        '{}', '{svu_t2}');
SELECT stoatflow._create_source_view(source_name, created_by) FROM stoatflow.source ORDER BY source_id;
-- the owner passes its source on (README "Security"); views are built on both
SET ROLE svu_owner;
GRANT USAGE ON SCHEMA stoatflow_source TO svu_reader;
GRANT SELECT ON stoatflow_source.svu_src TO svu_reader;
RESET ROLE;
CREATE VIEW svu_on_top AS SELECT partition, lag FROM stoatflow_source.svu_src;
CREATE VIEW svu_star AS SELECT * FROM stoatflow_source."svu ""odd""; src";
CREATE TABLE svu_before AS
SELECT c.relname, c.relacl::text AS acl, pg_get_userbyid(c.relowner) AS owner,
       obj_description(c.oid, 'pg_class') AS comment
  FROM pg_class c WHERE c.relnamespace = 'stoatflow_source'::regnamespace;
SELECT nspacl::text AS schema_acl_before FROM pg_namespace WHERE nspname = 'stoatflow_source' \gset
SELECT count(*) AS columns_before FROM information_schema.columns
 WHERE table_schema = 'stoatflow_source' AND table_name = 'svu_src';

ALTER EXTENSION stoatflow UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'stoatflow';

-- the new columns, last; the view's columns are those of stoatflow.sources but brokers
SELECT column_name, data_type FROM information_schema.columns
 WHERE table_schema = 'stoatflow_source' AND table_name = 'svu_src' ORDER BY ordinal_position;
SELECT c.relname,
       (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attnum > 0)
     = (SELECT array_agg(column_name::text ORDER BY column_name) FROM information_schema.columns
         WHERE table_schema = 'stoatflow' AND table_name = 'sources' AND column_name <> 'brokers')
       AS same_columns
  FROM pg_class c WHERE c.relnamespace = 'stoatflow_source'::regnamespace ORDER BY 1;
-- the same owner, grants and comment; still no member of the extension
SELECT b.relname, c.relacl::text AS acl, c.relacl::text IS NOT DISTINCT FROM b.acl AS same_grants,
       CASE WHEN c.relowner = current_user::regrole THEN 'the superuser'
            ELSE pg_get_userbyid(c.relowner) END AS owner,
       pg_get_userbyid(c.relowner) = b.owner AS same_owner,
       obj_description(c.oid, 'pg_class') = b.comment AS same_comment,
       NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                      AND d.objid = c.oid AND d.deptype = 'e') AS not_a_member
  FROM svu_before b JOIN pg_class c ON c.relname = b.relname
   AND c.relnamespace = 'stoatflow_source'::regnamespace ORDER BY 1;
SELECT nspacl::text = :'schema_acl_before' AS same_schema_acl FROM pg_namespace WHERE nspname = 'stoatflow_source';
-- the grantee reads the new columns; the views built on them still work
SET ROLE svu_reader;
SELECT source_name, records_per_second, lag_time, eta, progress_at FROM stoatflow_source.svu_src;
RESET ROLE;
SELECT * FROM svu_on_top;
SELECT source_name, status FROM svu_star;

-- a source declared after the upgrade: its view is no member either, and drop_source refuses
-- to drop a view that others are built on (cascade drops them too)
SELECT stoatflow.create_source('svu_new', 'svu_t3', '127.0.0.1:9', key => 'k', event_time => 'ts');
SELECT count(*) AS members FROM pg_depend d
 WHERE d.classid = 'pg_class'::regclass AND d.objid = 'stoatflow_source.svu_new'::regclass AND d.deptype = 'e';
SELECT stoatflow.drop_source('svu_src');
\echo :LAST_ERROR_SQLSTATE
SET client_min_messages = warning;
SELECT stoatflow.drop_source('svu_src', "cascade" => true);
SELECT stoatflow.drop_source('svu "odd"; src', "cascade" => true);
SELECT stoatflow.drop_source('svu_new');
RESET client_min_messages;
SELECT count(*) AS views_left FROM pg_class WHERE relnamespace = 'stoatflow_source'::regnamespace;

\c contrib_regression
SET client_min_messages = warning;
DROP DATABASE stoatflow_svu;
DROP ROLE svu_reader;
DROP ROLE svu_owner;
RESET client_min_messages;
