#!/usr/bin/env bash
# Fault scenario 4: graceful stop (pg_ctl stop -m fast: the worker gets SIGTERM, commits
# what it consumed and exits) in the middle of the stream, then start again.
#
# What it asserts about the SIGTERM commit: for the chunk before the stop, regular commits
# are held off (stoatflow.commit_interval = 60s via ALTER SYSTEM + reload), the chunk is
# produced, and after a pause in which the warm worker consumes it (it reads 10,000 records
# in well under a second) the committed offsets must still equal exactly what was produced
# *before* that chunk. Then `pg_ctl stop -m fast`, and the offsets made durable by the stop
# must equal everything produced: only the worker's final commit on SIGTERM can have moved
# them (no regular commit was due, and nothing else writes them). The server log must also
# show that final commit (stoatflow.log_commits) after the shutdown request, carrying
# exactly the chunk's records. The durable offsets are read with the server started with
# shared_preload_libraries = '' : without the library there is no launcher and no source
# worker, so nothing can consume or commit while we look (reading them after a normal start
# would race the restarted worker, which would commit the chunk itself). Then the setting
# is reset, the server started normally, the rest of the stream produced, and the sink must
# end equal to the independent computation; the worker must have exited cleanly.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin sigterm
EVENTS=${SIGTERM_EVENTS:-60000}
KEYS=1024
NCHUNKS=6
STOP_AFTER=3                                # chunk after which the server is stopped...
CONSUME_WAIT=${SIGTERM_CONSUME_WAIT:-3}     # ...this long (s) after it was produced
HOLD_INTERVAL=60                            # s: commit_interval while that chunk is consumed

# Starts the server without stoatflow loaded: no launcher, no worker (see above).
pg_start_without_worker() {
    "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -l "$SERVER_LOG" -w -t "$START_TIMEOUT" \
        -o "-c shared_preload_libraries=''" start >"$WORK/pg_ctl.out" 2>&1 ||
        { cat "$WORK/pg_ctl.out" >&2; fail "pg_ctl start (without stoatflow) failed"; }
}

start_stream 404
log "worker pid $WORKER_PID"
for ((c = 1; c < NCHUNKS; c++)); do
    wait_warm
    if ((c != STOP_AFTER)); then
        produce_chunk "$c"
        continue
    fi

    # Hold off regular commits. The worker applies a reload at its next step (a poll is at
    # most 0.1 s); the assertion before the stop checks that it did.
    sql "ALTER SYSTEM SET stoatflow.commit_interval = '${HOLD_INTERVAL}s'" >/dev/null
    sql "ALTER SYSTEM SET stoatflow.log_commits = on" >/dev/null
    sql "SELECT pg_reload_conf()" >/dev/null
    sleep 1
    before=$PRODUCED
    t_produce=$(date +%s)
    produce_chunk "$c"
    chunk_events=$((PRODUCED - before))
    sleep "$CONSUME_WAIT"
    at=$(committed)
    [ "$at" = "$before" ] ||
        fail "with commit_interval = ${HOLD_INTERVAL}s the committed offsets are $at ${CONSUME_WAIT}s after producing chunk $c; expected exactly the $before events produced before it (a commit was not held off)"
    one_worker_pid
    old=$VICTIM
    shutdown_line=$(($(wc -l <"$SERVER_LOG") + 1))
    t=$(date +%s.%N)
    pg_stop fast
    took=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    # A regular commit is due HOLD_INTERVAL s after the last one (before the chunk): the
    # stop must come well before that, or a regular commit could explain the offsets.
    (($(date +%s) - t_produce < HOLD_INTERVAL - 10)) ||
        fail "the stop came too late ($(($(date +%s) - t_produce))s after the chunk) to tell the SIGTERM commit from a regular one"

    pg_start_without_worker
    durable=$(sql "SELECT coalesce(sum(po.next_offset), 0) FROM stoatflow.partition_offset po
                     JOIN stoatflow.source s USING (source_id) WHERE s.source_name = '$SOURCE'")
    workers=$(sql "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow%'")
    [ "$workers" = 0 ] || fail "a stoatflow process runs although the library is not loaded"
    sql "ALTER SYSTEM RESET stoatflow.commit_interval" >/dev/null
    sql "ALTER SYSTEM RESET stoatflow.log_commits" >/dev/null
    pg_stop fast
    log "stop -m fast after chunk $c took ${took}s: committed $before of $PRODUCED before the stop (the chunk's $chunk_events held uncommitted), $durable durable after it"
    [ "$durable" = "$PRODUCED" ] ||
        fail "SIGTERM did not commit what was consumed: durable offsets $durable after pg_ctl stop -m fast, $PRODUCED produced ($before committed before the stop)"
    # The final commit itself, in the log of the shutdown: the worker's (pid $old) last
    # commit line after the shutdown request, with exactly the chunk's records.
    final_line=$(tail -n +"$shutdown_line" "$SERVER_LOG" |
        sed -n '/received fast shutdown request/,$p' |
        grep "\[$old\].*stoatflow commit: source=$SOURCE " | tail -n 1 || true)
    [ -n "$final_line" ] || fail "no commit of worker $old logged after the fast shutdown request"
    final_records=$(sed -n 's/.* records=\([0-9]*\) .*/\1/p' <<<"$final_line")
    [ "$final_records" = "$chunk_events" ] ||
        fail "the SIGTERM commit carried $final_records records, the chunk had $chunk_events: $final_line"
    log "SIGTERM commit logged: $(sed 's/.*stoatflow commit: //' <<<"$final_line")"

    pg_start
    wait_worker "$old"
    log "restarted; worker pid $old -> $WORKER_PID, committed $(committed)"
done

wait_caught_up
log "caught up"
verify_sink
check_log
# README "Operations": the worker stops cleanly on SIGTERM (a non-zero exit is logged by the postmaster).
bad=$(grep -n 'background worker "stoatflow.*exited with exit code' "$SERVER_LOG" || true)
[ -z "$bad" ] || { echo "$bad" >&2; fail "a stoatflow worker did not exit cleanly on SIGTERM"; }
log "RESULT events=$EVENTS graceful_stops=1 sigterm_commit_records=$chunk_events rows_compared=$VERIFY_ROWS match=yes"
faults_pass
