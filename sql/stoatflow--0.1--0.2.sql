-- stoatflow 0.1 -> 0.2 (ALTER EXTENSION stoatflow UPDATE). Released with 0.2.0, like 0.1's script
-- and stoatflow--0.2.sql: never edited again; later changes go into stoatflow--0.2--0.3.sql.
-- It builds the objects stoatflow--0.2.sql creates (test/upgrade/run.sh and the install_script
-- test compare the two catalogs).
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

-- future_limit (README "Security"): records dated further ahead of the server clock are dead letters.
-- Sources declared under 0.1 get the new default too: a broken producer clock must not close
-- every window of a running pipeline.
ALTER TABLE stoatflow.source ADD COLUMN future_limit_ms bigint;
UPDATE stoatflow.source SET future_limit_ms = 86400000;
-- kafka_options with secrets masked, written when the source is declared: the views read this
-- column and need no function a reader would have to be allowed to execute.
ALTER TABLE stoatflow.source ADD COLUMN kafka_options_masked jsonb;
-- A row type per source (README "Expressions and PostgreSQL aggregates"): the declared columns as [{"name", "type", "path"}], types
-- as format_type() gave them at declaration (schema-qualified outside pg_catalog); NULL: 0.1's
-- field paths. format_options (README "SQL reference") as given.
ALTER TABLE stoatflow.source ADD COLUMN columns jsonb;
ALTER TABLE stoatflow.source ADD COLUMN format_options jsonb NOT NULL DEFAULT '{}';

-- The sink's name, to find it again once it was dropped and created anew (the id changes).
ALTER TABLE stoatflow.aggregation ADD COLUMN sink_schema text, ADD COLUMN sink_table text;

-- Expressive aggregations (README "Expressions and PostgreSQL aggregates"): group_by and filter as declared; `executor` marks an
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

-- Windows a failing sink is owed (README "Security" isolation): the newest operation per window, written
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

-- Several topics per source (README "Expressions and PostgreSQL aggregates"): `topics` holds the names in the order declared (the
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

-- Declaration-time analysis (README "Expressions and PostgreSQL aggregates"): key, event_time, group_by, filter and the aggregate list
-- parsed and analyzed by PostgreSQL against a source's row (columns as stored in
-- stoatflow.source.columns, plus the metadata columns), names looked up under
-- search_path = pg_catalog, pg_temp; one row per expression and per aggregate call.
CREATE FUNCTION stoatflow._analyze(columns jsonb, window_kind text, key text, event_time text,
    group_by text, filter text, aggregates text,
    OUT role text, OUT ordinal integer, OUT name text, OUT type text, OUT detail jsonb,
    OUT tree text)
RETURNS SETOF record LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__analyze';

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

-- Declared by C++ (src/pg/declare/create_source.cpp): its checks, the column list (types
-- resolved by PostgreSQL's type-name parser along the caller's search_path: 42601 syntax, 42704
-- unknown type, 42701 duplicate name), key and event_time (a column of the row type, declared or
-- metadata, or an expression over it), the catalog row and the source's view.
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
RETURNS void LANGUAGE C SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_create_source';

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

-- Declared by C++ (src/pg/declare/create_aggregation.cpp): its checks, the route (the built-in
-- fast path or PostgreSQL's executor), the sink (checked by the rule every write applies, or
-- created) and the catalog rows. SECURITY DEFINER with a pinned path; an unqualified sink name
-- still means what it means to the caller: it is looked up along the caller's search_path.
-- Aggregating a source reads its records: the caller must own the source (be a member of the
-- role that created it; superusers are) or hold SELECT on its view stoatflow_source.<source>
-- (README "Security").
-- (Replaces 0.1's create_aggregation, its grants carried: _upgrade_replace at the end; 0.1's
-- internal _create_aggregation has no successor.)
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
DROP FUNCTION stoatflow._create_aggregation(text, text, stoatflow."window", text, text, text, text, interval);

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

-- Rewrites the sink from the state tables (README "Security"): every window still within retention.
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
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval, text, text) FROM PUBLIC;
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
REVOKE ALL ON FUNCTION stoatflow._process_messages(text, text[], integer[], text[], bigint[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION stoatflow._create_source_view(text, regrole) FROM PUBLIC;

-- The 0.1 functions replaced by new signatures: their grants carried, then dropped (0.1's
-- internal _make_window and _create_aggregation have no successor; they were dropped above).
SELECT stoatflow._upgrade_replace(o::regprocedure, n::regprocedure) FROM (VALUES
    ('stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb)',
     'stoatflow.create_source(text, text, text, text, text, text, interval, interval, text, jsonb, text, jsonb, interval)'),
    ('stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval)',
     'stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval, text, text)'),
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
-- The PostgreSQL lane's value (the rules of README "Columns: a row type per source" through the type's input function); raises
-- PostgreSQL's error for a value that does not convert.
CREATE FUNCTION stoatflow._test_convert(type text, json text)
RETURNS text LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__test_convert';
-- Payloads decoded as a worker would (extract, metadata, one conversion batch): per payload
-- the row as {"column": text} or {"dead_letter": reason, "detail": ...}.
CREATE FUNCTION stoatflow._test_decode(columns text, payloads text[], keys text[] DEFAULT NULL)
RETURNS jsonb[] LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__test_decode';
-- An aggregation's executor over payloads (README "Expressions and PostgreSQL aggregates"): per key, the states folded in two halves
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
