# shellcheck shell=bash
# Sourceable helper: the suite's fake schema registry (fake_registry.py) in the background, and
# framed records (produce.py) put on a topic with kcat. 127.0.0.1 only.
#
#   source test/registry/registry.sh
#   trap fake_registry_stop EXIT
#   fake_registry_start [--user U --password P] [--slow-seconds S]
#       # exports REGISTRY_URL (the API door, http://127.0.0.1:PORT), REGISTRY_CONTROL (the
#       # control door), REGISTRY_LOG (its request log, JSON lines)
#   fake_registry_mode normal|down|500|slow|slow:SECONDS
#   id=$(fake_registry_register SUBJECT FILE [AVRO|PROTOBUF])   # through the control door
#   registry_py produce.py ARGS... | kcat -P -D "$(registry_delimiter)" -b BROKERS -t TOPIC -p N
#       # produce.py's record delimiter for kcat (binary bodies hold line breaks)
#   registry_scenario_begin CLEANUP   # a fault scenario's start (after faults_begin): an EXIT
#       # trap that stops the registry, then runs CLEANUP (faults_cleanup) with the exit status
#       # kept; checks the interpreter and exports DELIM (registry_delimiter's answer)
#
# REGISTRY_PYTHON: an interpreter with python3-avro and python3-protobuf (the first of python3,
# /usr/bin/python3 that imports both; test/install_deps.sh installs them for Debian's).

_registry_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REGISTRY_START_TIMEOUT=${REGISTRY_START_TIMEOUT:-10} # s
REGISTRY_PID=
REGISTRY_DIR=
REGISTRY_URL=
REGISTRY_CONTROL=
REGISTRY_LOG=

_registry_log() { echo "registry: $*" >&2; }

registry_python() { # prints the interpreter that has both libraries, or fails
    if [[ -n ${REGISTRY_PYTHON:-} ]]; then echo "$REGISTRY_PYTHON"; return 0; fi
    local py
    for py in python3 /usr/bin/python3; do
        if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import avro.io, google.protobuf' 2>/dev/null; then
            REGISTRY_PYTHON=$py
            echo "$py"
            return 0
        fi
    done
    _registry_log "no python3 with the avro and protobuf modules (Debian: apt-get install python3-avro python3-protobuf)"
    return 1
}

registry_py() { # registry_py SCRIPT ARGS...: a script of test/registry with that interpreter
    local py
    py=$(registry_python) || return 1
    local script=$1
    shift
    "$py" "$_registry_here/$script" "$@"
}

registry_delimiter() { registry_py produce.py delimiter; } # the kcat -D argument

fake_registry_start() {
    if [[ -n $REGISTRY_PID ]]; then
        _registry_log "already running (pid $REGISTRY_PID)"
        return 1
    fi
    REGISTRY_DIR=$(mktemp -d "${TMPDIR:-/tmp}/stoatflow-registry.XXXXXX")
    REGISTRY_LOG=$REGISTRY_DIR/requests.jsonl
    python3 "$_registry_here/fake_registry.py" serve --ready-file "$REGISTRY_DIR/ready" \
        --log "$REGISTRY_LOG" "$@" >"$REGISTRY_DIR/stdout" 2>"$REGISTRY_DIR/stderr" &
    REGISTRY_PID=$!
    local deadline=$(($(date +%s) + REGISTRY_START_TIMEOUT))
    while [[ ! -s $REGISTRY_DIR/ready ]]; do
        if ! kill -0 "$REGISTRY_PID" 2>/dev/null || (($(date +%s) >= deadline)); then
            _registry_log "the fake registry did not start:"
            cat "$REGISTRY_DIR/stderr" >&2
            fake_registry_stop
            return 1
        fi
        sleep 0.1
    done
    local port control
    port=$(sed -n 's/^port=\([0-9]*\) .*/\1/p' "$REGISTRY_DIR/ready")
    control=$(sed -n 's/.* control=\([0-9]*\)$/\1/p' "$REGISTRY_DIR/ready")
    REGISTRY_URL=http://127.0.0.1:$port
    REGISTRY_CONTROL=http://127.0.0.1:$control
    export REGISTRY_URL REGISTRY_CONTROL REGISTRY_LOG
}

fake_registry_mode() { python3 "$_registry_here/fake_registry.py" control "$REGISTRY_CONTROL" "$1"; }

fake_registry_register() { # SUBJECT FILE [TYPE]: prints the id
    python3 "$_registry_here/fake_registry.py" register "$REGISTRY_CONTROL" "$1" "$2" --type "${3:-AVRO}"
}

fake_registry_stop() {
    if [[ -n $REGISTRY_PID ]]; then
        kill "$REGISTRY_PID" 2>/dev/null || true
        local i
        for ((i = 0; i < 50; i++)); do
            kill -0 "$REGISTRY_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$REGISTRY_PID" 2>/dev/null || true
        wait "$REGISTRY_PID" 2>/dev/null || true
        REGISTRY_PID=
    fi
    if [[ -n $REGISTRY_DIR ]]; then
        if [[ ${FAULTS_KEEP:-0} == 1 ]]; then _registry_log "kept $REGISTRY_DIR"; else rm -rf "$REGISTRY_DIR" || true; fi
        REGISTRY_DIR=
    fi
    return 0
}

_registry_scenario_cleanup=
_registry_scenario_exit() {
    local rc=$?
    set +e # (under set -e the failing status below would end the trap before the cleanup)
    fake_registry_stop >/dev/null 2>&1
    (exit "$rc")
    "$_registry_scenario_cleanup"
}

registry_scenario_begin() { # CLEANUP: see the head of this file
    _registry_scenario_cleanup=$1
    trap _registry_scenario_exit EXIT
    if ! registry_python >/dev/null; then
        _registry_log "python3-avro / python3-protobuf missing"
        return 1
    fi
    DELIM=$(registry_delimiter) || { _registry_log "produce.py delimiter failed"; return 1; }
    export DELIM
}
