#!/usr/bin/env bash
# Fault scenario 2: PostgreSQL restarted in immediate mode (every process SIGQUIT, no
# shutdown checkpoint, crash recovery at start) twice while the stream runs. The worker
# must come back by itself and the sink must end equal to the independent computation.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin restart_immediate
EVENTS=${RESTART_EVENTS:-60000}
KEYS=1024
NCHUNKS=6
RESTART_AFTER=" 2 4 "      # restart right after producing these chunks...
DELAYS=(0 0 0.3 0 0 0)     # ...after this pause (s): the first lands mid-chunk, the second at once

start_stream 202
log "worker pid $WORKER_PID"
restarts=0
for ((c = 1; c < NCHUNKS; c++)); do
    wait_warm
    produce_chunk "$c"
    if [[ $RESTART_AFTER == *" $c "* ]]; then
        sleep "${DELAYS[$c]}"
        old=$WORKER_PID
        at=$(committed)
        pg_restart immediate
        restarts=$((restarts + 1))
        wait_worker "$old"
        log "restart $restarts (-m immediate) after chunk $c: committed $at of $PRODUCED before, $(committed) after; worker pid $old -> $WORKER_PID"
    fi
done
((restarts == 2)) || fail "expected 2 immediate restarts, did $restarts"

wait_caught_up
log "caught up"
verify_sink
check_log
log "RESULT events=$EVENTS immediate_restarts=$restarts rows_compared=$VERIFY_ROWS match=yes"
faults_pass
