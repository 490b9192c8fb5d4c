-- format => 'csv' end to end through Kafka (README "Formats", CSV): RFC 4180 records on two
-- partitions, each beginning with a header (skipped per partition; one later in the stream is a
-- record: bad_value), quoted fields with delimiters, quotes and line breaks, NULL (an empty
-- unquoted field) against the empty string (""), bad_csv dead letters and hostile records; a
-- fast-path tumbling aggregation and an executor-mode one (group_by + filter) checked against
-- GROUP BY oracles over the very events the records were written from; the declaration errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
\getenv brokers KAFKA_BROKERS
SET timezone = 'UTC';

-- The events (the oracles' truth): per partition increasing times, 5 pages (3 need quoting),
-- NULL amounts and quantities, notes NULL, empty or text; a last event at 10:00 closes the rest.
CREATE TABLE ev (part int, seq int, page text, ts timestamptz, amount numeric, qty int,
                 note text, PRIMARY KEY (part, seq));
INSERT INTO ev
SELECT p, i, (ARRAY['home', 'a,b', 'say "hi"', E'two\nlines', 'plain'])[1 + (i * 7 + p) % 5],
       timestamptz '2026-11-30 09:00:00+00' + (i * 13 + p * 5) * interval '1 second',
       CASE WHEN i % 6 = 0 THEN NULL ELSE round(((i * 37 + p) % 1000) / 10.0, 1) END,
       CASE WHEN i % 5 = 0 THEN NULL ELSE i % 9 END,
       CASE WHEN i % 4 = 0 THEN '' WHEN i % 4 = 1 THEN NULL ELSE 'n' || i END
  FROM generate_series(0, 1) p, generate_series(1, 120) i;
INSERT INTO ev VALUES (0, 121, 'home', '2026-11-30 10:00:00+00', 1, 1, 'closer'),
                      (1, 121, 'home', '2026-11-30 10:00:00+00', 1, 1, 'closer'),
                      (1, 200, 'huge', '2026-11-30 09:13:05+00', 2, 2, repeat('x', 300000));

-- A field as a CSV producer writes it: NULL empty, quoted when it must be (and every third
-- plain one too: quoting does not change a value).
CREATE FUNCTION csv_field(v text, q boolean) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN v IS NULL THEN ''
                WHEN q OR v = '' OR v ~ '[,"\r\n]' THEN '"' || replace(v, '"', '""') || '"'
                ELSE v END $$;
CREATE TABLE lines (part int, pos numeric, line text);
INSERT INTO lines
SELECT part, CASE WHEN seq = 200 THEN 60.5 ELSE seq END, concat_ws(',', csv_field(page, seq % 3 = 0),
           csv_field(to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), false),
           csv_field(amount::text, seq % 3 = 1), csv_field(qty::text, false),
           csv_field(note, false)) || CASE WHEN seq % 10 = 0 THEN E'\r\n' ELSE '' END
  FROM ev;
INSERT INTO lines VALUES
  (0, 0, E'page,ts,amount,qty,note\r\n'),              -- partition 0's header
  (1, 0, '"page","ts","amount","qty","note"'),         -- partition 1's, quoted
  (1, 70.5, 'page,ts,amount,qty,note'),                -- later: a record, and ts is no time
  (0, 50.1, 'home,2026-11-30T09:10:00Z,1'),            -- 3 fields
  (0, 50.2, 'home,"2026-11-30T09:10:00Z,1,1,x'),       -- unterminated quote
  (0, 50.3, 'ho"me,2026-11-30T09:10:00Z,1,1,x'),       -- a quote inside an unquoted field
  (0, 50.4, 'home,2026-11-30T09:10:00Z,1,1,x,y'),      -- 6 fields
  (1, 80.1, (SELECT string_agg('f', ',') FROM generate_series(1, 10000))),  -- 10,000 fields
  (1, 80.2, repeat('"', 1001)),                        -- only quotes
  (1, 80.3, 'home,2026-11-30T09:20:00Z,abc,1,x');      -- a bad numeric
-- Produced with a record separator (0x1e) between messages, so line breaks stay in them.
\pset format unaligned
\pset tuples_only on
SELECT string_agg(line, E'\x1e' ORDER BY pos) FROM lines WHERE part = 0
\g | kcat -P -q -D '\x1e' -b "$KAFKA_BROKERS" -t e2e_csv -p 0 >/dev/null 2>&1
SELECT string_agg(line, E'\x1e' ORDER BY pos) FROM lines WHERE part = 1
\g | kcat -P -q -D '\x1e' -b "$KAFKA_BROKERS" -t e2e_csv -p 1 >/dev/null 2>&1
\pset format aligned
\pset tuples_only off
-- Bytes psql cannot send: a NUL in a text field (bad_value), bytes that are not UTF-8.
\! printf 'home,2026-11-30T09:30:00Z,1,1,a\000b\036home,2026-11-30T09:30:00Z,1,1,\377\376' | kcat -P -q -D '\x1e' -b "$KAFKA_BROKERS" -t e2e_csv -p 1 >/dev/null 2>&1

-- (one transaction: both aggregations start together at the topic's beginning, README "Limits")
BEGIN;
SELECT stoatflow.create_source('csv', 'e2e_csv', :'brokers', format => 'csv',
    columns => 'page text, ts timestamptz, amount numeric, qty integer, note text',
    format_options => '{"header": true}', key => 'page', event_time => 'ts',
    max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('csv_5m', 'csv', stoatflow.tumbling('5 minutes'),
    'count(*) AS n, sum(amount) AS revenue, sum(qty) AS units, max(amount) AS top', 'csv_5m');
SELECT stoatflow.create_aggregation('csv_notes', 'csv', stoatflow.tumbling('10 minutes'),
    'count(*) AS n, sum(amount * qty) AS value, max(length(note)) AS longest', 'csv_notes',
    group_by => 'page', filter => 'note IS NOT NULL');
COMMIT;
SELECT stoatflow.wait_caught_up('csv', '60 seconds');

-- Every closed window equals the oracle's, and none is missing or extra (counts printed).
CREATE VIEW oracle_5m AS
SELECT page AS key, to_timestamp(floor(extract(epoch FROM ts) / 300) * 300) AS window_start,
       count(*) AS n, sum(amount) AS revenue, sum(qty) AS units, max(amount)::float8 AS top
  FROM ev GROUP BY 1, 2;
SELECT count(*) AS closed_windows, sum(n) AS records FROM csv_5m WHERE final;
-- (a numeric with a fraction is summed as double precision: README "Columns: a row type
-- per source"; compared to 9 digits)
SELECT 'sink only' AS side, * FROM (
  SELECT key, window_start, n, round(revenue, 9), units, top FROM csv_5m WHERE final
  EXCEPT SELECT key, window_start, n, round(revenue, 9), units, top FROM oracle_5m) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT key, window_start, n, round(revenue, 9), units, top FROM oracle_5m
   WHERE window_start < '2026-11-30 09:55:00+00'
  EXCEPT SELECT key, window_start, n, round(revenue, 9), units, top FROM csv_5m WHERE final) d;
CREATE VIEW oracle_notes AS
SELECT page, to_timestamp(floor(extract(epoch FROM ts) / 600) * 600) AS window_start,
       count(*) AS n, sum(amount * qty) AS value, max(length(note)) AS longest
  FROM ev WHERE note IS NOT NULL GROUP BY 1, 2;
SELECT count(*) AS closed_windows, sum(n) AS records FROM csv_notes WHERE final;
SELECT 'sink only' AS side, * FROM (
  SELECT key, window_start, n, value, longest FROM csv_notes WHERE final
  EXCEPT SELECT * FROM oracle_notes) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT * FROM oracle_notes WHERE window_start < '2026-11-30 09:50:00+00'
  EXCEPT SELECT key, window_start, n, value, longest FROM csv_notes WHERE final) d;
-- "" is the empty string, an empty field NULL: the filter kept the one, not the other.
SELECT (SELECT sum(n) FROM csv_notes) = (SELECT count(*) FROM ev WHERE note IS NOT NULL) AS notes_kept;

-- The dead letters: the headers are none; the later header and the bad values are bad_value.
SELECT partition, "offset", reason, left(detail, 90) AS detail
  FROM stoatflow.dead_letters WHERE source_name = 'csv' ORDER BY 1, 2;
SELECT aggregation_name, records_in, dead_letters, filtered FROM stoatflow.stats
 WHERE source_name = 'csv' ORDER BY 1;
SET client_min_messages = warning;  -- the drop NOTICEs differ by broker and timing
SELECT stoatflow.drop_source('csv', "cascade" => true);
RESET client_min_messages;
DROP TABLE csv_5m, csv_notes;

-- Declaration errors.
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', format => 'csv');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', format => 'csv',
    columns => 'a text, b int PATH ''$.b''');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', format => 'csv', columns => 'a text',
    format_options => '{"separator": ";"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', format => 'csv', columns => 'a text',
    format_options => '{"delimiter": ";;"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', format => 'csv', columns => 'a text',
    format_options => '{"delimiter": 59}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', format => 'csv', columns => 'a text',
    format_options => '{"quote": ","}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', format => 'csv', columns => 'a text',
    format_options => '{"header": "yes"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', format => 'csv', columns => 'a text',
    format_options => '{"null": "a,b"}');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', columns => 'a text',
    format_options => '{"delimiter": ";"}');
\echo :LAST_ERROR_SQLSTATE
-- Accepted: every option, stored as given.
SELECT stoatflow.create_source('x', 'e2e_csv', :'brokers', format => 'csv', columns => 'a text',
    format_options => '{"delimiter": "\t", "quote": "''", "null": "\\N", "header": false}');
SELECT format, format_options FROM stoatflow.source WHERE source_name = 'x';
SELECT stoatflow.drop_source('x');

-- The same events as JSON (topic e2e_csv_json, same partitions, same order) and as CSV (the
-- topic above, read again from the start by a new source): the same aggregations give
-- identical sinks, every row and column, final or not.
\pset format unaligned
\pset tuples_only on
SELECT string_agg(jsonb_build_object('page', page, 'ts', to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                     'amount', amount, 'qty', qty, 'note', note)::text,
                  E'\x1e' ORDER BY CASE WHEN seq = 200 THEN 60.5 ELSE seq END)
  FROM ev WHERE part = 0
\g | kcat -P -q -D '\x1e' -b "$KAFKA_BROKERS" -t e2e_csv_json -p 0 >/dev/null 2>&1
SELECT string_agg(jsonb_build_object('page', page, 'ts', to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                     'amount', amount, 'qty', qty, 'note', note)::text,
                  E'\x1e' ORDER BY CASE WHEN seq = 200 THEN 60.5 ELSE seq END)
  FROM ev WHERE part = 1
\g | kcat -P -q -D '\x1e' -b "$KAFKA_BROKERS" -t e2e_csv_json -p 1 >/dev/null 2>&1
\pset format aligned
\pset tuples_only off
BEGIN;
SELECT stoatflow.create_source('as_json', 'e2e_csv_json', :'brokers',
    columns => 'page text, ts timestamptz, amount numeric, qty integer, note text',
    key => 'page', event_time => 'ts', max_out_of_orderness => '0');
SELECT stoatflow.create_source('as_csv', 'e2e_csv', :'brokers', format => 'csv',
    columns => 'page text, ts timestamptz, amount numeric, qty integer, note text',
    format_options => '{"header": true}', key => 'page', event_time => 'ts',
    max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation(s || '_5m', s, stoatflow.tumbling('5 minutes'),
    'count(*) AS n, sum(amount) AS revenue, sum(qty) AS units, max(amount) AS top', s || '_5m')
  FROM unnest(ARRAY['as_json', 'as_csv']) s;
SELECT stoatflow.create_aggregation(s || '_notes', s, stoatflow.tumbling('10 minutes'),
    'count(*) AS n, sum(amount * qty) AS value, max(length(note)) AS longest', s || '_notes',
    group_by => 'page', filter => 'note IS NOT NULL')
  FROM unnest(ARRAY['as_json', 'as_csv']) s;
COMMIT;
SELECT stoatflow.wait_caught_up('as_json', '60 seconds'), stoatflow.wait_caught_up('as_csv', '60 seconds');
SELECT (SELECT count(*) FROM as_json_5m) AS rows_5m,
       (SELECT count(*) FROM (SELECT * FROM as_json_5m EXCEPT SELECT * FROM as_csv_5m) d) AS json_only,
       (SELECT count(*) FROM (SELECT * FROM as_csv_5m EXCEPT SELECT * FROM as_json_5m) d) AS csv_only;
SELECT (SELECT count(*) FROM as_json_notes) AS rows_notes,
       (SELECT count(*) FROM (SELECT * FROM as_json_notes EXCEPT SELECT * FROM as_csv_notes) d) AS json_only,
       (SELECT count(*) FROM (SELECT * FROM as_csv_notes EXCEPT SELECT * FROM as_json_notes) d) AS csv_only;
SELECT source_name, count(*) AS dead_letters FROM stoatflow.dead_letters
 WHERE source_name IN ('as_json', 'as_csv') GROUP BY 1 ORDER BY 1;
-- Should the sinks differ, what differs and why: the rows side by side (none), and what each
-- aggregation counted, dropped as late, still owes its sink, and the last error it met.
SELECT coalesce(j.key, c.key) AS key, coalesce(j.window_start, c.window_start) AS window_start,
       to_jsonb(j) - 'key' - 'window_start' AS as_json, to_jsonb(c) - 'key' - 'window_start' AS as_csv
  FROM as_json_5m j FULL JOIN as_csv_5m c USING (key, window_start)
 WHERE j IS DISTINCT FROM c ORDER BY 1, 2;
SELECT aggregation_name, records_in, dropped_late_window, dead_letters, sink_owed, last_error
  FROM stoatflow.stats WHERE aggregation_name IN ('as_json_5m', 'as_csv_5m', 'as_json_notes',
                                                  'as_csv_notes') ORDER BY 1;
SET client_min_messages = warning;  -- the drop NOTICEs differ by broker and timing
SELECT stoatflow.drop_source(s, "cascade" => true) FROM unnest(ARRAY['as_json', 'as_csv']) s;
RESET client_min_messages;
DROP TABLE as_json_5m, as_csv_5m, as_json_notes, as_csv_notes;
-- Its own tables go, so that later tests may use the same names.
DROP TABLE ev, lines CASCADE;
DROP FUNCTION csv_field(text, boolean);
