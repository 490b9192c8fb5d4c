-- format => 'protobuf' end to end through Kafka (README "Formats", Protobuf): message bodies
-- written by Google's encoder (test/registry/produce.py, python3-protobuf) on two
-- partitions, a descriptor set inline; a google.protobuf.Timestamp event time, an enum, a
-- nested PATH column, an optional field, a repeated field; a fast-path aggregation and an
-- executor-mode one checked against GROUP BY oracles over the very events the records were
-- written from; a source whose columns come from the message; bad_protobuf dead letters for
-- malformed and hostile bodies; the declaration errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
\getenv brokers KAFKA_BROKERS
SET timezone = 'UTC';
\set desc `/usr/bin/python3 registry/produce.py descriptor registry/pageview.proto`
SELECT jsonb_build_object('descriptor', :'desc', 'message', 'e2e.PageView') AS opts \gset

-- The events (the oracles' truth): per partition increasing times (some with a fraction of a
-- second), 4 pages, the enum's zero value (not on the wire) among the kinds, geo absent or
-- without its city, qty absent (an optional field: NULL) or 0 (present), 0 to 2 tags.
CREATE TABLE pb_ev (part int, seq int, page text, ts timestamptz, amount_cents bigint, kind text,
                 country text, city text, tags text[], qty int, score float8, blob bytea,
                 big numeric, flag boolean, PRIMARY KEY (part, seq));
INSERT INTO pb_ev
SELECT p, i, (ARRAY['home', 'cart', 'search', 'help'])[1 + (i * 7 + p) % 4],
       timestamptz '2026-11-30 09:00:00+00' + (i * 13 + p * 5) * interval '1 second'
         + CASE WHEN i % 3 = 0 THEN interval '0.25 seconds' ELSE interval '0' END,
       (i * 37 + p) % 1000,
       (ARRAY['KIND_UNKNOWN', 'VIEW', 'CLICK', 'BUY'])[1 + i % 4],
       CASE WHEN i % 5 = 0 THEN NULL ELSE (ARRAY['ch', 'de', 'fr'])[1 + i % 3] END,
       CASE WHEN i % 5 = 0 OR i % 3 = 0 THEN NULL ELSE 'c' || (i % 4) END,
       CASE i % 3 WHEN 0 THEN ARRAY[]::text[] WHEN 1 THEN ARRAY['a'] ELSE ARRAY['a', 'b c'] END,
       CASE WHEN i % 6 = 0 THEN NULL ELSE i % 4 END,
       i * 0.5, convert_to('b' || i, 'UTF8'),
       CASE WHEN i = 50 THEN 18446744073709551615 ELSE i END, i % 2 = 0
  FROM generate_series(0, 1) p, generate_series(1, 100) i;
INSERT INTO pb_ev VALUES
  (0, 101, 'home', '2026-11-30 10:00:00+00', 1, 'VIEW', 'ch', 'c1', '{}', 1, 1, '\x00', 1, true),
  (1, 101, 'home', '2026-11-30 10:00:00+00', 1, 'VIEW', 'ch', 'c1', '{}', 1, 1, '\x00', 1, true);

-- Each event in proto3's JSON mapping (NULLs stripped: those fields are not on the wire).
CREATE VIEW pb_ev_json AS
SELECT part, seq::numeric AS pos, jsonb_strip_nulls(jsonb_build_object(
         'page', page, 'ts', to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
         'amountCents', amount_cents, 'kind', kind,
         'geo', CASE WHEN country IS NOT NULL THEN jsonb_build_object('country', country,
                     'city', CASE WHEN city IS NOT NULL THEN jsonb_build_object('name', city) END) END,
         'tags', to_jsonb(tags), 'counts', jsonb_build_object('x', seq % 7, 'y', 1),
         'score', score, 'qty', qty, 'blob', encode(blob, 'base64'), 'big', big,
         'flag', flag))::text AS line
  FROM pb_ev;
-- The malformed and hostile bodies, between the events of partition 0.
CREATE TABLE pb_hostile (pos numeric, what text, line text);
INSERT INTO pb_hostile VALUES
  (10.5, 'a varint cut short', '{"hex": "ffffff"}'),
  (20.5, 'a length far past the end', '{"hex": "0affffffff07686f6d65"}'),
  (30.5, 'a 10-byte varint overflowing 64 bits', '{"hex": "0a04686f6d6518ffffffffffffffffff7f"}'),
  (30.6, 'an 11-byte varint', '{"hex": "0a04686f6d6518ffffffffffffffffffff01"}'),
  (40.5, 'messages nested 150 deep', '{"page": "home", "ts": "2026-11-30T09:09:00Z", "deep": 150}'),
  (50.5, 'a string that is not UTF-8', '{"hex": "0a02fffe"}'),
  (60.5, 'wire type 6', '{"hex": "0a04686f6d6536"}'),
  (70.5, 'a timestamp past year 9999', '{"hex": "0a04686f6d6512070880f092cbdd08"}');
\pset format unaligned
\pset tuples_only on
SELECT line FROM (SELECT pos, line FROM pb_ev_json WHERE part = 0 UNION ALL
                  SELECT pos, line FROM pb_hostile) l ORDER BY pos
\g | /usr/bin/python3 registry/produce.py kafka-protobuf "$KAFKA_BROKERS" e2e_proto 0 registry/pageview.proto e2e.PageView
SELECT line FROM pb_ev_json WHERE part = 1 ORDER BY pos
\g | /usr/bin/python3 registry/produce.py kafka-protobuf "$KAFKA_BROKERS" e2e_proto 1 registry/pageview.proto e2e.PageView
\pset format aligned
\pset tuples_only off

-- (one transaction: both aggregations start together at the topic's beginning, README "Limits")
BEGIN;
SELECT stoatflow.create_source('proto', 'e2e_proto', :'brokers', format => 'protobuf',
    columns => 'page text, ts timestamptz, amount_cents bigint, kind text, qty integer,
                country text PATH ''$.geo.country'', city text PATH ''$.geo.city.name'',
                tags jsonb, geo jsonb, score double precision',
    format_options => :'opts', key => 'page', event_time => 'ts', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('proto_5m', 'proto', stoatflow.tumbling('5 minutes'),
    'count(*) AS n, sum(amount_cents) AS cents, sum(qty) AS units, max(score) AS top', 'proto_5m');
SELECT stoatflow.create_aggregation('proto_kind', 'proto', stoatflow.tumbling('10 minutes'),
    'count(*) AS n, count(qty) AS with_qty, sum(jsonb_array_length(tags)) AS tags,
     max(length(city)) AS city_len, max(country) AS country', 'proto_kind',
    group_by => 'kind', filter => 'geo IS NOT NULL');
COMMIT;
SELECT stoatflow.wait_caught_up('proto', '60 seconds');

-- Every closed window equals the oracle's, and none is missing or extra (counts printed).
CREATE VIEW pb_oracle_5m AS
SELECT page AS key, to_timestamp(floor(extract(epoch FROM ts) / 300) * 300) AS window_start,
       count(*) AS n, sum(amount_cents) AS cents, sum(qty) AS units, max(score) AS top
  FROM pb_ev GROUP BY 1, 2;
SELECT count(*) AS closed_windows, sum(n) AS records FROM proto_5m WHERE final;
SELECT 'sink only' AS side, * FROM (
  SELECT key, window_start, n, cents, units, top FROM proto_5m WHERE final
  EXCEPT SELECT * FROM pb_oracle_5m) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT * FROM pb_oracle_5m WHERE window_start < '2026-11-30 09:55:00+00'
  EXCEPT SELECT key, window_start, n, cents, units, top FROM proto_5m WHERE final) d;
CREATE VIEW pb_oracle_kind AS
SELECT kind, to_timestamp(floor(extract(epoch FROM ts) / 600) * 600) AS window_start,
       count(*) AS n, count(qty) AS with_qty, sum(cardinality(tags)) AS tags,
       max(length(city)) AS city_len, max(country) AS country
  FROM pb_ev WHERE country IS NOT NULL GROUP BY 1, 2;
SELECT count(*) AS closed_windows, sum(n) AS records FROM proto_kind WHERE final;
SELECT 'sink only' AS side, * FROM (
  SELECT key, window_start, n, with_qty, tags, city_len, country FROM proto_kind WHERE final
  EXCEPT SELECT * FROM pb_oracle_kind) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT * FROM pb_oracle_kind WHERE window_start < '2026-11-30 09:50:00+00'
  EXCEPT SELECT key, window_start, n, with_qty, tags, city_len, country FROM proto_kind
   WHERE final) d;
-- The enum's zero value is not on the wire: it reads as its first name.
SELECT key, sum(n) AS n FROM proto_kind GROUP BY 1 ORDER BY 1;

-- The dead letters: each hostile body is bad_protobuf, at its offset, and nothing else is.
SELECT partition, "offset", reason, left(detail, 80) AS detail
  FROM stoatflow.dead_letters WHERE source_name = 'proto' ORDER BY 1, 2;
SELECT h.what, d.reason IS NOT NULL AS dead_letter
  FROM (SELECT what, row_number() OVER (ORDER BY pos) AS k, pos FROM pb_hostile) h
  LEFT JOIN (SELECT "offset", reason FROM stoatflow.dead_letters
              WHERE source_name = 'proto' AND partition = 0) d
    ON d."offset" = (SELECT count(*) FROM pb_ev WHERE part = 0 AND seq < h.pos) + h.k - 1
 ORDER BY h.pos;
SELECT aggregation_name, records_in, dead_letters, filtered FROM stoatflow.stats
 WHERE source_name = 'proto' ORDER BY 1;
SET client_min_messages = warning;  -- the drop NOTICEs differ by broker and timing
SELECT stoatflow.drop_source('proto', "cascade" => true);
RESET client_min_messages;
DROP TABLE proto_5m, proto_kind;

-- Columns from the message: one per field, typed by README's mapping (a nested message and a
-- map as jsonb); the same topic read again, every type through to an aggregate.
BEGIN;
SELECT stoatflow.create_source('proto_all', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => :'opts', key => 'page', event_time => 'ts', max_out_of_orderness => '0');
SELECT c->>'name' AS name, c->>'type' AS type, c->'path' AS path
  FROM stoatflow.source s, jsonb_array_elements(s.columns) c WHERE s.source_name = 'proto_all';
SELECT stoatflow.create_aggregation('proto_all_1h', 'proto_all', stoatflow.tumbling('1 hour'),
    'count(*) AS n, sum(amount_cents) AS cents, max(big) AS big, sum(score) AS score,
     count(qty) AS with_qty, sum((counts->>''x'')::int) AS xs, sum(octet_length(blob)) AS blob,
     sum(CASE WHEN flag THEN 1 ELSE 0 END) AS flags, sum(jsonb_array_length(tags)) AS tags,
     count(geo) AS with_geo, sum(CASE WHEN kind = ''KIND_UNKNOWN'' THEN 1 ELSE 0 END) AS zero_kind',
    'proto_all_1h', group_by => 'page');
COMMIT;
SELECT stoatflow.wait_caught_up('proto_all', '60 seconds');
SELECT 'sink only' AS side, * FROM (
  SELECT key, n, cents, big, score, with_qty, xs, blob, flags, tags, with_geo, zero_kind
    FROM proto_all_1h WHERE window_start = '2026-11-30 09:00:00+00'
  EXCEPT
  SELECT page, count(*), sum(amount_cents), max(big), sum(score), count(qty), sum(seq % 7),
         sum(octet_length(blob)), sum(CASE WHEN flag THEN 1 ELSE 0 END), sum(cardinality(tags)),
         count(country), sum(CASE WHEN kind = 'KIND_UNKNOWN' THEN 1 ELSE 0 END)
    FROM pb_ev WHERE ts < '2026-11-30 10:00:00+00' GROUP BY page) d;
SELECT count(*) AS keys, sum(n) AS records FROM proto_all_1h
 WHERE window_start = '2026-11-30 09:00:00+00' AND final;
SELECT reason, count(*) FROM stoatflow.dead_letters WHERE source_name = 'proto_all' GROUP BY 1;
SET client_min_messages = warning;
SELECT stoatflow.drop_source('proto_all', "cascade" => true);
RESET client_min_messages;
DROP TABLE proto_all_1h;

-- With a schema registry: the .proto text registered as a PROTOBUF schema (read by stoatflow's
-- own parser), records framed with its id and message indexes (short and long form in turn);
-- the columns from the subject's latest version; an unknown id (bad_schema_id), a wrong magic
-- byte, indexes the schema does not have and a body cut short (bad_protobuf).
\! rm -rf pbreg && mkdir pbreg
\! /usr/bin/python3 registry/fake_registry.py serve --dir pbreg >/dev/null 2>&1 &
\! for i in $(seq 100); do [ -f pbreg/url ] && break; sleep 0.1; done
\set reg_url `cat pbreg/url`
CREATE TABLE pb_framed (pos numeric, line text);
INSERT INTO pb_framed SELECT pos, line FROM pb_ev_json WHERE part = 0;
INSERT INTO pb_framed VALUES
  (20.5, '{"hex": "00000003e700"}'),            -- schema id 999: the registry does not know it
  (40.5, '{"hex": "0100000001000a04686f6d65"}'),  -- magic byte 1
  (60.5, '{"hex": "0000000001020a"}'),          -- indexes [5]
  (80.5, '{"hex": "0000000001000a09686f"}');    -- page's length past the end
\pset format unaligned
\pset tuples_only on
SELECT line FROM pb_framed ORDER BY pos
\g | /usr/bin/python3 registry/produce.py kafka-protobuf "$KAFKA_BROKERS" e2e_proto_reg 0 registry/pageview.proto e2e.PageView --registry pbreg --subject e2e_proto_reg-value
\pset format aligned
\pset tuples_only off
BEGIN;
SELECT stoatflow.create_source('proto_reg', 'e2e_proto_reg', :'brokers', format => 'protobuf',
    format_options => jsonb_build_object('schema_registry_url', :'reg_url'),
    key => 'page', event_time => 'ts', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('proto_reg_5m', 'proto_reg', stoatflow.tumbling('5 minutes'),
    'count(*) AS n, sum(amount_cents) AS cents, count(qty) AS with_qty, max(big) AS big',
    'proto_reg_5m');
COMMIT;
-- The same columns as from the inline descriptor.
SELECT string_agg(c->>'name' || ' ' || (c->>'type'), ', ') AS columns
  FROM stoatflow.source, jsonb_array_elements(columns) c WHERE source_name = 'proto_reg';
SELECT stoatflow.wait_caught_up('proto_reg', '60 seconds');
SELECT count(*) AS closed_windows, sum(n) AS records FROM proto_reg_5m WHERE final;
SELECT 'sink only' AS side, * FROM (
  SELECT key, window_start, n, cents, with_qty, big FROM proto_reg_5m WHERE final
  EXCEPT
  SELECT page, to_timestamp(floor(extract(epoch FROM ts) / 300) * 300), count(*),
         sum(amount_cents), count(qty), max(big)
    FROM pb_ev WHERE part = 0 GROUP BY 1, 2) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT page, to_timestamp(floor(extract(epoch FROM ts) / 300) * 300) AS w, count(*),
         sum(amount_cents), count(qty), max(big)
    FROM pb_ev WHERE part = 0 AND ts < '2026-11-30 09:55:00+00' GROUP BY 1, 2
  EXCEPT SELECT key, window_start, n, cents, with_qty, big FROM proto_reg_5m WHERE final) d;
SELECT partition, "offset", reason, replace(detail, :'reg_url', '<registry>') AS detail
  FROM stoatflow.dead_letters WHERE source_name = 'proto_reg' ORDER BY 1, 2;
SET client_min_messages = warning;
SELECT stoatflow.drop_source('proto_reg', "cascade" => true);
RESET client_min_messages;
DROP TABLE proto_reg_5m, pb_framed;
-- Without columns, a subject the registry does not have is refused at declaration.
SELECT stoatflow.create_source('x', 'e2e_nosuch', :'brokers', format => 'protobuf',
    format_options => jsonb_build_object('schema_registry_url', :'reg_url'));
\echo :LAST_ERROR_SQLSTATE
\! kill $(cat pbreg/pid)

-- Declaration errors.
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => '{"descriptor": "not base64!", "message": "e2e.PageView"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => '{"descriptor": "aGVsbG8gd29ybGQ=", "message": "e2e.PageView"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => '{"descriptor": 12, "message": "e2e.PageView"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => :'opts'::jsonb || '{"schema_registry_url": "http://127.0.0.1:1"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => :'opts'::jsonb || '{"schema_registry_password": "hunter2"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => jsonb_build_object('descriptor', :'desc'));
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => jsonb_build_object('descriptor', :'desc', 'message', 'PageView'));
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => :'opts'::jsonb || '{"delimiter": ","}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => :'opts', columns => 'page text, nope text');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => :'opts', columns => 'town text PATH ''$.geo.town''');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => :'opts', columns => 'tag text PATH ''$.tags.first''');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => :'opts', columns => 'p text PATH ''$.page.x''');
\echo :LAST_ERROR_SQLSTATE
-- The registry URL rules are the registry's, for protobuf as for avro (README "Security").
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => '{"schema_registry_url": "file:///etc/passwd"}', columns => 'page text');
\echo :LAST_ERROR_SQLSTATE
\set legacy `/usr/bin/python3 registry/produce.py descriptor registry/legacy.proto`
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => jsonb_build_object('descriptor', :'legacy', 'message', 'legacy.Old'));
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => jsonb_build_object('descriptor', :'legacy', 'message', 'legacy.Old'),
    columns => 'n integer PATH ''$.extra.n''');
\echo :LAST_ERROR_SQLSTATE
-- Accepted: a column list naming only what it needs, a field under two names.
SELECT stoatflow.create_source('x', 'e2e_proto', :'brokers', format => 'protobuf',
    format_options => :'opts', columns => 'p text PATH ''$.page'', page text, ts timestamptz');
SELECT format, format_options->>'message' AS message FROM stoatflow.source WHERE source_name = 'x';
SELECT stoatflow.drop_source('x');
DROP VIEW pb_ev_json, pb_oracle_5m, pb_oracle_kind;
DROP TABLE pb_ev, pb_hostile;
