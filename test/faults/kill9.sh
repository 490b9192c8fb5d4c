#!/usr/bin/env bash
# Fault scenario 1: kill -9 of the source worker, again and again, while the stream runs.
# 200,000 events over 1,024 keys and 4 partitions, produced in 10 chunks; after each chunk
# (after a varying pause, so the worker is caught at different points: consuming,
# committing, restoring) the source worker gets SIGKILL. The postmaster then runs crash
# recovery and restarts everything; we wait for the new worker before going on. At the end
# the sinks (tumbling 1 min, and session gap 30 s) must equal the independent computation row
# for row.
#
# Kills must hit data in flight, or they test nothing: for each kill we read what it left
# committed (the offsets crash recovery leaves are exactly those committed at the instant
# of the kill, as long as the new worker has not committed yet: source_progress.committed_at,
# written by every commit with the offsets, must be older than the kill). A kill whose
# committed offsets are below the events produced by then hit produced-or-consumed but
# uncommitted data; at least KILL9_MIN_UNCOMMITTED (6) of the 10 kills must. A kill whose
# state could not be read before the new worker committed counts as not hitting.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin kill9
EVENTS=${KILL9_EVENTS:-200000}
KEYS=${KILL9_KEYS:-1024}
NCHUNKS=10
# Before most kills the worker has caught up (warm, idle); then the next chunk goes in and
# the kill follows after a pause (s), so it lands while the worker consumes and commits
# that chunk (a warm worker has usually committed a 20,000-event chunk 0.1-0.35 s after it
# was produced, so the pauses stay below 0.3 s). Kill 1 hits the first worker right after
# it appeared; before kills 3 and 7 the new worker gets no time either: it is still
# starting up or restoring when it dies.
NO_WARMUP_KILLS=" 2 6 "
DELAYS=(0 0.05 0 0.25 0.1 0.3 0 0.15 0.05 0.2)
MIN_UNCOMMITTED=${KILL9_MIN_UNCOMMITTED:-6}
# A session aggregation beside the tumbling one: sessions grow and (an hour behind) close
# across the kills too (each key's records arrive in time order: no merges here; the unit
# tests' differential runs cover merges and late records across restarts).
SESSION_GAP='30 seconds'
SESSION_GAP_MS=30000

# Sets AT_KILL to the committed offsets' sum left by a kill at KILL_MS (ms since the epoch),
# or to "?" if the new worker committed before we could look; polls through crash recovery.
AT_KILL=
read_at_kill() { # read_at_kill KILL_MS
    local deadline=$(($(date +%s) + START_TIMEOUT)) out sum at_ms
    while :; do
        if out=$(psql_try -c "SELECT (SELECT coalesce(sum(po.next_offset), 0) FROM stoatflow.partition_offset po
                                        JOIN stoatflow.source s USING (source_id) WHERE s.source_name = '$SOURCE'),
                                     (SELECT coalesce((extract(epoch FROM max(pr.committed_at)) * 1000)::bigint, 0)
                                        FROM stoatflow.source_progress pr
                                        JOIN stoatflow.source s USING (source_id) WHERE s.source_name = '$SOURCE')"); then
            IFS='|' read -r sum at_ms <<<"$out"
            if [[ $sum =~ ^[0-9]+$ && $at_ms =~ ^[0-9]+$ ]]; then
                if ((at_ms < $1)); then AT_KILL=$sum; else AT_KILL="?"; fi
                return
            fi
        fi
        (($(date +%s) < deadline)) || fail "the server did not accept connections within ${START_TIMEOUT}s of a kill"
        sleep 0.05
    done
}

start_stream 101
pids=("$WORKER_PID")
uncommitted_kills=0
unknown=0
log "worker pid $WORKER_PID; $PRODUCED events in Kafka"

for ((c = 0; c < NCHUNKS; c++)); do
    if ((c > 0)) && [[ $NO_WARMUP_KILLS != *" $c "* ]]; then wait_warm; fi
    # The victim is looked up before the chunk goes in, so nothing but the pause separates
    # the chunk from the kill.
    one_worker_pid
    victim=$VICTIM
    if ((c > 0)); then produce_chunk "$c"; fi
    sleep "${DELAYS[$c]}"
    kill_ms=$(date +%s%3N)
    kill -9 "$victim" || fail "kill -9 $victim failed"
    KILLED_PIDS+=("$victim")
    read_at_kill "$kill_ms"
    if [ "$AT_KILL" = "?" ]; then
        hit="unknown (the new worker committed first)"
        unknown=$((unknown + 1))
    elif ((AT_KILL < PRODUCED)); then
        hit="$((PRODUCED - AT_KILL)) events uncommitted"
        uncommitted_kills=$((uncommitted_kills + 1))
    else
        hit="all committed"
    fi
    wait_worker "$victim"
    pids+=("$WORKER_PID")
    log "kill $((c + 1)): SIGKILL pid $victim: committed $AT_KILL of $PRODUCED at the kill, $hit; new worker pid $WORKER_PID"
done
log "kills on uncommitted data: $uncommitted_kills of ${#KILLED_PIDS[@]} ($unknown unknown; need >= $MIN_UNCOMMITTED)"
((uncommitted_kills >= MIN_UNCOMMITTED)) ||
    fail "only $uncommitted_kills of ${#KILLED_PIDS[@]} kills hit produced but uncommitted data (need >= $MIN_UNCOMMITTED): the kills test little"

wait_caught_up
log "caught up"
verify_sink
verify_session_sink
check_log
distinct=$(printf '%s\n' "${pids[@]}" | sort -u | wc -l)
restarts=$((distinct - 1))
[ "$restarts" -ge "${#KILLED_PIDS[@]}" ] || fail "only $restarts worker restarts for ${#KILLED_PIDS[@]} kills"
log "RESULT events=$EVENTS keys=$KEYS partitions=$PARTITIONS kills=${#KILLED_PIDS[@]} uncommitted_kills=$uncommitted_kills worker_restarts=$restarts rows_compared=$VERIFY_ROWS match=yes"
faults_pass
