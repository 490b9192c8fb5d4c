#!/usr/bin/env bash
# Fault scenario 4: graceful stop (pg_ctl stop -m fast: the worker gets SIGTERM, commits
# what it consumed and exits) in the middle of the stream, then start again. The worker
# must exit cleanly, come back by itself, and the sink must end equal to the independent
# computation.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin sigterm
EVENTS=${SIGTERM_EVENTS:-60000}
KEYS=1024
NCHUNKS=6
STOP_AFTER=3        # chunk after which the server is stopped...
STOP_DELAY=0.2      # ...after this pause (s), while the worker consumes that chunk

start_stream 404
log "worker pid $WORKER_PID"
for ((c = 1; c < NCHUNKS; c++)); do
    wait_warm
    produce_chunk "$c"
    if ((c == STOP_AFTER)); then
        sleep "$STOP_DELAY"
        old=$WORKER_PID
        at=$(committed)
        t=$(date +%s.%N)
        pg_stop fast
        took=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
        pg_start
        after=$(committed)
        wait_worker "$old"
        log "stop -m fast after chunk $c took ${took}s: committed $at of $PRODUCED before, $after at restart; worker pid $old -> $WORKER_PID"
    fi
done

wait_caught_up
log "caught up"
verify_sink
check_log
# SPEC 6: the worker stops cleanly on SIGTERM (a non-zero exit is logged by the postmaster).
bad=$(grep -n 'background worker "stoatflow.*exited with exit code' "$SERVER_LOG" || true)
[ -z "$bad" ] || { echo "$bad" >&2; fail "a stoatflow worker did not exit cleanly on SIGTERM"; }
log "RESULT events=$EVENTS graceful_stops=1 rows_compared=$VERIFY_ROWS match=yes"
faults_pass
