#!/usr/bin/env bash
# A throwaway PostgreSQL 15 that preloads stoatflow, and librdkafka's mock Kafka cluster, left
# running so that you can follow README "Getting started" in psql against them.
#
#   bash demo/cluster.sh start     # start both (stoatflow must be built and installed first:
#                                  # `make demo` does both, or README "Install into your own PostgreSQL")
#   eval "$(bash demo/cluster.sh env)"   # PGHOST, PGPORT, PGUSER, PGDATABASE, KAFKA_BROKERS
#   bash demo/cluster.sh status
#   bash demo/cluster.sh stop      # stop both and delete everything they stored
#
# PostgreSQL listens on a unix socket in the cluster's directory only (no TCP); the mock
# cluster on 127.0.0.1. As root, PostgreSQL runs as user postgres. Every wait is bounded.
# Environment:
#   STOATFLOW_CLUSTER_DIR      where both keep their files (default /tmp/stoatflow-cluster-$(id -u))
#   STOATFLOW_CLUSTER_PORT     the server's port number (default 55489; the socket's name only)
#   STOATFLOW_CLUSTER_TOPICS   topics of the mock cluster, NAME:PARTITIONS ... (default pageviews:1)
#   STOATFLOW_CLUSTER_TIMEOUT  seconds for each start and stop (default 60)
#   PG_CONFIG                  the PostgreSQL installation to run (default: pg_config on PATH)
#   MOCK_BROKER                the mock cluster's binary (default build/stoatflow-mock-broker)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

dir=${STOATFLOW_CLUSTER_DIR:-/tmp/stoatflow-cluster-$(id -u)}
port=${STOATFLOW_CLUSTER_PORT:-55489}
topics=${STOATFLOW_CLUSTER_TOPICS:-pageviews:1}
timeout_s=${STOATFLOW_CLUSTER_TIMEOUT:-60}
PG_CONFIG=${PG_CONFIG:-pg_config}
MOCK_BROKER=${MOCK_BROKER:-$repo/build/stoatflow-mock-broker}

run_as=()
[ "$(id -u)" -eq 0 ] && run_as=(runuser -u postgres --)

say() { echo "cluster.sh: $*" >&2; }
die() { say "$*"; exit 1; }

bindir() { "$PG_CONFIG" --bindir; }

# The mock cluster's pid, if the recorded one is still that binary.
broker_pid() {
    local pid
    [ -f "$dir/broker.pid" ] || return 1
    pid=$(<"$dir/broker.pid")
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "stoatflow-mock-broker" || return 1
    echo "$pid"
}

server_up() { [ -f "$dir/data/postmaster.pid" ] && "${run_as[@]}" "$(bindir)/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; }

cmd_stop() {
    local pid i
    if [ ! -d "$dir" ]; then
        say "nothing running in $dir"
        return 0
    fi
    if server_up; then
        "${run_as[@]}" "$(bindir)/pg_ctl" -D "$dir/data" -m fast -w -t "$timeout_s" stop >/dev/null 2>&1 ||
            "${run_as[@]}" "$(bindir)/pg_ctl" -D "$dir/data" -m immediate -w -t "$timeout_s" stop >/dev/null 2>&1 ||
            say "PostgreSQL in $dir/data did not stop"
    fi
    if pid=$(broker_pid); then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < timeout_s * 10; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && { say "the mock cluster (pid $pid) ignored SIGTERM; killing it"; kill -KILL "$pid" 2>/dev/null || true; }
    fi
    rm -rf "$dir"
    say "stopped; $dir removed"
}

cmd_start() {
    local bin pkglib sharedir i pid args=() t
    bin=$(bindir)
    pkglib=$("$PG_CONFIG" --pkglibdir)
    sharedir=$("$PG_CONFIG" --sharedir)
    [ -x "$bin/postgres" ] || die "no PostgreSQL server in $bin (install postgresql-15, or set PG_CONFIG)"
    [ -f "$pkglib/stoatflow.so" ] && [ -f "$sharedir/extension/stoatflow.control" ] ||
        die "stoatflow is not installed into $bin/.. (run 'make demo' once, or 'make && sudo make install')"
    [ -x "$MOCK_BROKER" ] ||
        die "no mock Kafka cluster at $MOCK_BROKER (run 'make demo' once, or: cmake -S . -B build && cmake --build build --target stoatflow-mock-broker)"
    command -v kcat >/dev/null || say "note: kcat is not installed (README's producer command needs it: apt-get install kcat)"
    if [ -e "$dir" ]; then
        die "$dir exists: a cluster is running or was left behind ('bash demo/cluster.sh stop' first)"
    fi
    mkdir -p "$dir"
    chmod 755 "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
    trap 'rc=$?; [ $rc -eq 0 ] || { say "start failed; cleaning up"; cmd_stop; }' EXIT

    for t in $topics; do args+=(--topic "$t"); done
    # nohup: the cluster outlives this script (it stays in the caller's process group, so a
    # test's timeout still reaches it); stop sends it SIGTERM.
    nohup "$MOCK_BROKER" "${args[@]}" --bootstrap-file "$dir/bootstrap" >"$dir/broker.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$dir/broker.pid"
    for ((i = 0; i < timeout_s * 10; i++)); do
        [ -s "$dir/bootstrap" ] && break
        kill -0 "$pid" 2>/dev/null || { cat "$dir/broker.log" >&2; die "the mock cluster exited"; }
        sleep 0.1
    done
    [ -s "$dir/bootstrap" ] || die "the mock cluster gave no address within ${timeout_s}s"

    "${run_as[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-locale -E UTF8 >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$dir'
port = $port
timezone = 'UTC'
shared_preload_libraries = 'stoatflow'
stoatflow.database = 'postgres'
stoatflow.commit_interval = 200
CONF
    "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t "$timeout_s" start >/dev/null ||
        { tail -n 30 "$dir/server.log" >&2; die "PostgreSQL did not start"; }
    trap - EXIT
    say "PostgreSQL 15 (socket in $dir, port $port, log $dir/server.log) and the mock Kafka cluster"
    say "at $(<"$dir/bootstrap") (topics: $topics) are running; stop both with: bash demo/cluster.sh stop"
    say "next, for this shell: eval \"\$(bash demo/cluster.sh env)\"; then psql"
}

cmd_env() {
    [ -s "$dir/bootstrap" ] && server_up || die "no cluster running in $dir ('bash demo/cluster.sh start' first)"
    printf 'export PGHOST=%q PGPORT=%q PGUSER=postgres PGDATABASE=postgres KAFKA_BROKERS=%q\n' \
        "$dir" "$port" "$(<"$dir/bootstrap")"
}

cmd_status() {
    local pid
    if server_up; then echo "PostgreSQL: running (socket in $dir, port $port)"; else echo "PostgreSQL: not running"; fi
    if pid=$(broker_pid) && [ -s "$dir/bootstrap" ]; then
        echo "mock Kafka cluster: running at $(<"$dir/bootstrap") (pid $pid)"
    else
        echo "mock Kafka cluster: not running"
    fi
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
env) cmd_env ;;
status) cmd_status ;;
*) echo "usage: bash demo/cluster.sh start|env|status|stop" >&2; exit 2 ;;
esac
