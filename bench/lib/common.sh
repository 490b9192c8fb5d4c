# shellcheck shell=bash
# Helpers for bench/e2e.sh, bench/live.sh and bench/peers/kafka-streams/perf.sh: logging,
# timing, a throwaway PostgreSQL 15 on a unix socket, the Kafka broker (BENCH_BROKER), CPU
# seconds of processes. Sourced, not run. Every wait here is bounded.

bench_log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
bench_die() { bench_log "FATAL: $*"; exit 1; }

# Wall clock in seconds with microseconds (bash 5), and differences of two such values.
bench_now() { echo "$EPOCHREALTIME"; }
bench_diff() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

# --- PostgreSQL -------------------------------------------------------------------------------
# pg_start WORKDIR PORT: initdb into WORKDIR/pgdata (as user postgres when run as root),
# the benchmark's settings, start, wait (bounded by pg_ctl -t). Sets PG_BIN, PG_DATA, PG_SOCK,
# PG_PORT, PG_RUN_AS.
PG_BIN=${PG_BIN:-$(pg_config --bindir)}
PG_RUN_AS=()
PG_DATA=
pg_start() {
    local work=$1 port=$2
    [ "$(id -u)" -eq 0 ] && PG_RUN_AS=(runuser -u postgres --)
    PG_DATA=$work/pgdata PG_SOCK=$work PG_PORT=$port
    # BENCH_LOCALE=C.UTF-8: the cluster's locale (initdb's default on many systems; text then
    # compares with strcoll) instead of C
    local locale=--no-locale
    [ -n "${BENCH_LOCALE:-}" ] && locale=--locale=$BENCH_LOCALE
    "${PG_RUN_AS[@]}" "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -A trust "$locale" -E UTF8 \
        >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; return 1; }
    cat >>"$PG_DATA/postgresql.conf" <<CONF
# ---- bench/e2e.sh ----
listen_addresses = ''
unix_socket_directories = '$PG_SOCK'
port = $PG_PORT
shared_preload_libraries = '${PG_PRELOAD:-stoatflow}'
stoatflow.database = 'postgres'
stoatflow.commit_interval = 1000
stoatflow.log_commits = on
shared_buffers = 1GB
synchronous_commit = on
max_wal_size = 4GB
checkpoint_timeout = 30min
${PG_EXTRA_CONF:-}
CONF
    "${PG_RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$work/server.log" -w -t 60 start >/dev/null ||
        { tail -20 "$work/server.log" >&2; return 1; }
}

pg_stop() {
    [ -n "$PG_DATA" ] && [ -f "$PG_DATA/postmaster.pid" ] || return 0
    "${PG_RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 60 stop >/dev/null 2>&1 ||
        "${PG_RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
}

# psql against the throwaway server; ON_ERROR_STOP so a failed statement fails the call.
# BENCH_SQL_TIMEOUT bounds any single call (seconds).
# sql_tags: the same without -q, so command tags ("COPY 123") are printed.
sql() { sql_tags -q "$@"; }
sql_tags() {
    PGOPTIONS="-c client_min_messages=warning" timeout "${BENCH_SQL_TIMEOUT:-2400}" "${PG_RUN_AS[@]}" \
        "$PG_BIN/psql" -X -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres "$@"
}
# One value: sql_val "SELECT ..."
sql_val() { sql -At -c "$1"; }

# bench_wait_worker SOURCE: waits up to 30 s for the source's worker, then 1 s more (it has
# assigned its partitions); prints the worker's pid.
bench_wait_worker() {
    local i pid=""
    for ((i = 0; i < 300; i++)); do
        pid=$(sql_val "SELECT pid FROM pg_stat_activity WHERE backend_type = 'stoatflow source $1'")
        [ -n "$pid" ] && break
        sleep 0.1
    done
    [ -n "$pid" ] || bench_die "the worker of source $1 did not start"
    sleep 1
    echo "$pid"
}

# --- Kafka broker: BENCH_BROKER=mock|kafka ---------------------------------------------------
# mock   librdkafka's mock cluster (build/stoatflow-mock-broker): no JVM, keeps ~5 MiB of
#        batches per partition, so the benches spread big topics over many partitions
# kafka  Apache Kafka 4.x, single node KRaft on 127.0.0.1 (test/kafka/broker/kafka_broker.sh;
#        java, and mvn for the first fetch of the jars)
# Both through test/kafka/test_broker.sh: bench_broker_start TOPIC:PARTITIONS... exports
# KAFKA_BROKERS; bench_broker_stop is idempotent (bench_cleanup calls it).
BENCH_BROKER=${BENCH_BROKER:-mock}
case $BENCH_BROKER in
mock | kafka) ;;
*) echo "BENCH_BROKER='$BENCH_BROKER': want mock or kafka" >&2; exit 2 ;;
esac
_bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/kafka/test_broker.sh
STOATFLOW_TEST_BROKER=$BENCH_BROKER source "$_bench_root/test/kafka/test_broker.sh"
bench_broker_start() {
    broker_check || bench_die "the $BENCH_BROKER broker cannot run here (see above)"
    broker_start "$@" || bench_die "the $BENCH_BROKER broker did not start"
}
bench_broker_stop() { broker_stop >/dev/null 2>&1 || true; }
# A line for the reports: which broker, which client library.
bench_broker_describe() {
    local rdk
    rdk=$(dpkg-query -W -f '${Version}' librdkafka-dev 2>/dev/null || echo '?')
    case $BENCH_BROKER in
    mock) echo "librdkafka $rdk mock cluster (stoatflow-mock-broker)" ;;
    kafka) echo "Apache Kafka $KAFKA_BROKER_VERSION, single node KRaft (test/kafka/broker; heap $KAFKA_BROKER_HEAP), client librdkafka $rdk" ;;
    esac
}
# The broker's process id (the JVM, or the mock broker), for CPU accounting.
bench_broker_pid() {
    case $BENCH_BROKER in
    mock) echo "${MOCK_BROKER_PID:-}" ;;
    kafka) echo "${KAFKA_BROKER_PID:-}" ;;
    esac
}

# --- CPU seconds ------------------------------------------------------------------------------
BENCH_CLK_TCK=$(getconf CLK_TCK)
# proc_cpu PID: user+system CPU seconds of one live process (its threads included).
proc_cpu() {
    awk -v hz="$BENCH_CLK_TCK" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0
}
# tree_cpu PID: CPU seconds of PID, of its live children, and of its children that exited
# (cutime + cstime): for the postmaster, the whole PostgreSQL server since it started.
tree_cpu() {
    local pid=$1 c
    {
        awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$pid/stat" 2>/dev/null
        for c in $(pgrep -P "$pid"); do
            awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$c/stat" 2>/dev/null
        done
    } | awk -v hz="$BENCH_CLK_TCK" '{ t += $1 } END { printf "%.2f\n", t / hz }'
}
# The postmaster's pid (PostgreSQL started by pg_start).
pg_postmaster_pid() { head -n1 "$PG_DATA/postmaster.pid"; }

# --- work directory ---------------------------------------------------------------------------
# bench_workdir NAME: a fresh work directory (readable by user postgres) in $work, and traps
# that stop PostgreSQL and the mock broker and remove it on any exit (BENCH_KEEP=1 keeps it).
bench_workdir() {
    work=$(mktemp -d "${BENCH_TMP:-/tmp}/stoatflow-$1.XXXXXX")
    chmod 755 "$work"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$work"
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}
bench_cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    pg_stop
    bench_broker_stop
    if [ "${BENCH_KEEP:-0}" = 1 ]; then bench_log "kept $work"; else rm -rf "$work"; fi
    exit $rc
}
