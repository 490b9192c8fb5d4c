-- Records in, rows out, without Kafka: stoatflow.process_records() runs records through a
-- source's pipeline and the commit step (exactly what the worker commits), restoring from
-- the committed state on every call. One scenario per window kind and emit strategy.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';

-- One source per scenario (the watermark is per source); event times in epoch ms.
CREATE FUNCTION src(name text, ooo interval DEFAULT '0') RETURNS void LANGUAGE sql AS $$
    SELECT stoatflow.create_source(name, 'events', '127.0.0.1:9092', key => 'user', event_time => 'ts',
        max_out_of_orderness => ooo) $$;
CREATE FUNCTION rec(u text, ts bigint, amount numeric DEFAULT 1, p integer DEFAULT 0) RETURNS jsonb
LANGUAGE sql AS $$ SELECT jsonb_build_object('partition', p,
    'value', jsonb_build_object('user', u, 'ts', ts, 'amount', amount)) $$;
CREATE FUNCTION feed(source text, VARIADIC recs jsonb[])
RETURNS TABLE (processed bigint, dead_letters bigint, watermark timestamptz)
LANGUAGE sql AS $$ SELECT * FROM stoatflow.process_records(source, to_jsonb(recs)) $$;
-- rows with times shown as seconds since the epoch
CREATE FUNCTION secs(t timestamptz) RETURNS numeric LANGUAGE sql AS $$ SELECT extract(epoch FROM t) $$;

------------------------------------------------------------------------------------------
-- Tumbling 10 s, on_window_update: rows appear at each commit, final flips at close
SELECT src('s_tum');
SELECT stoatflow.create_aggregation('tum', 's_tum', stoatflow.tumbling('10 seconds'),
    'count(*) AS n, sum(amount) AS total, max(amount)', 'tum');
SELECT * FROM feed('s_tum', rec('a', 1000, 5), rec('a', 4000, 7), rec('b', 9999, 1));
SELECT key, secs(window_start) AS ws, secs(window_end) AS we, n, total, max_amount, secs(event_time) AS et, final
  FROM tum ORDER BY key, window_start;
-- 10 s closes [0,10); a record for it after that is late (late_window) and changes nothing
SELECT * FROM feed('s_tum', rec('a', 10000, 1), rec('a', 2000, 100));
SELECT key, secs(window_start) AS ws, n, total, final FROM tum ORDER BY key, window_start;
SELECT records_in, dropped_late_window, windows_emitted, windows_reemitted, open_windows
  FROM stoatflow.stats WHERE aggregation_name = 'tum';
-- the live state agrees with the sink
SELECT key, secs(window_start) AS ws, n, total, final FROM stoatflow.window_state('tum', NULL::tum) ORDER BY 1, 2;
SELECT stoatflow.drop_aggregation('tum', drop_sink => true);

------------------------------------------------------------------------------------------
-- Hopping 10 s advancing 5 s (2 windows per record), grace 5 s
SELECT src('s_hop');
SELECT stoatflow.create_aggregation('hop', 's_hop', stoatflow.hopping('10 seconds', '5 seconds', '5 seconds'),
    'count(*) AS n, sum(amount) AS total', 'hop');
SELECT * FROM feed('s_hop', rec('a', 0), rec('a', 7000, 2), rec('a', 14000, 3), rec('a', 3000, 4));
SELECT key, secs(window_start) AS ws, secs(window_end) AS we, n, total, final FROM hop ORDER BY 1, 2;
SELECT dropped_late_window FROM stoatflow.stats WHERE aggregation_name = 'hop';
SELECT stoatflow.drop_aggregation('hop', drop_sink => true);

------------------------------------------------------------------------------------------
-- Sliding D = 10 s (KIP-450): windows [start, start + D + 1ms), both ends inclusive
SELECT src('s_sli');
SELECT stoatflow.create_aggregation('sli', 's_sli', stoatflow.sliding('10 seconds', '5 seconds'),
    'count(*) AS n', 'sli');
SELECT * FROM feed('s_sli', rec('k', 10000), rec('k', 15000), rec('k', 20000), rec('k', 22000), rec('k', 30000));
SELECT secs(window_start) AS ws, secs(window_end) AS we, n, secs(event_time) AS et FROM sli ORDER BY 1;
SELECT stoatflow.drop_aggregation('sli', drop_sink => true);

------------------------------------------------------------------------------------------
-- Session gap 10 s: a bridging record merges two sessions; the merged-away row is deleted.
-- 30 s of out-of-orderness keeps both sessions open while the late records arrive.
SELECT src('s_ses', '30 seconds');
SELECT stoatflow.create_aggregation('ses', 's_ses', stoatflow.session('10 seconds'),
    'count(*) AS n, sum(amount) AS total', 'ses');
SELECT * FROM feed('s_ses', rec('a', 100000), rec('a', 125000, 2));
SELECT key, secs(window_start) AS ws, secs(window_end) AS we, n, total, final FROM ses ORDER BY 1, 2;
-- out of order and across commits: 110 s extends the first session, 117 s bridges both
SELECT * FROM stoatflow.process_records('s_ses', jsonb_build_array(rec('a', 110000, 3), rec('a', 117000, 4)));
SELECT key, secs(window_start) AS ws, secs(window_end) AS we, n, total, secs(event_time) AS et, final
  FROM ses ORDER BY 1, 2;
SELECT sessions_merged FROM stoatflow.stats WHERE aggregation_name = 'ses';
SELECT stoatflow.drop_aggregation('ses', drop_sink => true);

-- Session gap 30 s, grace 10 s, no out-of-orderness (README "Window kinds"): a late record within gap of an
-- open session joins it even when its own [t, t] is closed, also when that session began
-- late, and may pass over a closed session, but never come to start where a closed session
-- starts (its final row). Every call restores from the committed state, so what is
-- remembered of closed sessions comes back from the state tables.
SELECT src('s_late');
SELECT stoatflow.create_aggregation('late', 's_late', stoatflow.session('30 seconds', '10 seconds'),
    'count(*) AS n', 'late');
SELECT * FROM feed('s_late', rec('x', 100000), rec('b', 65000));  -- W = 100 s; [65] open until 106 s
SELECT * FROM feed('s_late', rec('b', 58000));                    -- own [58] closed at 99 s: joins
SELECT * FROM feed('s_late', rec('c', 120000), rec('y', 161000)); -- W = 161 s closes c's [120]
SELECT * FROM feed('s_late', rec('c', 145000));                   -- a new session, open until 185 s
SELECT * FROM feed('s_late', rec('c', 120000));                   -- would start at 120: dropped
SELECT * FROM feed('s_late', rec('c', 125000));                   -- over closed [120]: joins
SELECT key, secs(window_start) AS ws, secs(window_end) AS we, n, final FROM late ORDER BY 1, 2;
SELECT dropped_late_session FROM stoatflow.stats WHERE aggregation_name = 'late';
SELECT stoatflow.drop_aggregation('late', drop_sink => true);

------------------------------------------------------------------------------------------
-- on_window_close: exactly one write per window, final, after the watermark passes it
SELECT src('s_once');
SELECT stoatflow.create_aggregation('once', 's_once', stoatflow.tumbling('10 seconds', '2 seconds'),
    'count(*) AS n', 'once', emit => 'on_window_close');
CREATE TABLE writes (key text, window_start timestamptz, op text, n bigint, final boolean);
CREATE FUNCTION log_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.writes VALUES (NEW.key, NEW.window_start, TG_OP, NEW.n, NEW.final);
    RETURN NEW;
END $$;
CREATE TRIGGER log_write AFTER INSERT OR UPDATE ON once FOR EACH ROW EXECUTE FUNCTION log_write();
SELECT * FROM feed('s_once', rec('a', 1000), rec('a', 5000), rec('b', 3000));
SELECT count(*) AS rows_before_close FROM once;
SELECT * FROM feed('s_once', rec('a', 11000), rec('a', 9000));   -- W = 11 s: still within grace
SELECT count(*) AS rows_within_grace FROM once;
SELECT * FROM feed('s_once', rec('a', 12000), rec('a', 9500));   -- W = 12 s: closed; 9.5 s is late
SELECT * FROM feed('s_once', rec('a', 30000));
SELECT key, secs(window_start) AS ws, op, n, final FROM writes ORDER BY 1, 2;
SELECT key, secs(window_start) AS ws, n, final FROM once ORDER BY 1, 2;
SELECT dropped_late_window, windows_emitted, windows_reemitted FROM stoatflow.stats WHERE aggregation_name = 'once';
SELECT stoatflow.drop_aggregation('once', drop_sink => true);
DROP TABLE writes;

------------------------------------------------------------------------------------------
-- Windows never written before go in with a plain INSERT; when the sink already holds a
-- row for one (put there by hand), that batch is upserted instead and the commit succeeds
SELECT src('s_pre');
SELECT stoatflow.create_aggregation('pre', 's_pre', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'pre');
INSERT INTO pre (key, window_start, window_end, n, event_time, final)
    VALUES ('b', to_timestamp(0), to_timestamp(10), 99, to_timestamp(0), true);
SELECT * FROM feed('s_pre', rec('a', 1000), rec('b', 2000), rec('b', 3000));
SELECT key, secs(window_start) AS ws, n, secs(event_time) AS et, final FROM pre ORDER BY 1, 2;
SELECT * FROM feed('s_pre', rec('a', 4000), rec('c', 5000));
SELECT key, secs(window_start) AS ws, n, secs(event_time) AS et, final FROM pre ORDER BY 1, 2;
SELECT stoatflow.drop_aggregation('pre', drop_sink => true);

-- A sink of the user's with a column of its own: new windows go in by INSERT (its default
-- applies), rewrites by upsert; the user's column is left alone
SELECT src('s_own');
CREATE TABLE own_sink (key text, window_start timestamptz, window_end timestamptz, n bigint,
                       event_time timestamptz, final boolean, note text DEFAULT 'from stoatflow',
                       PRIMARY KEY (key, window_start));
SELECT stoatflow.create_aggregation('own', 's_own', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'own_sink');
SELECT * FROM feed('s_own', rec('a', 1000), rec('b', 2000));
UPDATE own_sink SET note = 'edited' WHERE key = 'b';
SELECT * FROM feed('s_own', rec('b', 3000), rec('c', 4000));
SELECT key, secs(window_start) AS ws, n, final, note FROM own_sink ORDER BY 1, 2;
SELECT stoatflow.drop_aggregation('own', drop_sink => true);

------------------------------------------------------------------------------------------
-- Segments: state lives in segment tables of stoatflow_state, one per epoch-aligned
-- segment (interval = max(retention/2, 60 s, size) = 60 s here), dropped whole once
-- the watermark is a full retention past their end. Sinks are never touched by expiry.
SELECT src('s_seg');
SELECT stoatflow.create_aggregation('seg', 's_seg', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'seg');
-- (one commit per record: a window opened and closed within one commit writes no state)
SELECT * FROM feed('s_seg', rec('a', 1000));
SELECT * FROM feed('s_seg', rec('a', 61000));
SELECT * FROM feed('s_seg', rec('a', 125000));
SELECT segment_start / 1000 AS seg_s, span_ms, relname, to_regclass('stoatflow_state.' || relname) IS NOT NULL AS exists
  FROM stoatflow.segment s JOIN stoatflow.aggregation a USING (aggregation_id)
 WHERE a.aggregation_name = 'seg' ORDER BY 1;
-- state rows go into the segment tables without the executor; a table changed by hand
-- (here: given an index) still gets them, by INSERT
SELECT relname AS seg120 FROM stoatflow.segment s JOIN stoatflow.aggregation a USING (aggregation_id)
 WHERE a.aggregation_name = 'seg' AND segment_start = 120000 \gset
SELECT key, window_start / 1000 AS ws, removed FROM stoatflow_state.:"seg120" ORDER BY commit_seq, key;
CREATE INDEX ON stoatflow_state.:"seg120" (key);
SELECT * FROM feed('s_seg', rec('b', 126000));
SELECT key, window_start / 1000 AS ws, removed FROM stoatflow_state.:"seg120" ORDER BY commit_seq, key;
-- W = 125 s, retention 10 s: [0, 60) went in the same commit (60 ≤ 125 − 10), [60, 120)
-- stays (120 > 115); at W = 130 s it goes (120 ≤ 120)
SELECT * FROM feed('s_seg', rec('a', 130000));
SELECT segment_start / 1000 AS seg_s FROM stoatflow.segment s JOIN stoatflow.aggregation a USING (aggregation_id)
 WHERE a.aggregation_name = 'seg' ORDER BY 1;
SELECT count(*) FROM pg_tables WHERE schemaname = 'stoatflow_state' AND tablename = 'a' ||
    (SELECT aggregation_id FROM stoatflow.aggregation WHERE aggregation_name = 'seg') || '_0';
SELECT secs(window_start) AS ws, n, final FROM seg ORDER BY 1;
SELECT live_segments FROM stoatflow.stats WHERE aggregation_name = 'seg';
SELECT stoatflow.drop_aggregation('seg', drop_sink => true);
SELECT count(*) AS state_tables_left FROM pg_tables WHERE schemaname = 'stoatflow_state';

------------------------------------------------------------------------------------------
-- Watermark: the minimum over partitions holding data; a partition that has delivered
-- nothing does not hold it back
SELECT src('s_wm');
SELECT stoatflow.create_aggregation('wm', 's_wm', stoatflow.tumbling('10 seconds'), 'count(*) AS n', 'wm');
SELECT watermark FROM feed('s_wm', rec('a', 500000, 1, 1));
SELECT watermark FROM feed('s_wm', rec('a', 400000, 1, 2), rec('a', 600000, 1, 1));
SELECT partition, committed_offset FROM stoatflow.sources WHERE source_name = 's_wm' ORDER BY partition;
SELECT stoatflow.drop_aggregation('wm', drop_sink => true);

------------------------------------------------------------------------------------------
-- Bad input goes to dead_letters with a reason; the rest of the batch is processed
SELECT src('s_dl');
SELECT stoatflow.create_aggregation('dl', 's_dl', stoatflow.tumbling('1 hour'), 'count(*) AS n, sum(amount)', 'dl');
SELECT * FROM stoatflow.process_records('s_dl', '[
    {"raw": "{not json"},
    {"value": [1, 2]},
    {"value": {"ts": 1000000}},
    {"value": {"user": {"id": 1}, "ts": 1000000}},
    {"value": {"user": "a"}},
    {"value": {"user": "a", "ts": true}},
    {"value": {"user": "a", "ts": "yesterday"}},
    {"value": {"user": "a", "ts": 1e300}},
    {"value": {"user": "a", "ts": 1000000, "amount": "12"}},
    {"raw": "{\"user\": \"a\\u0000b\", \"ts\": 1000000}"},
    {"raw": "{\"user\": \"a\", \"ts\": -99999999999999999}"},
    {"value": {"user": "a", "ts": "1970-01-01T00:16:40Z", "amount": 2.5}},
    {"value": {"user": "a", "ts": 1000001, "amount": null}}
]'::jsonb);
SELECT partition, "offset", reason, left(payload, 40) AS payload FROM stoatflow.dead_letters
 WHERE source_name = 's_dl' ORDER BY "offset";
SELECT key, n, sum_amount FROM dl;
SELECT dead_letters FROM stoatflow.stats WHERE aggregation_name = 'dl';
SELECT stoatflow.drop_aggregation('dl', drop_sink => true);

SELECT stoatflow.process_records('nope', '[]');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow.process_records('s_dl', '{"value": 1}');
\echo :LAST_ERROR_SQLSTATE
DO $$ DECLARE s text; BEGIN
    FOR s IN SELECT source_name FROM stoatflow.source LOOP PERFORM stoatflow.drop_source(s); END LOOP;
END $$;
SELECT count(*) AS sources_left FROM stoatflow.source;
DROP FUNCTION feed(text, jsonb[]), rec(text, bigint, numeric, integer), secs(timestamptz), log_write(),
    src(text, interval);
