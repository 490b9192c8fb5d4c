-- Expressive aggregations end to end (README "Expressions and PostgreSQL aggregates"): group_by, filter and aggregate lists run by
-- PostgreSQL's executor in the worker's record path (process_records runs it exactly as the
-- worker does, restoring from the committed state on every call). Every sink is compared with
-- PostgreSQL's own GROUP BY over the records each window accepted.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

------------------------------------------------------------------------------------------
-- The seed's complete example: web activity and purchases (two topics, one source, one
-- watermark), per-customer daily windows with 15 minutes of grace, the customer id taken from
-- whichever side a record came from, then joined with a profile table.
SELECT stoatflow.create_source('shop', 'web_activity, purchases', '127.0.0.1:9092',
    key => 'user_id', event_time => 'ts', max_out_of_orderness => '0',
    columns => 'user_id text, ts timestamptz, page text, status integer,
                customer_id text PATH ''$.customer.id'', amount numeric, qty integer');
SELECT stoatflow.create_aggregation('customer_daily', 'shop',
    stoatflow.tumbling('1 day', grace => '15 minutes'),
    'count(*) FILTER (WHERE kafka_topic = ''web_activity'') AS views,
     count(*) FILTER (WHERE kafka_topic = ''purchases'') AS orders,
     sum(amount * qty) AS revenue,
     sum(amount * qty) / nullif(count(*) FILTER (WHERE kafka_topic = ''purchases''), 0) AS avg_order',
    'customer_daily', group_by => 'coalesce(customer_id, user_id) AS customer_id');
-- the sink's columns follow the expressions' types; its primary key is (customer_id, window_start)
SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull
  FROM pg_attribute a WHERE a.attrelid = 'customer_daily'::regclass AND a.attnum > 0 ORDER BY a.attnum;
SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i WHERE i.indrelid = 'customer_daily'::regclass;
SELECT executor, group_by FROM stoatflow.aggregation WHERE aggregation_name = 'customer_daily';

-- errors per page and topic, without the health checks
SELECT stoatflow.create_aggregation('page_errors', 'shop', stoatflow.tumbling('1 hour'),
    'count(*) AS hits, count(*) FILTER (WHERE status >= 500) AS errors,
     max(status) AS worst, bool_and(status < 400) AS all_ok, min(user_id) AS first_user',
    'page_errors', group_by => 'lower(page) AS page, kafka_topic', filter => 'page <> ''/health''');
SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_attribute a WHERE a.attrelid = 'page_errors'::regclass AND a.attnum > 0 ORDER BY a.attnum;

-- the records, as plain rows for the oracle
CREATE TABLE shop_records (seq serial, topic text, v jsonb);
CREATE FUNCTION shop_feed(recs jsonb) RETURNS TABLE (processed bigint, dead_letters bigint, watermark timestamptz)
LANGUAGE sql AS $$
    INSERT INTO shop_records (topic, v) SELECT r->>'topic', r->'value' FROM jsonb_array_elements(recs) r;
    SELECT * FROM stoatflow.process_records('shop', recs);
$$;
CREATE FUNCTION web(u text, ts text, page text, status integer) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('topic', 'web_activity', 'value',
        jsonb_build_object('user_id', u, 'ts', ts, 'page', page, 'status', status)) $$;
CREATE FUNCTION buy(c text, ts text, amount text, qty integer) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('topic', 'purchases', 'value',
        jsonb_build_object('customer', jsonb_build_object('id', c), 'ts', ts, 'amount', amount, 'qty', qty)) $$;

SELECT * FROM shop_feed(jsonb_build_array(
    web('c1', '2026-11-02T08:00:00Z', '/p/1', 200),
    web('c1', '2026-11-02T08:05:00Z', '/P/1', 503),
    buy('c1', '2026-11-02T08:06:00Z', '19.99', 2),
    web('c2', '2026-11-02T09:00:00Z', '/health', 200),
    web('c2', '2026-11-02T09:01:00Z', '/p/2', 404),
    buy('c2', '2026-11-02T09:30:00Z', '5.5', 3)));
-- a second call restores everything from the committed state (the aggregates' serialized
-- states included) and goes on; W is the lower of the two topics' newest times
SELECT * FROM shop_feed(jsonb_build_array(
    buy('c1', '2026-11-02T23:59:59Z', '0.01', 1),
    web('c3', '2026-11-03T00:10:00Z', '/p/3', 200),
    buy('c3', '2026-11-03T00:12:00Z', '7', 1),
    -- late but within the 15 minutes of grace of 2026-11-02's window (W = 00:10)
    buy('c2', '2026-11-02T23:00:00Z', '100', 1),
    web('c3', '2026-11-03T00:20:00Z', '/p/3', 500),
    buy('c3', '2026-11-03T00:20:00Z', '3', 2),
    -- too late: 2026-11-02's window closed at 00:15 (counted as dropped, not folded)
    buy('c1', '2026-11-02T12:00:00Z', '1000', 1),
    -- a bad value: a dead letter naming the column
    buy('c4', '2026-11-03T00:21:00Z', 'lots', 1),
    -- neither a customer nor a user: no key in either aggregation
    jsonb_build_object('topic', 'purchases', 'value', jsonb_build_object('ts', '2026-11-03T00:22:00Z', 'amount', '1', 'qty', 1))));

SELECT customer_id, window_start, views, orders, revenue, round(avg_order, 4) AS avg_order, final
  FROM customer_daily ORDER BY customer_id, window_start;
SELECT page, kafka_topic, window_start, hits, errors, worst, all_ok, first_user, final
  FROM page_errors ORDER BY page, kafka_topic, window_start;
SELECT reason, detail FROM stoatflow.dead_letters WHERE source_name = 'shop' ORDER BY topic, partition, "offset", reason, detail;
SELECT aggregation_name, records_in, dropped_late, filtered FROM stoatflow.stats WHERE source_name = 'shop' ORDER BY 1;

-- the oracle: PostgreSQL's GROUP BY over the decoded records each window accepted (the late
-- purchase of c1 excluded: its window had closed), for every window
CREATE VIEW shop_rows AS
SELECT r.seq, r.topic AS kafka_topic, (r.v->>'user_id') AS user_id, (r.v->>'ts')::timestamptz AS ts,
       r.v->>'page' AS page, (r.v->>'status')::integer AS status,
       r.v->'customer'->>'id' AS customer_id,
       CASE WHEN r.v->>'amount' ~ '^[0-9.]+$' THEN (r.v->>'amount')::numeric END AS amount,
       (r.v->>'qty')::integer AS qty
  FROM shop_records r
 WHERE coalesce(r.v->>'amount', '0') ~ '^[0-9.]+$' AND r.seq <> 13;
(SELECT coalesce(customer_id, user_id) AS customer_id, date_trunc('day', ts) AS window_start,
        count(*) FILTER (WHERE kafka_topic = 'web_activity') AS views,
        count(*) FILTER (WHERE kafka_topic = 'purchases') AS orders,
        sum(amount * qty) AS revenue,
        sum(amount * qty) / nullif(count(*) FILTER (WHERE kafka_topic = 'purchases'), 0) AS avg_order
   FROM shop_rows WHERE coalesce(customer_id, user_id) IS NOT NULL GROUP BY 1, 2
 EXCEPT SELECT customer_id, window_start, views, orders, revenue, avg_order FROM customer_daily)
UNION ALL
(SELECT customer_id, window_start, views, orders, revenue, avg_order FROM customer_daily
 EXCEPT SELECT coalesce(customer_id, user_id), date_trunc('day', ts),
        count(*) FILTER (WHERE kafka_topic = 'web_activity'),
        count(*) FILTER (WHERE kafka_topic = 'purchases'), sum(amount * qty),
        sum(amount * qty) / nullif(count(*) FILTER (WHERE kafka_topic = 'purchases'), 0)
   FROM shop_rows WHERE coalesce(customer_id, user_id) IS NOT NULL GROUP BY 1, 2);

-- ... and the seed's last step: re-keyed and joined with a profile table, in plain SQL
CREATE TABLE customer_profile (customer_id text PRIMARY KEY, name text, tier text);
INSERT INTO customer_profile VALUES ('c1', 'Ada', 'gold'), ('c2', 'Grace', 'silver'), ('c3', 'Edsger', 'bronze');
SELECT p.tier, d.window_start::date AS day, sum(d.revenue) AS revenue, sum(d.views) AS views
  FROM customer_daily d JOIN customer_profile p USING (customer_id)
 GROUP BY p.tier, d.window_start ORDER BY day, p.tier;

------------------------------------------------------------------------------------------
-- What the worker runs as: the aggregation's owner, in a security-restricted operation: a
-- function of the owner's in group_by that tries to make its owner a superuser on the way.
CREATE ROLE sf_expr_owner;
GRANT USAGE ON SCHEMA stoatflow TO sf_expr_owner;
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) TO sf_expr_owner;
GRANT SELECT ON stoatflow_source.shop TO sf_expr_owner;  -- (may aggregate the source: README "Security")
CREATE SCHEMA expr_owned AUTHORIZATION sf_expr_owner;
SET ROLE sf_expr_owner;
CREATE FUNCTION expr_owned.tag(p text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    BEGIN
        ALTER ROLE sf_expr_owner SUPERUSER;
    EXCEPTION WHEN others THEN NULL;
    END;
    RETURN upper(p);
END $$;
SELECT stoatflow.create_aggregation('owned_pages', 'shop', stoatflow.tumbling('1 hour'),
    'count(*) AS n', 'expr_owned.pages', group_by => 'expr_owned.tag(page)');
RESET ROLE;
SELECT * FROM shop_feed(jsonb_build_array(web('c5', '2026-11-03T01:00:00Z', '/p/5', 200)));
SELECT key, n FROM expr_owned.pages ORDER BY key;
SELECT rolsuper AS owner_became_superuser FROM pg_roles WHERE rolname = 'sf_expr_owner';
-- a volatile function is refused at declaration (a record read again must give what it gave)
SELECT stoatflow.create_aggregation('volatile_key', 'shop', stoatflow.tumbling('1 hour'),
    'count(*)', 'volatile_key', group_by => 'page || random()::text');
\echo :LAST_ERROR_SQLSTATE

------------------------------------------------------------------------------------------
-- Expression errors and NULL keys are one aggregation's dead letters; the others go on.
SELECT stoatflow.create_source('calc', 'calc', '127.0.0.1:9092', event_time => 'ts',
    max_out_of_orderness => '0', columns => 'k text, ts bigint, a integer, b integer');
SELECT stoatflow.create_aggregation('ratio', 'calc', stoatflow.tumbling('10 seconds'),
    'sum(a / b) AS q, count(*) AS n', 'calc_ratio', group_by => 'k');
SELECT stoatflow.create_aggregation('plain', 'calc', stoatflow.tumbling('10 seconds'),
    'sum(a) AS total, count(*) AS n', 'calc_plain', group_by => 'coalesce(k, ''none'')');
SELECT * FROM stoatflow.process_records('calc', '[
    {"value": {"k": "x", "ts": 1000, "a": 10, "b": 2}},
    {"value": {"k": "x", "ts": 2000, "a": 10, "b": 0}},
    {"value": {"k": null, "ts": 3000, "a": 7, "b": 1}},
    {"value": {"k": "x", "ts": 4000, "a": 3, "b": 3}},
    {"value": {"k": "y", "ts": 25000, "a": 1, "b": 1}}]');
SELECT key, window_start, q, n, final FROM calc_ratio ORDER BY 1, 2;
SELECT key, window_start, total, n, final FROM calc_plain ORDER BY 1, 2;
SELECT "offset", reason, detail FROM stoatflow.dead_letters WHERE source_name = 'calc' ORDER BY "offset";
SELECT next_offset FROM stoatflow.partition_offset WHERE source_id = (SELECT source_id FROM stoatflow.source WHERE source_name = 'calc');

-- window_state shows the executor's columns, resync_sink rewrites them
SELECT key, q, n FROM stoatflow.window_state('ratio', NULL::calc_ratio) ORDER BY key, window_start;
TRUNCATE calc_ratio;
SELECT stoatflow.resync_sink('ratio');
SELECT key, window_start, q, n, final FROM calc_ratio ORDER BY 1, 2;

------------------------------------------------------------------------------------------
-- The source's own key and event time as expressions: a fast-path aggregation keys by the
-- computed key, an executor one without group_by too; the event time is computed.
SELECT stoatflow.create_source('exprsrc', 'exprsrc', '127.0.0.1:9092',
    key => 'lower(who)', event_time => 'to_timestamp(secs)', max_out_of_orderness => '0',
    columns => 'who text, secs double precision, amount integer');
SELECT stoatflow.create_aggregation('expr_fast', 'exprsrc', stoatflow.tumbling('10 seconds'),
    'count(*) AS n, sum(amount) AS total', 'expr_fast');
SELECT stoatflow.create_aggregation('expr_exec', 'exprsrc', stoatflow.tumbling('10 seconds'),
    'count(*) AS n, max(amount) FILTER (WHERE amount > 1) AS top', 'expr_exec');
SELECT aggregation_name, executor FROM stoatflow.aggregation WHERE aggregation_name LIKE 'expr\_%' ORDER BY 1;
SELECT * FROM stoatflow.process_records('exprsrc', '[
    {"value": {"who": "Ann", "secs": 1.5, "amount": 2}},
    {"value": {"who": "ANN", "secs": 3, "amount": 5}},
    {"value": {"who": null, "secs": 4, "amount": 1}},
    {"value": {"who": "bob", "secs": null, "amount": 1}},
    {"value": {"who": "bob", "secs": 1e300, "amount": 1}},
    {"value": {"who": "bob", "secs": 25, "amount": 7}}]');
SELECT key, window_start, n, total, final FROM expr_fast ORDER BY 1, 2;
SELECT key, window_start, n, top, final FROM expr_exec ORDER BY 1, 2;
SELECT "offset", reason, detail FROM stoatflow.dead_letters WHERE source_name = 'exprsrc' ORDER BY "offset";
-- refused at declaration, with the position in the text: an unknown column, a text event time
SELECT stoatflow.create_source('badexpr', 'x', '127.0.0.1:9092', event_time => 'to_timestamp(nope)',
    columns => 'who text');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.create_source('badexpr', 'x', '127.0.0.1:9092', event_time => 'who || ''x''',
    columns => 'who text');
\echo :LAST_ERROR_SQLSTATE

-- without columns, group_by and filter are refused
SELECT stoatflow.create_source('plain_json', 'plain_json', '127.0.0.1:9092', key => 'user');
SELECT stoatflow.create_aggregation('nope', 'plain_json', stoatflow.tumbling('1 minute'),
    'count(*)', 'nope', group_by => 'user');
\echo :LAST_ERROR_SQLSTATE

SELECT stoatflow.drop_source('plain_json', cascade => true);
SELECT stoatflow.drop_source('calc', cascade => true);
SELECT stoatflow.drop_source('exprsrc', cascade => true);
SELECT stoatflow.drop_source('shop', cascade => true);
DROP TABLE customer_daily, page_errors, calc_ratio, calc_plain, customer_profile, expr_fast, expr_exec CASCADE;
DROP VIEW shop_rows;
DROP TABLE shop_records;
DROP FUNCTION shop_feed(jsonb), web(text, text, text, integer), buy(text, text, text, integer);
DROP SCHEMA expr_owned CASCADE;
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) FROM sf_expr_owner;
REVOKE USAGE ON SCHEMA stoatflow FROM sf_expr_owner;
DROP ROLE sf_expr_owner;
