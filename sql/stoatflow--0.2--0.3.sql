-- stoatflow 0.2 -> 0.3 (ALTER EXTENSION stoatflow UPDATE). Until 0.3 is released this is also how
-- a fresh CREATE EXTENSION reaches 0.3: PostgreSQL runs the frozen stoatflow--0.2.sql, then this
-- script, so the two install paths cannot drift (README "Upgrading"). At the 0.3 release the
-- definitions are written out into stoatflow--0.3.sql and this script is frozen like the others.
\echo Use "ALTER EXTENSION stoatflow UPDATE" to load this file. \quit

------------------------------------------------------------------------------------------
-- Upgrade helper (dropped at the end of this script), as in 0.1 -> 0.2: a function whose
-- signature changes is created anew beside the 0.2 one; _upgrade_replace carries every grant of
-- the 0.2 function onto the new one (each grantee, WITH GRANT OPTION where it was, in the name of
-- the role that granted it) and drops the 0.2 function, so ALTER EXTENSION UPDATE keeps what an
-- administrator granted (README "Upgrading").
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
-- Start positions and backfill (README "Changing a running pipeline")
------------------------------------------------------------------------------------------
-- start_from: as declared and normalized ('earliest', 'latest' or a timestamp in UTC); NULL:
-- declared without one (README "Backfill and start_from").
ALTER TABLE stoatflow.aggregation ADD COLUMN start_from text;

-- An aggregation that starts behind its source's position backfills (README "Backfill and
-- start_from"): its own worker reads its history with its own watermark (watermark_ms,
-- watermark_state, commit_seq) and positions (backfill_offset), committed with its state; the
-- row is deleted in the transaction that joins it to the source's worker. hold_requested: the
-- backfill is close and asks the source's worker to stop at its committed positions; held: the
-- source's worker did (in a transaction that wrote nothing past them) and waits for the join.
CREATE TABLE stoatflow.backfill (
    aggregation_id  integer PRIMARY KEY REFERENCES stoatflow.aggregation ON DELETE CASCADE,
    source_id       integer NOT NULL REFERENCES stoatflow.source ON DELETE CASCADE,
    start_from      text NOT NULL,          -- 'earliest', 'latest' or a timestamp
    watermark_ms    bigint,
    watermark_state text,
    commit_seq      bigint NOT NULL DEFAULT 0,
    committed_at    timestamptz,
    hold_requested  boolean NOT NULL DEFAULT false,
    held            boolean NOT NULL DEFAULT false
);
CREATE TABLE stoatflow.backfill_offset (
    aggregation_id integer NOT NULL REFERENCES stoatflow.backfill ON DELETE CASCADE,
    topic          text NOT NULL,
    partition      integer NOT NULL,
    next_offset    bigint NOT NULL,
    PRIMARY KEY (aggregation_id, topic, partition)
);
REVOKE ALL ON stoatflow.backfill, stoatflow.backfill_offset FROM PUBLIC;
GRANT SELECT ON stoatflow.backfill, stoatflow.backfill_offset TO PUBLIC;

-- create_aggregation gains start_from (0.2's grants carried by _upgrade_replace).
CREATE FUNCTION stoatflow.create_aggregation(
    aggregation_name text,
    source           text,
    "window"         stoatflow."window",
    aggregates       text,
    sink             text,
    emit             text     DEFAULT 'on_window_update',
    retention        interval DEFAULT NULL,
    group_by         text     DEFAULT NULL,
    filter           text     DEFAULT NULL,
    start_from       text     DEFAULT NULL)
RETURNS void LANGUAGE C SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_create_aggregation';
REVOKE ALL ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval, text, text, text) FROM PUBLIC;
SELECT stoatflow._upgrade_replace(
    'stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval, text, text)'::regprocedure,
    'stoatflow.create_aggregation(text, text, stoatflow."window", text, text, text, interval, text, text, text)'::regprocedure);

-- stats: a backfilling aggregation shows status 'backfilling' (unless it is in error or
-- stalled) and its own watermark.
CREATE OR REPLACE VIEW stoatflow.stats AS
SELECT a.aggregation_name, s.source_name, a.kind AS window_kind, a.emit, a.sink,
       p.records_in,
       p.dropped_late_window, p.dropped_late_session,
       p.dropped_late_window + p.dropped_late_session AS dropped_late,
       (SELECT count(*) FROM stoatflow.dead_letters d WHERE d.source_name = s.source_name) AS dead_letters,
       p.open_windows, p.keys_with_open_windows,
       p.windows_emitted, p.windows_reemitted, p.sessions_merged,
       p.last_commit_at,
       timestamptz 'epoch' + CASE WHEN b.aggregation_id IS NULL THEN pr.watermark_ms ELSE b.watermark_ms END
           * interval '1 millisecond' AS watermark,
       timestamptz 'epoch' + p.emit_frontier_ms * interval '1 millisecond' AS emit_frontier,
       (SELECT count(*) FROM stoatflow.segment g WHERE g.aggregation_id = a.aggregation_id) AS live_segments,
       (SELECT coalesce(sum(pg_total_relation_size(g.relid)), 0)::bigint
          FROM stoatflow.segment g WHERE g.aggregation_id = a.aggregation_id) AS state_bytes,
       p.state_rows_written, p.state_bytes_written,
       p.freshness_lag_ms * interval '1 millisecond' AS freshness_lag,
       p.last_error,
       CASE WHEN b.aggregation_id IS NOT NULL AND coalesce(p.status, 'running') NOT IN ('error', 'stalled')
            THEN 'backfilling'
            ELSE coalesce(p.status, CASE WHEN p.last_error IS NULL THEN 'running' ELSE 'error' END) END AS status,
       p.sink_owed, p.filtered
  FROM stoatflow.aggregation a
  JOIN stoatflow.source s ON s.source_id = a.source_id
  LEFT JOIN stoatflow.aggregation_progress p ON p.aggregation_id = a.aggregation_id
  LEFT JOIN stoatflow.source_progress pr ON pr.source_id = a.source_id
  LEFT JOIN stoatflow.backfill b ON b.aggregation_id = a.aggregation_id;


------------------------------------------------------------------------------------------
-- Pause, resume and removal (README "Changing a running pipeline")
------------------------------------------------------------------------------------------
-- A pause is catalog state (stoatflow.source.paused), not worker memory: it survives a restart.
-- The worker sees it at its next commit (the signature of its aggregations includes it): it
-- commits what it consumed, stops consuming and shows 'paused' until resumed.
ALTER TABLE stoatflow.source ADD COLUMN paused boolean NOT NULL DEFAULT false;

-- The one owner check of a source (drop_source, pause_source, resume_source): superusers and
-- the role that created it. NULL for a source that does not exist when missing_ok (the caller
-- says so), an error otherwise.
CREATE FUNCTION stoatflow._owned_source(source_name text, action text, missing_ok boolean DEFAULT false)
RETURNS integer LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    src record;
BEGIN
    IF source_name IS NULL THEN
        RAISE EXCEPTION 'source name must not be NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s.source_id, s.created_by INTO src FROM stoatflow.source s
     WHERE s.source_name = _owned_source.source_name;
    IF src.source_id IS NULL THEN
        IF missing_ok THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'source "%" does not exist', source_name USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT pg_has_role(stoatflow._invoking_role(), src.created_by, 'MEMBER') THEN
        RAISE EXCEPTION 'must be owner of source %', source_name
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('Only superusers and the role that created a source may %s it.', action);
    END IF;
    RETURN src.source_id;
END $$;
REVOKE ALL ON FUNCTION stoatflow._owned_source(text, text, boolean) FROM PUBLIC;

-- The one owner check of an aggregation (drop_aggregation, alter_aggregation, resync_sink): the
-- caller must be a member of the owner's role (superusers are). Returns the id and locks the
-- catalog row, so an alter, a drop and a resync of the same aggregation run one after the other;
-- NULL for an aggregation that does not exist when missing_ok (the caller says so).
CREATE FUNCTION stoatflow._owned_aggregation(aggregation_name text, action text, missing_ok boolean DEFAULT false)
RETURNS integer LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    agg record;
BEGIN
    IF aggregation_name IS NULL THEN
        RAISE EXCEPTION 'aggregation name must not be NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT a.aggregation_id, a.owner INTO agg FROM stoatflow.aggregation a
     WHERE a.aggregation_name = _owned_aggregation.aggregation_name FOR UPDATE;
    IF agg.aggregation_id IS NULL THEN
        IF missing_ok THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'aggregation "%" does not exist', aggregation_name USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT pg_has_role(stoatflow._invoking_role(), agg.owner, 'MEMBER') THEN
        RAISE EXCEPTION 'must be owner of aggregation %', aggregation_name
            USING ERRCODE = 'insufficient_privilege',
                  HINT = format('Only superusers and the aggregation''s owner (or a member of its role) may %s it.', action);
    END IF;
    RETURN agg.aggregation_id;
END $$;
REVOKE ALL ON FUNCTION stoatflow._owned_aggregation(text, text, boolean) FROM PUBLIC;

CREATE FUNCTION stoatflow.pause_source(source_name text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    id integer := stoatflow._owned_source(source_name, 'pause');
BEGIN
    IF (SELECT s.paused FROM stoatflow.source s WHERE s.source_id = id) THEN
        RAISE NOTICE 'source "%" is already paused', source_name
            USING HINT = 'stoatflow.resume_source() resumes it.';
        RETURN;
    END IF;
    UPDATE stoatflow.source s SET paused = true WHERE s.source_id = id;
END $$;

CREATE FUNCTION stoatflow.resume_source(source_name text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    id integer := stoatflow._owned_source(source_name, 'resume');
BEGIN
    IF NOT (SELECT s.paused FROM stoatflow.source s WHERE s.source_id = id) THEN
        RAISE NOTICE 'source "%" is not paused', source_name;
        RETURN;
    END IF;
    UPDATE stoatflow.source s SET paused = false WHERE s.source_id = id;
END $$;
REVOKE ALL ON FUNCTION stoatflow.pause_source(text), stoatflow.resume_source(text) FROM PUBLIC;

-- What stays of a dropped aggregation: its sink (unless drop_sink), and how many of its rows are
-- not final (README "Sinks": final is true once the window closed; the others now never will).
-- Counted only in a table of the sink's shape (a sink dropped and its oid taken by something
-- else is not read).
CREATE FUNCTION stoatflow._sink_rows_not_final(sink oid)
RETURNS bigint LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    n bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
                    WHERE c.oid = sink AND c.relkind IN ('r', 'p') AND a.attname = 'final'
                      AND a.atttypid = 'boolean'::regtype AND NOT a.attisdropped) THEN
        RETURN NULL;
    END IF;
    -- A partitioned sink counts its partitions' rows; a plain table only its own.
    EXECUTE format('SELECT count(*) FROM %s %s WHERE final IS NOT TRUE',
                   CASE WHEN (SELECT c.relkind FROM pg_class c WHERE c.oid = sink) = 'r' THEN 'ONLY' ELSE '' END,
                   sink::regclass) INTO n;
    RETURN n;
END $$;
REVOKE ALL ON FUNCTION stoatflow._sink_rows_not_final(oid) FROM PUBLIC;

-- The backfill worker of a dropped aggregation is cancelled like the source's worker, so that an
-- owner's code it runs (a sink trigger that loops) cannot hold the drop up; it then leaves.
CREATE FUNCTION stoatflow._interrupt_backfill_worker(aggregation_name text)
RETURNS void LANGUAGE C VOLATILE
AS 'MODULE_PATHNAME', 'stoatflow__interrupt_backfill_worker';
REVOKE ALL ON FUNCTION stoatflow._interrupt_backfill_worker(text) FROM PUBLIC;

-- Every drop goes through here (drop_aggregation, drop_source with cascade): the backfill
-- worker of the aggregation is interrupted first.
CREATE OR REPLACE FUNCTION stoatflow._drop_aggregation_unchecked(agg_id integer, drop_sink boolean)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    seg record;
    sink_oid oid;
    agg_name text;
    sink_exists boolean;
    not_final bigint;
BEGIN
    SELECT a.sink, a.aggregation_name INTO sink_oid, agg_name
      FROM stoatflow.aggregation a WHERE a.aggregation_id = agg_id;
    IF EXISTS (SELECT 1 FROM stoatflow.backfill b WHERE b.aggregation_id = agg_id) THEN
        PERFORM stoatflow._interrupt_backfill_worker(agg_name);
    END IF;
    sink_exists := sink_oid IS NOT NULL AND EXISTS (SELECT 1 FROM pg_class WHERE oid = sink_oid);
    FOR seg IN SELECT s.relname FROM stoatflow.segment s WHERE s.aggregation_id = agg_id LOOP
        EXECUTE format('DROP TABLE IF EXISTS stoatflow_state.%I', seg.relname);
    END LOOP;
    DELETE FROM stoatflow.aggregation WHERE aggregation_id = agg_id;
    IF drop_sink AND sink_exists THEN
        EXECUTE format('DROP TABLE %s', sink_oid::regclass);
    ELSIF sink_exists THEN
        not_final := stoatflow._sink_rows_not_final(sink_oid);
        -- One line (rows with final = false are windows that were still open: they will not
        -- change any more; README "Removing a pipeline").
        RAISE NOTICE 'aggregation "%" dropped; its sink table % stays, with % rows not final',
                agg_name, sink_oid::regclass, coalesce(not_final::text, 'an unknown number of');
    END IF;
END $$;

-- The source's consumer group in Kafka (advisory offsets for lag tools): removed where the
-- broker allows it, within a bounded time. NULL when removed, else why not (the drop goes on).
CREATE FUNCTION stoatflow._forget_consumer_group(source_name text)
RETURNS text LANGUAGE C VOLATILE STRICT
AS 'MODULE_PATHNAME', 'stoatflow__forget_consumer_group';
REVOKE ALL ON FUNCTION stoatflow._forget_consumer_group(text) FROM PUBLIC;

-- drop_source with missing_ok (a NOTICE instead of the error, for idempotent migrations); what
-- stays and what goes is said in NOTICEs.
CREATE FUNCTION stoatflow.drop_source(source_name text, "cascade" boolean DEFAULT false,
                                      missing_ok boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    caller regrole := stoatflow._invoking_role();
    src    record;
    aggs   text;
    others text;
    why    text;
    id     integer := stoatflow._owned_source(source_name, 'drop', missing_ok);
BEGIN
    IF id IS NULL THEN
        RAISE NOTICE 'source "%" does not exist, skipping', source_name;
        RETURN;
    END IF;
    SELECT s.source_id, s.created_by INTO src FROM stoatflow.source s WHERE s.source_id = id;
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
           FROM (SELECT a.aggregation_id FROM stoatflow.aggregation a
                  WHERE a.source_id = src.source_id ORDER BY a.aggregation_name) a;
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
    -- The committed offsets in PostgreSQL are the truth; the consumer group's in Kafka are only
    -- for lag tools. A broker that is down or refuses does not hold the drop up.
    -- Only a source whose worker ran (it reported partitions) has a group to remove.
    IF EXISTS (SELECT 1 FROM stoatflow.partition_status ps WHERE ps.source_id = src.source_id) THEN
        why := stoatflow._forget_consumer_group(source_name);
        IF why IS NULL THEN
            RAISE NOTICE 'the Kafka consumer group of source "%" was removed with its committed offsets', source_name;
        ELSE
            RAISE NOTICE 'the Kafka consumer group of source "%" was not removed: its committed offsets stay in Kafka', source_name
                USING DETAIL = why,
                      HINT = 'They are only read by lag tools; remove the group with the broker''s tools if needed.';
        END IF;
    END IF;
    PERFORM stoatflow._wake_launcher();
    DELETE FROM stoatflow.source WHERE source_id = src.source_id;
END $$;
REVOKE ALL ON FUNCTION stoatflow.drop_source(text, boolean, boolean) FROM PUBLIC;
SELECT stoatflow._upgrade_replace('stoatflow.drop_source(text, boolean)'::regprocedure,
                                  'stoatflow.drop_source(text, boolean, boolean)'::regprocedure);

-- The workers are interrupted before the owner check locks the catalog row: a worker's commit
-- holds that row (its progress row refers to it), so while its sink trigger loops, the lock would
-- wait for ever. Interrupted only for a caller who may drop the aggregation (the check that
-- follows refuses the others).
CREATE FUNCTION stoatflow.drop_aggregation(aggregation_name text, drop_sink boolean DEFAULT false,
                                           missing_ok boolean DEFAULT false)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    caller  regrole := stoatflow._invoking_role();
    id      integer;
    agg     record;
BEGIN
    FOR agg IN SELECT a.aggregation_name, s.source_name,
                      EXISTS (SELECT 1 FROM stoatflow.backfill b
                               WHERE b.aggregation_id = a.aggregation_id) AS backfilling
                 FROM stoatflow.aggregation a JOIN stoatflow.source s USING (source_id)
                WHERE a.aggregation_name = drop_aggregation.aggregation_name
                  AND pg_has_role(caller, a.owner, 'MEMBER') LOOP
        PERFORM stoatflow._interrupt_source_worker(agg.source_name);
        IF agg.backfilling THEN
            PERFORM stoatflow._interrupt_backfill_worker(agg.aggregation_name);
        END IF;
    END LOOP;
    id := stoatflow._owned_aggregation(aggregation_name, 'drop', missing_ok);
    IF id IS NULL THEN
        RAISE NOTICE 'aggregation "%" does not exist, skipping', aggregation_name;
        RETURN;
    END IF;
    SELECT a.aggregation_id, a.sink INTO agg FROM stoatflow.aggregation a WHERE a.aggregation_id = id;
    IF drop_sink AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = agg.sink)
       AND NOT pg_has_role(caller, (SELECT c.relowner FROM pg_class c WHERE c.oid = agg.sink), 'MEMBER') THEN
        RAISE EXCEPTION 'must be owner of table % to drop it', agg.sink::regclass
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM stoatflow._drop_aggregation_unchecked(agg.aggregation_id, drop_sink);
END $$;
REVOKE ALL ON FUNCTION stoatflow.drop_aggregation(text, boolean, boolean) FROM PUBLIC;
SELECT stoatflow._upgrade_replace('stoatflow.drop_aggregation(text, boolean)'::regprocedure,
                                  'stoatflow.drop_aggregation(text, boolean, boolean)'::regprocedure);

-- stoatflow.sources: status 'paused' from the catalog (at once, also while the worker finishes
-- its last commit or is down). CREATE OR REPLACE keeps the per-source views in stoatflow_source.
CREATE OR REPLACE VIEW stoatflow.sources AS
SELECT s.source_name, coalesce(po.topic, s.topic) AS topic, s.brokers,
       CASE WHEN s.paused THEN 'paused' ELSE coalesce(st.status, 'stopped') END AS status,
       st.last_error,
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

------------------------------------------------------------------------------------------
-- alter_aggregation and estimate (README "Changing a running pipeline")
------------------------------------------------------------------------------------------

-- What each aggregation's committed state was made under, written with it by every commit:
-- closed_through_ms, the largest window end it had closed (a restore under another grace keeps
-- those closed), and state_emit, the emit strategy its sink rows were written by (README
-- "Altering an aggregation"). NULL before the first commit.
ALTER TABLE stoatflow.aggregation_progress ADD COLUMN closed_through_ms bigint;
ALTER TABLE stoatflow.aggregation_progress ADD COLUMN state_emit text;
-- The engine's window state in memory at the last commit (what stoatflow.worker_memory_limit
-- counts), to compare with stoatflow.estimate (README "Estimating cost").
ALTER TABLE stoatflow.aggregation_progress ADD COLUMN memory_bytes bigint;

-- Changes grace, emit or retention of a running aggregation and keeps its state (README
-- "Altering an aggregation"). Like drop_aggregation, for the aggregation's owner.
CREATE FUNCTION stoatflow.alter_aggregation(aggregation_name text, grace interval DEFAULT NULL,
                                            emit text DEFAULT NULL, retention interval DEFAULT NULL)
RETURNS void LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_alter_aggregation';
REVOKE ALL ON FUNCTION stoatflow.alter_aggregation(text, interval, text, interval) FROM PUBLIC;

-- What an aggregation will cost before it is created, from the engine's formulas (README
-- "Estimating cost"); max_out_of_orderness as create_source's default. records_per_second (over
-- all keys; NULL: the bound of keys with records all the time) and commit_interval (NULL:
-- stoatflow.commit_interval) size a key's window block and the versions each window leaves in
-- the state tables. Reads nothing: PUBLIC.
CREATE FUNCTION stoatflow.estimate("window" stoatflow."window", keys bigint,
                                   retention interval DEFAULT NULL,
                                   aggregates text DEFAULT 'count(*)',
                                   max_out_of_orderness interval DEFAULT '10 seconds',
                                   records_per_second double precision DEFAULT NULL,
                                   commit_interval interval DEFAULT NULL)
RETURNS TABLE (open_windows_per_key numeric, segment_interval interval, live_segments_max integer,
               state_bytes_per_window integer, memory_bytes bigint, disk_bytes bigint)
LANGUAGE C STABLE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_estimate';

------------------------------------------------------------------------------------------
-- Progress (README "Progress")
------------------------------------------------------------------------------------------
-- What each worker reads, published about once a second into shared memory (the progress
-- board: src/pg/worker/progress_board.cpp), by whichever of its threads consumes, so that a long
-- commit does not hide it: one row per worker and partition. worker 0 is the source's worker,
-- any other value the aggregation id of a backfill worker; topic is the ordinal in the source's
-- topics (from 0). The views call it, so every role may: it shows what the views show.
CREATE FUNCTION stoatflow._worker_progress()
RETURNS TABLE (source_id integer, worker integer, topic integer, "partition" integer,
               next_offset bigint, high_watermark bigint, lag bigint,
               records_per_second double precision, newest_event_ms bigint, behind boolean,
               updated_at timestamptz)
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow__worker_progress';
GRANT EXECUTE ON FUNCTION stoatflow._worker_progress() TO PUBLIC;
-- For tests (sql/progress.sql): one entry written as a worker would; next_offset NULL frees
-- every entry of (source_id, worker). Superusers only.
CREATE FUNCTION stoatflow._test_worker_progress(source_id integer, worker integer, topic integer,
                                                "partition" integer, next_offset bigint,
                                                high_watermark bigint, records_per_second double precision,
                                                newest_event_ms bigint, behind boolean)
RETURNS void LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow__test_worker_progress';
REVOKE ALL ON FUNCTION stoatflow._test_worker_progress(integer, integer, integer, integer, bigint, bigint, double precision, bigint, boolean) FROM PUBLIC;

-- stoatflow.sources: the partitions a worker reads show from its first second on (before its
-- first commit too), lag is the live one (high watermark minus the position read), status
-- 'catching_up' while the worker is behind (README "Progress"); the new columns come last.
CREATE OR REPLACE VIEW stoatflow.sources AS
SELECT s.source_name, coalesce(pp.topic, s.topic) AS topic, s.brokers,
       CASE WHEN s.paused THEN 'paused'
            WHEN st.status = 'running' AND pp.behind THEN 'catching_up'
            ELSE coalesce(st.status, 'stopped') END AS status,
       st.last_error,
       pp.partition, pp.committed_offset,
       coalesce(pp.live_high, ps.high_watermark) AS high_watermark,
       CASE WHEN pp.live_lag IS NOT NULL THEN pp.live_lag
            WHEN ps.high_watermark IS NOT NULL AND pp.committed_offset IS NOT NULL
            THEN greatest(ps.high_watermark - pp.committed_offset, 0) END AS lag,
       coalesce(ps.idle, false) AS idle,
       timestamptz 'epoch' + pr.watermark_ms * interval '1 millisecond' AS watermark,
       pr.committed_at AS last_commit_at,
       s.kafka_options_masked AS kafka_options,
       pp.offsets_skipped,
       s.topics,
       CASE WHEN s.paused THEN 0 ELSE pp.records_per_second END AS records_per_second,
       pg_catalog.now() - (timestamptz 'epoch' + pp.newest_event_ms * interval '1 millisecond') AS lag_time,
       CASE WHEN NOT s.paused AND pp.live_lag > 0 AND pp.records_per_second > 0
            THEN pp.live_lag / pp.records_per_second * interval '1 second' END AS eta,
       pp.progress_at
  FROM stoatflow.source s
  LEFT JOIN stoatflow.source_status st ON st.source_id = s.source_id
  LEFT JOIN stoatflow.source_progress pr ON pr.source_id = s.source_id
  LEFT JOIN (SELECT coalesce(po.source_id, w.source_id) AS source_id,
                    coalesce(po.topic, w.topic) AS topic,
                    coalesce(po.partition, w.partition) AS partition,
                    po.next_offset AS committed_offset, po.offsets_skipped,
                    w.high_watermark AS live_high, w.lag AS live_lag, w.records_per_second,
                    w.newest_event_ms, w.behind, w.updated_at AS progress_at
               FROM stoatflow.partition_offset po
               FULL JOIN (SELECT x.source_id, y.topics[x.topic + 1] AS topic, x.partition, x.high_watermark,
                                 x.lag, x.records_per_second, x.newest_event_ms, x.behind, x.updated_at
                            FROM stoatflow._worker_progress() x
                            JOIN stoatflow.source y ON y.source_id = x.source_id
                           WHERE x.worker = 0) w
                 ON w.source_id = po.source_id AND w.topic = po.topic AND w.partition = po.partition) pp
         ON pp.source_id = s.source_id
  LEFT JOIN stoatflow.partition_status ps ON ps.source_id = s.source_id AND ps.topic = pp.topic
        AND ps.partition = pp.partition;

-- stats: the progress of the worker that runs the aggregation (its backfill worker while it
-- backfills, else its source's worker), summed over the partitions; status 'catching_up' and
-- 'paused' as in stoatflow.sources. The new columns come last.
CREATE OR REPLACE VIEW stoatflow.stats AS
SELECT a.aggregation_name, s.source_name, a.kind AS window_kind, a.emit, a.sink,
       p.records_in,
       p.dropped_late_window, p.dropped_late_session,
       p.dropped_late_window + p.dropped_late_session AS dropped_late,
       (SELECT count(*) FROM stoatflow.dead_letters d WHERE d.source_name = s.source_name) AS dead_letters,
       p.open_windows, p.keys_with_open_windows,
       p.windows_emitted, p.windows_reemitted, p.sessions_merged,
       p.last_commit_at,
       timestamptz 'epoch' + CASE WHEN b.aggregation_id IS NULL THEN pr.watermark_ms ELSE b.watermark_ms END
           * interval '1 millisecond' AS watermark,
       timestamptz 'epoch' + p.emit_frontier_ms * interval '1 millisecond' AS emit_frontier,
       (SELECT count(*) FROM stoatflow.segment g WHERE g.aggregation_id = a.aggregation_id) AS live_segments,
       (SELECT coalesce(sum(pg_total_relation_size(g.relid)), 0)::bigint
          FROM stoatflow.segment g WHERE g.aggregation_id = a.aggregation_id) AS state_bytes,
       p.state_rows_written, p.state_bytes_written,
       p.freshness_lag_ms * interval '1 millisecond' AS freshness_lag,
       p.last_error,
       CASE WHEN s.paused AND coalesce(p.status, 'running') NOT IN ('error', 'stalled') THEN 'paused'
            WHEN b.aggregation_id IS NOT NULL AND coalesce(p.status, 'running') NOT IN ('error', 'stalled')
            THEN 'backfilling'
            WHEN coalesce(p.status, CASE WHEN p.last_error IS NULL THEN 'running' ELSE 'error' END) = 'running'
                 AND w.behind THEN 'catching_up'
            ELSE coalesce(p.status, CASE WHEN p.last_error IS NULL THEN 'running' ELSE 'error' END) END AS status,
       p.sink_owed, p.filtered,
       CASE WHEN s.paused THEN 0 ELSE w.records_per_second END AS records_per_second,
       w.lag,
       pg_catalog.now() - (timestamptz 'epoch' + w.newest_event_ms * interval '1 millisecond') AS lag_time,
       CASE WHEN NOT s.paused AND w.lag > 0 AND w.records_per_second > 0
            THEN w.lag / w.records_per_second * interval '1 second' END AS eta,
       w.progress_at
  FROM stoatflow.aggregation a
  JOIN stoatflow.source s ON s.source_id = a.source_id
  LEFT JOIN stoatflow.aggregation_progress p ON p.aggregation_id = a.aggregation_id
  LEFT JOIN stoatflow.source_progress pr ON pr.source_id = a.source_id
  LEFT JOIN stoatflow.backfill b ON b.aggregation_id = a.aggregation_id
  LEFT JOIN LATERAL (
       SELECT sum(x.records_per_second) AS records_per_second, sum(x.lag)::bigint AS lag,
              max(x.newest_event_ms) AS newest_event_ms, bool_or(x.behind) AS behind,
              max(x.updated_at) AS progress_at
         FROM stoatflow._worker_progress() x
        WHERE x.source_id = a.source_id
          AND x.worker = CASE WHEN b.aggregation_id IS NULL THEN 0 ELSE a.aggregation_id END
       HAVING count(*) > 0) w ON true;

------------------------------------------------------------------------------------------
-- Roll-ups (README "Roll-ups")
------------------------------------------------------------------------------------------

-- A roll-up's records are the closed windows of another aggregation of the same source (its
-- upstream, created before it: no cycle can be declared); NULL: the source's records.
ALTER TABLE stoatflow.aggregation ADD COLUMN upstream_id integer;

-- An upstream cannot be dropped while roll-ups read it; drop_source(cascade => true) drops them
-- all in one transaction, so the check runs at commit (as the extension's owner, who reads the
-- catalog).
CREATE FUNCTION stoatflow._rollups_dropped() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    names text;
BEGIN
    SELECT string_agg(a.aggregation_name, ', ' ORDER BY a.aggregation_name) INTO names
      FROM stoatflow.aggregation a WHERE a.upstream_id = OLD.aggregation_id;
    IF names IS NOT NULL THEN
        RAISE EXCEPTION 'aggregation "%" is the upstream of roll-ups: %', OLD.aggregation_name, names
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Drop those roll-ups first with stoatflow.drop_aggregation().';
    END IF;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION stoatflow._rollups_dropped() FROM PUBLIC;
CREATE CONSTRAINT TRIGGER aggregation_rollups_dropped AFTER DELETE ON stoatflow.aggregation
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION stoatflow._rollups_dropped();

------------------------------------------------------------------------------------------
-- Per-source views with the progress columns (README "Monitoring", "Progress")
------------------------------------------------------------------------------------------

-- A source's view in stoatflow_source shows its rows of stoatflow.sources, the progress columns
-- (records_per_second, lag_time, eta, progress_at) too, last. CREATE OR REPLACE: at the upgrade
-- an existing view gains them and keeps its owner, its grants and the views built on it.
CREATE OR REPLACE FUNCTION stoatflow._create_source_view(source_name text, owner regrole)
RETURNS void LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    EXECUTE format('CREATE OR REPLACE VIEW stoatflow_source.%I WITH (security_barrier) AS '
                   'SELECT source_name, topic, partition, committed_offset, high_watermark, lag, idle, '
                   'watermark, last_commit_at, status, last_error, offsets_skipped, topics, kafka_options, '
                   'records_per_second, lag_time, eta, progress_at '
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
-- The views of the sources that exist are re-created by that function too. They are not members
-- of the extension (create_source made them at run time, or 0.1 -> 0.2 released them), and an
-- extension script may not replace an object the extension does not own: each view is a member
-- only while it is replaced, then released again as before.
DO $$
DECLARE
    src record;
BEGIN
    FOR src IN SELECT s.source_name, s.created_by FROM stoatflow.source s
                WHERE to_regclass(format('stoatflow_source.%I', s.source_name)) IS NOT NULL
                ORDER BY s.source_id LOOP
        EXECUTE format('ALTER EXTENSION stoatflow ADD VIEW stoatflow_source.%I', src.source_name);
        PERFORM stoatflow._create_source_view(src.source_name, src.created_by::regrole);
        EXECUTE format('ALTER EXTENSION stoatflow DROP VIEW stoatflow_source.%I', src.source_name);
    END LOOP;
END $$;

------------------------------------------------------------------------------------------
-- Formats (README "Formats")
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
DROP FUNCTION stoatflow._upgrade_replace(regprocedure, regprocedure);

