-- The PostgreSQL border's rules: sink columns named by SQL keywords survive every
-- write path (PostgreSQL's quote_identifier), a sink that is a leaf partition keeps its
-- partition constraint, a partitioned sink routes its rows, and a field path is judged as the
-- field it names (a long key path is not an aggregate column).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
CREATE FUNCTION rec(u text, ts bigint, amount numeric DEFAULT 1) RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('value', jsonb_build_object('user', u, 'ts', ts, 'amount', amount)) $$;
CREATE FUNCTION feed(source text, VARIADIC recs jsonb[])
RETURNS TABLE (processed bigint, dead_letters bigint) LANGUAGE sql AS $$
    SELECT processed, dead_letters FROM stoatflow.process_records(source, to_jsonb(recs)) $$;
CREATE FUNCTION secs(t timestamptz) RETURNS numeric LANGUAGE sql AS $$ SELECT extract(epoch FROM t) $$;
SELECT stoatflow.create_source('rules', 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0', future_limit => NULL);

------------------------------------------------------------------------------------------
-- 1. Aggregates aliased by reserved words ("order", "end", "user", "select") and by names
--    that need quoting for other reasons (a quote, upper case): windows written, rewritten
--    (ON CONFLICT ... DO UPDATE SET "order" = EXCLUDED."order"), merged away, resynced.
------------------------------------------------------------------------------------------
SELECT stoatflow.create_aggregation('kw', 'rules', stoatflow.tumbling('10 seconds'),
    'count(*) AS "order", sum(amount) AS "end", max(amount) AS "user", min(amount) AS "select", '
    'avg(amount) AS "Q""uote"', 'kw', emit => 'on_window_update');
SELECT attname FROM pg_attribute WHERE attrelid = 'kw'::regclass AND attnum > 0 ORDER BY attnum;
SELECT * FROM feed('rules', rec('a', 1000, 5), rec('b', 2000, 1));
-- the same windows again: the rewrite is an upsert on (key, window_start)
SELECT * FROM feed('rules', rec('a', 3000, 7), rec('b', 4000, 2));
SELECT * FROM feed('rules', rec('a', 5000, 1), rec('a', 12000, 3));
SELECT key, secs(window_start) AS ws, "order", "end", "user", "select", "Q""uote", final
  FROM kw ORDER BY key, window_start;
SELECT windows_emitted, windows_reemitted, status, last_error FROM stoatflow.stats WHERE aggregation_name = 'kw';
SELECT key, secs(window_start) AS ws, "order", "end" FROM stoatflow.window_state('kw', NULL::kw) ORDER BY 1, 2;
-- rows lost in the sink come back through the upsert path too
DELETE FROM kw WHERE key = 'a';
UPDATE kw SET "order" = 0;
SELECT stoatflow.resync_sink('kw') AS rewritten;
SELECT key, secs(window_start) AS ws, "order", "end", "user", final FROM kw ORDER BY key, window_start;

-- a session aggregation with keyword columns: a record joins the open session and moves its
-- start, so the old row is deleted and the merged one written
SELECT stoatflow.create_aggregation('kw_sess', 'rules', stoatflow.session('10 seconds'),
    'count(*) AS "order", sum(amount) AS "end"', 'kw_sess');
SELECT * FROM feed('rules', rec('s', 20000), rec('s', 40000));
SELECT key, secs(window_start) AS ws, secs(window_end) AS we, "order", "end" FROM kw_sess ORDER BY 1, 2;
SELECT * FROM feed('rules', rec('s', 30000));
SELECT key, secs(window_start) AS ws, secs(window_end) AS we, "order", "end" FROM kw_sess ORDER BY 1, 2;
SELECT status, last_error FROM stoatflow.stats WHERE aggregation_name = 'kw_sess';

-- an existing sink whose keyword columns were made by hand
CREATE TABLE kw_own (key text, window_start timestamptz, window_end timestamptz, "order" bigint,
    "end" numeric, event_time timestamptz, final boolean, PRIMARY KEY (key, window_start));
SELECT stoatflow.create_aggregation('kw_own', 'rules', stoatflow.tumbling('10 seconds'),
    'count(*) AS "order", sum(amount) AS "end"', 'kw_own', emit => 'on_window_close');
SELECT * FROM feed('rules', rec('o', 50000, 2), rec('o', 51000, 3), rec('o', 70000));
SELECT key, secs(window_start) AS ws, "order", "end", final FROM kw_own ORDER BY 1, 2;
SELECT stoatflow.drop_aggregation('kw', drop_sink => true);
SELECT stoatflow.drop_aggregation('kw_sess', drop_sink => true);
SELECT stoatflow.drop_aggregation('kw_own', drop_sink => true);

------------------------------------------------------------------------------------------
-- 2. Partitioned sinks. A leaf partition as the sink: rows inside its bounds are written,
--    a window outside them violates its partition constraint (the sink fails, is owed the
--    window, and the rest of the pipeline goes on) — never a row the partition may not hold.
------------------------------------------------------------------------------------------
CREATE TABLE by_day (key text NOT NULL, window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL, n bigint, event_time timestamptz NOT NULL,
    final boolean NOT NULL DEFAULT false, PRIMARY KEY (key, window_start))
    PARTITION BY RANGE (window_start);
CREATE TABLE by_day_0 PARTITION OF by_day FOR VALUES FROM ('1970-01-01 00:00:00+00') TO ('1970-01-01 00:02:00+00');
CREATE TABLE by_day_1 PARTITION OF by_day FOR VALUES FROM ('1970-01-01 00:02:00+00') TO ('1970-01-02 00:00:00+00');
SELECT stoatflow.create_source('parts', 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0', future_limit => NULL);
SELECT stoatflow.create_aggregation('leaf', 'parts', stoatflow.tumbling('1 minute'),
    'count(*) AS n', 'by_day_0');
-- new windows inside the leaf's bounds (the bulk path would skip the constraint: INSERT instead)
SELECT * FROM feed('parts', rec('a', 1000), rec('b', 61000));
SELECT tableoid::regclass AS part, key, secs(window_start) AS ws, n FROM by_day ORDER BY 2, 3;
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'leaf';
-- a window at 120 s belongs to by_day_1: the leaf refuses it (23514), nothing lands anywhere
SELECT * FROM feed('parts', rec('c', 121000));
SELECT tableoid::regclass AS part, key, secs(window_start) AS ws, n FROM by_day ORDER BY 2, 3;
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'leaf';
-- the whole partitioned table as the sink (a source of its own, its watermark at the start):
-- rows are routed to their partitions
SELECT stoatflow.drop_aggregation('leaf');
TRUNCATE by_day;
SELECT stoatflow.create_source('routes', 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
    max_out_of_orderness => '0', future_limit => NULL);
SELECT stoatflow.create_aggregation('routed', 'routes', stoatflow.tumbling('1 minute'),
    'count(*) AS n', 'by_day');
SELECT * FROM feed('routes', rec('e', 1000), rec('d', 130000), rec('d', 131000));
SELECT tableoid::regclass AS part, key, secs(window_start) AS ws, n FROM by_day ORDER BY 2, 3;
SELECT status, last_error FROM stoatflow.stats WHERE aggregation_name = 'routed';
-- retention by dropping a partition under the running aggregation: its windows are closed
-- (the watermark is at 131 s), so nothing is written there again, a late record for it is
-- dropped as late, and the pipeline goes on
DROP TABLE by_day_0;
SELECT * FROM feed('routes', rec('d', 200000), rec('e', 2000));
SELECT tableoid::regclass AS part, key, secs(window_start) AS ws, n FROM by_day ORDER BY 2, 3;
SELECT status, last_error, sink_owed, dropped_late FROM stoatflow.stats WHERE aggregation_name = 'routed';
-- a window no partition covers (day 2, not created yet): the sink fails (23514) and is owed
-- the window; once the partition exists, the next commit writes it
SELECT * FROM feed('routes', rec('f', 86400000 + 5000));
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'routed';
CREATE TABLE by_day_2 PARTITION OF by_day FOR VALUES FROM ('1970-01-02 00:00:00+00') TO ('1970-01-03 00:00:00+00');
SELECT * FROM feed('routes', rec('f', 86400000 + 6000));
SELECT tableoid::regclass AS part, key, secs(window_start) AS ws, n FROM by_day ORDER BY 2, 3;
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'routed';
DROP TABLE by_day_2;
SELECT stoatflow.drop_aggregation('routed');
SELECT stoatflow.drop_source('routes');
-- hostile: the default partition as the sink, with a CHECK constraint of its own; a window
-- its CHECK refuses stalls the sink until the constraint is dropped, then it is written
CREATE TABLE by_day_def PARTITION OF by_day DEFAULT;
ALTER TABLE by_day_def ADD CONSTRAINT no_x CHECK (key <> 'x');
SELECT stoatflow.create_aggregation('deflt', 'parts', stoatflow.tumbling('1 minute'),
    'count(*) AS n', 'by_day_def');
SELECT * FROM feed('parts', rec('y', 86400000 + 2000));
SELECT * FROM feed('parts', rec('x', 86400000 + 1000));
SELECT tableoid::regclass AS part, key, secs(window_start) AS ws, n FROM by_day ORDER BY 2, 3;
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'deflt';
ALTER TABLE by_day_def DROP CONSTRAINT no_x;
SELECT * FROM feed('parts', rec('w', 86400000 + 3000));
SELECT tableoid::regclass AS part, key, secs(window_start) AS ws, n FROM by_day ORDER BY 2, 3;
SELECT status, last_error, sink_owed FROM stoatflow.stats WHERE aggregation_name = 'deflt';
SELECT stoatflow.drop_aggregation('deflt');
DROP TABLE by_day;
-- a sink partitioned by a column outside its key cannot have the primary key it needs: the
-- error says why
CREATE TABLE by_time (key text NOT NULL, window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL, n bigint, event_time timestamptz NOT NULL,
    final boolean NOT NULL DEFAULT false) PARTITION BY RANGE (event_time);
SELECT stoatflow.create_aggregation('by_time', 'parts', stoatflow.tumbling('1 minute'),
    'count(*) AS n', 'by_time');
DROP TABLE by_time;
SELECT stoatflow.drop_source('parts');

------------------------------------------------------------------------------------------
-- 3. Field paths are judged as field paths: a key path longer than a column name may be is
--    fine, an invalid one is refused naming the key (not some aggregate column).
------------------------------------------------------------------------------------------
SELECT stoatflow.create_source('longkey', 'events', '127.0.0.1:9092',
    key => 'customer.' || repeat('k', 100), event_time => 'ts');
SELECT key_path = 'customer.' || repeat('k', 100) AS long_path_kept FROM stoatflow.source WHERE source_name = 'longkey';
SELECT stoatflow.drop_source('longkey');
-- too long for any field path
SELECT stoatflow.create_source('longkey', 'events', '127.0.0.1:9092', key => repeat('k', 300));
SELECT stoatflow.create_source('longkey', 'events', '127.0.0.1:9092', event_time => repeat('t', 300));
-- hostile paths: empty members, control characters, SQL in the path (kept as a field name)
SELECT stoatflow.create_source('badkey', 'events', '127.0.0.1:9092', key => 'a..b');
SELECT stoatflow.create_source('badkey', 'events', '127.0.0.1:9092', key => E'a\tb');
SELECT stoatflow.create_source('badkey', 'events', '127.0.0.1:9092', key => '');
SELECT stoatflow.create_source('sqlkey', 'events', '127.0.0.1:9092',
    key => 'x''); DROP TABLE pg_class; --', event_time => 'ts', future_limit => NULL);
SELECT * FROM stoatflow.process_records('sqlkey',
    '[{"value": {"x''); DROP TABLE pg_class; --": "k1", "ts": 1000}}]');
SELECT count(*) > 0 AS pg_class_is_there FROM pg_class;
SELECT stoatflow.drop_source('sqlkey');
SELECT stoatflow.drop_source('rules');
