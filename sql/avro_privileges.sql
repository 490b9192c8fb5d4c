-- Who may point a source's schema registry where (README "Security"): http and https only
-- (22023 for file: and the like, for everyone); a host that is the database server itself or an
-- internal network (localhost, loopback, private, link-local addresses, in any form the
-- resolver reads) only for superusers and members of pg_read_server_files (42501, with a hint),
-- as for kafka_options naming server files. With columns nothing is fetched at declaration.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
DROP ROLE IF EXISTS avro_guest;
RESET client_min_messages;
\set SHOW_CONTEXT never
CREATE ROLE avro_guest;
GRANT EXECUTE ON FUNCTION stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb, text, jsonb, interval) TO avro_guest;
GRANT EXECUTE ON FUNCTION stoatflow.drop_source(text, boolean, boolean) TO avro_guest;
CREATE FUNCTION try_registry(url text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM stoatflow.create_source('g', 'e2e_avro_reg', '127.0.0.1:9', format => 'avro',
        format_options => jsonb_build_object('schema_registry_url', url),
        columns => 'page text');
    PERFORM stoatflow.drop_source('g');
    RETURN 'allowed';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
GRANT EXECUTE ON FUNCTION try_registry(text) TO avro_guest;

SET ROLE avro_guest;
SELECT u AS url, try_registry(u) AS verdict
  FROM unnest(ARRAY['http://127.0.0.1:8081', 'http://localhost:8081', 'http://LocalHost.:8081',
                    'http://api.localhost', 'http://127.1', 'http://0x7f000001',
                    'http://2130706433:8081', 'http://0.0.0.0', 'http://10.0.0.7',
                    'http://172.20.1.1', 'http://192.168.0.9', 'http://169.254.169.254/latest',
                    'http://100.64.1.1', 'http://[::1]:8081', 'http://[fe80::1]',
                    'http://[fd12::9]', 'http://[::ffff:127.0.0.1]',
                    'https://registry.example.com', 'https://203.0.113.7:8081/apis/ccompat/v7',
                    'file:///etc/passwd', 'gopher://registry:70', 'ftp://registry',
                    'http://u:p@registry.example.com']) u;
-- The message and hint as the caller sees them.
SELECT stoatflow.create_source('g', 'e2e_avro_reg', '127.0.0.1:9', format => 'avro',
    format_options => '{"schema_registry_url": "http://169.254.169.254"}', columns => 'page text');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('g', 'e2e_avro_reg', '127.0.0.1:9', format => 'avro',
    format_options => '{"schema_registry_url": "file:///etc/passwd"}', columns => 'page text');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- A member of pg_read_server_files may, like a superuser.
GRANT pg_read_server_files TO avro_guest;
SET ROLE avro_guest;
SELECT try_registry('http://127.0.0.1:8081') AS loopback, try_registry('http://[::1]') AS v6,
       try_registry('file:///etc/passwd') AS file;
RESET ROLE;
SELECT try_registry('http://169.254.169.254') AS superuser;

SET client_min_messages = warning;
DROP FUNCTION try_registry(text);
DROP OWNED BY avro_guest;
DROP ROLE avro_guest;
RESET client_min_messages;
