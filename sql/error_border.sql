-- The C++/PostgreSQL error border (README "Repository layout"): C++ exceptions reach SQL as ERRORs with their
-- SQLSTATE, message and hint; PostgreSQL ERRORs raised under C++ come back unchanged; no C++
-- destructor is skipped on the way; the session goes on.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS stoatflow;
RESET client_min_messages;
\set SHOW_CONTEXT never

-- C++ -> PG: stoatflow::Error keeps its SQLSTATE, message and hint
SELECT stoatflow._test_raise_cpp('22023', 'bad window');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow._test_raise_cpp('42P01', 'sink "views_5m" does not exist', 'Create the table first.');
\echo :LAST_ERROR_SQLSTATE
-- a SQLSTATE that is no error class (or not a SQLSTATE at all) becomes internal_error
SELECT stoatflow._test_raise_cpp('00000', 'success is not an error');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow._test_raise_cpp('nope', 'not a sqlstate');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow._test_raise_cpp(NULL, 'x');
\echo :LAST_ERROR_SQLSTATE

-- C++ -> PG: exceptions that are not stoatflow::Error
SELECT stoatflow._test_raise_std('runtime_error');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow._test_raise_std('bad_alloc');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow._test_raise_std('non_std');
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow._test_raise_std('something else');
\echo :LAST_ERROR_SQLSTATE

-- PG -> C++ -> PG: a PostgreSQL ERROR inside C++ becomes a PgError, unwinds the C++ stack,
-- and reaches SQL with its original SQLSTATE and message
SELECT stoatflow._test_pg_error_in_cpp();
\echo :LAST_ERROR_SQLSTATE
SELECT stoatflow._test_pg_error_in_cpp('division_by_zero');
\echo :LAST_ERROR_SQLSTATE
-- the same guard on the success path
SELECT stoatflow._test_pg_error_in_cpp('none');

-- the session goes on
SELECT 1 AS still_alive;

-- an error inside a transaction aborts it like any other ERROR; ROLLBACK recovers
BEGIN;
SELECT stoatflow._test_pg_error_in_cpp('division_by_zero');
SELECT 1;
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;

-- PL/pgSQL catches both kinds by condition name: the SQLSTATE is real, not a string in a message
DO $$
BEGIN
    PERFORM stoatflow._test_raise_cpp('22023', 'bad window');
EXCEPTION WHEN invalid_parameter_value THEN
    RAISE NOTICE 'caught invalid_parameter_value: %', SQLERRM;
END $$;
DO $$
BEGIN
    PERFORM stoatflow._test_pg_error_in_cpp('division_by_zero');
EXCEPTION WHEN division_by_zero THEN
    RAISE NOTICE 'caught division_by_zero: %', SQLERRM;
END $$;

-- many crossings in one backend, each rolled back to a savepoint by PL/pgSQL
DO $$
DECLARE
    caught int := 0;
BEGIN
    FOR i IN 1..500 LOOP
        BEGIN
            PERFORM stoatflow._test_pg_error_in_cpp('invalid_input');
        EXCEPTION WHEN invalid_text_representation THEN
            caught := caught + 1;
        END;
        BEGIN
            PERFORM stoatflow._test_raise_cpp('22023', 'bad window');
        EXCEPTION WHEN invalid_parameter_value THEN
            caught := caught + 1;
        END;
    END LOOP;
    RAISE NOTICE 'caught % errors', caught;
END $$;

-- every RAII probe constructed in this backend was destroyed: no destructor was skipped
SELECT constructed, destroyed, constructed = destroyed AS none_skipped
  FROM stoatflow._test_guard_counters();
SELECT 1 AS still_alive;
