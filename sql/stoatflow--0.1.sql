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

------------------------------------------------------------------------------------------
-- Catalog. Definitions, progress and counters live in ordinary tables of schema
-- stoatflow; window state lives in segment tables of schema stoatflow_state.
------------------------------------------------------------------------------------------

GRANT USAGE ON SCHEMA stoatflow TO PUBLIC;
CREATE SCHEMA stoatflow_state;
REVOKE ALL ON SCHEMA stoatflow_state FROM PUBLIC;

-- kafka_options may hold secrets: PUBLIC cannot read this table (see the views below).
CREATE TABLE stoatflow.source (
    source_id              serial PRIMARY KEY,
    source_name            text NOT NULL UNIQUE,
    topic                  text NOT NULL,
    brokers                text NOT NULL,
    format                 text NOT NULL,
    key_path               text,
    event_time_path        text,
    max_out_of_orderness_ms bigint NOT NULL,
    idle_timeout_ms        bigint,
    start_offset           text NOT NULL,
    kafka_options          jsonb NOT NULL,
    created_by             regrole NOT NULL,
    created_at             timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON stoatflow.source FROM PUBLIC;

CREATE TABLE stoatflow.aggregation (
    aggregation_id      serial PRIMARY KEY,
    aggregation_name    text NOT NULL UNIQUE,
    source_id           integer NOT NULL REFERENCES stoatflow.source,
    kind                text NOT NULL,
    size_ms             bigint NOT NULL,
    advance_ms          bigint NOT NULL,
    grace_ms            bigint NOT NULL,
    aggregates          text NOT NULL,          -- as declared
    agg_functions       text[] NOT NULL,        -- parsed: count_star | count | sum | min | max | avg
    agg_fields          text[] NOT NULL,        -- JSON field paths ('' for count(*))
    agg_columns         text[] NOT NULL,        -- sink column names
    sink                regclass NOT NULL,
    emit                text NOT NULL,
    retention_ms        bigint NOT NULL,
    segment_interval_ms bigint NOT NULL,
    owner               regrole NOT NULL,       -- the sink is written as this role
    created_at          timestamptz NOT NULL DEFAULT now()
);

-- Progress committed with every commit cycle, in the same transaction as the state.
CREATE TABLE stoatflow.source_progress (
    source_id        integer PRIMARY KEY REFERENCES stoatflow.source ON DELETE CASCADE,
    watermark_ms     bigint,                 -- W; NULL before the first record
    watermark_state  text NOT NULL,          -- W plus per-partition max event time
    commit_seq       bigint NOT NULL DEFAULT 0,
    committed_at     timestamptz
);
CREATE TABLE stoatflow.partition_offset (
    source_id   integer NOT NULL REFERENCES stoatflow.source ON DELETE CASCADE,
    partition   integer NOT NULL,
    next_offset bigint NOT NULL,
    PRIMARY KEY (source_id, partition)
);

-- Per aggregation: emit frontier and counters, committed with the state.
CREATE TABLE stoatflow.aggregation_progress (
    aggregation_id       integer PRIMARY KEY REFERENCES stoatflow.aggregation ON DELETE CASCADE,
    emit_frontier_ms     bigint,
    records_in           bigint NOT NULL DEFAULT 0,
    dropped_late_window  bigint NOT NULL DEFAULT 0,
    dropped_late_session bigint NOT NULL DEFAULT 0,
    windows_emitted      bigint NOT NULL DEFAULT 0,
    windows_reemitted    bigint NOT NULL DEFAULT 0,
    sessions_merged      bigint NOT NULL DEFAULT 0,
    state_rows_written   bigint NOT NULL DEFAULT 0,
    state_bytes_written  bigint NOT NULL DEFAULT 0,
    open_windows         bigint NOT NULL DEFAULT 0,
    keys_with_open_windows bigint NOT NULL DEFAULT 0,
    freshness_lag_ms     bigint,             -- last window: wall time from close point to emission
    last_commit_at       timestamptz,
    last_error           text
);

-- The segment tables of each aggregation, with the span each was created with.
CREATE TABLE stoatflow.segment (
    aggregation_id integer NOT NULL REFERENCES stoatflow.aggregation ON DELETE CASCADE,
    segment_start  bigint NOT NULL,
    span_ms        bigint NOT NULL,
    relname        name NOT NULL,
    rows_written   bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (aggregation_id, segment_start)
);

-- Records that could not be decoded, written in the commit that consumed them.
CREATE TABLE stoatflow.dead_letters (
    dead_letter_id bigserial PRIMARY KEY,
    source_name    text NOT NULL,
    partition      integer NOT NULL,
    "offset"       bigint NOT NULL,
    reason         text NOT NULL,
    detail         text,
    payload        text,                    -- the first bytes, made storable
    received_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON stoatflow.dead_letters (source_name, partition, "offset");

-- Runtime status reported by the source's worker (not transactional with commits).
CREATE TABLE stoatflow.source_status (
    source_id   integer PRIMARY KEY REFERENCES stoatflow.source ON DELETE CASCADE,
    status      text NOT NULL DEFAULT 'starting',
    last_error  text,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE stoatflow.partition_status (
    source_id      integer NOT NULL REFERENCES stoatflow.source ON DELETE CASCADE,
    partition      integer NOT NULL,
    high_watermark bigint,
    idle           boolean NOT NULL DEFAULT false,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source_id, partition)
);

REVOKE ALL ON stoatflow.aggregation, stoatflow.source_progress, stoatflow.partition_offset,
    stoatflow.aggregation_progress, stoatflow.segment, stoatflow.source_status,
    stoatflow.partition_status FROM PUBLIC;
GRANT SELECT ON stoatflow.aggregation, stoatflow.source_progress, stoatflow.partition_offset,
    stoatflow.aggregation_progress, stoatflow.segment, stoatflow.source_status,
    stoatflow.partition_status TO PUBLIC;
REVOKE ALL ON stoatflow.dead_letters FROM PUBLIC;

------------------------------------------------------------------------------------------
-- Helpers (internal; names start with an underscore)
------------------------------------------------------------------------------------------

-- Milliseconds of an interval. Months and years have no fixed length: refused.
CREATE FUNCTION stoatflow._interval_ms(i interval, what text)
RETURNS bigint LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF i IS NULL THEN
        RETURN NULL;
    END IF;
    IF date_part('month', i) <> 0 OR date_part('year', i) <> 0 THEN
        RAISE EXCEPTION '% must not use months or years: %', what, i
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Months and years have no fixed length; use days, e.g. ''30 days''.';
    END IF;
    RETURN floor(extract(epoch FROM i) * 1000)::bigint;
END $$;

CREATE FUNCTION stoatflow._ms_interval(ms bigint)
RETURNS interval LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp AS $$ SELECT ms * interval '1 millisecond' $$;

CREATE FUNCTION stoatflow._ms_timestamptz(ms bigint)
RETURNS timestamptz LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp AS $$
    SELECT timestamptz 'epoch' + ms * interval '1 millisecond' $$;

-- Window validation in the core (stoatflow::core::WindowSpec::validate), plus the
-- resolved retention and segment interval. Raises 22023 with an actionable message.
CREATE FUNCTION stoatflow._check_window(kind text, size_ms bigint, advance_ms bigint,
    grace_ms bigint, retention_ms bigint,
    OUT retention_ms bigint, OUT segment_interval_ms bigint)
RETURNS record LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow__check_window';

-- The aggregate list, parsed with PostgreSQL's own parser: one row per aggregate.
CREATE FUNCTION stoatflow._parse_aggregates(aggregates text,
    OUT fn text, OUT field text, OUT column_name text, OUT column_type text)
RETURNS SETOF record LANGUAGE C IMMUTABLE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__parse_aggregates';

-- Broker list syntax and librdkafka options (unknown keys, bad values). Never echoes
-- the value of a secret option.
CREATE FUNCTION stoatflow._check_kafka_config(brokers text, option_names text[], option_values text[])
RETURNS void LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow__check_kafka_config';

-- The role a SECURITY DEFINER function was called by (after SET ROLE).
CREATE FUNCTION stoatflow._invoking_role()
RETURNS regrole LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'stoatflow__invoking_role';

-- Source and aggregation names: identifiers a user can type unquoted.
CREATE FUNCTION stoatflow._check_name(what text, name text)
RETURNS void LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF name IS NULL OR name !~ '^[A-Za-z_][A-Za-z0-9_]{0,62}$' THEN
        RAISE EXCEPTION 'invalid % name "%"', what, name
            USING ERRCODE = 'invalid_name',
                  HINT = 'Use letters, digits and underscores (at most 63, not starting with a digit).';
    END IF;
END $$;

-- Wakes the launcher when the calling transaction commits (sources or aggregations changed).
CREATE FUNCTION stoatflow._wake_launcher()
RETURNS void LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__wake_launcher';

-- True for option names whose values are secrets (passwords, secrets, key material).
CREATE FUNCTION stoatflow._is_secret_option(name text)
RETURNS boolean LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp AS $$
    SELECT name ~* '(password|secret|token|credential|jaas|\.key($|\.)|key\.pem|keystore|private)'
$$;

CREATE FUNCTION stoatflow._mask_options(opts jsonb)
RETURNS jsonb LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(jsonb_object_agg(k,
               CASE WHEN stoatflow._is_secret_option(k) THEN to_jsonb('********'::text) ELSE v END),
           '{}'::jsonb)
    FROM jsonb_each(opts) AS e(k, v)
$$;

------------------------------------------------------------------------------------------
-- Sources
------------------------------------------------------------------------------------------

CREATE FUNCTION stoatflow.create_source(
    source_name          text,
    topic                text,
    brokers              text,
    format               text     DEFAULT 'json',
    key                  text     DEFAULT NULL,
    event_time           text     DEFAULT NULL,
    max_out_of_orderness interval DEFAULT '10 seconds',
    idle_timeout         interval DEFAULT NULL,
    start_offset         text     DEFAULT 'earliest',
    kafka_options        jsonb    DEFAULT '{}')
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ooo_ms  bigint := stoatflow._interval_ms(max_out_of_orderness, 'max_out_of_orderness');
    idle_ms bigint := stoatflow._interval_ms(idle_timeout, 'idle_timeout');
BEGIN
    PERFORM stoatflow._check_name('source', source_name);
    IF EXISTS (SELECT 1 FROM stoatflow.source s WHERE s.source_name = create_source.source_name) THEN
        RAISE EXCEPTION 'source "%" already exists', source_name
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Choose another name, or drop it first with stoatflow.drop_source().';
    END IF;
    IF topic IS NULL OR topic !~ '^[A-Za-z0-9._-]{1,249}$' THEN
        RAISE EXCEPTION 'invalid Kafka topic name "%"', topic
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Kafka topic names use letters, digits, ".", "_" and "-" (at most 249).';
    END IF;
    IF format IS DISTINCT FROM 'json' THEN
        RAISE EXCEPTION 'unknown format "%"', format
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'The supported format is ''json'' (one JSON object per message).';
    END IF;
    IF start_offset IS NULL OR start_offset NOT IN ('earliest', 'latest') THEN
        RAISE EXCEPTION 'unknown start_offset "%"', start_offset
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use ''earliest'' or ''latest''.';
    END IF;
    IF ooo_ms IS NULL OR ooo_ms < 0 THEN
        RAISE EXCEPTION 'max_out_of_orderness must be zero or positive'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF idle_ms IS NOT NULL AND idle_ms <= 0 THEN
        RAISE EXCEPTION 'idle_timeout must be positive (or NULL for never)'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF kafka_options IS NULL OR jsonb_typeof(kafka_options) <> 'object' THEN
        RAISE EXCEPTION 'kafka_options must be a JSON object'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'For example: ''{"security.protocol": "SASL_SSL"}''.';
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_each(kafka_options) e(k, v)
                WHERE jsonb_typeof(v) NOT IN ('string', 'number', 'boolean')) THEN
        RAISE EXCEPTION 'kafka_options values must be strings, numbers or booleans'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM stoatflow._check_kafka_config(brokers,
        (SELECT array_agg(k ORDER BY k) FROM jsonb_each(kafka_options) e(k, v)),
        (SELECT array_agg(v #>> '{}' ORDER BY k) FROM jsonb_each(kafka_options) e(k, v)));
    IF key IS NOT NULL THEN
        PERFORM stoatflow._parse_aggregates(format('min(%L)', key));
    END IF;
    IF event_time IS NOT NULL THEN
        PERFORM stoatflow._parse_aggregates(format('min(%L)', event_time));
    END IF;

    PERFORM stoatflow._wake_launcher();
    INSERT INTO stoatflow.source (source_name, topic, brokers, format, key_path, event_time_path,
        max_out_of_orderness_ms, idle_timeout_ms, start_offset, kafka_options, created_by)
    VALUES (source_name, topic, brokers, format, key, event_time, ooo_ms, idle_ms, start_offset,
        kafka_options, stoatflow._invoking_role());
END $$;

CREATE FUNCTION stoatflow.drop_source(source_name text, "cascade" boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    sid  integer;
    aggs text;
BEGIN
    SELECT s.source_id INTO sid FROM stoatflow.source s WHERE s.source_name = drop_source.source_name;
    IF sid IS NULL THEN
        RAISE EXCEPTION 'source "%" does not exist', source_name USING ERRCODE = 'undefined_object';
    END IF;
    SELECT string_agg(a.aggregation_name, ', ' ORDER BY a.aggregation_name) INTO aggs
      FROM stoatflow.aggregation a WHERE a.source_id = sid;
    IF aggs IS NOT NULL THEN
        IF NOT "cascade" THEN
            RAISE EXCEPTION 'source "%" is still used by aggregations: %', source_name, aggs
                USING ERRCODE = 'dependent_objects_still_exist',
                      HINT = 'Drop those aggregations first, or call drop_source(name, cascade => true).';
        END IF;
        PERFORM stoatflow._drop_aggregation_unchecked(a.aggregation_id, false)
           FROM stoatflow.aggregation a WHERE a.source_id = sid;
    END IF;
    PERFORM stoatflow._wake_launcher();
    DELETE FROM stoatflow.source WHERE source_id = sid;
END $$;

------------------------------------------------------------------------------------------
-- Windows
------------------------------------------------------------------------------------------

CREATE TYPE stoatflow."window" AS (
    kind    text,       -- tumbling | hopping | sliding | session
    size    interval,   -- size; sliding: time difference; session: inactivity gap
    advance interval,   -- hopping advance (tumbling: = size; others NULL)
    grace   interval
);

CREATE FUNCTION stoatflow._make_window(kind text, size interval, advance interval, grace interval)
RETURNS stoatflow."window" LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    what text := CASE kind WHEN 'sliding' THEN 'time_difference'
                           WHEN 'session' THEN 'inactivity_gap' ELSE 'size' END;
BEGIN
    IF size IS NULL THEN
        RAISE EXCEPTION '% window % must not be NULL', kind, what USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF grace IS NULL THEN
        RAISE EXCEPTION '% window grace must not be NULL', kind
            USING ERRCODE = 'null_value_not_allowed', HINT = 'Use ''0'' for no grace.';
    END IF;
    IF kind = 'hopping' AND advance IS NULL THEN
        RAISE EXCEPTION 'hopping window advance must not be NULL' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM stoatflow._check_window(kind, stoatflow._interval_ms(size, what),
        coalesce(stoatflow._interval_ms(advance, 'advance'), 0),
        stoatflow._interval_ms(grace, 'grace'), NULL);
    RETURN ROW(kind, size, advance, grace)::stoatflow."window";
END $$;

CREATE FUNCTION stoatflow.tumbling(size interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT stoatflow._make_window('tumbling', size, size, grace) $$;

CREATE FUNCTION stoatflow.hopping(size interval, advance interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT stoatflow._make_window('hopping', size, advance, grace) $$;

CREATE FUNCTION stoatflow.sliding(time_difference interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT stoatflow._make_window('sliding', time_difference, NULL, grace) $$;

CREATE FUNCTION stoatflow.session(inactivity_gap interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT stoatflow._make_window('session', inactivity_gap, NULL, grace) $$;

------------------------------------------------------------------------------------------
-- Aggregations
------------------------------------------------------------------------------------------

-- Resolves the sink name with the caller's search_path, then declares through the
-- SECURITY DEFINER function below, which checks every privilege against the caller.
CREATE FUNCTION stoatflow.create_aggregation(
    aggregation_name text,
    source           text,
    "window"         stoatflow."window",
    aggregates       text,
    sink             text,
    emit             text     DEFAULT 'on_window_update',
    retention        interval DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    parts    text[];
    sink_oid oid;
    sch      text;
BEGIN
    IF sink IS NULL OR sink = '' THEN
        RAISE EXCEPTION 'sink must name a table' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    parts := pg_catalog.parse_ident(sink);
    IF pg_catalog.array_length(parts, 1) > 2 THEN
        RAISE EXCEPTION 'sink "%" has too many dotted names', sink
            USING ERRCODE = 'invalid_name', HINT = 'Use table or schema.table.';
    END IF;
    IF pg_catalog.array_length(parts, 1) = 2 THEN
        sch := parts[1];
    ELSE
        sink_oid := pg_catalog.to_regclass(pg_catalog.quote_ident(parts[1]));
        IF sink_oid IS NOT NULL THEN
            SELECT n.nspname INTO sch FROM pg_catalog.pg_class c
              JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = sink_oid;
        ELSE
            sch := pg_catalog.current_schema();
            IF sch IS NULL THEN
                RAISE EXCEPTION 'no schema has been selected to create the sink "%" in', sink
                    USING ERRCODE = 'invalid_schema_name', HINT = 'Schema-qualify the sink name.';
            END IF;
        END IF;
    END IF;
    PERFORM stoatflow._create_aggregation(aggregation_name, source, "window", aggregates, sch,
        parts[pg_catalog.array_length(parts, 1)], emit, retention);
END $$;

CREATE FUNCTION stoatflow._create_aggregation(
    aggregation_name text, source text, win stoatflow."window", aggregates text,
    sink_schema text, sink_table text, emit text, retention interval)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    owner_role  regrole := stoatflow._invoking_role();
    src_id      integer;
    size_ms     bigint;
    advance_ms  bigint;
    grace_ms    bigint;
    chk         record;
    fns text[]; fields text[]; cols text[]; types text[];
    sink_oid    oid;
    sink_name   text := format('%I.%I', sink_schema, sink_table);
    used_by     text;
    col         record;
    coldefs     text;
    i           integer;
BEGIN
    -- Callable only through create_aggregation: whoever may call that may call this.
    IF NOT has_function_privilege(owner_role,
        'stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval)', 'EXECUTE') THEN
        RAISE EXCEPTION 'permission denied for function create_aggregation'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM stoatflow._check_name('aggregation', aggregation_name);
    IF EXISTS (SELECT 1 FROM stoatflow.aggregation a WHERE a.aggregation_name = _create_aggregation.aggregation_name) THEN
        RAISE EXCEPTION 'aggregation "%" already exists', aggregation_name
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Choose another name, or drop it first with stoatflow.drop_aggregation().';
    END IF;
    SELECT s.source_id INTO src_id FROM stoatflow.source s WHERE s.source_name = source;
    IF src_id IS NULL THEN
        RAISE EXCEPTION 'source "%" does not exist', source
            USING ERRCODE = 'undefined_object', HINT = 'Create it with stoatflow.create_source().';
    END IF;
    IF win IS NULL OR win.kind IS NULL THEN
        RAISE EXCEPTION 'window must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Use stoatflow.tumbling(), hopping(), sliding() or session().';
    END IF;
    IF emit IS NULL OR emit NOT IN ('on_window_update', 'on_window_close') THEN
        RAISE EXCEPTION 'unknown emit strategy "%"', emit
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use ''on_window_update'' (a row per change, final when closed) or ''on_window_close'' (one final row per window).';
    END IF;
    IF win.kind NOT IN ('tumbling', 'hopping', 'sliding', 'session') THEN
        RAISE EXCEPTION 'unknown window kind "%"', win.kind USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Use stoatflow.tumbling(), hopping(), sliding() or session().';
    END IF;
    size_ms := stoatflow._interval_ms(win.size, 'window size');
    advance_ms := CASE win.kind WHEN 'tumbling' THEN size_ms
                                WHEN 'hopping' THEN stoatflow._interval_ms(win.advance, 'advance')
                                ELSE 0 END;
    grace_ms := stoatflow._interval_ms(win.grace, 'grace');
    SELECT * INTO chk FROM stoatflow._check_window(win.kind, size_ms, advance_ms, grace_ms,
        stoatflow._interval_ms(retention, 'retention'));
    IF aggregates IS NULL THEN
        RAISE EXCEPTION 'aggregates must not be NULL' USING ERRCODE = 'null_value_not_allowed',
            HINT = 'For example: ''count(*) AS views, sum(amount) AS revenue''.';
    END IF;
    SELECT array_agg(p.fn), array_agg(p.field), array_agg(p.column_name), array_agg(p.column_type)
      INTO fns, fields, cols, types FROM stoatflow._parse_aggregates(aggregates) p;

    -- The sink: an existing table must have the right shape and be writable by the owner;
    -- a new one is created in a schema where the owner may create tables.
    sink_oid := to_regclass(sink_name);
    IF sink_oid IS NOT NULL THEN
        IF (SELECT relkind FROM pg_class WHERE oid = sink_oid) NOT IN ('r', 'p') THEN
            RAISE EXCEPTION 'sink "%" is not a table', sink_name USING ERRCODE = 'wrong_object_type';
        END IF;
        -- (a comma list would ask for any one of them: each is required)
        IF NOT (has_table_privilege(owner_role, sink_oid, 'SELECT')
                AND has_table_privilege(owner_role, sink_oid, 'INSERT')
                AND has_table_privilege(owner_role, sink_oid, 'UPDATE')
                AND has_table_privilege(owner_role, sink_oid, 'DELETE')) THEN
            RAISE EXCEPTION 'permission denied for sink table %', sink_name
                USING ERRCODE = 'insufficient_privilege',
                      HINT = format('Role %s needs SELECT, INSERT, UPDATE and DELETE on the sink.', owner_role);
        END IF;
        SELECT string_agg(a.aggregation_name, ', ') INTO used_by
          FROM stoatflow.aggregation a WHERE a.sink = sink_oid;
        IF used_by IS NOT NULL THEN
            RAISE EXCEPTION 'sink "%" is already written by aggregation %', sink_name, used_by
                USING ERRCODE = 'duplicate_object', HINT = 'Give each aggregation a sink of its own.';
        END IF;
        FOR col IN
            SELECT c.name, c.type FROM unnest(
                ARRAY['key', 'window_start', 'window_end'] || cols || ARRAY['event_time', 'final'],
                ARRAY['text', 'timestamp with time zone', 'timestamp with time zone'] || types
                    || ARRAY['timestamp with time zone', 'boolean']) AS c(name, type)
        LOOP
            IF NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = sink_oid
                             AND a.attname = col.name AND a.attnum > 0 AND NOT a.attisdropped) THEN
                RAISE EXCEPTION 'sink "%" has no column "%"', sink_name, col.name
                    USING ERRCODE = 'datatype_mismatch',
                          HINT = format('Add it as %s, or let create_aggregation create the sink.', col.type);
            END IF;
            IF (SELECT format_type(a.atttypid, NULL) FROM pg_attribute a
                 WHERE a.attrelid = sink_oid AND a.attname = col.name) <> col.type THEN
                RAISE EXCEPTION 'sink "%" column "%" has type %, expected %', sink_name, col.name,
                    (SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
                      WHERE a.attrelid = sink_oid AND a.attname = col.name), col.type
                    USING ERRCODE = 'datatype_mismatch';
            END IF;
        END LOOP;
        IF NOT EXISTS (
            SELECT 1 FROM pg_index x
             WHERE x.indrelid = sink_oid AND x.indisunique AND x.indnkeyatts = 2
               AND x.indexprs IS NULL AND x.indpred IS NULL
               AND (SELECT array_agg(a.attname::text ORDER BY k.ord)
                      FROM unnest(x.indkey) WITH ORDINALITY k(attnum, ord)
                      JOIN pg_attribute a ON a.attrelid = sink_oid AND a.attnum = k.attnum)
                   = ARRAY['key', 'window_start']) THEN
            RAISE EXCEPTION 'sink "%" needs a primary key on (key, window_start)', sink_name
                USING ERRCODE = 'invalid_table_definition',
                      HINT = 'Every write is an upsert on (key, window_start).';
        END IF;
    ELSE
        IF NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = sink_schema) THEN
            RAISE EXCEPTION 'schema "%" does not exist', sink_schema USING ERRCODE = 'invalid_schema_name';
        END IF;
        IF NOT has_schema_privilege(owner_role, sink_schema, 'CREATE') THEN
            RAISE EXCEPTION 'permission denied to create sink table % in schema %', sink_name, sink_schema
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        coldefs := '';
        FOR i IN 1 .. array_length(cols, 1) LOOP
            coldefs := coldefs || format('%I %s, ', cols[i], types[i]);
        END LOOP;
        EXECUTE format('CREATE TABLE %s (key text NOT NULL, window_start timestamptz NOT NULL, '
                       'window_end timestamptz NOT NULL, %s event_time timestamptz NOT NULL, '
                       'final boolean NOT NULL DEFAULT false, PRIMARY KEY (key, window_start)) '
                       -- room on each page, so rewriting a window is a HOT update (no index entry)
                       'WITH (fillfactor = 70)',
                       sink_name, coldefs);
        EXECUTE format('ALTER TABLE %s OWNER TO %s', sink_name, owner_role);
        sink_oid := to_regclass(sink_name);
        EXECUTE format('COMMENT ON TABLE %s IS %L', sink_name,
            format('stoatflow sink of aggregation %s: %s over %s', aggregation_name, aggregates, source));
    END IF;

    INSERT INTO stoatflow.aggregation (aggregation_name, source_id, kind, size_ms, advance_ms,
        grace_ms, aggregates, agg_functions, agg_fields, agg_columns, sink, emit, retention_ms,
        segment_interval_ms, owner)
    VALUES (aggregation_name, src_id, win.kind, size_ms, advance_ms, grace_ms, aggregates, fns,
        fields, cols, sink_oid, emit, chk.retention_ms, chk.segment_interval_ms, owner_role);
    INSERT INTO stoatflow.aggregation_progress (aggregation_id)
    SELECT a.aggregation_id FROM stoatflow.aggregation a WHERE a.aggregation_name = _create_aggregation.aggregation_name;
END $$;

CREATE FUNCTION stoatflow._drop_aggregation_unchecked(agg_id integer, drop_sink boolean)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    seg record;
    sink_oid oid;
BEGIN
    SELECT a.sink INTO sink_oid FROM stoatflow.aggregation a WHERE a.aggregation_id = agg_id;
    FOR seg IN SELECT s.relname FROM stoatflow.segment s WHERE s.aggregation_id = agg_id LOOP
        EXECUTE format('DROP TABLE IF EXISTS stoatflow_state.%I', seg.relname);
    END LOOP;
    DELETE FROM stoatflow.aggregation WHERE aggregation_id = agg_id;
    IF drop_sink AND sink_oid IS NOT NULL AND EXISTS (SELECT 1 FROM pg_class WHERE oid = sink_oid) THEN
        EXECUTE format('DROP TABLE %s', sink_oid::regclass);
    END IF;
END $$;
REVOKE ALL ON FUNCTION stoatflow._drop_aggregation_unchecked(integer, boolean) FROM PUBLIC;

CREATE FUNCTION stoatflow.drop_aggregation(aggregation_name text, drop_sink boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    agg     record;
    caller  regrole := stoatflow._invoking_role();
BEGIN
    SELECT a.aggregation_id, a.owner, a.sink INTO agg FROM stoatflow.aggregation a
     WHERE a.aggregation_name = drop_aggregation.aggregation_name;
    IF agg.aggregation_id IS NULL THEN
        RAISE EXCEPTION 'aggregation "%" does not exist', aggregation_name USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT pg_has_role(caller, agg.owner, 'MEMBER') THEN
        RAISE EXCEPTION 'must be owner of aggregation %', aggregation_name
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF drop_sink AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = agg.sink)
       AND NOT pg_has_role(caller, (SELECT c.relowner FROM pg_class c WHERE c.oid = agg.sink), 'MEMBER') THEN
        RAISE EXCEPTION 'must be owner of table % to drop it', agg.sink::regclass
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM stoatflow._drop_aggregation_unchecked(agg.aggregation_id, drop_sink);
END $$;

------------------------------------------------------------------------------------------
-- Waiting for the worker
------------------------------------------------------------------------------------------

-- Reads each partition's end offset from the broker when called, then blocks until the
-- source's worker has consumed and committed up to there. False on timeout (or when the
-- broker cannot be reached in time); honours query cancel. Use in READ COMMITTED.
CREATE FUNCTION stoatflow.wait_caught_up(source_name text, timeout interval DEFAULT '60 seconds')
RETURNS boolean LANGUAGE C VOLATILE SECURITY DEFINER
AS 'MODULE_PATHNAME', 'stoatflow_wait_caught_up';

------------------------------------------------------------------------------------------
-- Reading window state
------------------------------------------------------------------------------------------

-- Live windows (open ones and closed ones still retained) as rows of the sink's type:
--   SELECT * FROM stoatflow.window_state('views_5m', NULL::public.views_5m);
-- final is true for windows the committed watermark has closed. Needs SELECT on the sink.
CREATE FUNCTION stoatflow.window_state(aggregation_name text, sink_row anyelement)
RETURNS SETOF anyelement LANGUAGE C STABLE SECURITY DEFINER
AS 'MODULE_PATHNAME', 'stoatflow_window_state';

------------------------------------------------------------------------------------------
-- TESTING TOOL: run records through a source's pipeline and commit step synchronously,
-- without Kafka, in the caller's transaction. Each element of `records` is an object:
--   {"value": <the message as JSON>}  or  {"raw": "<message text, need not be JSON>"}
--   optional "key" (the Kafka message key, text), "timestamp" (Kafka timestamp, epoch ms),
--   "partition" (default 0). Offsets continue from the committed ones per partition.
-- Not for production: a running worker for the same source would be bypassed.
------------------------------------------------------------------------------------------
CREATE FUNCTION stoatflow._process_messages(source text, partitions integer[], keys text[],
    timestamps bigint[], payloads text[],
    OUT processed bigint, OUT dead_letters bigint, OUT watermark timestamptz)
RETURNS record LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__process_messages';

CREATE FUNCTION stoatflow.process_records(source text, records jsonb,
    OUT processed bigint, OUT dead_letters bigint, OUT watermark timestamptz)
RETURNS record LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF records IS NULL OR pg_catalog.jsonb_typeof(records) <> 'array' THEN
        RAISE EXCEPTION 'records must be a JSON array' USING ERRCODE = 'invalid_parameter_value',
            HINT = 'For example: ''[{"value": {"user_id": "u1", "ts": 1000}}]''.';
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(records) r
                WHERE jsonb_typeof(r) <> 'object' OR NOT (r ? 'value' OR r ? 'raw')) THEN
        RAISE EXCEPTION 'each record must be an object with "value" or "raw"'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT m.processed, m.dead_letters, m.watermark INTO processed, dead_letters, watermark
      FROM stoatflow._process_messages(source,
        ARRAY(SELECT coalesce((r->>'partition')::integer, 0) FROM jsonb_array_elements(records) WITH ORDINALITY e(r, i) ORDER BY i),
        ARRAY(SELECT r->>'key' FROM jsonb_array_elements(records) WITH ORDINALITY e(r, i) ORDER BY i),
        ARRAY(SELECT (r->>'timestamp')::bigint FROM jsonb_array_elements(records) WITH ORDINALITY e(r, i) ORDER BY i),
        ARRAY(SELECT CASE WHEN r ? 'raw' THEN r->>'raw' ELSE (r->'value')::text END
                FROM jsonb_array_elements(records) WITH ORDINALITY e(r, i) ORDER BY i)) m;
END $$;

------------------------------------------------------------------------------------------
-- Observability
------------------------------------------------------------------------------------------

-- One row per source and partition (a source without partitions yet: one row, NULLs).
CREATE VIEW stoatflow.sources AS
SELECT s.source_name, s.topic, s.brokers,
       coalesce(st.status, 'stopped') AS status, st.last_error,
       po.partition, po.next_offset AS committed_offset,
       ps.high_watermark,
       CASE WHEN ps.high_watermark IS NOT NULL AND po.next_offset IS NOT NULL
            THEN greatest(ps.high_watermark - po.next_offset, 0) END AS lag,
       coalesce(ps.idle, false) AS idle,
       stoatflow._ms_timestamptz(pr.watermark_ms) AS watermark,
       pr.committed_at AS last_commit_at,
       stoatflow._mask_options(s.kafka_options) AS kafka_options
  FROM stoatflow.source s
  LEFT JOIN stoatflow.source_status st ON st.source_id = s.source_id
  LEFT JOIN stoatflow.source_progress pr ON pr.source_id = s.source_id
  LEFT JOIN stoatflow.partition_offset po ON po.source_id = s.source_id
  LEFT JOIN stoatflow.partition_status ps ON ps.source_id = s.source_id AND ps.partition = po.partition;

-- One row per aggregation.
CREATE VIEW stoatflow.stats AS
SELECT a.aggregation_name, s.source_name, a.kind AS window_kind, a.emit, a.sink,
       p.records_in,
       p.dropped_late_window, p.dropped_late_session,
       p.dropped_late_window + p.dropped_late_session AS dropped_late,
       (SELECT count(*) FROM stoatflow.dead_letters d WHERE d.source_name = s.source_name) AS dead_letters,
       p.open_windows, p.keys_with_open_windows,
       p.windows_emitted, p.windows_reemitted, p.sessions_merged,
       p.last_commit_at,
       stoatflow._ms_timestamptz(pr.watermark_ms) AS watermark,
       stoatflow._ms_timestamptz(p.emit_frontier_ms) AS emit_frontier,
       (SELECT count(*) FROM stoatflow.segment g WHERE g.aggregation_id = a.aggregation_id) AS live_segments,
       (SELECT coalesce(sum(pg_total_relation_size(format('stoatflow_state.%I', g.relname))), 0)
          FROM stoatflow.segment g WHERE g.aggregation_id = a.aggregation_id) AS state_bytes,
       p.state_rows_written, p.state_bytes_written,
       stoatflow._ms_interval(p.freshness_lag_ms) AS freshness_lag,
       p.last_error
  FROM stoatflow.aggregation a
  JOIN stoatflow.source s ON s.source_id = a.source_id
  LEFT JOIN stoatflow.aggregation_progress p ON p.aggregation_id = a.aggregation_id
  LEFT JOIN stoatflow.source_progress pr ON pr.source_id = a.source_id;

GRANT SELECT ON stoatflow.sources, stoatflow.stats TO PUBLIC;

------------------------------------------------------------------------------------------
-- Privileges: sources open network connections (superusers only unless granted);
-- nothing here is callable by PUBLIC except reading.
------------------------------------------------------------------------------------------
REVOKE ALL ON FUNCTION stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.drop_source(text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.drop_aggregation(text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.process_records(text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._process_messages(text, integer[], text[], bigint[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._check_kafka_config(text, text[], text[]) FROM PUBLIC;
