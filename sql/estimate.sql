-- stoatflow.estimate (README "Estimating cost"): one row per window kind, each number derived by
-- hand from the formulas there: a window is 192 bytes in memory (224 for sliding windows and
-- sessions, which also hold a close entry), a 16-byte key 161 bytes (145 without the grid
-- calendar's entry); a state row of a count(*) is 100 bytes with its line pointer (81 to a page).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never

-- tumbling 5 min, 1 M keys, no out-of-orderness: 1 window a key; retention 300 s, interval
-- max(150 s, 60 s, 300 s); live ceil(300 / 300) + 1 = 2; memory 1e6 × (192 + 161); disk 2e6
-- rows / 81 a page
SELECT * FROM stoatflow.estimate(stoatflow.tumbling('5 minutes'), 1000000, max_out_of_orderness => '0');
-- the source default of 10 s: 1 + 10 / 300 windows a key, a block of 2 places, memory
-- 1e6 × (2 × 192 + 161); live ceil((300 + 10) / 300) + 1 = 3, disk 3e6 rows
SELECT * FROM stoatflow.estimate(stoatflow.tumbling('5 minutes'), 1000000);
-- with 30 s grace: ceil(330 / 300) + 10 / 300 windows a key, a block of 4 places: memory
-- 1e6 × (4 × 192 + 161); retention 330 s: the same interval
SELECT * FROM stoatflow.estimate(stoatflow.tumbling('5 minutes', '30 seconds'), 1000000);
-- hopping 10 min / 2 min, 3 aggregates (56 state bytes: rows of 148 bytes, 55 a page), no
-- out-of-orderness: 5 windows a key in a block of 6 places (a record's 5, reserved + 1);
-- interval 600 s, live ceil(600 / 600) + 1 = 2; rows 1e5 × 5 a segment × 2
SELECT * FROM stoatflow.estimate(stoatflow.hopping('10 minutes', '2 minutes'), 100000,
    aggregates => 'count(*), sum(amount), max(amount)', max_out_of_orderness => '0');
-- sliding 1 min, grace 10 s, retention 10 min: 2 × (ceil(70 / 60) + 10 / 60) windows a key, a
-- block of 8; interval 300 s, live ceil(610 / 300) + 1 = 4; memory 1000 × (8 × 224 + 145); rows
-- 1000 × 10 × 4
SELECT * FROM stoatflow.estimate(stoatflow.sliding('1 minute', '10 seconds'), 1000, retention => '10 minutes');
-- session 30 min, count and avg (40 bytes, + 9 for the session floor: rows of 140, 58 a page):
-- 1 + 10 / 1800 sessions a key, a block of 2; interval 1800 s, live 3; memory
-- 5000 × (2 × 224 + 145); rows 5000 × 1 × 3
SELECT * FROM stoatflow.estimate(stoatflow.session('30 minutes'), 5000, aggregates => 'count(*), avg(x)');
-- no keys: nothing
SELECT memory_bytes, disk_bytes FROM stoatflow.estimate(stoatflow.tumbling('1 minute'), 0);

-- refusals (SQLSTATE, message)
CREATE FUNCTION est_try(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text;
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
    RETURN st || ': ' || msg;
END $$;
SELECT est_try($$SELECT stoatflow.estimate(NULL, 10)$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), NULL)$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), -1)$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, retention => '30 seconds')$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, aggregates => 'percentile_cont(0.5) WITHIN GROUP (ORDER BY x) AS p')$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, aggregates => NULL)$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, max_out_of_orderness => '-1 second')$$);
SELECT est_try($$SELECT stoatflow.estimate(ROW('weekly', '7 days', NULL, '0')::stoatflow.window, 10)$$);
SELECT est_try($$SELECT stoatflow.estimate(ROW('tumbling', '1 mon', NULL, '0')::stoatflow.window, 10)$$);
DROP FUNCTION est_try(text);
