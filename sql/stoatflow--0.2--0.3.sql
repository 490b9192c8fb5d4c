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

------------------------------------------------------------------------------------------
-- alter_aggregation and estimate (README "Changing a running pipeline")
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
-- Formats (README "Formats")
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
DROP FUNCTION stoatflow._upgrade_replace(regprocedure, regprocedure);
