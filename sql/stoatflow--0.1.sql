-- stoatflow 0.1 install script (run by CREATE EXTENSION; not a pg_regress test).
\echo Use "CREATE EXTENSION stoatflow" to load this file. \quit

-- The schema itself is created by CREATE EXTENSION (control file: schema = stoatflow).

CREATE FUNCTION stoatflow.version()
RETURNS text
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE
AS 'MODULE_PATHNAME', 'stoatflow_version';

COMMENT ON FUNCTION stoatflow.version() IS
    'Version of the loaded stoatflow library.';

------------------------------------------------------------------------------------------
-- TESTING TOOLS ONLY. The functions below exist so the regression tests can drive the
-- C++/PostgreSQL error border from SQL. They do nothing useful, are not part of the
-- public interface, and are callable by superusers only.
------------------------------------------------------------------------------------------

-- Throws stoatflow::Error(sqlstate, message, hint) from C++ with an RAII probe alive.
CREATE FUNCTION stoatflow._test_raise_cpp(sqlstate text, message text, hint text DEFAULT NULL)
RETURNS void
LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__test_raise_cpp';

-- Throws a non-stoatflow exception: 'runtime_error', 'bad_alloc' or 'non_std'.
CREATE FUNCTION stoatflow._test_raise_std(kind text)
RETURNS void
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__test_raise_std';

-- Calls a PostgreSQL function that raises ERROR ('invalid_input': 22P02,
-- 'division_by_zero': 22012) from C++ through the PG->C++ guard, checks the C++
-- destructors ran, and lets the error reach SQL unchanged. 'none' returns 42.
CREATE FUNCTION stoatflow._test_pg_error_in_cpp(kind text DEFAULT 'invalid_input')
RETURNS integer
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__test_pg_error_in_cpp';

-- RAII probes constructed and destroyed in this backend: equal when no destructor was skipped.
CREATE FUNCTION stoatflow._test_guard_counters(OUT constructed bigint, OUT destroyed bigint)
RETURNS record
LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__test_guard_counters';

COMMENT ON FUNCTION stoatflow._test_raise_cpp(text, text, text) IS 'testing tool only';
COMMENT ON FUNCTION stoatflow._test_raise_std(text) IS 'testing tool only';
COMMENT ON FUNCTION stoatflow._test_pg_error_in_cpp(text) IS 'testing tool only';
COMMENT ON FUNCTION stoatflow._test_guard_counters() IS 'testing tool only';

REVOKE ALL ON FUNCTION stoatflow._test_raise_cpp(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._test_raise_std(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._test_pg_error_in_cpp(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._test_guard_counters() FROM PUBLIC;
