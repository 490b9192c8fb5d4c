-- User code is a guest (README "Security"): an owner's expressions and aggregate support
-- functions run in one sandbox — the owner as current user, a security-restricted operation, a
-- GUC nest level rolled back on every exit — and never share a sandbox entry with another owner's
-- code. Hostile roles try to escape it through settings that outlive their calls; a transition
-- function that raises costs only its own aggregation one record (a dead letter naming the
-- aggregation and the function), its siblings fold the record.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
DROP ROLE IF EXISTS sf_tenant;
DROP ROLE IF EXISTS sf_victim;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
CREATE ROLE sf_tenant;
CREATE ROLE sf_victim;
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) TO sf_tenant, sf_victim;
CREATE SCHEMA tenant AUTHORIZATION sf_tenant;
GRANT USAGE ON SCHEMA tenant TO PUBLIC;
CREATE SCHEMA victim AUTHORIZATION sf_victim;

-- A superuser's source whose event time goes through a superuser's PL/pgSQL helper that calls
-- to_timestamp unqualified (so it resolves along whatever search_path is in force).
CREATE FUNCTION public.ts_of(secs double precision) RETURNS timestamptz LANGUAGE plpgsql IMMUTABLE
AS $$ BEGIN RETURN to_timestamp(secs); END $$;
SELECT stoatflow.create_source('esc', 'esc', '127.0.0.1:9092', key => 'u',
    event_time => 'public.ts_of(secs)', max_out_of_orderness => '0',
    columns => 'u text, secs double precision, v integer');
GRANT USAGE ON SCHEMA stoatflow_source TO sf_tenant, sf_victim;
GRANT SELECT ON stoatflow_source.esc TO sf_tenant, sf_victim;

-- The tenant: a to_timestamp of its own that would make it superuser if the superuser ran it,
-- and an aggregate whose transition function points search_path (session level, not local) and
-- TimeZone at things of its own.
SET ROLE sf_tenant;
CREATE FUNCTION tenant.to_timestamp(double precision) RETURNS timestamptz LANGUAGE plpgsql
AS $$ BEGIN EXECUTE 'ALTER ROLE sf_tenant SUPERUSER'; RETURN pg_catalog.to_timestamp($1); END $$;
CREATE FUNCTION tenant.leak(s integer, v integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'tenant, pg_catalog', false);
    PERFORM pg_catalog.set_config('TimeZone', 'Pacific/Kiritimati', false);
    PERFORM pg_catalog.set_config('application_name', 'tenant was here', false);
    RETURN s + v;
END $$;
CREATE AGGREGATE tenant.leaky(integer) (sfunc = tenant.leak, stype = integer, initcond = '0');
-- ... and a to_char that copies whatever the role running it can read into a table of its own
CREATE TABLE tenant.stolen (v text);
GRANT INSERT ON tenant.stolen TO PUBLIC;
CREATE FUNCTION tenant.to_char(timestamptz, text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO tenant.stolen SELECT v FROM victim.secret;
    RETURN pg_catalog.to_char($1, $2);
END $$;
SELECT stoatflow.create_aggregation('esc_tenant', 'esc', stoatflow.tumbling('1 minute'),
    'tenant.leaky(v) AS s', 'tenant.esc_tenant', group_by => 'u');
RESET ROLE;

-- The victim: a key that depends on TimeZone (the hour of the record in local time), computed by
-- the victim's own PL/pgSQL function, which also reads the victim's private table unqualified.
CREATE TABLE victim.secret (v text);
INSERT INTO victim.secret VALUES ('the victim''s secret');
ALTER TABLE victim.secret OWNER TO sf_victim;
SET ROLE sf_victim;
CREATE FUNCTION victim.hour_of(t timestamptz) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RETURN to_char(t, 'HH24'); END $$;
SELECT stoatflow.create_aggregation('esc_victim', 'esc', stoatflow.tumbling('1 minute'),
    'count(*) AS n, sum(v) AS total', 'victim.esc_victim', group_by => 'victim.hour_of(public.ts_of(secs)) AS hour');
RESET ROLE;

-- Twelve records over three batches (each process_records call is one batch of the worker).
CREATE FUNCTION esc_records(first integer, n integer) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_agg(jsonb_build_object('value',
        jsonb_build_object('u', 'u' || (i % 2), 'secs', 3600 * i + 1, 'v', i)) ORDER BY i)
      FROM generate_series(first, first + n - 1) i $$;
SELECT processed, dead_letters FROM stoatflow.process_records('esc', esc_records(0, 4));
SELECT processed, dead_letters FROM stoatflow.process_records('esc', esc_records(4, 4));
SELECT processed, dead_letters FROM stoatflow.process_records('esc', esc_records(8, 4));

-- nothing of the tenant's code ran as the superuser or as the victim, nor outlived its own calls
SELECT rolsuper AS tenant_is_superuser FROM pg_roles WHERE rolname = 'sf_tenant';
SELECT count(*) AS secrets_stolen FROM tenant.stolen;
SELECT current_setting('search_path') AS search_path, current_setting('TimeZone') AS timezone,
       current_setting('application_name') <> 'tenant was here' AS application_name_kept;
-- the tenant's sums are right; the victim's keys are the hours in the session's TimeZone (UTC),
-- never in the tenant's Pacific/Kiritimati (which would be 14 hours ahead)
SELECT key, window_start, s FROM tenant.esc_tenant ORDER BY window_start;
SELECT count(*) FILTER (WHERE hour = to_char(window_start, 'HH24')) AS victim_keys_right,
       count(*) AS victim_windows, sum(total) AS victim_total
  FROM victim.esc_victim;

-- A transition function that raises for one value: that record is a dead letter of its
-- aggregation only (aggregate_error, naming the aggregation and the function); the state before
-- it is kept (rebuilt from the committed state), the sibling folds every record.
SELECT stoatflow.create_source('boom', 'boom', '127.0.0.1:9092', key => 'u', event_time => 'ts',
    max_out_of_orderness => '0', columns => 'u text, ts bigint, v integer');
GRANT SELECT ON stoatflow_source.boom TO sf_tenant;
SET ROLE sf_tenant;
CREATE FUNCTION tenant.picky(s bigint, v integer) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF v = 13 THEN RAISE EXCEPTION 'thirteen is unlucky'; END IF;
    RETURN s + v;
END $$;
CREATE AGGREGATE tenant.picky_sum(integer) (sfunc = tenant.picky, stype = bigint, initcond = '0');
SELECT stoatflow.create_aggregation('boom_picky', 'boom', stoatflow.tumbling('1 minute'),
    'tenant.picky_sum(v) AS s, count(*) AS n', 'tenant.boom_picky', group_by => 'u');
SELECT stoatflow.create_aggregation('boom_sibling', 'boom', stoatflow.tumbling('1 minute'),
    'sum(v) AS s, count(*) AS n', 'tenant.boom_sibling', group_by => 'u');
RESET ROLE;
SELECT processed, dead_letters FROM stoatflow.process_records('boom', jsonb_build_array(
    jsonb_build_object('value', jsonb_build_object('u', 'a', 'ts', 1000, 'v', 1)),
    jsonb_build_object('value', jsonb_build_object('u', 'a', 'ts', 2000, 'v', 13)),
    jsonb_build_object('value', jsonb_build_object('u', 'a', 'ts', 3000, 'v', 5)),
    jsonb_build_object('value', jsonb_build_object('u', 'b', 'ts', 4000, 'v', 13)),
    jsonb_build_object('value', jsonb_build_object('u', 'b', 'ts', 5000, 'v', 2))));
SELECT key, s, n FROM tenant.boom_picky ORDER BY key;
SELECT key, s, n FROM tenant.boom_sibling ORDER BY key;
SELECT "offset", reason, detail FROM stoatflow.dead_letters WHERE source_name = 'boom' ORDER BY "offset";
SELECT aggregation_name, records_in, status, last_error FROM stoatflow.stats
 WHERE source_name = 'boom' ORDER BY 1;
-- the committed state is right: a second call folds on top of it
SELECT processed, dead_letters FROM stoatflow.process_records('boom', jsonb_build_array(
    jsonb_build_object('value', jsonb_build_object('u', 'a', 'ts', 6000, 'v', 10))));
SELECT key, s, n FROM tenant.boom_picky ORDER BY key;

-- One owner of user switches: only the sandbox calls SetUserIdAndSecContext (checked over the
-- sources by test/check_sandbox.sh); here, the settings it pins are what an owner's code sees.
SELECT name, setting FROM pg_settings WHERE name = 'stoatflow.user_code_timeout';

SELECT stoatflow.drop_source('esc', cascade => true);
SELECT stoatflow.drop_source('boom', cascade => true);
DROP SCHEMA tenant CASCADE;
DROP SCHEMA victim CASCADE;
DROP FUNCTION public.ts_of(double precision);
DROP FUNCTION esc_records(integer, integer);
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) FROM sf_tenant, sf_victim;
REVOKE ALL ON SCHEMA stoatflow_source FROM sf_tenant, sf_victim;
DROP ROLE sf_tenant;
DROP ROLE sf_victim;
