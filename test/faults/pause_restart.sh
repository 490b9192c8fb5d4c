#!/usr/bin/env bash
# Fault scenario: a paused source across a server restart (README "Pausing a source"). The
# pause is catalog state: after pg_ctl restart -m immediate the new worker must stay paused
# (the committed offsets do not move for 3 s while a produced chunk waits, status 'paused' in
# stoatflow.sources and in the worker's own status), and wait_caught_up must return false at
# once. After resume_source the waiting records are consumed, once each: the sink must end
# equal to the independent computation.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin pause_restart
EVENTS=${PAUSE_EVENTS:-60000}  # an event-time span past max_out_of_orderness: windows close
KEYS=512
NCHUNKS=6

worker_status() { # the worker's own status (stoatflow.sources shows the catalog's pause at once)
    psql_try -c "SELECT st.status FROM stoatflow.source_status st JOIN stoatflow.source s USING (source_id)
                  WHERE s.source_name = '$SOURCE'" || true
}
worker_paused() { [ "$(worker_status)" = paused ]; }
offsets_stay() { # offsets_stay AT SECONDS: the committed offsets stay at AT for that long
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        [ "$(committed)" = "$1" ] || fail "paused, yet the committed offsets moved from $1 to $(committed)"
        sleep 0.2
    done
}

start_stream 606
wait_warm
produce_chunk 1
wait_warm
sql "SELECT stoatflow.pause_source('$SOURCE')" >/dev/null
[ "$(sql "SELECT DISTINCT status FROM stoatflow.sources WHERE source_name = '$SOURCE'")" = paused ] ||
    fail "stoatflow.sources does not show 'paused' right after pause_source: $(source_status)"
wait_until 20 "the worker to show 'paused'" worker_paused
at=$(committed)
produce_chunk 2
offsets_stay "$at" 3
log "paused at $at of $PRODUCED produced; offsets stayed for 3 s"

old=$WORKER_PID
pg_restart immediate
wait_worker "$old"
wait_until 20 "the restarted worker to show 'paused'" worker_paused
offsets_stay "$at" 3
[ "$(sql "SELECT DISTINCT status FROM stoatflow.sources WHERE source_name = '$SOURCE'")" = paused ] ||
    fail "after the restart stoatflow.sources shows $(source_status), not paused"
t=$(date +%s.%N)
r=$(sql "SELECT stoatflow.wait_caught_up('$SOURCE', '30 seconds')")
took=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ "$r" = f ] || fail "wait_caught_up on a paused source returned '$r'"
awk -v t="$took" 'BEGIN { exit !(t < 5) }' || fail "wait_caught_up on a paused source took ${took}s"
log "restarted (-m immediate): worker pid $old -> $WORKER_PID still paused at $at; wait_caught_up false in ${took}s"

sql "SELECT stoatflow.resume_source('$SOURCE')" >/dev/null
for ((c = 3; c < NCHUNKS; c++)); do produce_chunk "$c"; done
wait_caught_up
log "resumed and caught up: committed $(committed) of $PRODUCED"
verify_sink
check_log
log "RESULT events=$EVENTS paused_restarts=1 rows_compared=$VERIFY_ROWS match=yes"
faults_pass
