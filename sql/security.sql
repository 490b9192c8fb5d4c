-- Security (README "Security"): source functions are superuser-only unless granted; secrets in
-- kafka_options are unreadable by PUBLIC and masked in views; an aggregation writes its
-- sink as the role that created it, so nobody gains write access through stoatflow.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
DROP ROLE IF EXISTS sf_alice;
DROP ROLE IF EXISTS sf_bob;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
CREATE ROLE sf_alice;
CREATE ROLE sf_bob;
CREATE SCHEMA alice_space AUTHORIZATION sf_alice;
GRANT USAGE ON SCHEMA alice_space TO sf_bob;

SELECT stoatflow.create_source('secure', 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0',
    kafka_options => '{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                       "sasl.username": "svc", "sasl.password": "hunter2", "ssl.key.password": "k3y"}');

-- PUBLIC may not create or drop sources, nor read their definitions
SET ROLE sf_alice;
SELECT stoatflow.create_source('mine', 'events', '127.0.0.1:9092');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.drop_source('secure');
\echo :LAST_ERROR_SQLSTATE
SELECT kafka_options FROM stoatflow.source;
\echo :LAST_ERROR_SQLSTATE
-- the view shows the options with every secret masked
SELECT source_name, kafka_options FROM stoatflow.sources;
SELECT count(*) AS secrets_visible FROM stoatflow.sources WHERE kafka_options::text ~ 'hunter2|k3y';
-- testing tools and aggregations are not for PUBLIC either
SELECT stoatflow.process_records('secure', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_aggregation('a_alice', 'secure', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'alice_space.counts');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- granted, alice may declare aggregations: the sink is created as hers
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) TO sf_alice, sf_bob;
GRANT EXECUTE ON FUNCTION stoatflow.drop_aggregation(text, boolean, boolean) TO sf_alice, sf_bob;
-- (and the source's owner lets her aggregate it: README "Security")
GRANT SELECT ON stoatflow_source.secure TO sf_alice;
SET ROLE sf_alice;
SELECT stoatflow.create_aggregation('a_alice', 'secure', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'alice_space.counts');
-- but not in a schema where she may not create tables
SELECT stoatflow.create_aggregation('a_alice2', 'secure', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'public.alice_counts');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT c.relname, c.relowner::regrole FROM pg_class c WHERE c.oid = 'alice_space.counts'::regclass;
SELECT aggregation_name, owner FROM stoatflow.aggregation;

-- bob owns a table alice may only read: she cannot make stoatflow write into it
CREATE TABLE public.bob_counts (key text, window_start timestamptz, window_end timestamptz, n bigint,
    event_time timestamptz, final boolean, PRIMARY KEY (key, window_start));
ALTER TABLE public.bob_counts OWNER TO sf_bob;
SET ROLE sf_bob;
GRANT SELECT ON public.bob_counts TO sf_alice;
RESET ROLE;
SET ROLE sf_alice;
SELECT stoatflow.create_aggregation('a_alice3', 'secure', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'public.bob_counts');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- with write access granted she can; when bob takes it back, the sink write fails as her,
-- although the pipeline runs as a superuser
SET ROLE sf_bob;
GRANT INSERT, UPDATE, DELETE ON public.bob_counts TO sf_alice;
RESET ROLE;
SET ROLE sf_alice;
SELECT stoatflow.create_aggregation('a_alice3', 'secure', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'public.bob_counts');
RESET ROLE;
SELECT * FROM stoatflow.process_records('secure', '[{"value": {"user": "u", "ts": 1000}}]');
SELECT key, n FROM public.bob_counts;
SET ROLE sf_bob;
REVOKE INSERT, UPDATE, DELETE ON public.bob_counts FROM sf_alice;
RESET ROLE;
-- The commit itself goes through (the failing sink stalls only its aggregation, README "Security"): the
-- window is kept for the sink in the outbox, and stats shows the error until a write succeeds.
SELECT * FROM stoatflow.process_records('secure', '[{"value": {"user": "u", "ts": 2000}}]');
SELECT key, n FROM public.bob_counts;
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'a_alice3';
SET ROLE sf_bob;
GRANT INSERT, UPDATE, DELETE ON public.bob_counts TO sf_alice;
RESET ROLE;
SELECT * FROM stoatflow.process_records('secure', '[]');
SELECT key, n FROM public.bob_counts;
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'a_alice3';

-- window_state needs SELECT on the sink
SET ROLE sf_bob;
SELECT * FROM stoatflow.window_state('a_alice', NULL::alice_space.counts);
\echo :LAST_ERROR_SQLSTATE
-- and only the owner drops an aggregation
SELECT stoatflow.drop_aggregation('a_alice');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE sf_alice;
SELECT key, n FROM stoatflow.window_state('a_alice', NULL::alice_space.counts);
SELECT stoatflow.drop_aggregation('a_alice3');
SELECT stoatflow.drop_aggregation('a_alice', drop_sink => true);
RESET ROLE;

-- secrets never reach an error message
SELECT stoatflow.create_source('secure', 'events', '127.0.0.1:9092', kafka_options => '{"sasl.password": "hunter2"}');
SELECT stoatflow.create_source('s3', 'events', 'bad host:1', kafka_options => '{"sasl.password": "hunter2"}');
SELECT stoatflow.create_source('s3', 'events', '127.0.0.1:9092',
    kafka_options => '{"sasl.password": "hunter2", "sasl.kerberos.min.time.before.relogin": "soon"}');

SELECT stoatflow.drop_source('secure');
DROP TABLE public.bob_counts;
DROP SCHEMA alice_space;
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) FROM sf_alice, sf_bob;
REVOKE ALL ON FUNCTION stoatflow.drop_aggregation(text, boolean, boolean) FROM sf_alice, sf_bob;
DROP ROLE sf_alice;
DROP ROLE sf_bob;
