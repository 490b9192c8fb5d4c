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

------------------------------------------------------------------------------------------
-- Pause, resume and removal (README "Changing a running pipeline")
------------------------------------------------------------------------------------------

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

-- The owner rule of drop_aggregation, for the functions that change an aggregation: the
-- caller must be a member of the owner's role (superusers are). Returns the id and locks the
-- catalog row, so an alter and a drop of the same aggregation run one after the other.
CREATE FUNCTION stoatflow._check_aggregation_owner(aggregation_name text)
RETURNS integer LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    caller  regrole := stoatflow._invoking_role();
    agg     record;
BEGIN
    SELECT a.aggregation_id, a.owner INTO agg FROM stoatflow.aggregation a
     WHERE a.aggregation_name = _check_aggregation_owner.aggregation_name FOR UPDATE;
    IF agg.aggregation_id IS NULL THEN
        RAISE EXCEPTION 'aggregation "%" does not exist', aggregation_name USING ERRCODE = 'undefined_object';
    END IF;
    IF NOT pg_has_role(caller, agg.owner, 'MEMBER') THEN
        RAISE EXCEPTION 'must be owner of aggregation %', aggregation_name
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN agg.aggregation_id;
END $$;
REVOKE ALL ON FUNCTION stoatflow._check_aggregation_owner(text) FROM PUBLIC;

-- Changes grace, emit or retention of a running aggregation and keeps its state (README
-- "Altering an aggregation"). Like drop_aggregation, for the aggregation's owner.
CREATE FUNCTION stoatflow.alter_aggregation(aggregation_name text, grace interval DEFAULT NULL,
                                            emit text DEFAULT NULL, retention interval DEFAULT NULL)
RETURNS void LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_alter_aggregation';
REVOKE ALL ON FUNCTION stoatflow.alter_aggregation(text, interval, text, interval) FROM PUBLIC;

-- What an aggregation will cost before it is created, from the engine's formulas (README
-- "Estimating cost"); max_out_of_orderness as create_source's default. Reads nothing: PUBLIC.
CREATE FUNCTION stoatflow.estimate("window" stoatflow."window", keys bigint,
                                   retention interval DEFAULT NULL,
                                   aggregates text DEFAULT 'count(*)',
                                   max_out_of_orderness interval DEFAULT '10 seconds')
RETURNS TABLE (open_windows_per_key numeric, segment_interval interval, live_segments_max integer,
               state_bytes_per_window integer, memory_bytes bigint, disk_bytes bigint)
LANGUAGE C STABLE
SET search_path = pg_catalog, pg_temp
AS 'MODULE_PATHNAME', 'stoatflow_estimate';

------------------------------------------------------------------------------------------
-- Formats (README "Formats")
------------------------------------------------------------------------------------------

------------------------------------------------------------------------------------------
DROP FUNCTION stoatflow._upgrade_replace(regprocedure, regprocedure);
