-- How records are converted and judged (README "Columns", Conversion; "Views and tables",
-- stoatflow.dead_letters): numeric integers beyond 38 digits are dead letters, never rounded;
-- dates and times that depend on the reader's clock, and infinite event times, are dead letters; a value
-- only one aggregation cannot use is that aggregation's dead letter, its siblings fold the
-- record. Synchronous, through process_records (no Kafka); sinks compared with SQL over the
-- same records.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

CREATE FUNCTION g_feed(source text, recs jsonb)
RETURNS TABLE (processed bigint, dead_letters bigint)
LANGUAGE sql AS $$ SELECT processed, dead_letters FROM stoatflow.process_records(source,
    (SELECT jsonb_agg(jsonb_build_object('value', r) ORDER BY n)
       FROM jsonb_array_elements(recs) WITH ORDINALITY AS t(r, n))) $$;
CREATE FUNCTION g_dead(source text)
RETURNS TABLE ("offset" bigint, reason text, detail text)
LANGUAGE sql AS $$ SELECT "offset", reason, detail FROM stoatflow.dead_letters
    WHERE source_name = source ORDER BY "offset", detail $$;

------------------------------------------------------------------------------------------
-- Exactness: numeric integers of up to 38 digits are summed exactly, as JSON numbers and as
-- strings (numeric's input function); 39 and 40 digits (1e39 too) are value_out_of_range
-- naming the column; a numeric with a fraction is summed as double precision (by design).
SELECT stoatflow.create_source('g_num', 'g_num', '127.0.0.1:9092',
    columns => 'who text, ts timestamptz, amount numeric', key => 'who', event_time => 'ts',
    max_out_of_orderness => '0', future_limit => NULL);
SELECT stoatflow.create_aggregation('g_num_agg', 'g_num', stoatflow.tumbling('1 minute'),
    'count(*) AS n, sum(amount) AS total', 'g_num_agg');
CREATE TABLE g_num_recs (n int, r jsonb);
INSERT INTO g_num_recs VALUES
 (1, '{"who": "a", "ts": "2026-11-30T10:00:01Z", "amount": 99999999999999999999999999999999999999}'),
 (2, '{"who": "a", "ts": "2026-11-30T10:00:02Z", "amount": "-12345678901234567890123456789012345678"}'),
 (3, '{"who": "a", "ts": "2026-11-30T10:00:03Z", "amount": 123456789012345678901234567890123456789}'),
 (4, '{"who": "a", "ts": "2026-11-30T10:00:04Z", "amount": "123456789012345678901234567890123456789"}'),
 (5, '{"who": "a", "ts": "2026-11-30T10:00:05Z", "amount": -1234567890123456789012345678901234567890}'),
 (6, '{"who": "a", "ts": "2026-11-30T10:00:06Z", "amount": " 0001234567890123456789012345678901234567890 "}'),
 (7, '{"who": "a", "ts": "2026-11-30T10:00:07Z", "amount": 1e39}'),
 (8, '{"who": "a", "ts": "2026-11-30T10:00:08Z", "amount": "1e39"}'),
 (9, '{"who": "a", "ts": "2026-11-30T10:00:09Z", "amount": 7}'),
 (10, '{"who": "b", "ts": "2026-11-30T10:00:10Z", "amount": 123456789012345678901234567890123456789.5}'),
 (11, '{"who": "b", "ts": "2026-11-30T10:00:11Z", "amount": "0.25"}');
SELECT * FROM g_feed('g_num', (SELECT jsonb_agg(r ORDER BY n) FROM g_num_recs));
SELECT * FROM g_dead('g_num');
-- "a": exactly the SQL sum of the records of up to 38 digits
SELECT s.key, s.n, s.total,
       s.total = (SELECT sum((r->>'amount')::numeric) FROM g_num_recs
                   WHERE r->>'who' = 'a' AND n IN (1, 2, 9)) AS exact
  FROM g_num_agg s WHERE s.key = 'a';
-- "b": a fraction is a double precision sum, close to SQL's
SELECT s.key, s.n,
       abs(s.total - (SELECT sum((r->>'amount')::numeric) FROM g_num_recs WHERE r->>'who' = 'b'))
           < 1e25 AS close
  FROM g_num_agg s WHERE s.key = 'b';

------------------------------------------------------------------------------------------
-- Clock-dependent dates and times are bad_value in every timestamptz, timestamp and date
-- column, read or not (any case, spaces, with a time); epoch and allballs are fixed values; an
-- infinite event time is bad_value, an infinite date elsewhere converts.
SELECT stoatflow.create_source('g_time', 'g_time', '127.0.0.1:9092',
    columns => 'who text, ts timestamptz, d date, t2 timestamp, tod time', key => 'who',
    event_time => 'ts', max_out_of_orderness => '0', future_limit => '1 hour');
SELECT stoatflow.create_aggregation('g_time_agg', 'g_time', stoatflow.tumbling('1 minute'),
    'count(*) AS n', 'g_time_agg');
SELECT * FROM g_feed('g_time', '[
    {"who": "a", "ts": "now"},
    {"who": "a", "ts": " Today "},
    {"who": "a", "ts": "today 10:00"},
    {"who": "a", "ts": "TOMORROW"},
    {"who": "a", "ts": "yesterday"},
    {"who": "a", "ts": "2026-11-30T10:00:01Z", "d": "today"},
    {"who": "a", "ts": "2026-11-30T10:00:02Z", "t2": "now"},
    {"who": "a", "ts": "2026-11-30 10:00:03", "d": "tomorrow"},
    {"who": "a", "ts": "infinity"},
    {"who": "a", "ts": "-Infinity"},
    {"who": "a", "ts": "2026-11-30T10:00:04Z", "d": "infinity", "t2": "-infinity"},
    {"who": "a", "ts": "2026-11-30T10:00:05Z", "d": "epoch", "t2": "epoch", "tod": "allballs"},
    {"who": "a", "ts": "epoch"}]');
SELECT * FROM g_dead('g_time');
SELECT key, window_start, n FROM g_time_agg ORDER BY 1, 2;
-- the epoch record converted (and came late)
SELECT records_in, dropped_late_window FROM stoatflow.stats WHERE aggregation_name = 'g_time_agg';

-- An event_time expression (the source's executor) with an infinite result: bad_value too.
SELECT stoatflow.create_source('g_texp', 'g_texp', '127.0.0.1:9092',
    columns => 'who text, secs double precision', key => 'who',
    event_time => 'to_timestamp(secs)', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('g_texp_agg', 'g_texp', stoatflow.tumbling('10 seconds'),
    'count(*) AS n', 'g_texp_agg');
SELECT * FROM g_feed('g_texp', '[
    {"who": "a", "secs": "Infinity"},
    {"who": "a", "secs": "-Infinity"},
    {"who": "a", "secs": 1e300},
    {"who": "a", "secs": 5}]');
SELECT * FROM g_dead('g_texp');
SELECT key, window_start, n FROM g_texp_agg ORDER BY 1, 2;

------------------------------------------------------------------------------------------
-- A source without columns: sum(page) cannot use a string page; that is a dead letter of the
-- sum's aggregation only (its detail names it); count(*) and the sessions count every record.
-- A clock word as event time is bad_time here (0.1's rule: ISO-8601 or epoch ms only).
SELECT stoatflow.create_source('g_agg', 'g_agg', '127.0.0.1:9092', key => 'user',
    event_time => 'ts', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('g_cnt', 'g_agg', stoatflow.tumbling('1 minute'),
    'count(*) AS n', 'g_cnt');
SELECT stoatflow.create_aggregation('g_sum', 'g_agg', stoatflow.tumbling('1 minute'),
    'count(*) AS n, sum(page) AS pages', 'g_sum');
SELECT stoatflow.create_aggregation('g_ses', 'g_agg', stoatflow.session('10 seconds'),
    'count(*) AS n', 'g_ses');
CREATE TABLE g_agg_recs (n int, r jsonb);
INSERT INTO g_agg_recs VALUES
 (1, '{"user": "u1", "ts": 1000, "page": 3}'),
 (2, '{"user": "u1", "ts": 2000, "page": "home"}'),
 (3, '{"user": "u2", "ts": 3000, "page": 5}'),
 (4, '{"user": "u1", "ts": 4000, "page": "7"}'),
 (5, '{"user": "u2", "ts": 30000, "page": {"id": 1}}'),
 (6, '{"user": "u1", "ts": 31000}'),
 (7, '{"user": "u2", "ts": 61000, "page": 2}'),
 (8, '{"user": "u1", "ts": "now", "page": 1}'),
 (9, '{"user": "u1", "ts": "today", "page": 1}'),
 (10, '{"user": "u1", "ts": 125000, "page": "last"}');
SELECT * FROM g_feed('g_agg', (SELECT jsonb_agg(r ORDER BY n) FROM g_agg_recs));
SELECT * FROM g_dead('g_agg');
-- the SQL over the same records: those with a usable time; sum only over numeric pages
CREATE VIEW g_ok AS SELECT r->>'user' AS u, (r->>'ts')::bigint AS ts, r->'page' AS page
  FROM g_agg_recs WHERE jsonb_typeof(r->'ts') = 'number';
SELECT key, extract(epoch FROM window_start) AS ws, n FROM g_cnt ORDER BY 1, 2;
SELECT u, floor(ts / 60000) * 60 AS ws, count(*) AS n FROM g_ok GROUP BY 1, 2 ORDER BY 1, 2;
SELECT key, extract(epoch FROM window_start) AS ws, n, pages FROM g_sum ORDER BY 1, 2;
SELECT u, floor(ts / 60000) * 60 AS ws, count(*) AS n,
       sum((page #>> '{}')::numeric) FILTER (WHERE jsonb_typeof(page) = 'number') AS pages
  FROM g_ok WHERE page IS NULL OR jsonb_typeof(page) = 'number' GROUP BY 1, 2 ORDER BY 1, 2;
SELECT key, extract(epoch FROM window_start) AS ws, extract(epoch FROM window_end) AS we, n
  FROM g_ses ORDER BY 1, 2;
SELECT aggregation_name, records_in FROM stoatflow.stats
 WHERE aggregation_name LIKE 'g\_%' AND source_name = 'g_agg' ORDER BY 1;

SELECT stoatflow.drop_source(s, "cascade" => true) FROM unnest(ARRAY['g_num', 'g_time', 'g_texp', 'g_agg']) s;
DROP TABLE g_num_agg, g_time_agg, g_texp_agg, g_cnt, g_sum, g_ses;
DROP VIEW g_ok;
DROP TABLE g_num_recs, g_agg_recs;
DROP FUNCTION g_feed(text, jsonb), g_dead(text);
