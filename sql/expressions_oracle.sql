-- The differential oracle of expressive aggregations (README "Expressions and PostgreSQL aggregates"): random streams
-- (random NULLs, out-of-order and late records, NULL keys) through stoatflow, each fed in
-- three process_records calls (each restores every window from its serialized aggregate
-- states: the crash-restart variant), compared with
--   * tumbling and hopping: PostgreSQL's own GROUP BY over the records each window accepted
--     (a record joins a window unless the watermark, which its own time already moved, has
--     passed the window's end plus grace); exact for numeric, integer, text and boolean
--     aggregates, 1e-12 relative for double precision;
--   * sliding and session windows: the built-in fast path over the same records (a twin
--     aggregation, itself checked against the brute-force model in the core's tests), which
--     must give the same windows with the same counts, sums and maxima.
-- Only counts of streams and mismatches are printed: any mismatch fails the test.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never
SET timezone = 'UTC';
\if :{?oracle_streams}
\else
\set oracle_streams 2000
\endif

CREATE TABLE oracle_records (stream int, seq int, k text, ts bigint, a int, x numeric, d float8,
                             t text, b boolean, PRIMARY KEY (stream, seq));
CREATE TABLE oracle_result (stream int PRIMARY KEY, kind text, windows int, mismatches int);

CREATE FUNCTION oracle_stream(s int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    kinds  text[] := '{tumbling,hopping,sliding,session}';
    kind   text := kinds[1 + s % 4];
    grace  bigint := (ARRAY[0, 2000, 7000])[1 + (s / 4) % 3];
    win    stoatflow."window";
    src    text := 'o' || s;
    recs   jsonb;
    n      int;
    part   int;
    bad    int;
    nwin   int;
BEGIN
    PERFORM setseed(s / 100000.0);  -- each stream its own, reproducible
    n := 10 + (random() * 40)::int;
    win := CASE kind WHEN 'tumbling' THEN stoatflow.tumbling('5 seconds', grace * interval '1 ms')
                     WHEN 'hopping' THEN stoatflow.hopping('6 seconds', '2 seconds', grace * interval '1 ms')
                     WHEN 'sliding' THEN stoatflow.sliding('4 seconds', grace * interval '1 ms')
                     ELSE stoatflow.session('3 seconds', grace * interval '1 ms') END;
    PERFORM stoatflow.create_source(src, src, '127.0.0.1:9092', key => 'k', event_time => 'ts',
        max_out_of_orderness => '0',
        columns => 'k text, ts bigint, a integer, x numeric, d double precision, t text, b boolean');
    PERFORM stoatflow.create_aggregation(src || '_e', src, win,
        'count(*) AS n, count(a) AS na, sum(a) AS sa, sum(x) AS sx, min(x) AS mnx, max(a) AS mxa,
         avg(x) AS ax, sum(d) AS sd, min(t) AS mnt, max(t) AS mxt, bool_and(b) AS ba,
         count(*) FILTER (WHERE a > 50) AS big, sum(a * 2 + 1) FILTER (WHERE b) AS expr',
        'oracle_sinks.' || src || '_e');
    PERFORM stoatflow.create_aggregation(src || '_f', src, win,
        'count(*) AS n, sum(a) AS sa, max(a) AS mxa', 'oracle_sinks.' || src || '_f');
    INSERT INTO oracle_records
    SELECT s, i,
           CASE WHEN random() < 0.05 THEN NULL ELSE 'k' || (random() * 3)::int END,
           greatest(0, i * 700 + (random() * 6000)::int - 4500),
           CASE WHEN random() < 0.15 THEN NULL ELSE (random() * 100)::int END,
           CASE WHEN random() < 0.15 THEN NULL ELSE round((random() * 1000 - 500)::numeric, 2) END,
           CASE WHEN random() < 0.15 THEN NULL ELSE random() * 1e6 - 5e5 END,
           CASE WHEN random() < 0.15 THEN NULL ELSE chr(97 + (random() * 25)::int) || (random() * 9)::int END,
           CASE WHEN random() < 0.15 THEN NULL ELSE random() < 0.7 END
      FROM generate_series(1, n) i;
    -- three calls: each one restores the windows from what the previous one committed
    FOR part IN 0..2 LOOP
        SELECT jsonb_agg(jsonb_build_object('value', jsonb_build_object('k', r.k, 'ts', r.ts,
                   'a', r.a, 'x', r.x, 'd', r.d, 't', r.t, 'b', r.b)) ORDER BY r.seq)
          INTO recs FROM oracle_records r
         WHERE r.stream = s AND r.seq > part * n / 3 AND r.seq <= (part + 1) * n / 3;
        IF recs IS NOT NULL THEN
            PERFORM stoatflow.process_records(src, recs);
        END IF;
    END LOOP;

    IF kind IN ('tumbling', 'hopping') THEN
        EXECUTE format($q$
        WITH fed AS (  -- records with a key (the others are dead letters: they move nothing)
            SELECT r.*, max(r.ts) OVER (ORDER BY r.seq) AS w
              FROM oracle_records r WHERE r.stream = %1$s AND r.k IS NOT NULL),
        joined AS (
            SELECT f.*, st.start FROM fed f,
                   LATERAL (SELECT g AS start FROM generate_series(
                                (f.ts / %2$s) * %2$s - %3$s + %2$s, f.ts, %2$s) g
                             WHERE g <= f.ts AND f.ts < g + %3$s) st
             WHERE f.w < st.start + %3$s + %4$s),
        oracle AS (
            SELECT k AS key, start, count(*) AS n, count(a) AS na, sum(a) AS sa, sum(x) AS sx,
                   min(x) AS mnx, max(a) AS mxa, avg(x) AS ax, sum(d) AS sd, min(t) AS mnt,
                   max(t) AS mxt, bool_and(b) AS ba, count(*) FILTER (WHERE a > 50) AS big,
                   sum(a * 2 + 1) FILTER (WHERE b) AS expr, sum(abs(d)) AS sad
              FROM joined GROUP BY k, start),
        sink AS (
            SELECT key, (extract(epoch FROM window_start) * 1000)::bigint AS start, n, na, sa, sx,
                   mnx, mxa, ax, sd, mnt, mxt, ba, big, expr FROM oracle_sinks.%5$I)
        SELECT (SELECT count(*) FROM sink),
               (SELECT count(*) FROM oracle o FULL JOIN sink k USING (key, start)
                 WHERE o.n IS DISTINCT FROM k.n OR o.na IS DISTINCT FROM k.na
                    OR o.sa IS DISTINCT FROM k.sa OR o.sx IS DISTINCT FROM k.sx
                    OR o.mnx IS DISTINCT FROM k.mnx OR o.mxa IS DISTINCT FROM k.mxa
                    OR o.ax IS DISTINCT FROM k.ax OR o.mnt IS DISTINCT FROM k.mnt
                    OR o.mxt IS DISTINCT FROM k.mxt OR o.ba IS DISTINCT FROM k.ba
                    OR o.big IS DISTINCT FROM k.big OR o.expr IS DISTINCT FROM k.expr
                    OR (o.sd IS NULL) IS DISTINCT FROM (k.sd IS NULL)
                    OR abs(o.sd - k.sd) > 1e-12 * o.sad)
        $q$, s, CASE kind WHEN 'tumbling' THEN 5000 ELSE 2000 END,
             CASE kind WHEN 'tumbling' THEN 5000 ELSE 6000 END, grace, src || '_e')
        INTO nwin, bad;
    ELSE
        EXECUTE format($q$
        SELECT (SELECT count(*) FROM oracle_sinks.%1$I),
               (SELECT count(*) FROM oracle_sinks.%1$I e FULL JOIN oracle_sinks.%2$I f
                       USING (key, window_start)
                 WHERE e.window_end IS DISTINCT FROM f.window_end OR e.n IS DISTINCT FROM f.n
                    OR e.sa IS DISTINCT FROM f.sa OR e.mxa IS DISTINCT FROM f.mxa
                    OR e.final IS DISTINCT FROM f.final)
        $q$, src || '_e', src || '_f') INTO nwin, bad;
    END IF;
    INSERT INTO oracle_result VALUES (s, kind, nwin, bad);
    PERFORM stoatflow.drop_source(src, "cascade" => true);
    IF bad = 0 OR current_setting('oracle.keep', true) IS DISTINCT FROM 'on' THEN
        EXECUTE format('DROP TABLE oracle_sinks.%I, oracle_sinks.%I', src || '_e', src || '_f');
    END IF;
END $$;

CREATE SCHEMA oracle_sinks;
-- one transaction per stream (each creates and drops a source, two aggregations and sinks)
CREATE PROCEDURE oracle_run(n int) LANGUAGE plpgsql AS $$
BEGIN
    FOR s IN 1..n LOOP
        PERFORM oracle_stream(s);
        COMMIT;
    END LOOP;
END $$;
SET client_min_messages = warning;  -- drop_source's NOTICEs count rows of random streams
CALL oracle_run(:oracle_streams);
RESET client_min_messages;
SELECT count(*) = :oracle_streams AS all_streams_ran FROM oracle_result;
-- per window kind: streams, windows compared, mismatching windows (must be 0)
SELECT kind, count(*) >= :oracle_streams / 4 AS streams_ok, sum(windows) > 0 AS windows_compared,
       sum(mismatches) AS mismatches
  FROM oracle_result GROUP BY kind ORDER BY kind;
-- the streams with a mismatch, if any (for a look)
SELECT * FROM oracle_result WHERE mismatches > 0 ORDER BY stream LIMIT 10;
DROP SCHEMA oracle_sinks CASCADE;
DROP PROCEDURE oracle_run(int);
DROP FUNCTION oracle_stream(int);
DROP TABLE oracle_records, oracle_result;
