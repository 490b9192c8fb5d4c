-- stoatflow 0.1 -> 0.2 (ALTER EXTENSION stoatflow UPDATE; CREATE EXTENSION at 0.2 runs the 0.1
-- script, then this one). 0.1 is released: its script is never edited, every change is here.
\echo Use "ALTER EXTENSION stoatflow UPDATE TO '0.2'" to load this file. \quit

------------------------------------------------------------------------------------------
-- Upgrade helper (dropped at the end of this script). A function whose signature changes is
-- created anew beside the 0.1 one; _upgrade_replace then carries every grant of the 0.1 function
-- onto the new one and drops the 0.1 function, so ALTER EXTENSION UPDATE keeps what an
-- administrator granted (README "Upgrading"): each grantee, WITH GRANT OPTION where it was, and
-- in the name of the role that granted it (a grantee passing on its grant option). The 0.1
-- function's owner's own rights need no grant; PUBLIC is not carried onto an internal helper
-- (names starting with "_": none is executable by PUBLIC in 0.2).
------------------------------------------------------------------------------------------
CREATE FUNCTION stoatflow._upgrade_replace(old_fn regprocedure, new_fn regprocedure)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    old_owner oid := (SELECT p.proowner FROM pg_proc p WHERE p.oid = old_fn);
    internal  boolean := starts_with((SELECT p.proname FROM pg_proc p WHERE p.oid = new_fn), '_');
    saved     text := current_setting('role');
    done      bigint[] := '{}';
    progress  boolean := true;
    g         record;
BEGIN
    -- A grant made by a grantee needs its grant option on the new function first: passes until
    -- every grant is carried.
    WHILE progress LOOP
        progress := false;
        FOR g IN
            SELECT e.ord, e.grantor, e.grantee, e.privilege_type, e.is_grantable
              FROM pg_proc p, aclexplode(p.proacl) WITH ORDINALITY e(grantor, grantee, privilege_type, is_grantable, ord)
             WHERE p.oid = old_fn AND e.ord <> ALL (done)
             ORDER BY e.ord
        LOOP
            IF g.grantor <> old_owner AND NOT EXISTS (
                   SELECT 1 FROM pg_proc p, aclexplode(p.proacl) n
                    WHERE p.oid = new_fn AND n.grantee = g.grantor
                      AND n.privilege_type = g.privilege_type AND n.is_grantable) THEN
                CONTINUE;
            END IF;
            done := done || g.ord;
            progress := true;
            CONTINUE WHEN g.grantee = old_owner AND g.grantor = old_owner;
            CONTINUE WHEN g.grantee = 0 AND internal;
            IF g.grantor <> old_owner THEN
                PERFORM set_config('role', (SELECT r.rolname FROM pg_roles r WHERE r.oid = g.grantor), true);
            END IF;
            EXECUTE format('GRANT %s ON FUNCTION %s TO %s%s', g.privilege_type, new_fn,
                           CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END,
                           CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
            PERFORM set_config('role', saved, true);
        END LOOP;
    END LOOP;
    IF EXISTS (SELECT 1 FROM pg_proc p, aclexplode(p.proacl) WITH ORDINALITY e(grantor, grantee, privilege_type, is_grantable, ord)
                WHERE p.oid = old_fn AND e.ord <> ALL (done)) THEN
        RAISE EXCEPTION 'cannot carry every grant of % onto %', old_fn, new_fn
            USING ERRCODE = 'internal_error', DETAIL = format('ACL: %s', (SELECT p.proacl FROM pg_proc p WHERE p.oid = old_fn));
    END IF;
    EXECUTE format('DROP FUNCTION %s', old_fn);
END $$;

------------------------------------------------------------------------------------------
-- Catalog
------------------------------------------------------------------------------------------

-- future_limit (SPEC 10): records dated further ahead of the server clock are dead letters.
-- Sources declared under 0.1 get the new default too: a broken producer clock must not close
-- every window of a running pipeline.
ALTER TABLE stoatflow.source ADD COLUMN future_limit_ms bigint;
UPDATE stoatflow.source SET future_limit_ms = 86400000;
-- kafka_options with secrets masked, written when the source is declared: the views read this
-- column and need no function a reader would have to be allowed to execute.
ALTER TABLE stoatflow.source ADD COLUMN kafka_options_masked jsonb;
-- A row type per source (SPEC 11): the declared columns as [{"name", "type", "path"}], types
-- as format_type() gave them at declaration (schema-qualified outside pg_catalog); NULL: 0.1's
-- field paths. format_options (SPEC 12) as given.
ALTER TABLE stoatflow.source ADD COLUMN columns jsonb;
ALTER TABLE stoatflow.source ADD COLUMN format_options jsonb NOT NULL DEFAULT '{}';

-- The sink's name, to find it again once it was dropped and created anew (the id changes).
ALTER TABLE stoatflow.aggregation ADD COLUMN sink_schema text, ADD COLUMN sink_table text;

-- Expressive aggregations (SPEC 11): group_by and filter as declared; `executor` marks an
-- aggregation run by PostgreSQL's executor (expressions, PostgreSQL aggregates) rather than the
-- built-in fast path; records its filter skipped are counted in `filtered`.
ALTER TABLE stoatflow.aggregation ADD COLUMN group_by text, ADD COLUMN filter text,
    ADD COLUMN executor boolean NOT NULL DEFAULT false;
ALTER TABLE stoatflow.aggregation_progress ADD COLUMN filtered bigint NOT NULL DEFAULT 0;
UPDATE stoatflow.aggregation a SET sink_schema = n.nspname, sink_table = c.relname
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.oid = a.sink;

-- Segment tables by id: stoatflow.stats sizes them with pg_total_relation_size(relid), which is
-- NULL for a segment dropped meanwhile instead of an error, and needs no schema privilege.
ALTER TABLE stoatflow.segment ADD COLUMN relid oid;
UPDATE stoatflow.segment SET relid = pg_catalog.to_regclass('stoatflow_state.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(relname));

-- Windows a failing sink is owed (SPEC 10 isolation): the newest operation per window, written
-- in the same transaction as the aggregation's state, drained into the sink once it takes rows.
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
ALTER TABLE stoatflow.aggregation_progress ADD COLUMN sink_owed bigint NOT NULL DEFAULT 0;
-- The aggregation's own state as its worker last wrote it: running, error (its sink fails) or
-- stalled (its code ran past stoatflow.user_code_timeout and rests); NULL before the first commit.
ALTER TABLE stoatflow.aggregation_progress ADD COLUMN status text;

-- Offsets the topic's retention deleted before the source read them, per partition: skipped,
-- counted here and listed in dead_letters (reason 'offsets_skipped'), in the commit that moves
-- past them.
ALTER TABLE stoatflow.partition_offset ADD COLUMN offsets_skipped bigint NOT NULL DEFAULT 0;

-- Several topics per source (SPEC 11): `topics` holds the names in the order declared (the
-- worker numbers them by that order, so it never changes), `topic` the list as shown (the names
-- joined by ', ', which for one topic is the name as in 0.1). Offsets, partition status and dead
-- letters name their topic; rows written by 0.1 belong to the source's one topic.
ALTER TABLE stoatflow.source ADD COLUMN topics text[];
UPDATE stoatflow.source SET topics = ARRAY[topic];
ALTER TABLE stoatflow.source ALTER COLUMN topics SET NOT NULL;
ALTER TABLE stoatflow.partition_offset ADD COLUMN topic text;
UPDATE stoatflow.partition_offset po SET topic = s.topic
  FROM stoatflow.source s WHERE s.source_id = po.source_id;
ALTER TABLE stoatflow.partition_offset ALTER COLUMN topic SET NOT NULL,
    DROP CONSTRAINT partition_offset_pkey, ADD PRIMARY KEY (source_id, topic, partition);
ALTER TABLE stoatflow.partition_status ADD COLUMN topic text;
UPDATE stoatflow.partition_status ps SET topic = s.topic
  FROM stoatflow.source s WHERE s.source_id = ps.source_id;
ALTER TABLE stoatflow.partition_status ALTER COLUMN topic SET NOT NULL,
    DROP CONSTRAINT partition_status_pkey, ADD PRIMARY KEY (source_id, topic, partition);
-- NULL only for a dead letter of a source dropped before the upgrade.
ALTER TABLE stoatflow.dead_letters ADD COLUMN topic text;
UPDATE stoatflow.dead_letters d SET topic = s.topic
  FROM stoatflow.source s WHERE s.source_name = d.source_name;

------------------------------------------------------------------------------------------
-- Helpers. Internal functions (names starting with "_") are not executable by PUBLIC; the
-- functions that need the extension owner's rights are SECURITY DEFINER with a pinned
-- search_path; every stoatflow C function refuses to run inside a security-restricted
-- operation (code the worker runs as an aggregation's owner).
------------------------------------------------------------------------------------------

-- The one secret rule lives in C++ (stoatflow::kafka::is_secret_option).
CREATE OR REPLACE FUNCTION stoatflow._is_secret_option(name text)
RETURNS boolean LANGUAGE C IMMUTABLE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__is_secret_option';

UPDATE stoatflow.source SET kafka_options_masked = stoatflow._mask_options(kafka_options);
ALTER TABLE stoatflow.source ALTER COLUMN kafka_options_masked SET NOT NULL;

-- Rules owned by C++ that the declarations ask instead of repeating: the sink's shape (the
-- columns the worker writes), a field path, and the names of window kinds and emit strategies.
CREATE FUNCTION stoatflow._sink_columns(aggregates text,
    OUT column_name text, OUT column_type text, OUT definition text)
RETURNS SETOF record LANGUAGE C STABLE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__sink_columns';
-- Declaration-time analysis (SPEC 11): key, event_time, group_by, filter and the aggregate list
-- parsed and analyzed by PostgreSQL against a source's row (columns as stored in
-- stoatflow.source.columns, plus the metadata columns), names looked up under
-- search_path = pg_catalog, pg_temp; one row per expression and per aggregate call.
CREATE FUNCTION stoatflow._analyze(columns jsonb, window_kind text, key text, event_time text,
    group_by text, filter text, aggregates text,
    OUT role text, OUT ordinal integer, OUT name text, OUT type text, OUT detail jsonb,
    OUT tree text)
RETURNS SETOF record LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__analyze';
-- An existing sink judged at declaration by the rule every write applies (check_sink_shape).
CREATE FUNCTION stoatflow._check_sink(sink oid, sink_name text, column_names text[],
    column_types text[], key_columns text[])
RETURNS void LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'stoatflow__check_sink';
-- The texts a declaration stores: analyzed with names resolved along search_path (the caller's,
-- _caller_lookup_path), written back with every name outside pg_catalog schema-qualified, and
-- checked to analyze to the same objects under the pinned path the worker uses.
CREATE FUNCTION stoatflow._stored_texts(columns jsonb, window_kind text, key text,
    event_time text, group_by text, filter text, aggregates text, search_path text,
    OUT key text, OUT event_time text, OUT group_by text, OUT filter text, OUT aggregates text)
RETURNS record LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__stored_texts';
CREATE FUNCTION stoatflow._check_field_path(what text, path text)
RETURNS void LANGUAGE C IMMUTABLE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__check_field_path';
CREATE FUNCTION stoatflow._check_names(window_kind text, emit text)
RETURNS void LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow__check_names';

-- create_source's topic list, split and checked by the one rule (kafka::parse_topic_list).
CREATE FUNCTION stoatflow._parse_topics(topic text)
RETURNS text[] LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow__parse_topics';

-- The schemas of the caller's search_path (for create_aggregation, which pins its own).
CREATE FUNCTION stoatflow._caller_search_path()
RETURNS text[] LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'stoatflow__caller_search_path';
-- The caller's search_path as a value for name lookup: "$user" resolved to the caller, schemas
-- the caller may not use left out, pg_catalog where the caller has it.
CREATE FUNCTION stoatflow._caller_lookup_path()
RETURNS text LANGUAGE C STABLE
AS 'MODULE_PATHNAME', 'stoatflow__caller_lookup_path';

-- Window definitions are built and validated in C++ (no helper a caller would need).
CREATE OR REPLACE FUNCTION stoatflow.tumbling(size interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow_tumbling';
CREATE OR REPLACE FUNCTION stoatflow.hopping(size interval, advance interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow_hopping';
CREATE OR REPLACE FUNCTION stoatflow.sliding(time_difference interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow_sliding';
CREATE OR REPLACE FUNCTION stoatflow.session(inactivity_gap interval, grace interval DEFAULT '0')
RETURNS stoatflow."window" LANGUAGE C IMMUTABLE
AS 'MODULE_PATHNAME', 'stoatflow_session';
DROP FUNCTION stoatflow._make_window(text, interval, interval, interval);
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

-- The column list (SPEC 11): split in C++, types resolved by PostgreSQL's type-name parser along
-- the caller's search_path (42601 syntax, 42704 unknown type, 42701 duplicate name).
CREATE FUNCTION stoatflow._parse_columns(columns text)
RETURNS jsonb LANGUAGE C STABLE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__parse_columns';

-- The type under a domain (under every level of domains).
CREATE FUNCTION stoatflow._base_type(t regtype)
RETURNS regtype LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp AS $$
    WITH RECURSIVE b(oid, base) AS (
        SELECT p.oid, p.typbasetype FROM pg_type p WHERE p.oid = t
        UNION ALL
        SELECT p.oid, p.typbasetype FROM pg_type p JOIN b ON p.oid = b.base WHERE b.base <> 0)
    SELECT oid::regtype FROM b WHERE base = 0 $$;

-- With columns, key and event_time name a column of the row type (declared or metadata);
-- event_time's must be timestamptz, or bigint/integer epoch milliseconds.
-- With columns, a source's key and event_time name a column or are an expression over the
-- row (SPEC 11): as the worker will read them (a column's name quoted; NULL: the metadata one).
CREATE FUNCTION stoatflow._row_expr(cols jsonb, name text, dflt text)
RETURNS text LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN name IS NULL THEN dflt
                WHEN name IN (SELECT c->>'name' FROM jsonb_array_elements(cols) c)
                  OR name IN ('kafka_key', 'kafka_topic', 'kafka_partition', 'kafka_offset',
                              'kafka_timestamp', 'kafka_headers') THEN quote_ident(name)
                ELSE name END
$$;

-- Returns the key or event_time as stored: a column's name as given, an expression with its
-- names qualified (resolved along caller_path, _stored_texts).
CREATE FUNCTION stoatflow._check_row_column(cols jsonb, what text, name text, is_time boolean,
    caller_path text)
RETURNS text LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    typ text;
    st  record;
BEGIN
    IF name IS NULL THEN
        RETURN NULL;
    END IF;
    SELECT c->>'type' INTO typ FROM jsonb_array_elements(cols) c WHERE c->>'name' = name;
    IF typ IS NULL THEN
        typ := CASE name WHEN 'kafka_key' THEN 'text' WHEN 'kafka_topic' THEN 'text'
                         WHEN 'kafka_partition' THEN 'integer' WHEN 'kafka_offset' THEN 'bigint'
                         WHEN 'kafka_timestamp' THEN 'timestamp with time zone'
                         WHEN 'kafka_headers' THEN 'jsonb' END;
    END IF;
    IF typ IS NULL THEN
        -- not a column: an expression over the row, analyzed as the worker will run it (errors
        -- with positions; an event time must be timestamptz or a number of epoch milliseconds)
        SELECT * INTO st FROM stoatflow._stored_texts(cols, 'tumbling',
            CASE WHEN NOT is_time THEN name END, CASE WHEN is_time THEN name END, NULL, NULL,
            'count(*)', caller_path);
        RETURN CASE WHEN is_time THEN st.event_time ELSE st.key END;
    END IF;
    IF is_time AND typ NOT IN ('timestamp with time zone', 'bigint', 'integer') THEN
        RAISE EXCEPTION 'event_time: column "%" is of type %', name, typ
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'The event time column must be timestamptz, or bigint/integer epoch milliseconds.';
    END IF;
    IF NOT is_time AND typ IN ('jsonb', 'json') THEN
        RAISE EXCEPTION 'key: column "%" is of type %', name, typ
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'A key is a scalar column: text, a number, a time ...';
    END IF;
    RETURN name;
END $$;

-- (Replaces 0.1's create_source, its grants carried: _upgrade_replace at the end.)
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
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    caller   regrole := stoatflow._invoking_role();
    ooo_ms   bigint := stoatflow._interval_ms(max_out_of_orderness, 'max_out_of_orderness');
    idle_ms  bigint := stoatflow._interval_ms(idle_timeout, 'idle_timeout');
    fut_ms   bigint := stoatflow._interval_ms(future_limit, 'future_limit');
    cols     jsonb;
    topic_names text[];
    lookup   text := stoatflow._caller_lookup_path();
BEGIN
    PERFORM stoatflow._check_name('source', source_name);
    IF EXISTS (SELECT 1 FROM stoatflow.source s WHERE s.source_name = create_source.source_name) THEN
        RAISE EXCEPTION 'source "%" already exists', source_name
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Choose another name, or drop it first with stoatflow.drop_source().';
    END IF;
    -- 'web_activity, purchases': one source, one watermark over all their partitions
    topic_names := stoatflow._parse_topics(topic);
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
    IF fut_ms IS NOT NULL AND fut_ms < 0 THEN
        RAISE EXCEPTION 'future_limit must be zero or positive (or NULL for no check)'
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
    IF format_options IS NULL OR jsonb_typeof(format_options) <> 'object' THEN
        RAISE EXCEPTION 'format_options must be a JSON object'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF format_options <> '{}' THEN
        RAISE EXCEPTION 'unknown format option "%" for format %',
            (SELECT min(k) FROM jsonb_object_keys(format_options) k), format
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Format ''json'' takes no options: pass ''{}''.';
    END IF;
    IF columns IS NOT NULL THEN
        -- key and event_time name columns (declared or metadata) of the row type, or are
        -- expressions over it.
        cols := stoatflow._parse_columns(columns);
        -- stored as resolved along the caller's search_path (expressions qualified)
        key := stoatflow._check_row_column(cols, 'key', key, false, lookup);
        event_time := stoatflow._check_row_column(cols, 'event_time', event_time, true, lookup);
    ELSE
        IF key IS NOT NULL THEN
            PERFORM stoatflow._check_field_path('key', key);
        END IF;
        IF event_time IS NOT NULL THEN
            PERFORM stoatflow._check_field_path('event_time', event_time);
        END IF;
    END IF;

    PERFORM stoatflow._wake_launcher();
    INSERT INTO stoatflow.source (source_name, topic, brokers, format, key_path, event_time_path,
        max_out_of_orderness_ms, idle_timeout_ms, start_offset, kafka_options, created_by,
        future_limit_ms, kafka_options_masked, columns, format_options, topics)
    VALUES (source_name, array_to_string(topic_names, ', '), brokers, format, key, event_time,
        ooo_ms, idle_ms, start_offset, kafka_options, caller, fut_ms,
        stoatflow._mask_options(kafka_options), cols, format_options, topic_names);
    PERFORM stoatflow._create_source_view(source_name, caller);
END $$;

-- Dropping a source is for superusers and the role that created it; with cascade, the caller
-- must also own every aggregation it would drop (as drop_aggregation requires), and views
-- others built on the source's view in stoatflow_source go too (as DROP VIEW ... CASCADE).
CREATE OR REPLACE FUNCTION stoatflow.drop_source(source_name text, "cascade" boolean DEFAULT false)
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

-- SECURITY DEFINER with a pinned path; an unqualified sink name still means what it means to
-- the caller: it is looked up along the caller's search_path (_caller_search_path).
-- (Replaces 0.1's create_aggregation, its grants carried: _upgrade_replace at the end.)
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
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    path   text[] := stoatflow._caller_search_path();
    lookup text := stoatflow._caller_lookup_path();
    parts  text[];
    sch    text;
    s      text;
BEGIN
    IF sink IS NULL OR sink = '' THEN
        RAISE EXCEPTION 'sink must name a table' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    parts := parse_ident(sink);
    IF array_length(parts, 1) > 2 THEN
        RAISE EXCEPTION 'sink "%" has too many dotted names', sink
            USING ERRCODE = 'invalid_name', HINT = 'Use table or schema.table.';
    END IF;
    IF array_length(parts, 1) = 2 THEN
        sch := parts[1];
    ELSE
        FOREACH s IN ARRAY path LOOP
            IF to_regclass(format('%I.%I', s, parts[1])) IS NOT NULL THEN
                sch := s;
                EXIT;
            END IF;
        END LOOP;
        sch := coalesce(sch, path[1]);
        IF sch IS NULL THEN
            RAISE EXCEPTION 'no schema has been selected to create the sink "%" in', sink
                USING ERRCODE = 'invalid_schema_name', HINT = 'Schema-qualify the sink name.';
        END IF;
    END IF;
    PERFORM stoatflow._create_aggregation(aggregation_name, source, "window", aggregates, sch,
        parts[array_length(parts, 1)], emit, retention, group_by, filter, lookup);
END $$;

-- An aggregation's sink columns: 0.1's (the built-in fast path), or, run by the executor, the
-- analysis's (SPEC 11): the key columns (group_by's items, or `key`: the source's key), the
-- window, the aggregate items, event_time and final.
CREATE FUNCTION stoatflow._sink_columns_of(src_id integer, window_kind text, aggregates text,
    group_by text, filter text, exec boolean,
    OUT column_name text, OUT column_type text, OUT definition text, OUT is_key boolean)
RETURNS SETOF record LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    src record;
BEGIN
    IF NOT exec THEN
        RETURN QUERY SELECT c.column_name, c.column_type, c.definition, c.column_name = 'key'
                       FROM stoatflow._sink_columns(aggregates) c;
        RETURN;
    END IF;
    SELECT s.columns, s.key_path, s.event_time_path INTO src FROM stoatflow.source s WHERE s.source_id = src_id;
    RETURN QUERY
    WITH a AS (
        SELECT * FROM stoatflow._analyze(src.columns, window_kind,
            CASE WHEN group_by IS NULL THEN stoatflow._row_expr(src.columns, src.key_path, 'kafka_key') END,
            stoatflow._row_expr(src.columns, src.event_time_path, 'kafka_timestamp'), group_by, filter, aggregates))
    SELECT x.n, x.t, x.d, x.k FROM (
        SELECT 1 AS part, a.ordinal, CASE a.role WHEN 'key' THEN 'key' ELSE a.name END AS n, a.type AS t,
               a.type || ' NOT NULL' AS d, true AS k
          FROM a WHERE a.role = CASE WHEN group_by IS NULL THEN 'key' ELSE 'group_by' END
        UNION ALL SELECT 2, 1, 'window_start', 'timestamp with time zone', 'timestamp with time zone NOT NULL', false
        UNION ALL SELECT 2, 2, 'window_end', 'timestamp with time zone', 'timestamp with time zone NOT NULL', false
        UNION ALL SELECT 3, a.ordinal, a.name, a.type, a.type, false FROM a WHERE a.role = 'aggregate'
        UNION ALL SELECT 4, 1, 'event_time', 'timestamp with time zone', 'timestamp with time zone NOT NULL', false
        UNION ALL SELECT 4, 2, 'final', 'boolean', 'boolean NOT NULL DEFAULT false', false
    ) x ORDER BY x.part, x.ordinal;
END $$;

-- Aggregating a source reads its records: the caller must own the source (be a member of the
-- role that created it; superusers are) or hold SELECT on its view stoatflow_source.<source>
-- (README "Security"). Checked here, when the aggregation is declared.
CREATE FUNCTION stoatflow._create_aggregation(
    aggregation_name text, source text, win stoatflow."window", aggregates text,
    sink_schema text, sink_table text, emit text, retention interval,
    group_by text DEFAULT NULL, filter text DEFAULT NULL, caller_path text DEFAULT NULL)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    owner_role  regrole := stoatflow._invoking_role();
    st          record;
    src_id      integer;
    src_owner   regrole;
    src_view    regclass;
    size_ms     bigint;
    advance_ms  bigint;
    grace_ms    bigint;
    chk         record;
    fns text[]; fields text[]; cols text[];
    sink_oid    oid;
    sink_name   text := format('%I.%I', sink_schema, sink_table);
    used_by     text;
    coldefs     text;
    has_columns boolean;
    exec        boolean := group_by IS NOT NULL OR filter IS NOT NULL;
    key_cols    text[];
    sink_names  text[]; sink_types text[]; sink_defs text[];
BEGIN
    PERFORM stoatflow._check_name('aggregation', aggregation_name);
    -- PostgreSQL would truncate longer names, and two sinks could become one (SPEC 10).
    IF octet_length(sink_schema) > 63 OR octet_length(sink_table) > 63 THEN
        RAISE EXCEPTION 'sink name "%" is too long', sink_name
            USING ERRCODE = 'name_too_long',
                  HINT = 'Schema and table names may have at most 63 bytes; PostgreSQL would truncate them.';
    END IF;
    IF EXISTS (SELECT 1 FROM stoatflow.aggregation a WHERE a.aggregation_name = _create_aggregation.aggregation_name) THEN
        RAISE EXCEPTION 'aggregation "%" already exists', aggregation_name
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Choose another name, or drop it first with stoatflow.drop_aggregation().';
    END IF;
    SELECT s.source_id, s.created_by INTO src_id, src_owner FROM stoatflow.source s WHERE s.source_name = source;
    IF src_id IS NULL THEN
        RAISE EXCEPTION 'source "%" does not exist', source
            USING ERRCODE = 'undefined_object', HINT = 'Create it with stoatflow.create_source().';
    END IF;
    src_view := to_regclass(format('stoatflow_source.%I', source));
    IF NOT pg_has_role(owner_role, src_owner, 'MEMBER')
       AND NOT (src_view IS NOT NULL AND has_table_privilege(owner_role, src_view, 'SELECT')) THEN
        RAISE EXCEPTION 'permission denied to aggregate source "%"', source
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('The owner of source "%s" (%s) can allow it: GRANT USAGE ON SCHEMA stoatflow_source TO %s; '
                                'GRANT SELECT ON stoatflow_source.%I TO %s;',
                                source, src_owner, owner_role, source, owner_role);
    END IF;
    IF win IS NULL OR win.kind IS NULL THEN
        RAISE EXCEPTION 'window must not be NULL'
            USING ERRCODE = 'null_value_not_allowed',
                  HINT = 'Use stoatflow.tumbling(), hopping(), sliding() or session().';
    END IF;
    PERFORM stoatflow._check_names(win.kind, emit);
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
    SELECT s.columns IS NOT NULL INTO has_columns FROM stoatflow.source s WHERE s.source_id = src_id;
    IF exec AND NOT has_columns THEN
        RAISE EXCEPTION 'group_by and filter need a source with columns'
            USING ERRCODE = 'feature_not_supported',
                  HINT = format('Declare source "%s" with columns => ''name type, ...'' to use expressions.', source);
    END IF;
    -- The built-in fast path takes a 0.1 list (count/sum/min/max/avg over number columns); with
    -- columns, anything else is PostgreSQL's (SPEC 11).
    IF NOT exec THEN
        BEGIN
            SELECT array_agg(p.fn), array_agg(p.field), array_agg(p.column_name)
              INTO fns, fields, cols FROM stoatflow._parse_aggregates(aggregates) p;
        EXCEPTION WHEN syntax_error OR invalid_parameter_value OR feature_not_supported
                    OR undefined_function OR name_too_long THEN
            IF NOT has_columns THEN
                RAISE;
            END IF;
            exec := true;
        END;
    END IF;
    -- With columns, a fast-path aggregate reads a column of a number type (declared or metadata).
    IF has_columns AND NOT exec THEN
        SELECT f INTO used_by FROM unnest(fields) f
         WHERE f <> ''
           AND coalesce((SELECT stoatflow._base_type((c->>'type')::regtype)
                           FROM stoatflow.source s, jsonb_array_elements(s.columns) c
                          WHERE s.source_id = src_id AND c->>'name' = f),
                        CASE f WHEN 'kafka_partition' THEN 'int4'::regtype WHEN 'kafka_offset' THEN 'int8'::regtype END,
                        'void'::regtype)
               <> ALL ('{int2,int4,int8,numeric,float4,float8}'::regtype[])
         LIMIT 1;
        exec := used_by IS NOT NULL;
        used_by := NULL;
    END IF;
    IF exec THEN
        fns := '{}'; fields := '{}'; cols := '{}';
        -- Names resolved along the caller's search_path, as a view's; stored qualified, so the
        -- worker (pinned path) resolves the same objects. Everything below uses the stored texts.
        SELECT q.group_by, q.filter, q.aggregates INTO st
          FROM stoatflow._stored_texts((SELECT s.columns FROM stoatflow.source s
                                         WHERE s.source_id = src_id),
                   win.kind, NULL, NULL, group_by, filter, aggregates, caller_path) q;
    ELSE
        SELECT group_by, filter, aggregates INTO st;
    END IF;
    SELECT array_agg(c.column_name ORDER BY c.ord), array_agg(c.column_type ORDER BY c.ord),
           array_agg(c.definition ORDER BY c.ord), array_agg(c.column_name ORDER BY c.ord) FILTER (WHERE c.is_key)
      INTO sink_names, sink_types, sink_defs, key_cols
      FROM stoatflow._sink_columns_of(src_id, win.kind, st.aggregates, st.group_by, st.filter, exec)
           WITH ORDINALITY c(column_name, column_type, definition, is_key, ord);

    -- The sink: an existing table must be writable by the owner and have the right shape;
    -- a new one is created in a schema where the owner may create tables.
    sink_oid := to_regclass(sink_name);
    IF sink_oid IS NOT NULL THEN
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
        -- Its shape, by the rule every write checks first (C++: check_sink_shape).
        PERFORM stoatflow._check_sink(sink_oid, sink_name, sink_names, sink_types, key_cols);
    ELSE
        IF NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = sink_schema) THEN
            RAISE EXCEPTION 'schema "%" does not exist', sink_schema USING ERRCODE = 'invalid_schema_name',
                HINT = 'create_aggregation creates a missing sink table, never a schema: CREATE SCHEMA first.';
        END IF;
        IF NOT has_schema_privilege(owner_role, sink_schema, 'CREATE') THEN
            RAISE EXCEPTION 'permission denied to create sink table % in schema %', sink_name, sink_schema
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        SELECT string_agg(format('%I %s, ', c.name, c.def), '' ORDER BY c.ord)
          INTO coldefs FROM unnest(sink_names, sink_defs) WITH ORDINALITY c(name, def, ord);
        EXECUTE format('CREATE TABLE %s (%s PRIMARY KEY (%s)) '
                       -- room on each page, so rewriting a window is a HOT update (no index entry)
                       'WITH (fillfactor = 70)',
                       sink_name, coldefs,
                       (SELECT string_agg(format('%I', k), ', ') FROM unnest(key_cols || 'window_start'::text) k));
        EXECUTE format('ALTER TABLE %s OWNER TO %s', sink_name, owner_role);
        sink_oid := to_regclass(sink_name);
        EXECUTE format('COMMENT ON TABLE %s IS %L', sink_name,
            format('stoatflow sink of aggregation %s: %s over %s%s%s', aggregation_name, aggregates, source,
                   ' grouped by ' || group_by, ' where ' || filter));
    END IF;

    INSERT INTO stoatflow.aggregation (aggregation_name, source_id, kind, size_ms, advance_ms,
        grace_ms, aggregates, agg_functions, agg_fields, agg_columns, sink, emit, retention_ms,
        segment_interval_ms, owner, sink_schema, sink_table, group_by, filter, executor)
    VALUES (aggregation_name, src_id, win.kind, size_ms, advance_ms, grace_ms, st.aggregates, fns,
        fields, cols, sink_oid, emit, chk.retention_ms, chk.segment_interval_ms, owner_role,
        sink_schema, sink_table, st.group_by, st.filter, exec);
    INSERT INTO stoatflow.aggregation_progress (aggregation_id)
    SELECT a.aggregation_id FROM stoatflow.aggregation a WHERE a.aggregation_name = _create_aggregation.aggregation_name;
END $$;

-- Cancels what a source's worker runs now (an owner's code that loops cannot hold a drop up).
CREATE FUNCTION stoatflow._interrupt_source_worker(source_name text)
RETURNS void LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__interrupt_source_worker';
REVOKE ALL ON FUNCTION stoatflow._interrupt_source_worker(text) FROM PUBLIC;

-- drop_aggregation checks the caller first (and so refuses inside a security-restricted
-- operation before it touches anything).
CREATE OR REPLACE FUNCTION stoatflow.drop_aggregation(aggregation_name text, drop_sink boolean DEFAULT false)
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

-- Rewrites the sink from the state tables (SPEC 10): every window still within retention.
CREATE FUNCTION stoatflow.resync_sink(aggregation_name text)
RETURNS bigint LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_resync_sink';
COMMENT ON FUNCTION stoatflow.resync_sink(text) IS
    'Rewrites every window still within retention from the state tables into the sink; returns the rows written.';

-- The C functions that read catalog tables as the extension owner pin their path too.
ALTER FUNCTION stoatflow.wait_caught_up(text, interval) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION stoatflow.window_state(text, anyelement) SET search_path = pg_catalog, pg_temp;

-- process_records: callable by those it is granted to (superusers by default), through the
-- internal _process_messages, which PUBLIC cannot execute. A record's optional "topic" names
-- one of the source's topics (default: its first).
-- (Replaces 0.1's _process_messages: _upgrade_replace at the end.)
CREATE FUNCTION stoatflow._process_messages(source text, topics text[], partitions integer[],
    keys text[], timestamps bigint[], payloads text[],
    OUT processed bigint, OUT dead_letters bigint, OUT watermark timestamptz)
RETURNS record LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__process_messages';
CREATE OR REPLACE FUNCTION stoatflow.process_records(source text, records jsonb,
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

DROP VIEW stoatflow.sources;
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

DROP VIEW stoatflow.stats;
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
-- a later script that replaces that view must re-create them (_create_source_view), and DROP
-- EXTENSION needs CASCADE while sources exist.
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
-- Sources declared under 0.1. Created by this script, the views would be members of the
-- extension: they are not (create_source makes them at run time, drop_source drops them).
DO $$
DECLARE
    src record;
BEGIN
    FOR src IN SELECT s.source_name, s.created_by FROM stoatflow.source s ORDER BY s.source_id LOOP
        PERFORM stoatflow._create_source_view(src.source_name, src.created_by);
        EXECUTE format('ALTER EXTENSION stoatflow DROP VIEW stoatflow_source.%I', src.source_name);
    END LOOP;
END $$;

------------------------------------------------------------------------------------------
-- Privileges: nothing internal is executable by PUBLIC.
------------------------------------------------------------------------------------------
REVOKE ALL ON FUNCTION stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb, text, jsonb, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._parse_columns(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._base_type(regtype) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._check_row_column(jsonb, text, text, boolean, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._row_expr(jsonb, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._sink_columns_of(integer, text, text, text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow.resync_sink(text) FROM PUBLIC;
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
REVOKE ALL ON FUNCTION stoatflow._create_aggregation(text, text, stoatflow."window", text, text, text, text, interval, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._caller_search_path() FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._caller_lookup_path() FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._stored_texts(jsonb, text, text, text, text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._sink_columns(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._check_field_path(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._check_sink(oid, text, text[], text[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._check_names(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._parse_topics(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._process_messages(text, text[], integer[], text[], bigint[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._create_source_view(text, regrole) FROM PUBLIC;

-- The 0.1 functions replaced by new signatures: their grants carried, then dropped (0.1's
-- internal _make_window has no successor; it was dropped above).
SELECT stoatflow._upgrade_replace(o::regprocedure, n::regprocedure) FROM (VALUES
    ('stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb)',
     'stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb, text, jsonb, interval)'),
    ('stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval)',
     'stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval, text, text)'),
    ('stoatflow._create_aggregation(text, text, stoatflow."window", text, text, text, text, interval)',
     'stoatflow._create_aggregation(text, text, stoatflow."window", text, text, text, text, interval, text, text, text)'),
    ('stoatflow._process_messages(text, integer[], text[], bigint[], text[])',
     'stoatflow._process_messages(text, text[], integer[], text[], bigint[], text[])')) f(o, n);
DROP FUNCTION stoatflow._upgrade_replace(regprocedure, regprocedure);

------------------------------------------------------------------------------------------
-- TESTING TOOLS ONLY (superusers): the row type's conversion lanes from SQL (sql/row_type.sql).
------------------------------------------------------------------------------------------

-- The C++ fast lane's value of a JSON value for a column type (as the type's output shows it),
-- NULL when the lane leaves it to PostgreSQL, '<NULL>' for SQL NULL.
CREATE FUNCTION stoatflow._test_fast_convert(type text, json text)
RETURNS text LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__test_fast_convert';
-- The PostgreSQL lane's value (SPEC 14's rules through the type's input function); raises
-- PostgreSQL's error for a value that does not convert.
CREATE FUNCTION stoatflow._test_convert(type text, json text)
RETURNS text LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__test_convert';
-- Payloads decoded as a worker would (extract, metadata, one conversion batch): per payload
-- the row as {"column": text} or {"dead_letter": reason, "detail": ...}.
CREATE FUNCTION stoatflow._test_decode(columns text, payloads text[], keys text[] DEFAULT NULL)
RETURNS jsonb[] LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__test_decode';
-- An aggregation's executor over payloads (SPEC 11): per key, the states folded in two halves
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
REVOKE ALL ON FUNCTION stoatflow._analyze(jsonb, text, text, text, text, text, text) FROM PUBLIC;
