#!/usr/bin/env bash
# Fault scenario (Apache Kafka only): the broker process dies and hangs mid-stream. After
# chunk 2 the broker is SIGKILLed as soon as the chunk went in (the worker is consuming it)
# and started again (log recovery, same port, same data); after chunk 4 it is SIGSTOPped
# for 30 s (BROKER_PAUSE_S): the port stays open and nothing answers, so the client sees
# timeouts, not "connection refused". Meanwhile wait_caught_up must honour its timeout, the
# worker must stay, PostgreSQL must not crash; the status must turn 'error' during the hang. Afterwards the sink
# must end equal to the independent computation and the source 'running'.
# With the mock broker (which has no process to kill and keep the data of) it is skipped.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin broker_kill
require_kafka "a broker process to SIGKILL and SIGSTOP"
EVENTS=${BROKER_EVENTS:-60000}
KEYS=1024
NCHUNKS=6
KILL_AFTER=2          # chunk after which the broker is SIGKILLed...
PAUSE_AFTER=4         # ...and after which it is SIGSTOPped
PAUSE_S=${BROKER_PAUSE_S:-30}
FAULT_DELAY=${BROKER_FAULT_DELAY:-0} # s between a chunk produced and the fault
WAIT_TIMEOUT_S=2      # wait_caught_up timeout while the broker is paused...
WAIT_BOUND_S=20       # ...and the wall-clock bound it must return within

start_stream 505
log "worker pid $WORKER_PID"

for ((c = 1; c < NCHUNKS; c++)); do
    wait_warm
    produce_chunk "$c"
    if ((c == KILL_AFTER)); then
        sleep "$FAULT_DELAY"
        at=$(committed)
        kafka_broker_kill || fail "kafka_broker_kill failed"
        log "broker SIGKILLed after chunk $c (committed $at of $PRODUCED)"
        sleep 2
        log "source while the broker is dead: $(source_status)"
        t=$(date +%s.%N)
        kafka_broker_up || fail "the broker did not come back after SIGKILL"
        log "broker up again after $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s; worker pid $(worker_pid); source $(source_status)"
    fi
    if ((c == PAUSE_AFTER)); then
        sleep "$FAULT_DELAY"
        at=$(committed)
        kafka_broker_pause || fail "kafka_broker_pause failed"
        t0=$(date +%s)
        log "broker SIGSTOPped after chunk $c (committed $at of $PRODUCED) for ${PAUSE_S}s"
        t=$(date +%s)
        r=$(timeout "$WAIT_BOUND_S" "$PG_BIN/psql" -X -q -At -h "$WORK/run" -p "$PG_PORT" -U postgres -d postgres \
            -c "SELECT stoatflow.wait_caught_up('$SOURCE', '$WAIT_TIMEOUT_S seconds')" 2>"$WORK/wait.err") ||
            { cat "$WORK/wait.err" >&2; fail "wait_caught_up with the broker paused did not return within ${WAIT_BOUND_S}s"; }
        log "wait_caught_up('$WAIT_TIMEOUT_S seconds') with the broker paused: $r after $(($(date +%s) - t))s"
        hung_shown=
        while (($(date +%s) - t0 < PAUSE_S)); do
            sleep 5
            [ -n "$(worker_pid)" ] || fail "no source worker while the broker is paused"
            st=$(source_status)
            log "paused $(($(date +%s) - t0))s: committed $(committed) of $PRODUCED, source $st"
            [[ -n $hung_shown || $st != error\|?* ]] || hung_shown=$(($(date +%s) - t0))
        done
        # The worker probes the broker every 10 s (2 s timeout): a hang shows within ~12 s.
        [ -n "$hung_shown" ] || fail "the hung broker never showed as status 'error' in ${PAUSE_S}s"
        log "the hung broker showed as status 'error' after ${hung_shown}s" 
        kafka_broker_resume || fail "kafka_broker_resume failed"
        log "broker resumed; worker pid $(worker_pid)"
    fi
done

wait_caught_up
log "caught up"
status_running() { [[ $(source_status) == running\|* ]]; }
wait_until 60 "status 'running' after the broker faults" status_running
log "status after recovery: $(source_status)"
verify_sink
check_log
log "RESULT events=$EVENTS broker_sigkills=1 broker_pause_s=$PAUSE_S rows_compared=$VERIFY_ROWS match=yes"
faults_pass
