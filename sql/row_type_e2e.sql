-- A source with columns end to end through Kafka (README "Expressions and PostgreSQL aggregates"): nested PATHs, the message key
-- (metadata column kafka_key) as the grouping key, an event time from ISO strings with an
-- offset (the C++ fast lane) and without one (converted by PostgreSQL on the worker's main
-- thread, in the server's TimeZone), bad values as dead letters naming the column, absent
-- members as NULL; the sink checked against plain SQL over the same records.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
\getenv brokers KAFKA_BROKERS

-- The records, in the order they are produced into partition 0 (offset = n - 1).
CREATE TABLE produced (n int PRIMARY KEY, k text, v text);
INSERT INTO produced VALUES
 (1, 'k1', '{"order": {"id": "o1", "amount": "12.50"}, "qty": 2, "ts": "2026-11-30T10:01:00+01:00", "city": "Oslo"}'),
 (2, 'k2', '{"order": {"id": "o2", "amount": 7}, "qty": "3", "ts": "2026-11-30T09:02:00Z"}'),
 (3, 'k1', '{"order": {"id": "o3", "amount": 1.25}, "qty": 1, "ts": "2026-11-30 09:03:00"}'),
 (4, 'k3', '{"order": {"id": "o4", "amount": "abc"}, "qty": 1, "ts": "2026-11-30T09:04:00Z"}'),
 (5, 'k3', '{"order": {"id": "o5", "amount": 2}, "qty": 1.5, "ts": "2026-11-30T09:04:00Z"}'),
 (6, NULL, '{"order": {"id": "o6", "amount": 3}, "qty": 1, "ts": "2026-11-30T09:05:00Z"}'),
 (7, 'k2', '{"order": {"id": "o7"}, "ts": "2026-11-30T09:06:00.250Z"}'),
 (8, 'k2', '{"order": {"id": "o8", "amount": true}, "qty": 4, "ts": "2026-11-30T09:07:00Z"}'),
 (9, 'k2', '{"order": {"id": "o9", "amount": 1e2}, "qty": 0, "ts": "2026-11-30T09:38:00+00:30"}'),
 (10, 'k1', 'not json'),
 (11, 'k1', '{"order": {"id": "o11", "amount": 5}, "qty": 4, "ts": 1796030400000}');
\! printf '%s\n' 'k1|{"order": {"id": "o1", "amount": "12.50"}, "qty": 2, "ts": "2026-11-30T10:01:00+01:00", "city": "Oslo"}' 'k2|{"order": {"id": "o2", "amount": 7}, "qty": "3", "ts": "2026-11-30T09:02:00Z"}' 'k1|{"order": {"id": "o3", "amount": 1.25}, "qty": 1, "ts": "2026-11-30 09:03:00"}' 'k3|{"order": {"id": "o4", "amount": "abc"}, "qty": 1, "ts": "2026-11-30T09:04:00Z"}' 'k3|{"order": {"id": "o5", "amount": 2}, "qty": 1.5, "ts": "2026-11-30T09:04:00Z"}' | kcat -P -q -K '|' -b "$KAFKA_BROKERS" -t e2e_rows -p 0 >/dev/null 2>&1
\! printf '%s\n' '{"order": {"id": "o6", "amount": 3}, "qty": 1, "ts": "2026-11-30T09:05:00Z"}' | kcat -P -q -b "$KAFKA_BROKERS" -t e2e_rows -p 0 >/dev/null 2>&1
\! printf '%s\n' 'k2|{"order": {"id": "o7"}, "ts": "2026-11-30T09:06:00.250Z"}' 'k2|{"order": {"id": "o8", "amount": true}, "qty": 4, "ts": "2026-11-30T09:07:00Z"}' 'k2|{"order": {"id": "o9", "amount": 1e2}, "qty": 0, "ts": "2026-11-30T09:38:00+00:30"}' 'k1|not json' 'k1|{"order": {"id": "o11", "amount": 5}, "qty": 4, "ts": 1796030400000}' | kcat -P -q -K '|' -b "$KAFKA_BROKERS" -t e2e_rows -p 0 >/dev/null 2>&1

SELECT stoatflow.create_source('rows', 'e2e_rows', :'brokers',
    columns => 'order_id text PATH ''$.order.id'', amount numeric PATH ''$.order.amount'',
                qty integer, ts timestamptz, city text',
    key => 'kafka_key', event_time => 'ts', max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('rows_5m', 'rows', stoatflow.tumbling('5 minutes'),
    'count(*) AS n, sum(amount) AS revenue, sum(qty) AS units, max(amount), count(qty)', 'rows_5m');
SELECT stoatflow.wait_caught_up('rows', '60 seconds');

-- The oracle: the same records converted by SQL casts (as a literal would be), in the server's
-- TimeZone (the worker's) for the time without an offset; a record whose cast fails is out.
CREATE FUNCTION oracle_row(k text, v text, OUT key text, OUT ts timestamptz, OUT amount numeric,
                           OUT qty integer)
LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
BEGIN
    j := v::jsonb;
    key := k;
    PERFORM set_config('timezone', coalesce((SELECT setting FROM pg_file_settings
        WHERE name = 'timezone' AND applied ORDER BY seqno DESC LIMIT 1), 'GMT'), true);
    ts := CASE jsonb_typeof(j->'ts') WHEN 'number' THEN to_timestamp((j->>'ts')::numeric / 1000)
                                     ELSE (j->>'ts')::timestamptz END;
    IF jsonb_typeof(j#>'{order,amount}') = 'boolean' THEN RAISE EXCEPTION 'bad'; END IF;
    amount := (j#>>'{order,amount}')::numeric;
    qty := (j->>'qty')::integer;
EXCEPTION WHEN others THEN
    key := NULL;
END $$;
CREATE VIEW oracle AS
SELECT o.key, to_timestamp(floor(extract(epoch FROM o.ts) / 300) * 300) AS window_start,
       count(*) AS n, sum(o.amount) AS revenue, sum(o.qty) AS units, max(o.amount) AS max_amount,
       count(o.qty) AS count_qty
  FROM produced p, oracle_row(p.k, p.v) o
 WHERE o.key IS NOT NULL
 GROUP BY 1, 2;
SET timezone = 'UTC';
SELECT key, window_start, n, revenue, units, max_amount, count_qty, final FROM rows_5m ORDER BY 1, 2;
-- Every closed window equals the oracle's row, and no window is missing or extra.
SELECT 'sink only' AS side, * FROM (
  SELECT key, window_start, n, revenue::numeric, units, max_amount::numeric, count_qty FROM rows_5m WHERE final
  EXCEPT SELECT * FROM oracle) d
UNION ALL
SELECT 'oracle only', * FROM (
  SELECT * FROM oracle WHERE window_start + interval '5 minutes' <= '2026-11-30 09:20:00+00'
  EXCEPT SELECT key, window_start, n, revenue::numeric, units, max_amount::numeric, count_qty FROM rows_5m WHERE final) d;
-- The dead letters name the reason and, for bad values, the column, its type and PostgreSQL's message.
SELECT "offset", reason, detail FROM stoatflow.dead_letters WHERE source_name = 'rows' ORDER BY "offset";
SELECT records_in, dead_letters FROM stoatflow.stats WHERE aggregation_name = 'rows_5m';
SET client_min_messages = warning;  -- the consumer group's removal depends on the broker (README "Removing a pipeline")
SELECT stoatflow.drop_source('rows', "cascade" => true);
RESET client_min_messages;
DROP TABLE rows_5m;
