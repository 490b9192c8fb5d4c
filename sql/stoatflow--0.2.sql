-- stoatflow 0.2 install script (run by CREATE EXTENSION; not a pg_regress test): the 0.2
-- definitions only. Released with 0.2.0: never edited again; later changes go into
-- stoatflow--0.2--0.3.sql and the next version's install script. An installed 0.1 gets the same
-- objects from stoatflow--0.1--0.2.sql (test/upgrade/run.sh and the install_script test compare
-- the two catalogs).
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
-- future_limit_ms: records dated further ahead of the server clock are dead letters.
-- kafka_options_masked: kafka_options with secrets masked, written when the source is declared
-- (the views read it and need no function a reader would have to be allowed to execute).
-- columns: the row type, the declared columns as [{"name", "type", "path"}], types as
-- format_type() gave them at declaration (schema-qualified outside pg_catalog); NULL: field
-- paths. format_options as given. topics: the names in the order declared (the worker numbers
-- them by that order, so it never changes); topic: the list as shown (the names joined by ', ').
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
    created_at             timestamptz NOT NULL DEFAULT now(),
    future_limit_ms        bigint,
    kafka_options_masked   jsonb NOT NULL,
    columns                jsonb,
    format_options         jsonb NOT NULL DEFAULT '{}',
    topics                 text[] NOT NULL
);
REVOKE ALL ON stoatflow.source FROM PUBLIC;

-- sink_schema, sink_table: the sink's name, to find it again once it was dropped and created
-- anew (the id changes). group_by and filter as declared; executor marks an aggregation run by
-- PostgreSQL's executor (expressions, PostgreSQL aggregates) rather than the built-in fast path.
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
    created_at          timestamptz NOT NULL DEFAULT now(),
    sink_schema         text,
    sink_table          text,
    group_by            text,
    filter              text,
    executor            boolean NOT NULL DEFAULT false
);

-- Progress committed with every commit cycle, in the same transaction as the state.
CREATE TABLE stoatflow.source_progress (
    source_id        integer PRIMARY KEY REFERENCES stoatflow.source ON DELETE CASCADE,
    watermark_ms     bigint,                 -- W; NULL before the first record
    watermark_state  text NOT NULL,          -- W plus per-partition max event time
    commit_seq       bigint NOT NULL DEFAULT 0,
    committed_at     timestamptz
);
-- offsets_skipped: offsets the topic's retention deleted before the source read them, skipped,
-- counted here and listed in dead_letters (reason 'offsets_skipped'), in the commit that moves
-- past them.
CREATE TABLE stoatflow.partition_offset (
    source_id   integer NOT NULL REFERENCES stoatflow.source ON DELETE CASCADE,
    partition   integer NOT NULL,
    next_offset bigint NOT NULL,
    offsets_skipped bigint NOT NULL DEFAULT 0,
    topic       text NOT NULL,
    PRIMARY KEY (source_id, topic, partition)
);

-- Per aggregation: emit frontier and counters, committed with the state. filtered: records its
-- filter skipped; sink_owed: windows the outbox holds for a failing sink; status: running, error
-- (its sink fails) or stalled (its code ran past stoatflow.user_code_timeout and rests), NULL
-- before the first commit.
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
    last_error           text,
    filtered             bigint NOT NULL DEFAULT 0,
    sink_owed            bigint NOT NULL DEFAULT 0,
    status               text
);

-- The segment tables of each aggregation, with the span each was created with; by id too
-- (relid): stoatflow.stats sizes them with pg_total_relation_size(relid), which is NULL for a
-- segment dropped meanwhile instead of an error, and needs no schema privilege.
CREATE TABLE stoatflow.segment (
    aggregation_id integer NOT NULL REFERENCES stoatflow.aggregation ON DELETE CASCADE,
    segment_start  bigint NOT NULL,
    span_ms        bigint NOT NULL,
    relname        name NOT NULL,
    rows_written   bigint NOT NULL DEFAULT 0,
    relid          oid,
    PRIMARY KEY (aggregation_id, segment_start)
);

-- Records that could not be decoded, written in the commit that consumed them. topic: NULL
-- only for a dead letter of a source dropped before an upgrade from 0.1.
CREATE TABLE stoatflow.dead_letters (
    dead_letter_id bigserial PRIMARY KEY,
    source_name    text NOT NULL,
    partition      integer NOT NULL,
    "offset"       bigint NOT NULL,
    reason         text NOT NULL,
    detail         text,
    payload        text,                    -- the first bytes, made storable
    received_at    timestamptz NOT NULL DEFAULT now(),
    topic          text
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
    topic          text NOT NULL,
    PRIMARY KEY (source_id, topic, partition)
);

REVOKE ALL ON stoatflow.aggregation, stoatflow.source_progress, stoatflow.partition_offset,
    stoatflow.aggregation_progress, stoatflow.segment, stoatflow.source_status,
    stoatflow.partition_status FROM PUBLIC;
GRANT SELECT ON stoatflow.aggregation, stoatflow.source_progress, stoatflow.partition_offset,
    stoatflow.aggregation_progress, stoatflow.segment, stoatflow.source_status,
    stoatflow.partition_status TO PUBLIC;
REVOKE ALL ON stoatflow.dead_letters FROM PUBLIC;

-- Windows a failing sink is owed: the newest operation per window, written in the same
-- transaction as the aggregation's state, drained into the sink once it takes rows.
CREATE TABLE stoatflow.sink_outbox (
    aggregation_id integer NOT NULL REFERENCES stoatflow.aggregation ON DELETE CASCADE,
    key            text NOT NULL,
    window_start   bigint NOT NULL,
    window_end     bigint NOT NULL,
    event_time     bigint NOT NULL,
    state          bytea,
    final          boolean NOT NULL,
    removed        boolean NOT NULL,             -- the sink row must be deleted
    PRIMARY KEY (aggregation_id, key, window_start)
);
REVOKE ALL ON stoatflow.sink_outbox FROM PUBLIC;

------------------------------------------------------------------------------------------
-- Helpers. Internal functions (names starting with "_") are not executable by PUBLIC; the
-- functions that need the extension owner's rights are SECURITY DEFINER with a pinned
-- search_path; every stoatflow C function refuses to run inside a security-restricted
-- operation (code the worker runs as an aggregation's owner).
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

-- True for option names whose values are secrets (passwords, secrets, key material): the one
-- secret rule lives in C++ (stoatflow::kafka::is_secret_option).
CREATE FUNCTION stoatflow._is_secret_option(name text)
RETURNS boolean LANGUAGE C IMMUTABLE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__is_secret_option';

CREATE FUNCTION stoatflow._mask_options(opts jsonb)
RETURNS jsonb LANGUAGE sql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(jsonb_object_agg(k,
               CASE WHEN stoatflow._is_secret_option(k) THEN to_jsonb('********'::text) ELSE v END),
           '{}'::jsonb)
    FROM jsonb_each(opts) AS e(k, v)
$$;

-- Declaration-time analysis (README "Expressions and PostgreSQL aggregates"): key, event_time,
-- group_by, filter and the aggregate list parsed and analyzed by PostgreSQL against a source's
-- row (columns as stored in stoatflow.source.columns, plus the metadata columns), names looked
-- up under search_path = pg_catalog, pg_temp; one row per expression and per aggregate call.
CREATE FUNCTION stoatflow._analyze(columns jsonb, window_kind text, key text, event_time text,
    group_by text, filter text, aggregates text,
    OUT role text, OUT ordinal integer, OUT name text, OUT type text, OUT detail jsonb,
    OUT tree text)
RETURNS SETOF record LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__analyze';

------------------------------------------------------------------------------------------
-- Windows
------------------------------------------------------------------------------------------

CREATE TYPE stoatflow."window" AS (
    kind    text,       -- tumbling | hopping | sliding | session
    size    interval,   -- size; sliding: time difference; session: inactivity gap
    advance interval,   -- hopping advance (tumbling: = size; others NULL)
    grace   interval
);

-- Window definitions are built and validated in C++ (no helper a caller would need).
CREATE FUNCTION stoatflow.tumbling(size interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow_tumbling';
CREATE FUNCTION stoatflow.hopping(size interval, advance interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow_hopping';
CREATE FUNCTION stoatflow.sliding(time_difference interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow_sliding';
CREATE FUNCTION stoatflow.session(inactivity_gap interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow_session';
-- The same from texts: an untyped literal ('5 minutes') resolves to these, which refuse a number
-- without a unit ('5', read by PostgreSQL as 5 seconds) and read anything else as an interval.
CREATE FUNCTION stoatflow.tumbling(size text, grace text DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'stoatflow_tumbling_text';
CREATE FUNCTION stoatflow.hopping(size text, advance text, grace text DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'stoatflow_hopping_text';
CREATE FUNCTION stoatflow.sliding(time_difference text, grace text DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'stoatflow_sliding_text';
CREATE FUNCTION stoatflow.session(inactivity_gap text, grace text DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'stoatflow_session_text';

------------------------------------------------------------------------------------------
-- Sources
------------------------------------------------------------------------------------------

-- Declared by C++ (src/pg/declare/create_source.cpp): its checks, the column list (types
-- resolved by PostgreSQL's type-name parser along the caller's search_path: 42601 syntax, 42704
-- unknown type, 42701 duplicate name), key and event_time (a column of the row type, declared or
-- metadata, or an expression over it), the catalog row and the source's view.
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
    kafka_options        jsonb    DEFAULT '{}',
    columns              text     DEFAULT NULL,
    format_options       jsonb    DEFAULT '{}',
    future_limit         interval DEFAULT '1 day')
RETURNS void LANGUAGE C SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_create_source';

-- Dropping a source is for superusers and the role that created it; with cascade, the caller
-- must also own every aggregation it would drop (as drop_aggregation requires), and views
-- others built on the source's view in stoatflow_source go too (as DROP VIEW ... CASCADE).
CREATE FUNCTION stoatflow.drop_source(source_name text, "cascade" boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    caller regrole := stoatflow._invoking_role();
    src    record;
    aggs   text;
    others text;
BEGIN
    SELECT s.source_id, s.created_by INTO src FROM stoatflow.source s
     WHERE s.source_name = drop_source.source_name;
    IF src.source_id IS NULL THEN
        RAISE EXCEPTION 'source "%" does not exist', source_name USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT pg_has_role(caller, src.created_by, 'MEMBER') THEN
        RAISE EXCEPTION 'must be owner of source %', source_name
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'Only superusers and the role that created a source may drop it.';
    END IF;
    SELECT string_agg(a.aggregation_name, ', ' ORDER BY a.aggregation_name),
           string_agg(a.aggregation_name, ', ' ORDER BY a.aggregation_name)
               FILTER (WHERE NOT pg_has_role(caller, a.owner, 'MEMBER'))
      INTO aggs, others
      FROM stoatflow.aggregation a WHERE a.source_id = src.source_id;
    IF aggs IS NOT NULL THEN
        IF NOT "cascade" THEN
            RAISE EXCEPTION 'source "%" is still used by aggregations: %', source_name, aggs
                USING ERRCODE = 'dependent_objects_still_exist',
                      HINT = 'Drop those aggregations first, or call drop_source(name, cascade => true).';
        END IF;
        IF others IS NOT NULL THEN
            RAISE EXCEPTION 'must be owner of aggregations % to drop source "%" with cascade', others, source_name
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'Their owners (or a superuser) must drop them first.';
        END IF;
        PERFORM stoatflow._drop_aggregation_unchecked(a.aggregation_id, false)
           FROM stoatflow.aggregation a WHERE a.source_id = src.source_id;
    END IF;
    BEGIN
        EXECUTE format('DROP VIEW IF EXISTS stoatflow_source.%I %s', source_name,
                       CASE WHEN "cascade" THEN 'CASCADE' ELSE 'RESTRICT' END);
    EXCEPTION WHEN dependent_objects_still_exist THEN
        RAISE EXCEPTION 'other objects depend on the view stoatflow_source.% of source "%"',
                quote_ident(source_name), source_name
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Drop them first, or call drop_source(name, cascade => true), which drops them too.';
    END;
    -- The owner's last source: the schema privilege that came with its sources goes too (and the
    -- USAGE it passed on to others).
    IF NOT EXISTS (SELECT 1 FROM stoatflow.source s
                    WHERE s.created_by = src.created_by AND s.source_id <> src.source_id)
       AND EXISTS (SELECT 1 FROM pg_roles r WHERE r.oid = src.created_by AND NOT r.rolsuper) THEN
        EXECUTE format('REVOKE USAGE ON SCHEMA stoatflow_source FROM %s CASCADE', src.created_by);
    END IF;
    PERFORM stoatflow._wake_launcher();
    DELETE FROM stoatflow.source WHERE source_id = src.source_id;
END $$;

------------------------------------------------------------------------------------------
-- Aggregations
------------------------------------------------------------------------------------------

-- Declared by C++ (src/pg/declare/create_aggregation.cpp): its checks, the route (the built-in
-- fast path or PostgreSQL's executor), the sink (checked by the rule every write applies, or
-- created) and the catalog rows. SECURITY DEFINER with a pinned path; an unqualified sink name
-- still means what it means to the caller: it is looked up along the caller's search_path.
-- Aggregating a source reads its records: the caller must own the source (be a member of the
-- role that created it; superusers are) or hold SELECT on its view stoatflow_source.<source>
-- (README "Security").
CREATE FUNCTION stoatflow.create_aggregation(
    aggregation_name text,
    source           text,
    "window"         stoatflow."window",
    aggregates       text,
    sink             text,
    emit             text     DEFAULT 'on_window_update',
    retention        interval DEFAULT NULL,
    group_by         text     DEFAULT NULL,
    filter           text     DEFAULT NULL)
RETURNS void LANGUAGE C SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_create_aggregation';

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

-- Cancels what a source's worker runs now (an owner's code that loops cannot hold a drop up).
CREATE FUNCTION stoatflow._interrupt_source_worker(source_name text)
RETURNS void LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__interrupt_source_worker';
REVOKE ALL ON FUNCTION stoatflow._interrupt_source_worker(text) FROM PUBLIC;

-- drop_aggregation checks the caller first (and so refuses inside a security-restricted
-- operation before it touches anything).
CREATE FUNCTION stoatflow.drop_aggregation(aggregation_name text, drop_sink boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    caller  regrole := stoatflow._invoking_role();
    agg     record;
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
    PERFORM stoatflow._interrupt_source_worker(
        (SELECT s.source_name FROM stoatflow.source s JOIN stoatflow.aggregation a USING (source_id)
          WHERE a.aggregation_id = agg.aggregation_id));
    PERFORM stoatflow._drop_aggregation_unchecked(agg.aggregation_id, drop_sink);
END $$;

-- Rewrites the sink from the state tables (README "resync_sink"): every window still within
-- retention.
CREATE FUNCTION stoatflow.resync_sink(aggregation_name text)
RETURNS bigint LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_resync_sink';
COMMENT ON FUNCTION stoatflow.resync_sink(text) IS
    'Rewrites every window still within retention from the state tables into the sink; returns the rows written.';

------------------------------------------------------------------------------------------
-- Waiting for the worker
------------------------------------------------------------------------------------------

-- Reads each partition's end offset from the broker when called, then blocks until the
-- source's worker has consumed and committed up to there. False on timeout (or when the
-- broker cannot be reached in time); honours query cancel. Use in READ COMMITTED.
CREATE FUNCTION stoatflow.wait_caught_up(source_name text, timeout interval DEFAULT '60 seconds')
RETURNS boolean LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_wait_caught_up';

------------------------------------------------------------------------------------------
-- Reading window state
------------------------------------------------------------------------------------------

-- Live windows (open ones and closed ones still retained) as rows of the sink's type:
--   SELECT * FROM stoatflow.window_state('views_5m', NULL::public.views_5m);
-- final is true for windows the committed watermark has closed. Needs SELECT on the sink.
CREATE FUNCTION stoatflow.window_state(aggregation_name text, sink_row anyelement)
RETURNS SETOF anyelement LANGUAGE C STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_window_state';

------------------------------------------------------------------------------------------
-- TESTING TOOL: run records through a source's pipeline and commit step synchronously,
-- without Kafka, in the caller's transaction. Each element of `records` is an object:
--   {"value": <the message as JSON>}  or  {"raw": "<message text, need not be JSON>"}
--   optional "key" (the Kafka message key, text), "timestamp" (Kafka timestamp, epoch ms),
--   "partition" (default 0). Offsets continue from the committed ones per partition.
-- Not for production: a running worker for the same source would be bypassed.
------------------------------------------------------------------------------------------
-- process_records: callable by those it is granted to (superusers by default), through the
-- internal _process_messages, which PUBLIC cannot execute. A record's optional "topic" names
-- one of the source's topics (default: its first).
CREATE FUNCTION stoatflow._process_messages(source text, topics text[], partitions integer[],
    keys text[], timestamps bigint[], payloads text[],
    OUT processed bigint, OUT dead_letters bigint, OUT watermark timestamptz)
RETURNS record LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__process_messages';
CREATE FUNCTION stoatflow.process_records(source text, records jsonb,
    OUT processed bigint, OUT dead_letters bigint, OUT watermark timestamptz)
RETURNS record LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    caller regrole := stoatflow._invoking_role();
BEGIN
    IF records IS NULL OR jsonb_typeof(records) <> 'array' THEN
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
        ARRAY(SELECT r->>'topic' FROM jsonb_array_elements(records) WITH ORDINALITY e(r, i) ORDER BY i),
        ARRAY(SELECT coalesce((r->>'partition')::integer, 0) FROM jsonb_array_elements(records) WITH ORDINALITY e(r, i) ORDER BY i),
        ARRAY(SELECT r->>'key' FROM jsonb_array_elements(records) WITH ORDINALITY e(r, i) ORDER BY i),
        ARRAY(SELECT (r->>'timestamp')::bigint FROM jsonb_array_elements(records) WITH ORDINALITY e(r, i) ORDER BY i),
        ARRAY(SELECT CASE WHEN r ? 'raw' THEN r->>'raw' ELSE (r->'value')::text END
                FROM jsonb_array_elements(records) WITH ORDINALITY e(r, i) ORDER BY i)) m;
END $$;

------------------------------------------------------------------------------------------
-- Observability: the views need no helper function (a reader may execute none of them), and
-- a segment dropped while stats is read is simply not counted.
------------------------------------------------------------------------------------------

-- One row per source, topic and partition (a source without partitions yet: one row, NULLs).
-- topic: the partition's topic (a source without committed partitions yet: its topic list);
-- topics: every topic of the source.
CREATE VIEW stoatflow.sources AS
SELECT s.source_name, coalesce(po.topic, s.topic) AS topic, s.brokers,
       coalesce(st.status, 'stopped') AS status, st.last_error,
       po.partition, po.next_offset AS committed_offset,
       ps.high_watermark,
       CASE WHEN ps.high_watermark IS NOT NULL AND po.next_offset IS NOT NULL
            THEN greatest(ps.high_watermark - po.next_offset, 0) END AS lag,
       coalesce(ps.idle, false) AS idle,
       timestamptz 'epoch' + pr.watermark_ms * interval '1 millisecond' AS watermark,
       pr.committed_at AS last_commit_at,
       s.kafka_options_masked AS kafka_options,
       po.offsets_skipped,
       s.topics
  FROM stoatflow.source s
  LEFT JOIN stoatflow.source_status st ON st.source_id = s.source_id
  LEFT JOIN stoatflow.source_progress pr ON pr.source_id = s.source_id
  LEFT JOIN stoatflow.partition_offset po ON po.source_id = s.source_id
  LEFT JOIN stoatflow.partition_status ps ON ps.source_id = s.source_id AND ps.topic = po.topic
        AND ps.partition = po.partition;

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
       timestamptz 'epoch' + pr.watermark_ms * interval '1 millisecond' AS watermark,
       timestamptz 'epoch' + p.emit_frontier_ms * interval '1 millisecond' AS emit_frontier,
       (SELECT count(*) FROM stoatflow.segment g WHERE g.aggregation_id = a.aggregation_id) AS live_segments,
       (SELECT coalesce(sum(pg_total_relation_size(g.relid)), 0)::bigint
          FROM stoatflow.segment g WHERE g.aggregation_id = a.aggregation_id) AS state_bytes,
       p.state_rows_written, p.state_bytes_written,
       p.freshness_lag_ms * interval '1 millisecond' AS freshness_lag,
       p.last_error,
       coalesce(p.status, CASE WHEN p.last_error IS NULL THEN 'running' ELSE 'error' END) AS status,
       p.sink_owed, p.filtered
  FROM stoatflow.aggregation a
  JOIN stoatflow.source s ON s.source_id = a.source_id
  LEFT JOIN stoatflow.aggregation_progress p ON p.aggregation_id = a.aggregation_id
  LEFT JOIN stoatflow.source_progress pr ON pr.source_id = a.source_id;

GRANT SELECT ON stoatflow.sources, stoatflow.stats TO PUBLIC;

-- A source is an object with PostgreSQL's own privileges (README "Security"): its view
-- stoatflow_source.<source>, owned by the source's owner (the role that created it), who grants
-- SELECT on it to the roles that may aggregate the source. The view shows the source's rows of
-- stoatflow.sources (partitions, committed offsets, lag; kafka_options masked), which every role
-- may read anyway: it reveals nothing, it carries the privilege. Nobody but the extension's
-- owner creates objects in the schema, and PUBLIC has no USAGE on it (the owner of a source
-- holds it WITH GRANT OPTION and grants it with SELECT). The views depend on stoatflow.sources:
-- an upgrade script that replaces that view must re-create them (_create_source_view), and DROP
-- EXTENSION needs CASCADE while sources exist. create_source makes them at run time (not members
-- of the extension), drop_source drops them.
CREATE SCHEMA stoatflow_source;
REVOKE ALL ON SCHEMA stoatflow_source FROM PUBLIC;
CREATE FUNCTION stoatflow._create_source_view(source_name text, owner regrole)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    EXECUTE format('CREATE VIEW stoatflow_source.%I WITH (security_barrier) AS '
                   'SELECT source_name, topic, partition, committed_offset, high_watermark, lag, idle, '
                   'watermark, last_commit_at, status, last_error, offsets_skipped, topics, kafka_options '
                   'FROM stoatflow.sources WHERE source_name = %L', source_name, source_name);
    -- A role dropped since it created the source (0.1 kept no dependency): the extension's owner
    -- keeps the view. A source's owner may name its view and pass that on (USAGE WITH GRANT
    -- OPTION on the schema; superusers need none), never create anything in the schema.
    IF EXISTS (SELECT 1 FROM pg_roles r WHERE r.oid = owner) THEN
        EXECUTE format('ALTER VIEW stoatflow_source.%I OWNER TO %s', source_name, owner);
        IF NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.oid = owner) THEN
            EXECUTE format('GRANT USAGE ON SCHEMA stoatflow_source TO %s WITH GRANT OPTION', owner);
        END IF;
    END IF;
    EXECUTE format('COMMENT ON VIEW stoatflow_source.%I IS %L', source_name,
        format('stoatflow source %s: SELECT on this view allows stoatflow.create_aggregation() over it', source_name));
END $$;

------------------------------------------------------------------------------------------
-- Privileges: sources open network connections (superusers only unless granted); nothing
-- internal is executable by PUBLIC.
------------------------------------------------------------------------------------------
REVOKE ALL ON FUNCTION stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb, text, jsonb, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.drop_source(text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.drop_aggregation(text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.resync_sink(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.process_records(text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._process_messages(text, text[], integer[], text[], bigint[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._check_kafka_config(text, text[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._interval_ms(interval, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._ms_interval(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._ms_timestamptz(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._check_window(text, bigint, bigint, bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._parse_aggregates(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._invoking_role() FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._check_name(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._wake_launcher() FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._is_secret_option(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._mask_options(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._create_source_view(text, regrole) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._analyze(jsonb, text, text, text, text, text, text) FROM PUBLIC;

------------------------------------------------------------------------------------------
-- TESTING TOOLS ONLY (superusers): the row type's conversion lanes from SQL (sql/row_type.sql).
------------------------------------------------------------------------------------------

-- The C++ fast lane's value of a JSON value for a column type (as the type's output shows it),
-- NULL when the lane leaves it to PostgreSQL, '<NULL>' for SQL NULL.
CREATE FUNCTION stoatflow._test_fast_convert(type text, json text)
RETURNS text LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__test_fast_convert';
-- The PostgreSQL lane's value (the row type's rules, README "Columns: a row type per source",
-- through the type's input function); raises PostgreSQL's error for a value that does not
-- convert.
CREATE FUNCTION stoatflow._test_convert(type text, json text)
RETURNS text LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__test_convert';
-- Payloads decoded as a worker would (extract, metadata, one conversion batch): per payload
-- the row as {"column": text} or {"dead_letter": reason, "detail": ...}.
CREATE FUNCTION stoatflow._test_decode(columns text, payloads text[], keys text[] DEFAULT NULL)
RETURNS jsonb[] LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__test_decode';
-- An aggregation's executor over payloads: per key, the states folded in two halves
-- through serialize, deserialize, copy and merge, then finalized; as {"column": text, ...} per
-- key in key order, then {"filtered": n} and one {"dead_letter": ...} per record not folded.
CREATE FUNCTION stoatflow._test_executor(columns text, window_kind text, key text,
    group_by text, filter text, aggregates text, payloads text[])
RETURNS SETOF jsonb LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__test_executor';
-- One state of an aggregate list over payloads, as the state tables store it, and the items
-- finalized from such bytes (garbage raises XX001 or the state type's receive error).
CREATE FUNCTION stoatflow._test_state_bytes(columns text, aggregates text, payloads text[])
RETURNS bytea LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__test_state_bytes';
CREATE FUNCTION stoatflow._test_finalize(columns text, aggregates text, state bytea)
RETURNS jsonb LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__test_finalize';
COMMENT ON FUNCTION stoatflow._test_fast_convert(text, text) IS 'testing tool only';
COMMENT ON FUNCTION stoatflow._test_convert(text, text) IS 'testing tool only';
COMMENT ON FUNCTION stoatflow._test_decode(text, text[], text[]) IS 'testing tool only';
REVOKE ALL ON FUNCTION stoatflow._test_fast_convert(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._test_convert(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._test_decode(text, text[], text[]) FROM PUBLIC;
COMMENT ON FUNCTION stoatflow._test_executor(text, text, text, text, text, text, text[]) IS 'testing tool only';
REVOKE ALL ON FUNCTION stoatflow._test_executor(text, text, text, text, text, text, text[]) FROM PUBLIC;
COMMENT ON FUNCTION stoatflow._test_state_bytes(text, text, text[]) IS 'testing tool only';
COMMENT ON FUNCTION stoatflow._test_finalize(text, text, bytea) IS 'testing tool only';
REVOKE ALL ON FUNCTION stoatflow._test_state_bytes(text, text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._test_finalize(text, text, bytea) FROM PUBLIC;
