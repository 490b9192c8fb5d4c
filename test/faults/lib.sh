# shellcheck shell=bash
# shellcheck disable=SC2034  # WORKER_PID, VERIFY_ROWS, VICTIM are read by the scenarios
# Shared helpers for the fault scenarios (sourced, never run). Each scenario script:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   faults_begin NAME            # scratch dir, EXIT trap (stops postgres + broker)
#   gen_events SEED EVENTS KEYS CHUNKS
#   broker_start "$TOPIC:4"; pg_init; pg_start; produce_chunk 0; setup_pipeline
#   ... faults ...
#   wait_caught_up; verify_sink; check_log ALLOWED_KILLS; faults_pass
#
# Everything runs in a private temp dir: the server listens on a unix socket there only
# (listen_addresses = ''), the Kafka broker on 127.0.0.1: librdkafka's mock cluster, or Apache
# Kafka with STOATFLOW_TEST_BROKER=kafka (test/kafka/test_broker.sh: broker_start, broker_stop,
# broker_down, broker_up). Every wait is bounded.

FAULTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FAULTS_REPO=$(cd "$FAULTS_DIR/../.." && pwd)
# shellcheck source=test/kafka/test_broker.sh
source "$FAULTS_REPO/test/kafka/test_broker.sh"

PG_CONFIG=${PG_CONFIG:-pg_config}
PG_BIN=$("$PG_CONFIG" --bindir)
TOPIC=faults
# FAULTS_TOPICS=2: the source reads two topics (README "Expressions and PostgreSQL aggregates"): stream partition 0 is partition 0 of
# $TOPIC (1 partition), stream partition p >= 1 is partition p-1 of ${TOPIC}_b (PARTITIONS-1
# partitions): one watermark over topics of different sizes. Used by the scenarios that start
# with start_stream and produce with produce_chunk(s) (kill9, broker_down, ...).
FAULTS_TOPICS=${FAULTS_TOPICS:-1}
# FAULTS_COLUMNS=1: the source declares a row type (columns: the columns path, README "Expressions and PostgreSQL aggregates");
# FAULTS_COLUMNS=expr: also the aggregations are run by PostgreSQL's executor (group_by, the
# aggregates' states serialized in the segment tables). Same expected windows either way.
FAULTS_COLUMNS=${FAULTS_COLUMNS:-0}
SOURCE=src
SINK=sink_1m
PARTITIONS=4
KCAT_TIMEOUT=${KCAT_TIMEOUT:-60}            # seconds per kcat run
START_TIMEOUT=${START_TIMEOUT:-60}          # pg_ctl start/stop, crash recovery
WORKER_TIMEOUT=${WORKER_TIMEOUT:-60}        # a (new) source worker appears
CAUGHT_UP_TIMEOUT=${CAUGHT_UP_TIMEOUT:-150} # stoatflow.wait_caught_up

RUN_AS=()
if [ "$(id -u)" -eq 0 ]; then RUN_AS=(runuser -u postgres --); fi

FAULTS_NAME=
WORK=
PGDATA_DIR=
SERVER_LOG=
PG_PORT=
EVENTS_DIR=
EXPECTED_CSV=
EVENTS_TOTAL=0
T0=0

log() { printf '[%s %5.1fs] %s\n' "$FAULTS_NAME" "$(elapsed)" "$*"; }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# Prints the reason and the server log tail, then exits 1 (the EXIT trap cleans up).
fail() {
    echo "[$FAULTS_NAME] FAIL: $*" >&2
    if [ -n "$SERVER_LOG" ] && [ -f "$SERVER_LOG" ]; then
        echo "---- server log tail ($SERVER_LOG) ----" >&2
        tail -n "${FAULTS_LOG_TAIL:-60}" "$SERVER_LOG" >&2
        echo "---- end of server log ----" >&2
    fi
    exit 1
}

faults_cleanup() {
    local rc=$?
    set +e
    if [ -n "$PGDATA_DIR" ] && [ -f "$PGDATA_DIR/postmaster.pid" ]; then
        "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w -t 30 stop >/dev/null 2>&1
    fi
    broker_stop >/dev/null 2>&1
    if [ -n "$WORK" ]; then
        if [ "${FAULTS_KEEP:-0}" = "1" ]; then
            echo "[$FAULTS_NAME] kept $WORK (FAULTS_KEEP=1)" >&2
        else
            rm -rf "$WORK"
        fi
    fi
    exit "$rc"
}

faults_begin() { # faults_begin NAME
    FAULTS_NAME=$1
    T0=$(date +%s.%N)
    local tool
    for tool in kcat python3 "$PG_BIN/initdb" "$PG_BIN/pg_ctl" "$PG_BIN/psql"; do
        command -v "$tool" >/dev/null || { echo "[$FAULTS_NAME] missing: $tool" >&2; exit 1; }
    done
    broker_check || { echo "[$FAULTS_NAME] the $TEST_BROKER broker cannot run here" >&2; exit 1; }
    local tmp_root=${TMPDIR:-/tmp}
    if [ "$(id -u)" -eq 0 ]; then tmp_root=/tmp; fi
    WORK=$(mktemp -d "$tmp_root/stoatflow-faults-$FAULTS_NAME.XXXXXX")
    chmod 755 "$WORK"
    trap faults_cleanup EXIT
    trap 'exit 130' INT TERM
    PGDATA_DIR=$WORK/data
    SERVER_LOG=$WORK/server.log
    EVENTS_DIR=$WORK/events
    EXPECTED_CSV=$WORK/expected.csv
    mkdir "$WORK/run"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$WORK/run"; fi
}

faults_pass() { log "PASS"; }

# Scenarios that need a real broker process end here (as a pass, with a SKIP line) on the mock.
require_kafka() { # require_kafka WHY
    if [ "$TEST_BROKER" != kafka ]; then
        log "SKIP: needs STOATFLOW_TEST_BROKER=kafka ($1)"
        exit 0
    fi
}

# Polls "$@" every 0.2 s until it succeeds; fails the scenario after SECONDS seconds.
wait_until() { # wait_until SECONDS WHAT COMMAND...
    local limit=$1 what=$2
    shift 2
    local deadline=$(($(date +%s) + limit))
    while ! "$@"; do
        if [ "$(date +%s)" -ge "$deadline" ]; then fail "timed out after ${limit}s waiting for $what"; fi
        sleep 0.2
    done
}

# ---------------------------------------------------------------------------------
# Events

gen_events() { # gen_events SEED EVENTS KEYS CHUNKS
    python3 "$FAULTS_DIR/events.py" generate "$EVENTS_DIR" --seed "$1" --events "$2" --keys "$3" \
        --chunks "$4" --partitions "$PARTITIONS" --chunk-minutes 12 >/dev/null ||
        fail "events.py generate failed"
    EVENTS_TOTAL=$(python3 "$FAULTS_DIR/events.py" expected "$EVENTS_DIR" "$EXPECTED_CSV") ||
        fail "events.py expected failed"
    [ "$EVENTS_TOTAL" -eq "$2" ] || fail "events.py read back $EVENTS_TOTAL events, generated $2"
    log "generated $EVENTS_TOTAL events, $3 keys, $4 chunks; $(wc -l <"$EXPECTED_CSV") expected windows"
}

# Where stream partition P goes: "TOPIC PARTITION".
topic_partition() { # topic_partition P
    if [ "$FAULTS_TOPICS" = 2 ] && (($1 >= 1)); then echo "${TOPIC}_b $(($1 - 1))"; else echo "$TOPIC $1"; fi
}
source_topics() { if [ "$FAULTS_TOPICS" = 2 ]; then echo "$TOPIC, ${TOPIC}_b"; else echo "$TOPIC"; fi; }
broker_topics() { # the arguments of broker_start for the stream's PARTITIONS
    if [ "$FAULTS_TOPICS" = 2 ]; then echo "$TOPIC:1 ${TOPIC}_b:$((PARTITIONS - 1))"; else echo "$TOPIC:$PARTITIONS"; fi
}

PRODUCED=0
# Chunk c is produced compressed with CODECS[c mod 4] and with two record headers (the
# source ignores headers): every scenario reads all four codecs, from both brokers.
CODECS=(gzip snappy lz4 zstd)
produce_chunk() { # produce_chunk CHUNK: every partition's file of that chunk, in order
    local c p f n codec tp
    c=$(printf '%02d' "$1")
    codec=${CODECS[$(($1 % 4))]}
    for ((p = 0; p < PARTITIONS; p++)); do
        f=$EVENTS_DIR/chunk-$c-p$p.jsonl
        [ -f "$f" ] || fail "no event file $f"
        n=$(wc -l <"$f")
        [ "$n" -gt 0 ] || continue
        read -r -a tp <<<"$(topic_partition "$p")"
        timeout "$KCAT_TIMEOUT" kcat -P -b "$KAFKA_BROKERS" -t "${tp[0]}" -p "${tp[1]}" -z "$codec" \
            -H "chunk=$c" -H "codec=$codec" <"$f" 2>"$WORK/kcat.err" || { cat "$WORK/kcat.err" >&2; fail "kcat could not produce $f"; }
        if grep -qi "fail\|error" "$WORK/kcat.err"; then
            cat "$WORK/kcat.err" >&2
            fail "kcat reported errors producing $f"
        fi
        PRODUCED=$((PRODUCED + n))
    done
}

# produce_chunks FIRST LAST: chunks FIRST..LAST, one kcat run per partition (the chunks'
# files concatenated in order, so each partition stays in event-time order).
produce_chunks() {
    local c p n files tp
    ((${1} <= ${2})) || return 0
    for ((p = 0; p < PARTITIONS; p++)); do
        files=()
        for ((c = $1; c <= $2; c++)); do
            files+=("$EVENTS_DIR/chunk-$(printf '%02d' "$c")-p$p.jsonl")
            [ -f "${files[-1]}" ] || fail "no event file ${files[-1]}"
        done
        n=$(cat "${files[@]}" | wc -l)
        [ "$n" -gt 0 ] || continue
        read -r -a tp <<<"$(topic_partition "$p")"
        cat "${files[@]}" | timeout "$KCAT_TIMEOUT" kcat -P -b "$KAFKA_BROKERS" -t "${tp[0]}" -p "${tp[1]}" -z lz4 \
            2>"$WORK/kcat.err" || { cat "$WORK/kcat.err" >&2; fail "kcat could not produce chunks $1..$2 of partition $p"; }
        if grep -qi "fail\|error" "$WORK/kcat.err"; then
            cat "$WORK/kcat.err" >&2
            fail "kcat reported errors producing chunks $1..$2 of partition $p"
        fi
        PRODUCED=$((PRODUCED + n))
    done
}

# ---------------------------------------------------------------------------------
# PostgreSQL

free_port() {
    python3 - <<'EOF'
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
}

pg_init() {
    PG_PORT=$(free_port)
    mkdir "$PGDATA_DIR"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$PGDATA_DIR" "$WORK"; fi
    touch "$SERVER_LOG"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$SERVER_LOG"; fi
    "${RUN_AS[@]}" "$PG_BIN/initdb" -D "$PGDATA_DIR" -U postgres -A trust --no-locale -E UTF8 \
        >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log" >&2; fail "initdb failed"; }
    cat >>"$PGDATA_DIR/postgresql.conf" <<EOF

# stoatflow fault tests
port = $PG_PORT
listen_addresses = ''
unix_socket_directories = '$WORK/run'
shared_preload_libraries = 'stoatflow'
stoatflow.database = 'postgres'
stoatflow.commit_interval = 200
log_line_prefix = '%m [%p] %b '
EOF
}

pg_start() {
    "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -l "$SERVER_LOG" -w -t "$START_TIMEOUT" start \
        >"$WORK/pg_ctl.out" 2>&1 || { cat "$WORK/pg_ctl.out" >&2; fail "pg_ctl start failed"; }
}

pg_stop() { # pg_stop MODE
    "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m "$1" -w -t "$START_TIMEOUT" stop \
        >"$WORK/pg_ctl.out" 2>&1 || { cat "$WORK/pg_ctl.out" >&2; fail "pg_ctl stop -m $1 failed"; }
}

pg_restart() { # pg_restart MODE
    "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -l "$SERVER_LOG" -m "$1" -w -t "$START_TIMEOUT" \
        restart >"$WORK/pg_ctl.out" 2>&1 || { cat "$WORK/pg_ctl.out" >&2; fail "pg_ctl restart -m $1 failed"; }
}

# psql_try SQL...: runs the statements, prints unaligned tuples; exit status of psql.
psql_try() {
    "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$WORK/run" -p "$PG_PORT" -U postgres -d postgres \
        "$@" 2>"$WORK/psql.err"
}

# sql SQL: like psql_try, but a failure fails the scenario.
sql() {
    local out
    out=$(psql_try -c "$1") || { cat "$WORK/psql.err" >&2; fail "SQL failed: $1"; }
    printf '%s\n' "$out"
}

worker_pid() { # prints the source worker's pid(s), or nothing
    psql_try -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'stoatflow source $SOURCE'" || true
}

one_worker_pid() { # sets VICTIM to the one source worker's pid; fails on none or several
    VICTIM=$(worker_pid)
    [ -n "$VICTIM" ] || fail "no source worker running"
    [[ $VICTIM =~ ^[0-9]+$ ]] || fail "more than one worker for source $SOURCE: $(tr '\n' ' ' <<<"$VICTIM")"
}

WORKER_PID=
_worker_other_than() {
    local pid
    pid=$(worker_pid)
    [ -n "$pid" ] || return 1
    [[ $pid =~ ^[0-9]+$ ]] || fail "more than one worker for source $SOURCE: $(tr '\n' ' ' <<<"$pid")"
    [ "$pid" != "$1" ] && WORKER_PID=$pid
}

# Waits for a source worker whose pid differs from OLD ('' = any); sets WORKER_PID.
wait_worker() { # wait_worker [OLD]
    wait_until "$WORKER_TIMEOUT" "a source worker (not pid ${1:-none})" _worker_other_than "${1:-}"
}

setup_pipeline() {
    sql "CREATE EXTENSION stoatflow" >/dev/null
    local columns="" group=""
    [ "$FAULTS_COLUMNS" = 0 ] || columns=", columns => 'user_id text, ts bigint, amount integer'"
    [ "$FAULTS_COLUMNS" = expr ] && group=", group_by => 'user_id'"
    sql "SELECT stoatflow.create_source('$SOURCE', '$(source_topics)', '$KAFKA_BROKERS', key => 'user_id',
            event_time => 'ts', max_out_of_orderness => '1 hour'$columns)" >/dev/null
    # SESSION_GAP (e.g. '30 seconds'): also a session aggregation 'ses' into sink_ses, declared
    # in the same transaction (one psql -c), so that both see every record.
    local ses=""
    [ -z "${SESSION_GAP:-}" ] || ses="; SELECT stoatflow.create_aggregation('ses', '$SOURCE',
            stoatflow.session('$SESSION_GAP'), 'count(*) AS n, sum(amount) AS total', 'sink_ses'$group)"
    sql "SELECT stoatflow.create_aggregation('agg', '$SOURCE', stoatflow.tumbling('1 minute'),
            'count(*) AS n, sum(amount) AS total', '$SINK'$group)$ses" >/dev/null
}

wait_caught_up() {
    local r
    r=$(sql "SELECT stoatflow.wait_caught_up('$SOURCE', '$CAUGHT_UP_TIMEOUT seconds')")
    [ "$r" = "t" ] || {
        sql "SELECT * FROM stoatflow.sources" >&2
        fail "wait_caught_up returned '$r' after ${CAUGHT_UP_TIMEOUT}s"
    }
}

# ---------------------------------------------------------------------------------
# Verification

# The sink against the independent computation: every (key, window_start) row equal in
# n, total and event_time, none missing, none extra; sum(n) = events produced; finality
# agrees with the committed watermark; nothing dropped, nothing dead-lettered.
# verify_sink [SINK_TABLE [AGGREGATION]]: defaults $SINK and 'agg' (the setup_pipeline names).
VERIFY_ROWS=0
verify_sink() {
    local sink=${1:-$SINK} agg=${2:-agg}
    local out
    out=$(psql_try <<EOF
CREATE TEMP TABLE expected (key text, window_start_ms bigint, n bigint, total numeric, max_ts bigint);
\copy expected FROM '$EXPECTED_CSV' WITH (FORMAT csv)
CREATE TEMP TABLE actual AS
  SELECT key, (extract(epoch FROM window_start) * 1000)::bigint AS window_start_ms,
         (extract(epoch FROM window_end) * 1000)::bigint AS window_end_ms,
         n, total, (extract(epoch FROM event_time) * 1000)::bigint AS event_time_ms, final
    FROM $sink;
SELECT 'expected_rows', count(*) FROM expected;
SELECT 'actual_rows', count(*) FROM actual;
SELECT 'missing', count(*) FROM expected e
  WHERE NOT EXISTS (SELECT 1 FROM actual a WHERE a.key = e.key AND a.window_start_ms = e.window_start_ms);
SELECT 'extra', count(*) FROM actual a
  WHERE NOT EXISTS (SELECT 1 FROM expected e WHERE a.key = e.key AND a.window_start_ms = e.window_start_ms);
SELECT 'different', count(*) FROM actual a JOIN expected e USING (key, window_start_ms)
  WHERE a.n IS DISTINCT FROM e.n OR a.total IS DISTINCT FROM e.total
     OR a.event_time_ms IS DISTINCT FROM e.max_ts;
SELECT 'equal', count(*) FROM actual a JOIN expected e USING (key, window_start_ms)
  WHERE a.n = e.n AND a.total = e.total AND a.event_time_ms = e.max_ts;
SELECT 'bad_window_end', count(*) FROM actual WHERE window_end_ms IS DISTINCT FROM window_start_ms + 60000;
SELECT 'sum_n', coalesce(sum(n), 0) FROM actual;
SELECT 'committed_offsets', coalesce(sum(committed_offset), 0) FROM stoatflow.sources WHERE source_name = '$SOURCE';
SELECT 'watermark_ms', (extract(epoch FROM watermark) * 1000)::bigint FROM stoatflow.stats WHERE aggregation_name = '$agg';
SELECT 'final_rows', count(*) FILTER (WHERE final) FROM actual;
SELECT 'final_wrong', count(*) FROM actual a, stoatflow.stats s
  WHERE s.aggregation_name = '$agg'
    AND a.final IS DISTINCT FROM (a.window_end_ms <= (extract(epoch FROM s.watermark) * 1000)::bigint);
SELECT 'records_in', records_in FROM stoatflow.stats WHERE aggregation_name = '$agg';
SELECT 'dropped_late_window', dropped_late_window FROM stoatflow.stats WHERE aggregation_name = '$agg';
SELECT 'dead_letters', count(*) FROM stoatflow.dead_letters WHERE reason <> 'offsets_skipped';
EOF
    ) || { cat "$WORK/psql.err" >&2; fail "verification query failed"; }
    declare -A v
    local k val
    while IFS='|' read -r k val; do v[$k]=$val; done <<<"$out"
    log "$sink: $(tr '\n|' ' =' <<<"$out")"
    local problems=()
    [ "${v[missing]}" = 0 ] || problems+=("${v[missing]} expected windows missing from the sink")
    [ "${v[extra]}" = 0 ] || problems+=("${v[extra]} sink rows that should not exist")
    [ "${v[different]}" = 0 ] || problems+=("${v[different]} sink rows with wrong n/total/event_time")
    [ "${v[equal]}" = "${v[expected_rows]}" ] || problems+=("equal rows ${v[equal]} != expected ${v[expected_rows]}")
    [ "${v[actual_rows]}" = "${v[expected_rows]}" ] || problems+=("sink rows ${v[actual_rows]} != expected ${v[expected_rows]}")
    [ "${v[bad_window_end]}" = 0 ] || problems+=("${v[bad_window_end]} rows with window_end != window_start + 1 minute")
    [ "${v[sum_n]}" = "$EVENTS_TOTAL" ] || problems+=("sum(n) ${v[sum_n]} != events produced $EVENTS_TOTAL")
    [ "$PRODUCED" = "$EVENTS_TOTAL" ] || problems+=("produced $PRODUCED of $EVENTS_TOTAL events")
    # (offsets = events only without transactions: markers and aborted records take offsets)
    if [ "${VERIFY_OFFSETS_ARE_EVENTS:-1}" = 1 ]; then
        [ "${v[committed_offsets]}" = "$EVENTS_TOTAL" ] || problems+=("committed offsets sum ${v[committed_offsets]} != $EVENTS_TOTAL")
    fi
    [ "${v[final_wrong]}" = 0 ] || problems+=("${v[final_wrong]} rows whose final flag disagrees with the watermark")
    [ "${v[final_rows]:-0}" -gt 0 ] || problems+=("no window was ever final (the watermark never closed one)")
    [ "${v[records_in]}" = "$EVENTS_TOTAL" ] || problems+=("stats.records_in ${v[records_in]} != $EVENTS_TOTAL")
    [ "${v[dropped_late_window]}" = 0 ] || problems+=("stats.dropped_late_window = ${v[dropped_late_window]}")
    [ "${v[dead_letters]}" = 0 ] || problems+=("${v[dead_letters]} dead letters")  # (skips: retention.sh checks them)
    if [ "${#problems[@]}" -gt 0 ]; then
        if [ "${v[different]}" != 0 ] || [ "${v[missing]}" != 0 ] || [ "${v[extra]}" != 0 ]; then
            psql_try <<EOF >&2 || true
CREATE TEMP TABLE expected (key text, window_start_ms bigint, n bigint, total numeric, max_ts bigint);
\copy expected FROM '$EXPECTED_CSV' WITH (FORMAT csv)
\echo first differences (e_* expected, a_* sink):
SELECT coalesce(e.key, a.key) AS key, to_timestamp(coalesce(e.window_start_ms, (extract(epoch FROM a.window_start) * 1000)::bigint) / 1000.0) AS window_start,
       e.n AS e_n, a.n AS a_n, e.total AS e_total, a.total AS a_total,
       to_timestamp(e.max_ts / 1000.0) AS e_event_time, a.event_time AS a_event_time, a.final
  FROM expected e FULL JOIN $sink a ON a.key = e.key AND (extract(epoch FROM a.window_start) * 1000)::bigint = e.window_start_ms
 WHERE a.key IS NULL OR e.key IS NULL OR a.n <> e.n OR a.total <> e.total
    OR (extract(epoch FROM a.event_time) * 1000)::bigint <> e.max_ts
 ORDER BY 1, 2 LIMIT 20;
EOF
        fi
        local p
        for p in "${problems[@]}"; do echo "[$FAULTS_NAME]   - $p" >&2; done
        fail "the sink $sink does not match the expected windows"
    fi
    VERIFY_ROWS=${v[equal]}
    log "$sink matches: ${v[equal]} rows equal, sum(n) = $EVENTS_TOTAL, ${v[final_rows]} final"
}

# The session sink 'sink_ses' (SESSION_GAP_MS, as setup_pipeline's SESSION_GAP) against the
# independent sessions of every event: every (key, window_start) equal in n, total, event_time
# and window_end (= event_time + 1 ms), none missing, none extra, nothing dropped late.
verify_session_sink() {
    local csv=$WORK/expected-sessions.csv out
    python3 "$FAULTS_DIR/events.py" expected "$EVENTS_DIR" "$csv" --session-gap-ms "$SESSION_GAP_MS" >/dev/null ||
        fail "events.py expected --session-gap-ms failed"
    out=$(psql_try <<EOF
CREATE TEMP TABLE expected (key text, first_ms bigint, n bigint, total numeric, last_ms bigint);
\copy expected FROM '$csv' WITH (FORMAT csv)
CREATE TEMP TABLE actual AS
  SELECT key, (extract(epoch FROM window_start) * 1000)::bigint AS first_ms,
         (extract(epoch FROM window_end) * 1000)::bigint AS end_ms,
         n, total, (extract(epoch FROM event_time) * 1000)::bigint AS last_ms
    FROM sink_ses;
SELECT 'expected', count(*) FROM expected;
SELECT 'missing', count(*) FROM expected e WHERE NOT EXISTS (SELECT 1 FROM actual a WHERE a.key = e.key AND a.first_ms = e.first_ms);
SELECT 'extra', count(*) FROM actual a WHERE NOT EXISTS (SELECT 1 FROM expected e WHERE a.key = e.key AND a.first_ms = e.first_ms);
SELECT 'different', count(*) FROM actual a JOIN expected e USING (key, first_ms)
  WHERE a.n <> e.n OR a.total <> e.total OR a.last_ms <> e.last_ms OR a.end_ms <> e.last_ms + 1;
SELECT 'late', dropped_late_session FROM stoatflow.stats WHERE aggregation_name = 'ses';
SELECT 'merged', sessions_merged FROM stoatflow.stats WHERE aggregation_name = 'ses';
EOF
    ) || { cat "$WORK/psql.err" >&2; fail "session verification query failed"; }
    declare -A v
    local k val
    while IFS='|' read -r k val; do v[$k]=$val; done <<<"$out"
    log "sink_ses: $(tr '\n|' ' =' <<<"$out")"
    [ "${v[missing]}" = 0 ] && [ "${v[extra]}" = 0 ] && [ "${v[different]}" = 0 ] && [ "${v[late]}" = 0 ] ||
        fail "the session sink does not match the expected sessions"
    log "sink_ses matches: ${v[expected]} sessions"
}

# No crash in the server log except the SIGKILLs we sent (their pids in KILLED_PIDS).
KILLED_PIDS=()
check_log() {
    local bad sig9 pid found line
    bad=$(grep -n "terminated by signal" "$SERVER_LOG" | grep -v "terminated by signal 9:" || true)
    [ -z "$bad" ] || { echo "$bad" >&2; fail "a process was terminated by a signal other than our SIGKILLs"; }
    sig9=$(grep -n "terminated by signal 9:" "$SERVER_LOG" || true)
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        found=0
        for pid in "${KILLED_PIDS[@]}"; do
            if [[ $line == *"(PID $pid)"* ]]; then found=1; fi
        done
        [ "$found" = 1 ] || { echo "$line" >&2; fail "SIGKILL of a process we did not kill"; }
    done <<<"$sig9"
    local n9
    n9=$(grep -c "terminated by signal 9:" "$SERVER_LOG" || true)
    [ "$n9" = "${#KILLED_PIDS[@]}" ] ||
        fail "server log shows $n9 SIGKILLed processes, we killed ${#KILLED_PIDS[@]}"
    bad=$(grep -n "PANIC\|TRAP:" "$SERVER_LOG" || true)
    [ -z "$bad" ] || { echo "$bad" >&2; fail "PANIC in the server log"; }
    log "server log: no crash other than our ${#KILLED_PIDS[@]} SIGKILL(s)"
}

committed() { # sum of the source's committed offsets, or "?" while the server is away
    psql_try -c "SELECT coalesce(sum(committed_offset), 0) FROM stoatflow.sources WHERE source_name = '$SOURCE'" ||
        echo "?"
}

# The worker has restored, committed at least once since it started, and has committed
# everything produced so far.
warm() {
    local n
    n=$(psql_try -c "SELECT count(*) FROM pg_stat_activity a, stoatflow.sources s
        WHERE a.backend_type = 'stoatflow source $SOURCE' AND s.source_name = '$SOURCE'
          AND s.last_commit_at > a.backend_start" || true)
    [[ $n =~ ^[0-9]+$ ]] && ((n > 0)) && [ "$(committed)" = "$PRODUCED" ]
}

wait_warm() {
    wait_until "$WORKER_TIMEOUT" "the worker to commit (since its start) all $PRODUCED events produced so far" warm
}

source_status() { # prints "status|last_error" of the source
    psql_try -c "SELECT DISTINCT status, coalesce(last_error, '') FROM stoatflow.sources WHERE source_name = '$SOURCE'" || true
}

# The common opening of every scenario: events generated, broker and server up, the first
# chunk produced before the source exists (so every partition holds the watermark from the
# first poll on), the pipeline declared and its worker running (WORKER_PID).
start_stream() { # start_stream SEED
    gen_events "$1" "$EVENTS" "$KEYS" "$NCHUNKS"
    # shellcheck disable=SC2046  # one argument per topic
    broker_start $(broker_topics) || fail "the $TEST_BROKER broker did not start"
    pg_init
    pg_start
    produce_chunk 0
    setup_pipeline
    log "source $SOURCE reads topic(s) $(sql "SELECT topic FROM stoatflow.source WHERE source_name = '$SOURCE'") ($(broker_topics))"
    wait_worker ""
}

