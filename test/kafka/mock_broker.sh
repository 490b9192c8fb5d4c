# shellcheck shell=bash
# Sourceable helper: runs stoatflow-mock-broker (a librdkafka mock Kafka cluster
# on 127.0.0.1) in the background for process-level tests, and stops it again.
#
#   source test/kafka/mock_broker.sh
#   trap mock_broker_stop EXIT
#   mock_broker_start [--brokers N] TOPIC:PARTITIONS...   # exports KAFKA_BROKERS
#   mock_broker_down; mock_broker_up                        # broker fault tests
#
# Call mock_broker_start from the test's own shell, not from $( ) or a pipe:
# the broker must be a child of the shell that later waits for it.

_mock_broker_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MOCK_BROKER=${MOCK_BROKER:-$_mock_broker_root/build/stoatflow-mock-broker}
MOCK_BROKER_TIMEOUT=${MOCK_BROKER_TIMEOUT:-10}   # seconds, for every wait below
MOCK_BROKER_PID=
MOCK_BROKER_DIR=

_mock_broker_log() { echo "mock_broker: $*" >&2; }

# Polls "$@" every 50 ms until it returns 0, or 2 (give up), or time runs out.
_mock_broker_wait_for() {
    local tries=$((MOCK_BROKER_TIMEOUT * 20)) rc
    while ((tries-- > 0)); do
        rc=0
        "$@" || rc=$?
        ((rc == 0)) && return 0
        ((rc == 2)) && return 1
        sleep 0.05
    done
    return 1
}

_mock_broker_alive() { [[ -n $MOCK_BROKER_PID ]] && kill -0 "$MOCK_BROKER_PID" 2>/dev/null; }

mock_broker_start() {
    local args=()
    if [[ -n $MOCK_BROKER_PID ]]; then
        _mock_broker_log "already running (pid $MOCK_BROKER_PID)"
        return 1
    fi
    if [[ ! -x $MOCK_BROKER ]]; then
        _mock_broker_log "no binary at $MOCK_BROKER (build it, or set MOCK_BROKER)"
        return 1
    fi
    while (($#)); do
        case $1 in
        --brokers) args+=(--brokers "$2"); shift 2 ;;
        *) args+=(--topic "$1"); shift ;;
        esac
    done
    MOCK_BROKER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/stoatflow-mock-broker.XXXXXX")
    "$MOCK_BROKER" "${args[@]}" --bootstrap-file "$MOCK_BROKER_DIR/bootstrap" \
        >"$MOCK_BROKER_DIR/stdout" 2>"$MOCK_BROKER_DIR/stderr" &
    MOCK_BROKER_PID=$!
    if ! _mock_broker_wait_for _mock_broker_ready; then
        _mock_broker_log "did not start (died, or no address within ${MOCK_BROKER_TIMEOUT}s):"
        cat "$MOCK_BROKER_DIR/stderr" >&2
        mock_broker_stop
        return 1
    fi
    KAFKA_BROKERS=$(<"$MOCK_BROKER_DIR/bootstrap")
    export KAFKA_BROKERS
}

# The file appears (renamed into place) only once the cluster listens; a dead
# process will never write it, so stop waiting then.
_mock_broker_ready() {
    [[ -s $MOCK_BROKER_DIR/bootstrap ]] && return 0
    _mock_broker_alive || return 2
    return 1
}

# Idempotent, so it can be both called and registered with trap.
mock_broker_stop() {
    local rc=0
    if [[ -n $MOCK_BROKER_PID ]]; then
        kill -TERM "$MOCK_BROKER_PID" 2>/dev/null || true
        if ! _mock_broker_wait_for _mock_broker_gone; then
            _mock_broker_log "pid $MOCK_BROKER_PID ignored SIGTERM; killing it"
            kill -KILL "$MOCK_BROKER_PID" 2>/dev/null || true
        fi
        wait "$MOCK_BROKER_PID" 2>/dev/null || rc=$?
        MOCK_BROKER_PID=
    fi
    [[ -n $MOCK_BROKER_DIR ]] && rm -rf "$MOCK_BROKER_DIR"
    MOCK_BROKER_DIR=
    unset KAFKA_BROKERS
    return $rc
}

_mock_broker_gone() { ! _mock_broker_alive; }

# The broker prints "brokers down"/"brokers up" once a change has been applied;
# these return only then, so the next client call sees the new state.
_mock_broker_signal() {
    local sig=$1 state=$2 before
    _mock_broker_alive || { _mock_broker_log "not running"; return 1; }
    before=$(grep -c "^brokers $state\$" "$MOCK_BROKER_DIR/stdout" || true)
    kill "-$sig" "$MOCK_BROKER_PID"
    _mock_broker_wait_for _mock_broker_acked "$state" "$before" ||
        { _mock_broker_log "no 'brokers $state' after ${MOCK_BROKER_TIMEOUT}s"; return 1; }
}

_mock_broker_acked() {
    local n
    n=$(grep -c "^brokers $1\$" "$MOCK_BROKER_DIR/stdout" || true)
    ((n > $2))
}

mock_broker_down() { _mock_broker_signal USR1 down; }
mock_broker_up() { _mock_broker_signal USR2 up; }
