#!/usr/bin/env bash
# Fault scenario 1: kill -9 of the source worker, again and again, while the stream runs.
# 200,000 events over 1,024 keys and 4 partitions, produced in 10 chunks; after each chunk
# (after a varying pause, so the worker is caught at different points: consuming,
# committing, restoring) the source worker gets SIGKILL. The postmaster then runs crash
# recovery and restarts everything; we wait for the new worker before going on. At the end
# the sink must equal the independent computation row for row.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin kill9
EVENTS=${KILL9_EVENTS:-200000}
KEYS=${KILL9_KEYS:-1024}
NCHUNKS=10
# Before most kills the worker has caught up (warm, idle); then the next chunk goes in and
# the kill follows after a pause (s), so it lands while the worker consumes and commits
# that chunk. Before kills 3 and 7 the new worker gets no such time: it is still starting
# up or restoring when it dies.
NO_WARMUP_KILLS=" 2 6 "
DELAYS=(0.4 0.05 0 0.25 0.1 0.5 0 0.15 0.35 0.2)

start_stream 101
pids=("$WORKER_PID")
log "worker pid $WORKER_PID; $PRODUCED events in Kafka"

for ((c = 0; c < NCHUNKS; c++)); do
    if ((c > 0)); then
        if [[ $NO_WARMUP_KILLS != *" $c "* ]]; then wait_warm; fi
        produce_chunk "$c"
    fi
    sleep "${DELAYS[$c]}"
    one_worker_pid
    victim=$VICTIM
    at=$(committed)
    kill -9 "$victim" || fail "kill -9 $victim failed"
    KILLED_PIDS+=("$victim")
    wait_worker "$victim"
    pids+=("$WORKER_PID")
    # What the dead worker left committed, read once crash recovery is done.
    log "kill $((c + 1)): SIGKILL pid $victim (committed $at of $PRODUCED when killed, $(committed) after recovery); new worker pid $WORKER_PID"
done

wait_caught_up
log "caught up"
verify_sink
check_log
distinct=$(printf '%s\n' "${pids[@]}" | sort -u | wc -l)
restarts=$((distinct - 1))
[ "$restarts" -ge "${#KILLED_PIDS[@]}" ] || fail "only $restarts worker restarts for ${#KILLED_PIDS[@]} kills"
log "RESULT events=$EVENTS keys=$KEYS partitions=$PARTITIONS kills=${#KILLED_PIDS[@]} worker_restarts=$restarts rows_compared=$VERIFY_ROWS match=yes"
faults_pass
