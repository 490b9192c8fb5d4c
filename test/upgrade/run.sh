#!/usr/bin/env bash
# Upgrade test: a real deployment of a released version, with a pipeline streaming, goes to this
# tree's version (ALTER EXTENSION stoatflow UPDATE, through every script between) with exact results.
#
#   test/upgrade/run.sh                                  # 0.1 (61dc1c4) -> 0.2 -> this version
#   UPGRADE_FROM_COMMIT=53ab57e test/upgrade/run.sh      # 0.2 (v0.2.0) -> this version
#
# Below "0.1" is the released version the test starts from (FROM_VER, read from that tree's
# control file) and "0.2" this tree's version (TO_VER).
# 1. The released tree (commit $UPGRADE_FROM_COMMIT, default 61dc1c4) is exported from git history
#    and built with PGXS (UPGRADE_V01_DIR=DIR reuses a tree already built there).
# 2. Nothing is installed into the system's PostgreSQL dirs: the test copies the PostgreSQL
#    installation (bindir, pkglibdir, sharedir; ~60 MB, a few seconds) under $WORK/inst, drops
#    any stoatflow files from the copy, and installs 0.1, later 0.2, there with
#    `make install DESTDIR=$WORK/inst`. PostgreSQL finds its lib and share dirs relative to
#    the postgres executable, so a server started from the copied bindir loads '$libdir' and
#    the extension scripts from the copy only (checked: pg_config view and
#    pg_available_extension_versions). Concurrent tests using the system install are unaffected.
# 3. 0.1: throwaway cluster (test/faults/lib.sh), CREATE EXTENSION stoatflow VERSION '0.1', a
#    source and a tumbling('1 minute') aggregation; the first half of the chunks; caught up;
#    the sink must equal the expected windows of those chunks; snapshot of the sink.
# 4. Stop, install the 0.2 tree (this worktree: make, make install DESTDIR), start: the 0.2
#    library runs on the 0.1 catalog. One more chunk goes to Kafka; for UPGRADE_OBSERVE seconds
#    the test records what the library does (worker processes, source status, log lines). It
#    must not crash the server. Then ALTER EXTENSION stoatflow UPDATE TO '0.2', extversion must
#    be 0.2, the remaining chunks, caught up; the sink must equal the expected windows of all
#    events (nothing lost or doubled across the upgrade); every window that was final in the
#    0.1 snapshot must be unchanged; no crash or PANIC in the log.
# 5. A second database of the same cluster gets CREATE EXTENSION stoatflow (0.2 directly); the
#    extension's objects (functions with arguments, result, body, proconfig, prosecdef, ACL;
#    tables, views, types and their columns; constraints, indexes, comments, ACLs, extconfig) are
#    described as text in both databases (test/upgrade/catalog.sql) and must be identical. The grants of step 3 are made
#    in the fresh database too (on the 0.2 signatures), so the functions' ACLs must match.
# Grants (README "Upgrading": ALTER EXTENSION UPDATE keeps them): under 0.1, EXECUTE on
# create_source, create_aggregation (WITH GRANT OPTION, passed on by its grantee) and drop_source
# goes to roles of the test; after the update they must hold EXECUTE on the 0.2 signatures, and
# every extension function's ACL entries for them, by name, must be what was granted. The source
# declared under 0.1 must have its view stoatflow_source.<source>, owned by its creator and not a
# member of the extension, with the progress columns last; a view that existed before the update
# (from 0.2 on) keeps a grant made on it and a view built on it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=test/faults/lib.sh
source "$repo/test/faults/lib.sh"

UPGRADE_FROM_COMMIT=${UPGRADE_FROM_COMMIT:-61dc1c4}
UPGRADE_OBSERVE=${UPGRADE_OBSERVE:-15}   # seconds the 0.2 library runs on the 0.1 catalog
JOBS=${JOBS:-2}
EVENTS=${UPGRADE_EVENTS:-72000}
KEYS=${UPGRADE_KEYS:-1024}
NCHUNKS=12
HALF=6   # chunks 0..5 under 0.1, chunk 6 before ALTER EXTENSION, 7..11 after

MOCK_BROKER=${MOCK_BROKER:-$repo/build/stoatflow-mock-broker}
export MOCK_BROKER
if [ ! -x "$MOCK_BROKER" ]; then
    echo "upgrade: building the mock broker"
    (cd "$repo" && cmake -S . -B build >/dev/null && cmake --build build -j"$JOBS" --target stoatflow-mock-broker >/dev/null)
fi

faults_begin upgrade
SYS_PG_CONFIG=$PG_CONFIG

# ---------------------------------------------------------------------------------
# 1. The 0.1 tree, built
git -C "$repo" rev-parse --verify --quiet "$UPGRADE_FROM_COMMIT^{commit}" >/dev/null ||
    fail "commit $UPGRADE_FROM_COMMIT (release 0.1) is not in the history of $repo: a shallow clone? run 'git fetch --unshallow'"
if [ -n "${UPGRADE_V01_DIR:-}" ]; then
    V01=$UPGRADE_V01_DIR
    [ -f "$V01/stoatflow.so" ] || fail "UPGRADE_V01_DIR=$V01 holds no built stoatflow.so"
    log "released tree: reusing the build in $V01"
else
    V01=$WORK/v01
    mkdir "$V01"
    git -C "$repo" archive "$UPGRADE_FROM_COMMIT" | tar -x -C "$V01" || fail "git archive $UPGRADE_FROM_COMMIT failed"
    log "released tree: exported $UPGRADE_FROM_COMMIT, building (make -j$JOBS)"
    make -C "$V01" -j"$JOBS" PG_CONFIG="$SYS_PG_CONFIG" >"$WORK/build-0.1.log" 2>&1 ||
        { tail -n 30 "$WORK/build-0.1.log" >&2; fail "the released tree did not build"; }
fi
FROM_VER=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$V01/stoatflow.control")
TO_VER=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$repo/stoatflow.control")
[ -n "$FROM_VER" ] && [ -n "$TO_VER" ] && [ "$FROM_VER" != "$TO_VER" ] ||
    fail "cannot upgrade from version '$FROM_VER' ($V01) to '$TO_VER' ($repo)"
# The versions the private install offers once this tree is installed (every script in sql/).
TO_AVAILABLE=$(ls "$repo"/sql/stoatflow--*.sql | sed -n 's/.*stoatflow--\([0-9.]*\)\.sql$/\1/p;
                   s/.*stoatflow--[0-9.]*--\([0-9.]*\)\.sql$/\1/p' | sort -uV | paste -sd,)
log "$FROM_VER built; upgrading to $TO_VER (versions offered then: $TO_AVAILABLE)"

# ---------------------------------------------------------------------------------
# 2. A private copy of the PostgreSQL installation
INST=$WORK/inst
sys_bindir=$("$SYS_PG_CONFIG" --bindir)
sys_pkglibdir=$("$SYS_PG_CONFIG" --pkglibdir)
sys_sharedir=$("$SYS_PG_CONFIG" --sharedir)
for d in "$sys_bindir" "$sys_pkglibdir" "$sys_sharedir"; do
    mkdir -p "$INST$(dirname "$d")"
    [ -d "$INST$d" ] || cp -a "$d" "$INST$(dirname "$d")/" || fail "could not copy $d"
done
rm -f "$INST$sys_pkglibdir/stoatflow.so" "$INST$sys_sharedir"/extension/stoatflow[.-]*
rm -rf "$INST$sys_pkglibdir/bitcode/stoatflow" "$INST$sys_pkglibdir/bitcode/stoatflow.index.bc"
chmod -R a+rX "$INST"
PG_BIN=$INST$sys_bindir
[ "$("$PG_BIN/pg_config" --pkglibdir)" = "$INST$sys_pkglibdir" ] ||
    fail "the copied PostgreSQL does not relocate: $PG_BIN/pg_config --pkglibdir says $("$PG_BIN/pg_config" --pkglibdir)"
log "private PostgreSQL installation in $INST ($(du -sh "$INST" | cut -f1))"

install_tree() { # install_tree DIR VERSION
    make -C "$1" install DESTDIR="$INST" PG_CONFIG="$SYS_PG_CONFIG" >"$WORK/install-$2.log" 2>&1 ||
        { tail -n 30 "$WORK/install-$2.log" >&2; fail "make install DESTDIR of $2 failed"; }
}
install_tree "$V01" "$FROM_VER"

available() {
    sql "SELECT string_agg(version, ',' ORDER BY version) FROM pg_available_extension_versions WHERE name = 'stoatflow'"
}
db_sql() { # db_sql DB SQL: unaligned tuples; failure fails the test
    "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$WORK/run" -p "$PG_PORT" -U postgres -d "$1" -c "$2" \
        2>"$WORK/psql.err" || { cat "$WORK/psql.err" >&2; fail "SQL failed in $1: $2"; }
}

# Expected windows of the chunks before CHUNK (events.py reads every chunk file of a dir).
partial_expected() { # partial_expected CHUNK DIR
    mkdir -p "$2"
    local c p
    for ((c = 0; c < $1; c++)); do
        for ((p = 0; p < PARTITIONS; p++)); do
            ln -s "$EVENTS_DIR/chunk-$(printf '%02d' "$c")-p$p.jsonl" "$2/"
        done
    done
}

# ---------------------------------------------------------------------------------
# 3. 0.1 running
gen_events 404 "$EVENTS" "$KEYS" "$NCHUNKS"
ALL_EXPECTED=$EXPECTED_CSV
ALL_TOTAL=$EVENTS_TOTAL
mock_broker_start "$TOPIC:$PARTITIONS"
pg_init
pg_start
[ "$(sql "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")" = "$INST$sys_pkglibdir" ] ||
    fail "the server does not use the private pkglibdir"
FROM_AVAILABLE=$(ls "$V01"/sql/stoatflow--*.sql | sed -n 's/.*stoatflow--\([0-9.]*\)\.sql$/\1/p;
                   s/.*stoatflow--[0-9.]*--\([0-9.]*\)\.sql$/\1/p' | sort -uV | paste -sd,)
[ "$(available)" = "$FROM_AVAILABLE" ] || fail "private install offers stoatflow versions '$(available)', expected $FROM_AVAILABLE"
produce_chunk 0
sql "CREATE EXTENSION stoatflow VERSION '$FROM_VER'" >/dev/null
[ "$(sql "SELECT extversion FROM pg_extension WHERE extname = 'stoatflow'")" = "$FROM_VER" ] || fail "extversion is not $FROM_VER"
[ "$(sql "SELECT stoatflow.version()")" = "$FROM_VER" ] || fail "stoatflow.version() is not $FROM_VER under the $FROM_VER install"
# What an administrator granted under 0.1 (signatures of 0.1); grants_of lists, per extension
# function by name, the ACL entries of the test's roles.
sql "CREATE ROLE upgrade_app; CREATE ROLE upgrade_app2" >/dev/null
# By name: each of these names is one function in every version (the signatures change).
GRANTS_V01="GRANT EXECUTE ON FUNCTION stoatflow.create_source TO upgrade_app;
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation TO upgrade_app WITH GRANT OPTION;
GRANT EXECUTE ON FUNCTION stoatflow.drop_source TO upgrade_app;
SET ROLE upgrade_app;
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation TO upgrade_app2;
RESET ROLE;"
sql "$GRANTS_V01" >/dev/null
grants_of() { # grants_of DB
    db_sql "$1" "SELECT line FROM (
      SELECT format('%s: %s %s%s granted by %s', p.proname, a.grantee::regrole, a.privilege_type,
                    CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END, a.grantor::regrole) AS line
        FROM pg_proc p
        JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
        JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'stoatflow',
        aclexplode(p.proacl) a
       WHERE a.grantee IN ('upgrade_app'::regrole, 'upgrade_app2'::regrole)) x
       ORDER BY line COLLATE \"C\""
}
sql "SELECT stoatflow.create_source('$SOURCE', '$TOPIC', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour')" >/dev/null
sql "SELECT stoatflow.create_aggregation('agg', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', '$SINK')" >/dev/null
wait_worker ""
log "$FROM_VER pipeline running (worker pid $WORKER_PID)"
for ((c = 1; c < HALF; c++)); do produce_chunk "$c"; done
wait_caught_up
partial_expected "$HALF" "$WORK/events-half"
EXPECTED_CSV=$WORK/expected-half.csv
EVENTS_TOTAL=$(python3 "$FAULTS_DIR/events.py" expected "$WORK/events-half" "$EXPECTED_CSV") ||
    fail "events.py expected (first half) failed"
[ "$EVENTS_TOTAL" = "$PRODUCED" ] || fail "first half: events.py counts $EVENTS_TOTAL, produced $PRODUCED"
log "$FROM_VER caught up on $PRODUCED events; checking the sink against the first $HALF chunks"
verify_sink
sql "CREATE TABLE public.sink_v01 AS SELECT * FROM $SINK" >/dev/null
v01_final=$(sql "SELECT count(*) FROM public.sink_v01 WHERE final")
((v01_final > 0)) || fail "no window was final under 0.1: the snapshot would check nothing"
log "$FROM_VER sink snapshot: $(sql "SELECT count(*) FROM public.sink_v01") rows, $v01_final final"

# ---------------------------------------------------------------------------------
# 4. The 0.2 library on the 0.1 catalog, then ALTER EXTENSION UPDATE
pg_stop fast
log "server stopped; building and installing $TO_VER from $repo"
make -C "$repo" -j"$JOBS" PG_CONFIG="$SYS_PG_CONFIG" >"$WORK/build-$TO_VER.log" 2>&1 ||
    { tail -n 30 "$WORK/build-$TO_VER.log" >&2; fail "the $TO_VER tree did not build"; }
install_tree "$repo" "$TO_VER"
log_mark=$(wc -l <"$SERVER_LOG")
pg_start
[ "$(available)" = "$TO_AVAILABLE" ] || fail "private install offers stoatflow versions '$(available)', expected $TO_AVAILABLE"
[ "$(sql "SELECT extversion FROM pg_extension WHERE extname = 'stoatflow'")" = "$FROM_VER" ] || fail "extversion changed by itself"
produce_chunk "$HALF"
log "the $TO_VER library on the $FROM_VER catalog: chunk $HALF produced; observing for ${UPGRADE_OBSERVE}s"
offsets_before=$(committed)
observe_end=$(($(date +%s) + UPGRADE_OBSERVE))
workers_seen=()
while (($(date +%s) < observe_end)); do
    pid=$(worker_pid)
    if [ -n "$pid" ]; then
        for p in $pid; do [[ " ${workers_seen[*]} " == *" $p "* ]] || workers_seen+=("$p"); done
    fi
    sql "SELECT 1" >/dev/null   # the server must keep accepting connections
    sleep 0.5
done
status_pre=$(psql_try -c "SELECT DISTINCT status || ' | ' || coalesce(last_error, '') FROM stoatflow.sources" 2>&1 ||
    echo "stoatflow.sources failed: $(cat "$WORK/psql.err")")
offsets_pre=$(committed)
procs_pre=$(sql "SELECT string_agg(backend_type, ', ' ORDER BY backend_type) FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow%'")
sink_pre=$(sql "SELECT count(*) || ' rows, sum(n) = ' || coalesce(sum(n), 0) FROM $SINK")
tail -n +"$((log_mark + 1))" "$SERVER_LOG" | grep -E "ERROR|FATAL|WARNING|PANIC|terminated|stoatflow" |
    sed -E 's/^[0-9-]+ [0-9:.]+ [A-Z]+ //' | sort | uniq -c | sort -rn | head -n 12 >"$WORK/pre-alter.log" || true
log "before ALTER EXTENSION: stoatflow processes: ${procs_pre:-none}; source worker pids seen: ${workers_seen[*]:-none}"
log "before ALTER EXTENSION: stoatflow.sources: ${status_pre:-no rows}"
log "before ALTER EXTENSION: committed offsets $offsets_before -> $offsets_pre of $((PRODUCED)) produced; sink $sink_pre"
# The 0.2 worker waits for the update: it says so, and consumes and commits nothing.
[[ $status_pre == "error | "*"ALTER EXTENSION stoatflow UPDATE"* ]] ||
    fail "before ALTER EXTENSION the source should ask for the update; it shows: ${status_pre:-no rows}"
[ "$offsets_pre" = "$offsets_before" ] ||
    fail "the $TO_VER worker committed on the $FROM_VER catalog: offsets $offsets_before -> $offsets_pre"
log "before ALTER EXTENSION: server log since the $TO_VER start (count, message):"
sed 's/^/    /' "$WORK/pre-alter.log"

# What the 0.1 SQL API does on the 0.2 library (recorded; only a crash fails, via check_log):
# C functions of the 0.1 catalog without a symbol in the 0.2 library, and a few calls.
if command -v nm >/dev/null; then
    missing=()
    nm -D --defined-only "$INST$sys_pkglibdir/stoatflow.so" >"$WORK/symbols-0.2.txt"
    for sym in $(cat "$V01"/sql/stoatflow--*.sql | grep -o "'MODULE_PATHNAME', *'[A-Za-z_0-9]*'" | sed "s/.*, *'//; s/'//" | sort -u); do
        grep -qw "$sym" "$WORK/symbols-0.2.txt" || missing+=("$sym")
    done
    log "before ALTER EXTENSION: C symbols of the $FROM_VER catalog missing from the $TO_VER library: ${missing[*]:-none}"
fi
probe() { # probe SQL: prints its result or its error
    local out
    if out=$(psql_try -c "$1"); then echo "ok: $(tr '\n' ' ' <<<"$out" | cut -c1-120)"; else echo "error: $(head -n1 "$WORK/psql.err")"; fi
}
for q in "SELECT stoatflow.version()" "SELECT stoatflow.tumbling('1 minute')" \
    "SELECT records_in FROM stoatflow.stats" "SELECT stoatflow.wait_caught_up('$SOURCE', '1 second')"; do
    log "before ALTER EXTENSION: $q -> $(probe "$q")"
done
sql "SELECT 1" >/dev/null || fail "the server does not answer after the probes"

grants_of postgres >"$WORK/grants-0.1.txt"
[ "$(wc -l <"$WORK/grants-0.1.txt")" = 4 ] || fail "the $FROM_VER grants of the test are not in place: $(cat "$WORK/grants-0.1.txt")"
# The source's view, where it exists before the update (from 0.2 on: create_source made it),
# gets a grant and a view built on it; the update re-creates it with the progress columns and
# must keep both.
view_acl_before=
if [ "$(sql "SELECT to_regclass('stoatflow_source.$SOURCE') IS NOT NULL")" = t ]; then
    sql "GRANT SELECT ON stoatflow_source.$SOURCE TO upgrade_app2;
         CREATE VIEW public.upgrade_on_view AS SELECT partition, committed_offset FROM stoatflow_source.$SOURCE" >/dev/null
    view_acl_before=$(sql "SELECT relacl::text FROM pg_class WHERE oid = 'stoatflow_source.$SOURCE'::regclass")
    log "before ALTER EXTENSION: stoatflow_source.$SOURCE exists; granted SELECT to upgrade_app2 ($view_acl_before), public.upgrade_on_view built on it"
fi
sql "ALTER EXTENSION stoatflow UPDATE" >/dev/null
ver=$(sql "SELECT extversion FROM pg_extension WHERE extname = 'stoatflow'")
[ "$ver" = "$TO_VER" ] || fail "extversion is '$ver' after ALTER EXTENSION UPDATE, expected $TO_VER"
[ "$(sql "SELECT stoatflow.version()")" = "$TO_VER" ] || fail "stoatflow.version() is not $TO_VER"
alter_at=$(date +%s.%N)
log "ALTER EXTENSION stoatflow UPDATE ($FROM_VER -> $TO_VER) done; extversion $TO_VER"
# The grants survived, on the 0.2 signatures, and nothing else changed for those roles.
grants_of postgres >"$WORK/grants-0.2.txt"
diff -u "$WORK/grants-0.1.txt" "$WORK/grants-0.2.txt" >&2 ||
    fail "ALTER EXTENSION UPDATE changed the grants of the test's roles (- $FROM_VER, + $TO_VER)"
# On the current signatures, whatever they are (one function of each name).
may() { # may ROLE FUNCTION_NAME PRIVILEGE
    sql "SELECT count(*) = 1 AND bool_and(has_function_privilege('$1', p.oid, '$3'))
           FROM pg_proc p WHERE p.pronamespace = 'stoatflow'::regnamespace AND p.proname = '$2'"
}
for check in upgrade_app:create_source upgrade_app:create_aggregation upgrade_app2:create_aggregation \
    upgrade_app:drop_source; do
    [ "$(may "${check%%:*}" "${check#*:}" EXECUTE)" = t ] ||
        fail "after ALTER EXTENSION UPDATE ${check%%:*} may not execute stoatflow.${check#*:}"
done
[ "$(may upgrade_app create_aggregation 'EXECUTE WITH GRANT OPTION')" = t ] ||
    fail "after ALTER EXTENSION UPDATE upgrade_app lost its grant option on create_aggregation"
log "grants kept across the update ($(wc -l <"$WORK/grants-0.2.txt") ACL entries of the test's roles, by function name, identical)"
# The source declared under 0.1 has its view, owned by its creator, not an extension member.
view_desc=$(sql "SELECT format('%s %s %s', c.relkind, c.relowner = s.created_by,
                        NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                                       AND d.objid = c.oid AND d.deptype = 'e'))
                   FROM stoatflow.source s
                   LEFT JOIN pg_class c ON c.oid = to_regclass(format('stoatflow_source.%I', s.source_name))
                  WHERE s.source_name = '$SOURCE'")
[ "$view_desc" = "v t t" ] ||
    fail "the view stoatflow_source.$SOURCE after the update: '$view_desc' (expected: a view, owned by the source's creator, not an extension member)"
[ "$(sql "SELECT count(*) > 0 FROM stoatflow_source.$SOURCE")" = t ] || fail "stoatflow_source.$SOURCE shows no row"
# It has the progress columns, last (README "Monitoring"), and keeps what was granted on it.
view_cols=$(sql "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
                  WHERE attrelid = 'stoatflow_source.$SOURCE'::regclass AND attnum > 0 AND NOT attisdropped")
[[ $view_cols == source_name,*,records_per_second,lag_time,eta,progress_at ]] ||
    fail "stoatflow_source.$SOURCE after the update has the columns $view_cols (expected the progress columns last)"
[ "$(sql "SELECT count(*) > 0 FROM (SELECT records_per_second, lag_time, eta, progress_at FROM stoatflow_source.$SOURCE) v")" = t ] ||
    fail "stoatflow_source.$SOURCE shows no row with its progress columns"
if [ -n "$view_acl_before" ]; then
    view_acl=$(sql "SELECT relacl::text FROM pg_class WHERE oid = 'stoatflow_source.$SOURCE'::regclass")
    [ "$view_acl" = "$view_acl_before" ] ||
        fail "the update changed the grants on stoatflow_source.$SOURCE: $view_acl_before -> $view_acl"
    [ "$(sql "SELECT has_table_privilege('upgrade_app2', 'stoatflow_source.$SOURCE', 'SELECT')")" = t ] ||
        fail "after the update upgrade_app2 may not SELECT stoatflow_source.$SOURCE"
    [ "$(sql "SELECT count(*) > 0 FROM public.upgrade_on_view")" = t ] || fail "public.upgrade_on_view shows no row after the update"
    sql "DROP VIEW public.upgrade_on_view" >/dev/null
    log "stoatflow_source.$SOURCE: re-created by the update, same grants ($view_acl), the view built on it kept"
else
    log "stoatflow_source.$SOURCE: created by the update, owned by the source's creator"
fi
log "stoatflow_source.$SOURCE columns: $view_cols"
for ((c = HALF + 1; c < NCHUNKS; c++)); do produce_chunk "$c"; done
_resumed() { local n; n=$(committed); [[ $n =~ ^[0-9]+$ ]] && ((n > offsets_pre)); }
wait_until "$CAUGHT_UP_TIMEOUT" "the worker to commit again after ALTER EXTENSION UPDATE" _resumed
log "the worker committed again $(awk -v a="$alter_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s after ALTER EXTENSION UPDATE"
EXPECTED_CSV=$ALL_EXPECTED
EVENTS_TOTAL=$ALL_TOTAL
wait_caught_up
log "$TO_VER caught up on all $PRODUCED events"
# After a failure the worker shows 'error' until a commit succeeds, then 'running' (set just
# after that commit, so wait_caught_up can return a moment before it). last_error keeps the
# most recent error after recovery (README: "it stays after recovery"): reported, not checked.
_running() { [ "$(source_status | cut -d'|' -f1)" = "running" ]; }
wait_until 30 "stoatflow.sources.status 'running' (it is '$(source_status | tr '\n' ' ')')" _running
log "source status after the upgrade: $(source_status | sed 's/|/, last_error: /')"
verify_sink
changed=$(sql "SELECT count(*) FROM public.sink_v01 o WHERE o.final AND NOT EXISTS (
    SELECT 1 FROM $SINK s WHERE s.key = o.key AND s.window_start = o.window_start AND s.window_end = o.window_end
       AND s.n = o.n AND s.total = o.total AND s.event_time = o.event_time AND s.final)")
[ "$changed" = 0 ] || fail "$changed windows final under $FROM_VER are missing or changed after the upgrade"
log "all $v01_final windows final under $FROM_VER are unchanged"
check_log

# ---------------------------------------------------------------------------------
# 5. The upgraded catalog equals a fresh 0.2 install
sql "CREATE DATABASE fresh" >/dev/null
db_sql fresh "CREATE EXTENSION stoatflow" >/dev/null
[ "$(db_sql fresh "SELECT extversion FROM pg_extension WHERE extname = 'stoatflow'")" = "$TO_VER" ] ||
    fail "CREATE EXTENSION in database fresh did not install $TO_VER"
# The same grants (by name: on the current signatures): the functions' ACLs are compared below.
db_sql fresh "$GRANTS_V01" >/dev/null
grants_of fresh >"$WORK/grants-fresh.txt"
diff -u "$WORK/grants-fresh.txt" "$WORK/grants-0.2.txt" >&2 ||
    fail "the grants made on a fresh $TO_VER install differ from the upgraded ones (- fresh, + upgraded)"
CATALOG_SQL=$(cat "$here/catalog.sql")
db_sql postgres "$CATALOG_SQL" >"$WORK/catalog-upgraded.txt"
db_sql fresh "$CATALOG_SQL" >"$WORK/catalog-fresh.txt"
nlines=$(wc -l <"$WORK/catalog-fresh.txt")
((nlines > 100)) || fail "the catalog description has only $nlines lines: the query describes too little"
if ! diff -u "$WORK/catalog-fresh.txt" "$WORK/catalog-upgraded.txt" >"$WORK/catalog.diff"; then
    echo "---- catalog diff (- fresh $TO_VER, + $FROM_VER upgraded to $TO_VER) ----" >&2
    head -n 80 "$WORK/catalog.diff" >&2
    fail "the upgraded catalog differs from a fresh $TO_VER install ($(grep -c '^[-+][^-+]' "$WORK/catalog.diff") lines)"
fi
log "upgraded catalog equals a fresh $TO_VER install ($nlines lines of description compared)"
check_log
log "RESULT from=$FROM_VER to=$TO_VER events=$EVENTS keys=$KEYS chunks=$NCHUNKS ($FROM_VER: $HALF, before ALTER: 1, $TO_VER: $((NCHUNKS - HALF - 1))) rows_compared=$VERIFY_ROWS v01_final_unchanged=$v01_final catalog_lines=$nlines match=yes"
faults_pass
