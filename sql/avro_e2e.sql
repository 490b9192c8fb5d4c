-- format => 'avro' end to end through Kafka (README "Formats", Avro). Records written by Apache
-- Avro's Python implementation (Debian python3-avro, test/registry/produce.py) and put on the topics
-- with kcat. Inline: one writer schema, bare bodies on two partitions, the columns derived from
-- the schema, a tumbling aggregation against a GROUP BY oracle over the very events, and hostile
-- bodies (a length of 2^62, a union index out of range, an array count beyond the bytes, a
-- negative length, a string ending early) as bad_avro dead letters. With a registry
-- (test/registry/fake_registry.py, basic auth): Confluent-framed records of two interleaved
-- schema versions read through the subject's latest (the reader schema stored at declaration),
-- an unknown id (bad_schema_id), a wrong magic byte (bad_avro); then the registry answering 500
-- while a new schema id arrives: status 'error' naming the registry, nothing dead-lettered, and
-- then slower than the client's timeout, and the exact result once it answers again; nested
-- records through PATH; Avro-encoded keys. Last, the declaration errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
\getenv brokers KAFKA_BROKERS
SET timezone = 'UTC';

\set pv_schema '{"type": "record", "name": "PageView", "namespace": "shop", "fields": [{"name": "page", "type": "string"}, {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}, {"name": "amount", "type": ["null", "long"]}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}'
\pset format unaligned
\pset tuples_only on
SELECT :'pv_schema' \g pageview.avsc
\pset format aligned
\pset tuples_only off

-- The events (the oracle's truth): per partition increasing times, 4 pages, NULL amounts; a
-- last event at 10:00 closes the rest.
CREATE TABLE ev (part int, seq int, page text, ts timestamptz, amount bigint,
                 PRIMARY KEY (part, seq));
INSERT INTO ev
SELECT p, i, (ARRAY['home', 'cart', 'naïve', 'checkout'])[1 + (i * 7 + p) % 4],
       timestamptz '2026-11-30 09:00:00+00' + (i * 17 + p * 5) * interval '1 second'
         + (i % 3) * interval '1 millisecond',
       CASE WHEN i % 6 = 0 THEN NULL ELSE (i * 37 + p) % 1000 - 100 END
  FROM generate_series(0, 1) p, generate_series(1, 150) i;
INSERT INTO ev VALUES (0, 151, 'home', '2026-11-30 10:00:00+00', 1),
                      (1, 151, 'home', '2026-11-30 10:00:00+00', 1);

-- Each partition's messages: the events as JSON records, hostile bodies (RAW:hex) among them.
CREATE TABLE msgs (part int, pos numeric, line text);
INSERT INTO msgs
SELECT part, seq, json_build_object('page', page,
           'ts', to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'amount', amount,
           'tags', ARRAY['t' || seq % 3])::text
  FROM ev;
INSERT INTO msgs VALUES
  (1, 40.1, 'RAW:8080808080808080800161'),       -- page's length 2^62
  (1, 40.2, 'RAW:027880d892cada660a'),           -- amount's union index 5 of 2
  (1, 40.3, 'RAW:027880d892cada6600808080808040'),  -- 2^40 tags in 7 bytes
  (1, 40.4, 'RAW:05616263'),                     -- a negative length
  (1, 40.5, 'RAW:0861');                         -- a string ending early
\pset format unaligned
\pset tuples_only on
SELECT line FROM msgs WHERE part = 0 ORDER BY pos
\g | /usr/bin/python3 registry/produce.py kafka-avro "$KAFKA_BROKERS" e2e_avro 0 pageview.avsc
SELECT line FROM msgs WHERE part = 1 ORDER BY pos
\g | /usr/bin/python3 registry/produce.py kafka-avro "$KAFKA_BROKERS" e2e_avro 1 pageview.avsc
\pset format aligned
\pset tuples_only off

-- Without columns: the schema's top-level fields (README "Formats", the type mapping).
BEGIN;
SELECT stoatflow.create_source('av', 'e2e_avro', :'brokers', format => 'avro',
    format_options => jsonb_build_object('schema', :'pv_schema'::jsonb), key => 'page',
    event_time => 'ts', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('av_5m', 'av', stoatflow.tumbling('5 minutes'),
    'count(*) AS n, sum(amount) AS total, max(amount) AS top', 'av_5m');
COMMIT;
SELECT c->>'name' AS name, c->>'type' AS type
  FROM stoatflow.source, jsonb_array_elements(columns) c WHERE source_name = 'av';
SELECT stoatflow.wait_caught_up('av', '60 seconds');
CREATE VIEW oracle_5m AS
SELECT page AS key, to_timestamp(floor(extract(epoch FROM ts) / 300) * 300) AS window_start,
       count(*) AS n, sum(amount) AS total, max(amount) AS top
  FROM ev GROUP BY 1, 2;
SELECT count(*) AS closed_windows, sum(n) AS records FROM av_5m WHERE final;
SELECT 'sink only' AS side, * FROM (
  SELECT key, window_start, n, total, top FROM av_5m WHERE final
  EXCEPT SELECT * FROM oracle_5m) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT * FROM oracle_5m WHERE window_start < '2026-11-30 09:55:00+00'
  EXCEPT SELECT key, window_start, n, total, top FROM av_5m WHERE final) d;
SELECT partition, "offset", reason, left(detail, 80) AS detail
  FROM stoatflow.dead_letters WHERE source_name = 'av' ORDER BY 1, 2;
SET client_min_messages = warning;
SELECT stoatflow.drop_source('av', "cascade" => true);
RESET client_min_messages;
DROP TABLE av_5m;

-- With a schema registry (basic auth): two versions interleaved on one topic, v2 adding a
-- field with a default.
\! rm -rf reg && mkdir reg
\! /usr/bin/python3 registry/fake_registry.py serve --dir reg --user reg-user --password reg-Secret-42 >/dev/null 2>&1 &
\! for i in $(seq 100); do [ -f reg/url ] && break; sleep 0.1; done
\set reg_url `cat reg/url`
\set v1 '{"type": "record", "name": "Order", "fields": [{"name": "page", "type": "string"}, {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}, {"name": "amount", "type": "long"}]}'
\set v2 '{"type": "record", "name": "Order", "fields": [{"name": "page", "type": "string"}, {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}, {"name": "amount", "type": "long"}, {"name": "region", "type": "string", "default": "eu"}]}'
-- v3 (after the declaration): region removed, amount an int (promoted to long).
\set v3 '{"type": "record", "name": "Order", "fields": [{"name": "page", "type": "string"}, {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}}, {"name": "amount", "type": "int"}]}'
\pset format unaligned
\pset tuples_only on
SELECT :'v1' \g v1.avsc
SELECT :'v2' \g v2.avsc
SELECT :'v3' \g v3.avsc
\pset format aligned
\pset tuples_only off
CREATE TABLE ev2 (seq int PRIMARY KEY, version int, page text, ts timestamptz, amount bigint,
                  region text);
INSERT INTO ev2
SELECT i, CASE WHEN i <= 200 THEN 1 + (i / 25) % 2 ELSE 3 END,
       (ARRAY['home', 'cart', 'checkout'])[1 + i % 3],
       timestamptz '2026-11-30 09:00:00+00' + i * 11 * interval '1 second',
       (i * 53) % 500, CASE WHEN i <= 200 AND (i / 25) % 2 = 1 THEN (ARRAY['us', 'ap'])[1 + i % 2]
                            ELSE 'eu' END
  FROM generate_series(1, 300) i;
INSERT INTO ev2 VALUES (301, 3, 'home', '2026-11-30 10:00:00+00', 1, 'eu');
-- Batches of 25, versions alternating (@2: written by v2); an unknown id and a wrong magic byte
-- among them.
CREATE TABLE msgs2 (pos numeric, line text);
INSERT INTO msgs2
SELECT seq, CASE WHEN version = 2 THEN '@2:' ELSE '' END
       || json_build_object('page', page, 'ts', to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                            'amount', amount, 'region', region)::text
  FROM ev2 WHERE version < 3;
INSERT INTO msgs2 VALUES
  (60.5, 'RAW:00000003e70278'),  -- schema id 999: the registry does not know it
  (120.5, 'RAW:0100000001027800');  -- magic byte 1
\pset format unaligned
\pset tuples_only on
SELECT line FROM msgs2 ORDER BY pos
\g | /usr/bin/python3 registry/produce.py kafka-avro "$KAFKA_BROKERS" e2e_avro_reg 0 v1.avsc --also v2.avsc --registry reg --subject e2e_avro_reg-value
\pset format aligned
\pset tuples_only off

-- Without columns: the subject's latest version (v2) at declaration, stored as the reader
-- schema; v1 records take region's default.
BEGIN;
SELECT stoatflow.create_source('reg', 'e2e_avro_reg', :'brokers', format => 'avro',
    format_options => jsonb_build_object('schema_registry_url', :'reg_url',
        'schema_registry_user', 'reg-user', 'schema_registry_password', 'reg-Secret-42'),
    key => 'page', event_time => 'ts', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('reg_5m', 'reg', stoatflow.tumbling('5 minutes'),
    'count(*) AS n, sum(amount) AS total', 'reg_5m');
SELECT stoatflow.create_aggregation('reg_region', 'reg', stoatflow.tumbling('10 minutes'),
    'count(*) AS n, sum(amount) AS total', 'reg_region', group_by => 'region');
COMMIT;
SELECT c->>'name' AS name, c->>'type' AS type
  FROM stoatflow.source, jsonb_array_elements(columns) c WHERE source_name = 'reg';
SELECT k FROM stoatflow.source, jsonb_object_keys(format_options) k
 WHERE source_name = 'reg' ORDER BY 1;
SELECT format_options->'reader_schema' = :'v2'::jsonb AS reader_is_v2
  FROM stoatflow.source WHERE source_name = 'reg';
SELECT stoatflow.wait_caught_up('reg', '60 seconds');
SELECT partition, "offset", reason, replace(detail, :'reg_url', '<registry>') AS detail
  FROM stoatflow.dead_letters WHERE source_name = 'reg' ORDER BY 1, 2;

-- The registry answers 500 while records of a new version (v3) arrive: they wait (status
-- 'error' naming the registry, never its password; no dead letter), the records before them
-- are committed.
\! /usr/bin/python3 registry/fake_registry.py control reg 500
INSERT INTO msgs2
SELECT seq, '@3:' || json_build_object('page', page,
           'ts', to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'amount', amount)::text
  FROM ev2 WHERE version = 3;
\pset format unaligned
\pset tuples_only on
SELECT line FROM msgs2 WHERE pos > 200 ORDER BY pos
\g | /usr/bin/python3 registry/produce.py kafka-avro "$KAFKA_BROKERS" e2e_avro_reg 0 v1.avsc --also v2.avsc --also v3.avsc --registry reg --subject e2e_avro_reg-value
\pset format aligned
\pset tuples_only off
DO $$
BEGIN
    FOR i IN 1..300 LOOP
        EXIT WHEN (SELECT status FROM stoatflow.sources WHERE source_name = 'reg') = 'error';
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT status, last_error LIKE '%' || :'reg_url' || '%' AS names_registry,
       last_error LIKE '%500%' AS says_500, last_error LIKE '%Secret%' AS shows_password
  FROM stoatflow.sources WHERE source_name = 'reg';
SELECT count(*) AS dead_letters FROM stoatflow.dead_letters WHERE source_name = 'reg';
-- Slower than the client's timeout (10 s): the same, the error saying so.
\! /usr/bin/python3 registry/fake_registry.py control reg slow
DO $$
BEGIN
    FOR i IN 1..400 LOOP
        EXIT WHEN (SELECT last_error FROM stoatflow.sources WHERE source_name = 'reg')
                  LIKE '%timed out%';
        PERFORM pg_sleep(0.1);
    END LOOP;
END $$;
SELECT status, last_error LIKE '%' || :'reg_url' || '%' AS names_registry,
       last_error LIKE '%timed out%' AS says_timed_out
  FROM stoatflow.sources WHERE source_name = 'reg';
SELECT count(*) AS dead_letters FROM stoatflow.dead_letters WHERE source_name = 'reg';
-- It answers again: the held records are read (the cache retries with backoff), exactly.
\! /usr/bin/python3 registry/fake_registry.py control reg normal
SELECT stoatflow.wait_caught_up('reg', '90 seconds');
SELECT status FROM stoatflow.sources WHERE source_name = 'reg';
CREATE VIEW oracle_reg_5m AS
SELECT page AS key, to_timestamp(floor(extract(epoch FROM ts) / 300) * 300) AS window_start,
       count(*) AS n, sum(amount) AS total
  FROM ev2 GROUP BY 1, 2;
CREATE VIEW oracle_reg_region AS
SELECT region AS key, to_timestamp(floor(extract(epoch FROM ts) / 600) * 600) AS window_start,
       count(*) AS n, sum(amount) AS total
  FROM ev2 GROUP BY 1, 2;
SELECT count(*) AS closed_windows, sum(n) AS records FROM reg_5m WHERE final;
SELECT 'sink only' AS side, * FROM (
  SELECT key, window_start, n, total FROM reg_5m WHERE final
  EXCEPT SELECT * FROM oracle_reg_5m) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT * FROM oracle_reg_5m WHERE window_start < '2026-11-30 09:55:00+00'
  EXCEPT SELECT key, window_start, n, total FROM reg_5m WHERE final) d;
SELECT count(*) AS closed_windows, sum(n) AS records FROM reg_region WHERE final;
SELECT 'sink only' AS side, * FROM (
  SELECT key, window_start, n, total FROM reg_region WHERE final
  EXCEPT SELECT * FROM oracle_reg_region) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT * FROM oracle_reg_region WHERE window_start < '2026-11-30 09:50:00+00'
  EXCEPT SELECT key, window_start, n, total FROM reg_region WHERE final) d;
SELECT count(*) AS dead_letters FROM stoatflow.dead_letters WHERE source_name = 'reg';
SET client_min_messages = warning;
SELECT stoatflow.drop_source('reg', "cascade" => true);
RESET client_min_messages;
DROP TABLE reg_5m, reg_region;

-- Nested records through PATH, a null branch on the way (its column NULL), timestamp-micros and
-- decimal, into declared columns of an inline schema.
\set n_schema '{"type": "record", "name": "N", "fields": [{"name": "user", "type": {"type": "record", "name": "U", "fields": [{"name": "id", "type": "string"}, {"name": "geo", "type": ["null", {"type": "record", "name": "G", "fields": [{"name": "country", "type": "string"}]}]}]}}, {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-micros"}}, {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}}]}'
CREATE TABLE ev3 (seq int, uid text, country text, ts timestamptz, price numeric(9, 2));
INSERT INTO ev3
SELECT i, 'u' || i % 3, CASE WHEN i % 4 = 0 THEN NULL ELSE (ARRAY['de', 'fr'])[1 + i % 2] END,
       timestamptz '2026-11-30 09:00:00+00' + i * interval '1 minute' + i * interval '7 microseconds',
       round((i * 1.37)::numeric, 2) - 5
  FROM generate_series(1, 40) i;
\pset format unaligned
\pset tuples_only on
SELECT :'n_schema' \g nested.avsc
SELECT json_build_object('user', json_build_object('id', uid,
           'geo', CASE WHEN country IS NULL THEN NULL ELSE json_build_object('country', country) END),
       'ts', to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), 'price', price::text)
  FROM ev3 ORDER BY seq
\g | /usr/bin/python3 registry/produce.py kafka-avro "$KAFKA_BROKERS" e2e_avro_nested 0 nested.avsc
\pset format aligned
\pset tuples_only off
BEGIN;
SELECT stoatflow.create_source('nested', 'e2e_avro_nested', :'brokers', format => 'avro',
    format_options => jsonb_build_object('schema', :'n_schema'::jsonb),
    columns => 'uid text PATH ''$.user.id'', country text PATH ''$.user.geo.country'', ts timestamptz, price numeric',
    key => 'uid', event_time => 'ts', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('nested_1d', 'nested', stoatflow.tumbling('1 day'),
    'count(*) AS n, count(country) AS with_country, sum(price) AS total, max(ts) AS last_ts',
    'nested_1d', group_by => 'uid');
COMMIT;
SELECT stoatflow.wait_caught_up('nested', '60 seconds');
SELECT 'sink only' AS side, * FROM (
  SELECT key, n, with_country, total, last_ts FROM nested_1d
  EXCEPT SELECT uid, count(*), count(country), sum(price), max(ts) FROM ev3 GROUP BY uid) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT uid, count(*), count(country), sum(price), max(ts) FROM ev3 GROUP BY uid
  EXCEPT SELECT key, n, with_country, total, last_ts FROM nested_1d) d;
SELECT count(*) AS keys, sum(n) AS records FROM nested_1d;
SELECT count(*) AS dead_letters FROM stoatflow.dead_letters WHERE source_name = 'nested';
SET client_min_messages = warning;
SELECT stoatflow.drop_source('nested', "cascade" => true);
RESET client_min_messages;
DROP TABLE nested_1d;

-- Avro-encoded keys (registry-framed, with their own schema ids): kafka_key is the key's
-- value as text, a record key's JSON text; a key that is no frame is taken as it is.
\pset format unaligned
\pset tuples_only on
SELECT '"string"' \g kstring.avsc
SELECT '{"type": "record", "name": "K", "fields": [{"name": "id", "type": "long"}, {"name": "tag", "type": "string"}]}' \g krecord.avsc
SELECT 'KEY:' || k || '|' || json_build_object('page', 'p', 'ts', '2026-11-30T09:00:0' || i || '.000Z', 'amount', i, 'region', 'eu')
  FROM (VALUES (1, '"k-1"'), (2, '"k-2"'), (3, '"k-1"'), (4, '"ünï"')) v(i, k)
\g | /usr/bin/python3 registry/produce.py kafka-avro "$KAFKA_BROKERS" e2e_avro_key 0 v2.avsc --registry reg --subject e2e_avro_key-value --key-schema kstring.avsc --key-subject e2e_avro_key-key
SELECT 'KEY:{"id": 42, "tag": "x"}|' || json_build_object('page', 'p', 'ts', '2026-11-30T09:00:05.000Z', 'amount', 5, 'region', 'eu')
\g | /usr/bin/python3 registry/produce.py kafka-avro "$KAFKA_BROKERS" e2e_avro_key 0 v2.avsc --registry reg --subject e2e_avro_key-value --key-schema krecord.avsc --key-subject e2e_avro_key-key
SELECT 'KEY:plain-key|' || json_build_object('page', 'p', 'ts', '2026-11-30T09:00:06.000Z', 'amount', 6, 'region', 'eu')
\g | /usr/bin/python3 registry/produce.py kafka-avro "$KAFKA_BROKERS" e2e_avro_key 0 v2.avsc --registry reg --subject e2e_avro_key-value
\pset format aligned
\pset tuples_only off
BEGIN;
SELECT stoatflow.create_source('keys', 'e2e_avro_key', :'brokers', format => 'avro',
    format_options => jsonb_build_object('schema_registry_url', :'reg_url',
        'schema_registry_user', 'reg-user', 'schema_registry_password', 'reg-Secret-42'),
    columns => 'page text, ts timestamptz, amount bigint', event_time => 'ts');
SELECT stoatflow.create_aggregation('keys_1h', 'keys', stoatflow.tumbling('1 hour'),
    'count(*) AS n, sum(amount) AS total', 'keys_1h');
COMMIT;
SELECT stoatflow.wait_caught_up('keys', '60 seconds');
SELECT key, n, total FROM keys_1h ORDER BY key;
SELECT count(*) AS dead_letters FROM stoatflow.dead_letters WHERE source_name = 'keys';
SET client_min_messages = warning;
SELECT stoatflow.drop_source('keys', "cascade" => true);
RESET client_min_messages;
DROP TABLE keys_1h;

-- Declaration errors.
SELECT stoatflow.create_source('x', 'e2e_avro', :'brokers', format => 'avro');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_avro', :'brokers', format => 'avro',
    format_options => jsonb_build_object('schema', :'pv_schema'::jsonb,
                                         'schema_registry_url', :'reg_url'));
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_avro', :'brokers', format => 'avro',
    format_options => '{"schema": {"type": "record", "name": "E", "fields": [{"name": "a", "type": "lnog"}]}}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_avro', :'brokers', format => 'avro',
    format_options => '{"schema": {"type": "record", "name": "E", "fields": [{"name": "user", "type": {"type": "record", "name": "U", "fields": [{"name": "id", "type": "long"}]}}]}}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_avro', :'brokers', format => 'avro',
    format_options => '{"schema_registry_url": "file:///etc/passwd"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_avro', :'brokers', format => 'avro',
    format_options => '{"schema_registry_url": "http://u:p@registry:8081"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'no_such_topic', :'brokers', format => 'avro',
    format_options => jsonb_build_object('schema_registry_url', :'reg_url',
        'schema_registry_user', 'reg-user', 'schema_registry_password', 'reg-Secret-42'));
\echo :LAST_ERROR_SQLSTATE
-- A wrong password: the registry's 401 (the password is not shown; the registry's port is).
SET avro_e2e.reg_url = :'reg_url';
SET avro_e2e.brokers = :'brokers';
DO $$
BEGIN
    PERFORM stoatflow.create_source('x', 'e2e_avro_reg', current_setting('avro_e2e.brokers'),
        format => 'avro', format_options => jsonb_build_object(
            'schema_registry_url', current_setting('avro_e2e.reg_url'),
            'schema_registry_user', 'reg-user', 'schema_registry_password', 'wrong-Secret'));
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE '%: %', SQLSTATE, replace(SQLERRM, current_setting('avro_e2e.reg_url'), '<registry>');
END $$;
-- With columns, nothing is read from the registry at declaration.
SELECT stoatflow.create_source('x', 'e2e_avro_reg', :'brokers', format => 'avro',
    format_options => jsonb_build_object('schema_registry_url', :'reg_url'),
    columns => 'page text, ts timestamptz');
SELECT stoatflow.drop_source('x');
\! kill $(cat reg/pid)
