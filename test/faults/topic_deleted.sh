#!/usr/bin/env bash
# Fault scenario (Apache Kafka only): the topic is deleted under a running source.
# Six chunks (72 min of event time: windows close) go in and are committed; then `kafka_topic_delete`. Within ERROR_TIMEOUT the
# source must show status 'error' with a last_error; PostgreSQL must not crash; the worker
# must not spin: over BUSY_WINDOW_S seconds its CPU time (and that of any worker replacing it)
# must stay under BUSY_MAX_CPU_S; wait_caught_up must honour its timeout. What was committed
# before the deletion stays exact in the sink.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin topic_deleted
require_kafka "the mock cannot delete topics"
EVENTS=${TOPIC_EVENTS:-30000}
KEYS=1024
NCHUNKS=6
ERROR_TIMEOUT=60   # s: the deletion must show within this
BUSY_WINDOW_S=10   # s: CPU time of the source worker measured over this...
BUSY_MAX_CPU_S=2   # ...must stay under this (a busy loop would take ~BUSY_WINDOW_S)
WAIT_BOUND_S=20

start_stream 707
for ((c = 1; c < NCHUNKS; c++)); do
    wait_warm
    produce_chunk "$c"
done
wait_caught_up
log "all $PRODUCED events committed; deleting topic $TOPIC"
kafka_topic_delete "$TOPIC" || fail "could not delete the topic"
t=$(date +%s)
status_error() { [[ $(source_status) == error\|?* ]]; }
wait_until "$ERROR_TIMEOUT" "status 'error' with a last_error after the topic was deleted" status_error
log "status after $(($(date +%s) - t))s: $(source_status)"

cpu_ticks() { # utime + stime of a pid, in clock ticks (0 if gone)
    awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
hz=$(getconf CLK_TCK)
pids_seen=" "
ticks=0
declare -A first
end=$(($(date +%s) + BUSY_WINDOW_S))
while [ "$(date +%s)" -lt "$end" ]; do
    for pid in $(worker_pid); do
        if [ -z "${first[$pid]:-}" ]; then first[$pid]=$(cpu_ticks "$pid"); pids_seen+="$pid "; fi
        last=$(cpu_ticks "$pid")
        [ "$last" = 0 ] || eval "last_$pid=$last"
    done
    sleep 0.5
done
for pid in $pids_seen; do
    v="last_$pid"
    ticks=$((ticks + ${!v:-${first[$pid]}} - first[$pid]))
done
cpu=$(awk -v t="$ticks" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }')
log "worker pid(s) over ${BUSY_WINDOW_S}s:${pids_seen}CPU ${cpu}s; status $(source_status)"
awk -v c="$cpu" -v m="$BUSY_MAX_CPU_S" 'BEGIN { exit !(c < m) }' ||
    fail "the source worker spins after the topic was deleted: ${cpu}s CPU in ${BUSY_WINDOW_S}s"

t=$(date +%s)
r=$(timeout "$WAIT_BOUND_S" "$PG_BIN/psql" -X -q -At -h "$WORK/run" -p "$PG_PORT" -U postgres -d postgres \
    -c "SELECT stoatflow.wait_caught_up('$SOURCE', '2 seconds')" 2>"$WORK/wait.err") ||
    { cat "$WORK/wait.err" >&2; fail "wait_caught_up with the topic deleted did not return within ${WAIT_BOUND_S}s"; }
log "wait_caught_up('2 seconds') with the topic deleted: $r after $(($(date +%s) - t))s"
verify_sink
check_log
log "RESULT events=$EVENTS topic_deleted=1 worker_cpu_s=$cpu rows_compared=$VERIFY_ROWS match=yes"
faults_pass
