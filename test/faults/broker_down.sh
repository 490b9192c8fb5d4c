#!/usr/bin/env bash
# Fault scenario 3: the Kafka brokers go away in the middle of the stream. The source must
# show status 'error' with a last_error within 30 s, wait_caught_up must honour its
# timeout meanwhile, and PostgreSQL must not crash. Nothing is produced while the brokers
# are down; once they are back the rest of the stream goes in and the sink must end equal
# to the independent computation, with the source 'running' again.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin broker_down
EVENTS=${BROKER_EVENTS:-60000}
KEYS=1024
NCHUNKS=6
DOWN_AFTER=3          # chunk after which the brokers go down...
DOWN_DELAY=0.1        # ...after this pause (s), while the worker consumes that chunk
ERROR_TIMEOUT=30      # s: the source must report the outage within this
DOWN_EXTRA=5          # s: stay down this much longer (the worker retries, backs off)
WAIT_TIMEOUT_S=2      # wait_caught_up timeout while down...
WAIT_BOUND_S=20       # ...and the wall-clock bound it must return within

start_stream 303
log "worker pid $WORKER_PID"

status_is() { # status_is STATUS [nonempty]: every row of the source has STATUS (and a last_error)
    local s
    s=$(source_status)
    [ -n "$s" ] || return 1
    [ "$(wc -l <<<"$s")" = 1 ] || return 1
    [[ $s == "$1|"* ]] || return 1
    if [ "${2:-}" = nonempty ]; then [ -n "${s#*|}" ]; fi
}

for ((c = 1; c < NCHUNKS; c++)); do
    wait_warm
    produce_chunk "$c"
    if ((c == DOWN_AFTER)); then
        sleep "$DOWN_DELAY"
        at=$(committed)
        broker_down || fail "broker_down failed"
        t=$(date +%s)
        log "brokers down after chunk $c (committed $at of $PRODUCED)"
        wait_until "$ERROR_TIMEOUT" "status 'error' with a last_error while the brokers are down" \
            status_is error nonempty
        log "status error after $(($(date +%s) - t))s: $(source_status)"

        t=$(date +%s)
        r=$(timeout "$WAIT_BOUND_S" "$PG_BIN/psql" -X -q -At -h "$WORK/run" -p "$PG_PORT" -U postgres -d postgres \
            -c "SELECT stoatflow.wait_caught_up('$SOURCE', '$WAIT_TIMEOUT_S seconds')" 2>"$WORK/wait.err") ||
            { cat "$WORK/wait.err" >&2; fail "wait_caught_up with the brokers down did not return within ${WAIT_BOUND_S}s"; }
        [ "$r" = f ] || fail "wait_caught_up returned '$r' with the brokers down (want f)"
        log "wait_caught_up('$WAIT_TIMEOUT_S seconds') with brokers down: f after $(($(date +%s) - t))s"

        sleep "$DOWN_EXTRA"
        status_is error nonempty || fail "status left 'error' while the brokers are still down: $(source_status)"
        [ -n "$(worker_pid)" ] || fail "no source worker while the brokers are down"
        broker_up || fail "broker_up failed"
        log "brokers up; worker pid $(worker_pid); server still up, source $(source_status)"
    fi
done

wait_caught_up
log "caught up"
wait_until 30 "status 'running' after the brokers came back" status_is running
log "status after recovery: $(source_status)"
# last_error stays after recovery (README "Views and tables"): the outage is still on record
status_is running nonempty || fail "last_error was cleared by the recovery: $(source_status)"
verify_sink
check_log
log "RESULT events=$EVENTS broker_outages=1 rows_compared=$VERIFY_ROWS match=yes"
faults_pass
