#!/usr/bin/env bash
# Fault scenario: a worker over stoatflow.worker_memory_limit (README "Security"). With the limit far below
# what the stream's open windows need, the worker must stop consuming (the committed offsets stop
# short of what was produced and stay there) with status 'error' and a message naming the limit
# and the aggregation holding the most state — never grow until the kernel kills it. Raised (a
# reload, no restart), the source resumes by itself and the sink ends exact.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin memory_limit
EVENTS=${MEMORY_EVENTS:-60000}
KEYS=20000
NCHUNKS=6          # 6 x 12 minutes of event time: windows older than the hour of out-of-orderness close
LIMIT_KB=2048      # far below the state of 20,000 keys with an hour of open windows
STOP_TIMEOUT=60    # s: the source must report the limit within this
HOLD_S=5           # s: and consume nothing more for at least this long

gen_events 404 "$EVENTS" "$KEYS" "$NCHUNKS"
broker_start "$TOPIC:$PARTITIONS" || fail "the $TEST_BROKER broker did not start"
pg_init
pg_start
sql "ALTER SYSTEM SET stoatflow.worker_memory_limit = '${LIMIT_KB}kB'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
produce_chunk 0
setup_pipeline
wait_worker ""
log "worker pid $WORKER_PID; limit ${LIMIT_KB} kB"

stopped() {
    local s
    s=$(source_status)
    [[ $s == "error|"*"worker_memory_limit"* ]]
}
wait_until "$STOP_TIMEOUT" "status 'error' naming stoatflow.worker_memory_limit" stopped
s=$(source_status)
log "status: $s"
[[ $s == *'"agg"'* ]] || fail "the message does not name the aggregation holding the most state: $s"
agg_status() { sql "SELECT status || '|' || coalesce(last_error, '') FROM stoatflow.stats WHERE aggregation_name = 'agg'"; }
a=$(agg_status)
[[ $a == "error|"*"worker_memory_limit"* ]] || fail "the aggregation holding the most state does not show the stop: stats says '$a'"
at=$(committed)
for ((c = 1; c < NCHUNKS; c++)); do produce_chunk "$c"; done
[ "$at" != "?" ] && ((at < PRODUCED)) || fail "committed $at of $PRODUCED: the worker did not stop short"
sleep "$HOLD_S"
again=$(committed)
[ "$again" = "$at" ] || fail "the worker kept consuming over the limit: committed $at, then $again"
[ -n "$(worker_pid)" ] || fail "no source worker while over the limit"
log "stopped at $at of $PRODUCED committed, unchanged for ${HOLD_S}s"

sql "ALTER SYSTEM SET stoatflow.worker_memory_limit = 0" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
wait_caught_up
running() { [[ $(source_status) == "running|"* ]]; }
wait_until 30 "status 'running' once the limit is lifted" running
log "caught up after the limit was lifted: $(source_status)"
agg_running() { [[ $(agg_status) == "running|"* ]]; }
wait_until 30 "the aggregation's status 'running' again" agg_running
verify_sink
check_log
log "RESULT events=$EVENTS stopped_at=$at rows_compared=$VERIFY_ROWS match=yes"
faults_pass
