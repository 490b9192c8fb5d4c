-- stoatflow.estimate (README "Estimating cost"): one row per window kind, each number derived by
-- hand from the formulas there: a window is 192 bytes in memory (224 for sliding windows and
-- sessions, which also hold a close entry), a 16-byte key 161 bytes (145 without the grid
-- calendar's entry); a state row of a count(*) is 100 bytes with its line pointer (81 to a page).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never

-- tumbling 5 min, 1 M keys, no out-of-orderness: 1 window a key; but a key with records all
-- the time has its next window's before the commit that lets the last go (100 ms in
-- test/pg_regress.conf; ceil((300 + 0.1) / 300) = 2 held): a block of 2 places; retention
-- 300 s, interval max(150 s, 60 s, 300 s); live ceil(300 / 300) + 1 = 2; memory
-- 1e6 × (2 × 192 + 161); disk: the
-- windows starting in retention + interval (600 s), 2e6 rows / 81 a page
SELECT * FROM stoatflow.estimate(stoatflow.tumbling('5 minutes'), 1000000, max_out_of_orderness => '0');
-- the source default of 10 s: 1 + 10 / 300 windows a key, a block of 2 places, memory
-- 1e6 × (2 × 192 + 161); live ceil((300 + 10) / 300) + 1 = 3; disk: starts in 300 + 300 + 10 s,
-- ceil(1e6 × 610 / 300) = 2033334 rows
SELECT * FROM stoatflow.estimate(stoatflow.tumbling('5 minutes'), 1000000);
-- with 30 s grace: ceil(330 / 300) + 10 / 300 windows a key; a key holds at most two at once
-- (ceil((300 + 30 + 10 + 0.1) / 300): grace, out-of-orderness and a commit of 100 ms, as
-- test/pg_regress.conf has it), a block of 2 places: memory 1e6 × (2 × 192 + 161); retention
-- 330 s: the same interval; rows ceil(1e6 × 640 / 300)
SELECT * FROM stoatflow.estimate(stoatflow.tumbling('5 minutes', '30 seconds'), 1000000);
-- hopping 10 min / 2 min, 3 aggregates (56 state bytes: rows of 148 bytes, 55 a page), no
-- out-of-orderness: 5 windows a key in a block of 6 places (a record's 5, reserved + 1);
-- interval 600 s, live ceil(600 / 600) + 1 = 2; rows 1e5 × (600 + 600) / 120
SELECT * FROM stoatflow.estimate(stoatflow.hopping('10 minutes', '2 minutes'), 100000,
    aggregates => 'count(*), sum(amount), max(amount)', max_out_of_orderness => '0');
-- sliding 1 min, grace 10 s, retention 10 min: 2 × (ceil(70 / 60) + 10 / 60) windows a key, a
-- block of 8; interval 300 s, live ceil(610 / 300) + 1 = 4; memory 1000 × (8 × 224 + 145); rows
-- ceil(1000 × 2 × (600 + 300 + 10) / 60) = 30334
SELECT * FROM stoatflow.estimate(stoatflow.sliding('1 minute', '10 seconds'), 1000, retention => '10 minutes');
-- session 30 min, count and avg (40 bytes, + 9 for the session floor: rows of 140, 58 a page):
-- 1 + 10 / 1800 sessions a key, a block of 2; interval 1800 s, live 3; memory
-- 5000 × (2 × 224 + 145); rows ceil(5000 × (1800 + 1800 + 10) / 1800) = 10028
SELECT * FROM stoatflow.estimate(stoatflow.session('30 minutes'), 5000, aggregates => 'count(*), avg(x)');
-- no keys: nothing
SELECT memory_bytes, disk_bytes FROM stoatflow.estimate(stoatflow.tumbling('1 minute'), 0);
-- with the rate: 4000 keys at 100 records a second, 0.025 a key and second. A key's block has
-- two places with 1 - e^(-0.025 × 15) = 0.3127 (a record in the 10 s after its window's end or
-- before the commit that lets the window go, 5 s on average): memory
-- ceil(4000 × (1.3127 × 192 + 161)) = 1652162; a commit each 10 s, 6 while records reach
-- a window, each with a record of the key with 0.2212: 1.3272 versions a window; at the peak
-- the windows starting over retention + interval (120 s) before W, the last minute's half
-- written: (120 / 60 - 60 / 120 + 1 / 2) = 2 windows' worth; rows ceil(4000 × 2 × 1.3272) =
-- 10618, 132 pages of 81
SELECT memory_bytes, disk_bytes FROM stoatflow.estimate(stoatflow.tumbling('1 minute'), 4000,
    records_per_second => 100, commit_interval => '10 seconds');
-- the same without the rate: the bound (two places a key, one version a window: 8667 rows)
SELECT memory_bytes, disk_bytes FROM stoatflow.estimate(stoatflow.tumbling('1 minute'), 4000);
-- commit_interval NULL is stoatflow.commit_interval (100 ms in test/pg_regress.conf: 600 commits
-- reach a window, 600 × (1 - e^(-0.0025)) = 1.4981 versions; rows ceil(4000 × 2 × 1.4981) = 11986,
-- 148 pages; two places with 1 - e^(-0.025 × 10.05): memory 1582629)
SHOW stoatflow.commit_interval;
SELECT memory_bytes, disk_bytes FROM stoatflow.estimate(stoatflow.tumbling('1 minute'), 4000,
    records_per_second => 100);

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
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, records_per_second => 0)$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, records_per_second => -5)$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, records_per_second => 'NaN')$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, records_per_second => 'Infinity')$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, records_per_second => 1, commit_interval => '0')$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, records_per_second => 1, commit_interval => '-1 second')$$);
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 minute'), 10, records_per_second => 1, commit_interval => '1 mon')$$);
-- hostile sizes: more rows or bytes than a bigint holds are refused, not wrapped
SELECT est_try($$SELECT stoatflow.estimate(stoatflow.tumbling('1 day'), 9000000000000000000, records_per_second => 1e300, commit_interval => '1 millisecond')$$);
SELECT est_try($$SELECT stoatflow.estimate(ROW('weekly', '7 days', NULL, '0')::stoatflow.window, 10)$$);
SELECT est_try($$SELECT stoatflow.estimate(ROW('tumbling', '1 mon', NULL, '0')::stoatflow.window, 10)$$);
DROP FUNCTION est_try(text);
