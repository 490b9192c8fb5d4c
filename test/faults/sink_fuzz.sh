#!/usr/bin/env bash
# Fault scenario 5: hostile changes to a sink under a running worker (README "Security", "Isolation"). One source feeds two aggregations, both tumbling('1 minute')
# count(*) AS n, sum(amount) AS total: `victim` (created by the non-superuser role fz_owner,
# which owns its sink fz.victim_1m; retention 7 days so resync_sink can rebuild every window)
# and `sibling` (sink sibling_1m, never touched). For SINK_FUZZ_SECONDS (default 40; a long
# run: SINK_FUZZ_SECONDS=300) the victim's sink gets one random change after another, each
# followed by a chunk of the stream (so the worker has rows to write into the broken sink) and
# then undone:
#
#   n_text n_integer n_numeric    ALTER COLUMN n TYPE ...; back to bigint
#   total_integer total_text      ALTER COLUMN total TYPE ...; back to numeric
#   drop_n                        DROP COLUMN n; ADD COLUMN n bigint (its values are lost)
#   extra_not_null                ADD COLUMN extra integer NOT NULL (no default left); DROP it
#   check                         ADD CHECK (n < 0) NOT VALID; DROP it
#   trigger                       BEFORE INSERT OR UPDATE trigger that raises; DROP it
#   revoke                        REVOKE INSERT, UPDATE from the owner fz_owner; GRANT back
#   lock                          LOCK TABLE IN ACCESS EXCLUSIVE MODE for 4-7 s (background psql)
#   rename                        RENAME away; back
#   drop_create                   DROP TABLE; CREATE TABLE again as fz_owner, same shape and key
#   truncate                      TRUNCATE (no undo; repaired by resync_sink at the end)
#
# Kinds are drawn as random permutations (every kind once per round), so a run of 14 or more
# changes applies each kind. After every chunk the sibling must be fresh: wait_caught_up on the
# source returns true within SIBLING_BOUND seconds and sum(n) of the sibling's sink equals the
# events produced. A change that must make writes fail (all but rename and truncate), applied
# while the victim was healthy, must show up as the victim's last_error in stoatflow.stats (or,
# if the error is over before the next poll, as the worker's "sink write failed" LOG line). The
# source worker must never restart. After most changes the scenario waits for the victim to
# recover (last_error NULL, sink_owed 0); after the others the next change hits a victim that
# still owes windows. Then: repair (the shape is right again, the victim recovers), resync_sink,
# the rest of the stream, and both sinks must equal the independent computation row for row
# (verify_sink). The bash RANDOM seed is SINK_FUZZ_SEED (default 5150), printed for replay.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin sink_fuzz
SEED=${SINK_FUZZ_SEED:-5150}
FUZZ_SECONDS=${SINK_FUZZ_SECONDS:-40}
EVENTS=${SINK_FUZZ_EVENTS:-40000}
KEYS=256
FUZZ_CHUNKS=$((FUZZ_SECONDS > 20 ? FUZZ_SECONDS : 20)) # at most one chunk per change
TAIL_CHUNKS=4                                        # produced after the repair
NCHUNKS=$((1 + FUZZ_CHUNKS + TAIL_CHUNKS))
SIBLING_BOUND=${SINK_FUZZ_SIBLING_BOUND:-20} # s: wait_caught_up must return true within this
ERROR_WAIT=10                                # s: a failing change must show in stats within this
RECOVER_WAIT=60                              # s: the victim recovers (backoff is at most 30 s)
VICTIM=fz.victim_1m
SIBLING=sibling_1m
RANDOM=$SEED
log "seed $SEED (replay: SINK_FUZZ_SEED=$SEED SINK_FUZZ_SECONDS=$FUZZ_SECONDS), fuzzing ${FUZZ_SECONDS}s"

KINDS=(n_text n_integer n_numeric total_integer total_text drop_n extra_not_null check trigger
    revoke lock rename drop_create truncate)
NO_ERROR_KINDS=" rename truncate " # writes keep working (the worker follows the table's oid)
declare -A applied=() errors_seen=()
for k in "${KINDS[@]}"; do applied[$k]=0; errors_seen[$k]=0; done

# --- the stream and the pipeline ---------------------------------------------------------
gen_events "$SEED" "$EVENTS" "$KEYS" "$NCHUNKS"
mock_broker_start "$TOPIC:$PARTITIONS"
pg_init
pg_start
produce_chunk 0
sql "CREATE EXTENSION stoatflow" >/dev/null
sql "SELECT stoatflow.create_source('$SOURCE', '$TOPIC', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour')" >/dev/null
psql_try <<EOF >/dev/null || { cat "$WORK/psql.err" >&2; fail "setting up the aggregations failed"; }
CREATE ROLE fz_owner;
CREATE SCHEMA fz AUTHORIZATION fz_owner;
GRANT EXECUTE ON FUNCTION stoatflow.create_aggregation(text, text, stoatflow.window, text, text, text, interval, text, text, text) TO fz_owner;
GRANT SELECT ON stoatflow_source.$SOURCE TO fz_owner;
SET ROLE fz_owner;
SELECT stoatflow.create_aggregation('victim', '$SOURCE', stoatflow.tumbling('1 minute'),
    'count(*) AS n, sum(amount) AS total', '$VICTIM', retention => '7 days');
RESET ROLE;
SELECT stoatflow.create_aggregation('sibling', '$SOURCE', stoatflow.tumbling('1 minute'),
    'count(*) AS n, sum(amount) AS total', '$SIBLING');
CREATE FUNCTION public.fz_reject() RETURNS trigger LANGUAGE plpgsql AS
    \$\$BEGIN RAISE EXCEPTION 'sink_fuzz: the trigger rejects every row'; END\$\$;
EOF
shape=$(sql "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
               FROM pg_attribute WHERE attrelid = '$VICTIM'::regclass AND attnum > 0 AND NOT attisdropped")
owner=$(sql "SELECT relowner::regrole FROM pg_class WHERE oid = '$VICTIM'::regclass")
log "victim sink $VICTIM ($shape), owner $owner"
[ "$owner" = fz_owner ] || fail "the victim's sink is owned by $owner, not fz_owner"
SINK_DDL="CREATE TABLE $VICTIM ($shape, PRIMARY KEY (key, window_start))"
wait_worker ""
WORKER0=$WORKER_PID
log "worker pid $WORKER0"

# --- probes -------------------------------------------------------------------------------
victim_state() { # prints "status|last_error|sink_owed" of the victim
    psql_try -c "SELECT status, coalesce(last_error, ''), sink_owed FROM stoatflow.stats
                  WHERE aggregation_name = 'victim'" || true
}
victim_log_failures() { grep -c 'stoatflow aggregation "victim": sink write failed' "$SERVER_LOG" || true; }
victim_healthy() { local s; s=$(victim_state); [[ $s == *"||0" ]]; }

# No worker restart: a sink problem must never cost the source its worker.
same_worker() {
    local pid
    pid=$(worker_pid)
    [ "$pid" = "$WORKER0" ] || {
        grep -n "stoatflow source\|terminated\|exited" "$SERVER_LOG" | tail -n 20 >&2
        fail "the source worker changed from pid $WORKER0 to '${pid//$'\n'/ }' (a sink change cost the worker)"
    }
}

max_fresh_ms=0
fresh_checks=0
sibling_fresh() { # wait_caught_up within SIBLING_BOUND, and the sibling's sink holds every event
    local t0 t1 r n
    t0=$(date +%s%3N)
    r=$(sql "SELECT stoatflow.wait_caught_up('$SOURCE', '$SIBLING_BOUND seconds')")
    t1=$(date +%s%3N)
    [ "$r" = t ] || {
        sql "SELECT aggregation_name, status, last_error, sink_owed FROM stoatflow.stats" >&2
        fail "the sibling is stale: wait_caught_up did not return true within ${SIBLING_BOUND}s while the victim is broken ($1)"
    }
    n=$(sql "SELECT coalesce(sum(n), 0) FROM $SIBLING")
    [ "$n" = "$PRODUCED" ] || fail "the sibling's sink holds sum(n) = $n after wait_caught_up, $PRODUCED produced ($1)"
    ((t1 - t0 > max_fresh_ms)) && max_fresh_ms=$((t1 - t0))
    fresh_checks=$((fresh_checks + 1))
}

# --- the changes ----------------------------------------------------------------------------
LOCK_PID=
vsql() { psql_try -c "$1" || { cat "$WORK/psql.err" >&2; fail "sink change failed: $1"; }; }

break_sink() { # break_sink KIND
    case $1 in
    n_text) vsql "ALTER TABLE $VICTIM ALTER COLUMN n TYPE text" ;;
    n_integer) vsql "ALTER TABLE $VICTIM ALTER COLUMN n TYPE integer" ;;
    n_numeric) vsql "ALTER TABLE $VICTIM ALTER COLUMN n TYPE numeric" ;;
    total_integer) vsql "ALTER TABLE $VICTIM ALTER COLUMN total TYPE integer" ;;
    total_text) vsql "ALTER TABLE $VICTIM ALTER COLUMN total TYPE text" ;;
    drop_n) vsql "ALTER TABLE $VICTIM DROP COLUMN n" ;;
    extra_not_null) vsql "ALTER TABLE $VICTIM ADD COLUMN extra integer NOT NULL DEFAULT 0;
                          ALTER TABLE $VICTIM ALTER COLUMN extra DROP DEFAULT" ;;
    check) vsql "ALTER TABLE $VICTIM ADD CONSTRAINT fz_check CHECK (n < 0) NOT VALID" ;;
    trigger) vsql "CREATE TRIGGER fz_reject BEFORE INSERT OR UPDATE ON $VICTIM
                   FOR EACH ROW EXECUTE FUNCTION public.fz_reject()" ;;
    revoke) vsql "REVOKE INSERT, UPDATE ON $VICTIM FROM fz_owner" ;;
    lock)
        local hold
        # longer than the worker's 2 s lock_timeout plus the time to produce and consume a chunk
        hold=$(printf '%d.%d' $((4 + RANDOM % 3)) $((RANDOM % 10)))
        "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$WORK/run" -p "$PG_PORT" -U postgres -d postgres \
            -c "BEGIN; LOCK TABLE $VICTIM IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep($hold); COMMIT" \
            >/dev/null 2>"$WORK/lock.err" &
        LOCK_PID=$!
        wait_until 10 "the background psql to hold the ACCESS EXCLUSIVE lock" lock_held
        ;;
    rename) vsql "ALTER TABLE $VICTIM RENAME TO victim_away" ;;
    drop_create) vsql "DROP TABLE $VICTIM" ;;
    truncate) vsql "TRUNCATE $VICTIM" ;;
    *) fail "unknown change $1" ;;
    esac
}

lock_held() {
    [ "$(psql_try -c "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                       WHERE c.oid = '$VICTIM'::regclass AND l.mode = 'AccessExclusiveLock' AND l.granted
                         AND l.pid <> pg_backend_pid()" || true)" = 1 ]
}

undo_sink() { # undo_sink KIND
    case $1 in
    n_text | n_integer | n_numeric) vsql "ALTER TABLE $VICTIM ALTER COLUMN n TYPE bigint USING n::bigint" ;;
    total_integer | total_text) vsql "ALTER TABLE $VICTIM ALTER COLUMN total TYPE numeric USING total::numeric" ;;
    drop_n) vsql "ALTER TABLE $VICTIM ADD COLUMN n bigint" ;;
    extra_not_null) vsql "ALTER TABLE $VICTIM DROP COLUMN extra" ;;
    check) vsql "ALTER TABLE $VICTIM DROP CONSTRAINT fz_check" ;;
    trigger) vsql "DROP TRIGGER fz_reject ON $VICTIM" ;;
    revoke) vsql "GRANT INSERT, UPDATE ON $VICTIM TO fz_owner" ;;
    lock)
        local deadline=$(($(date +%s) + 15))
        while kill -0 "$LOCK_PID" 2>/dev/null; do
            (($(date +%s) < deadline)) || fail "the background LOCK TABLE psql did not end"
            sleep 0.1
        done
        wait "$LOCK_PID" || { cat "$WORK/lock.err" >&2; fail "the background LOCK TABLE psql failed"; }
        LOCK_PID=
        ;;
    rename) vsql "ALTER TABLE fz.victim_away RENAME TO victim_1m" ;;
    drop_create) vsql "SET ROLE fz_owner; $SINK_DDL; RESET ROLE" ;;
    truncate) ;;
    esac
}

# --- fuzzing ---------------------------------------------------------------------------------
next_chunk=1
deck=()
steps=0
no_wait=0
on_owed=0
fuzz_end=$(($(date +%s) + FUZZ_SECONDS))
# The first round always completes (every kind at least once), however short the time.
while (($(date +%s) < fuzz_end || steps < ${#KINDS[@]})); do
    if ((${#deck[@]} == 0)); then # a new round: every kind once, in random order
        deck=("${KINDS[@]}")
        for ((i = ${#deck[@]} - 1; i > 0; i--)); do
            j=$((RANDOM % (i + 1)))
            t=${deck[i]}; deck[i]=${deck[j]}; deck[j]=$t
        done
    fi
    kind=${deck[0]}
    deck=("${deck[@]:1}")
    steps=$((steps + 1))
    healthy_before=0
    victim_healthy && healthy_before=1
    failures_before=$(victim_log_failures)
    break_sink "$kind"
    applied[$kind]=$((applied[$kind] + 1))
    if ((next_chunk <= FUZZ_CHUNKS)); then produce_chunk "$next_chunk"; next_chunk=$((next_chunk + 1)); fi
    sibling_fresh "change $steps: $kind"
    err=
    if [[ $NO_ERROR_KINDS != *" $kind "* ]]; then
        deadline=$(($(date +%s) + ERROR_WAIT))
        while :; do
            st=$(victim_state)
            IFS='|' read -r _ err _ <<<"$st"
            [ -n "$err" ] && break
            # The error may already be over (a lock released, a retry succeeded) before the
            # next poll: the worker's LOG line for the failed write counts as well.
            if (($(victim_log_failures) > failures_before)); then
                err="(in the log) $(grep 'stoatflow aggregation "victim": sink write failed' "$SERVER_LOG" |
                    tail -n 1 | sed 's/.*retrying in [0-9]* ms: //')"
                break
            fi
            (($(date +%s) < deadline)) || break
            sleep 0.1
        done
        if [ -n "$err" ]; then
            if ((healthy_before)); then errors_seen[$kind]=$((errors_seen[$kind] + 1)); fi
        elif ((healthy_before)); then
            fail "change $steps ($kind) did not make the victim's writes fail within ${ERROR_WAIT}s: stats $(victim_state)"
        fi
    fi
    sleep "0.$((RANDOM % 10))"
    undo_sink "$kind"
    same_worker
    # Mostly let the victim recover; a third of the changes hit a victim that still owes windows.
    waited=no
    if ((RANDOM % 3)); then
        wait_until "$RECOVER_WAIT" "the victim to recover after $kind (stats: $(victim_state))" victim_healthy
        waited=yes
    else
        no_wait=$((no_wait + 1))
    fi
    ((healthy_before)) || on_owed=$((on_owed + 1))
    log "change $steps: $kind (victim $( ((healthy_before)) && echo healthy || echo owing) before); produced $PRODUCED; sibling fresh; victim error: ${err:0:100}${err:+...}; recovered: $waited"
done
log "fuzzing done: $steps changes ($on_owed of them while the victim still owed windows), $fresh_checks sibling checks (slowest wait_caught_up ${max_fresh_ms} ms)"

# --- repair ------------------------------------------------------------------------------------
now_shape=$(sql "SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
                   FROM pg_attribute WHERE attrelid = '$VICTIM'::regclass AND attnum > 0 AND NOT attisdropped")
log "victim sink after the fuzzing: ($now_shape)"
wait_until "$RECOVER_WAIT" "the victim to recover after the fuzzing (stats: $(victim_state))" victim_healthy
resynced=$(sql "SELECT stoatflow.resync_sink('victim')")
log "resync_sink('victim') rewrote $resynced windows"
produce_chunks "$next_chunk" $((NCHUNKS - 1))
next_chunk=$NCHUNKS
wait_caught_up
log "caught up: $PRODUCED events produced"
wait_until "$RECOVER_WAIT" "the victim to be healthy at the end (stats: $(victim_state))" victim_healthy
same_worker
verify_sink "$SIBLING" sibling
sibling_rows=$VERIFY_ROWS
verify_sink "$VICTIM" victim
check_log
exits=$(grep -c "exited with exit code" "$SERVER_LOG" || true)
[ "$exits" = 0 ] || { grep -n "exited with exit code" "$SERVER_LOG" >&2; fail "a background process exited with an error"; }
counts=""
for k in "${KINDS[@]}"; do counts+=" $k=${applied[$k]}/${errors_seen[$k]}"; done
log "changes applied / that made a healthy victim's writes fail:$counts"
log "RESULT seed=$SEED seconds=$FUZZ_SECONDS events=$EVENTS changes=$steps sibling_rows=$sibling_rows victim_rows=$VERIFY_ROWS resynced=$resynced max_sibling_wait_ms=$max_fresh_ms match=yes"
faults_pass
