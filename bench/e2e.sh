#!/usr/bin/env bash
# End-to-end benchmark: Kafka JSON events -> windowed aggregates in PostgreSQL.
#
#   bench/e2e.sh                 # default size (BENCH_SCALE=1: 100,000 keys), 3 repetitions
#   SMOKE=1 bench/e2e.sh         # tiny run (2,000 keys, 1 repetition): seconds
#   BENCH_BROKER=kafka BENCH_EVENTS=10000000 BENCH_WORKLOADS=dense bench/e2e.sh
#                                # against Apache Kafka (test/kafka/broker), 10 M events, 8 partitions
#
# Each workload is measured, in the same run and against the same Kafka topic (the mock
# cluster by default, Apache Kafka with BENCH_BROKER=kafka), three ways:
#   (a) raw consume  build/stoatflow-raw-consume: librdkafka batch consumer that reads every
#                    event and discards it (the ceiling);
#   (b) stoatflow    create_source + create_aggregation (one transaction) until
#                    wait_caught_up returns: every event consumed and committed, every sink row
#                    durable (synchronous_commit = on);
#   (c) plain SQL    kcat -C | psql COPY into a regular table raw_events (j jsonb), then one
#                    INSERT … SELECT … GROUP BY … ON CONFLICT DO UPDATE into a rollup table; the
#                    two parts are reported separately too.
# and events/s (median of the repetitions, min, max) and the ratios b/a and b/c are printed
# with the issue's targets, and written as markdown to bench/results/e2e-<date>.md.
#
# Workloads (~97-byte JSON events {"user_id", "ts" (epoch ms), "amount" 1..100, "page"},
# event times uniformly random over one hour from 2026-11-30T10:00Z, in order per partition):
#   dense    1-hour tumbling count+sum+max per user: 20 events per key       (2 M events)
#   sparse   1-minute tumbling count+sum per user: 1.5 events per key and one-minute window
#            on average. The issue's size, 100,000 keys x 60 minutes (9 M events), does not fit
#            3 repetitions into this machine's time budget, so by default the event time spans
#            30 minutes instead (100,000 keys x 30 windows x 1.5 = 4.5 M events): same keys, same
#            density, half the windows per key. BENCH_SPARSE_MINUTES=60 runs the full 9 M.
#   hopping  10-minute windows advancing by 2 minutes, count+sum, on the dense data
#   sparse_close  the sparse workload with emit => 'on_window_close' (and no out-of-orderness
#            allowance, so windows close while the data streams): exactly one sink write per
#            window; the windows still open at the end are not in its sink
#   sparse_1x  the issue's sparse shape: 1-minute tumbling count+sum per user, 100,000 keys x 15
#            events over one hour (1.5 M events at scale 1): about 1.1 events per non-empty
#            window, so almost every event opens a window of its own
#   hopping_sparse  10-minute windows advancing by 2 minutes, count+sum, on the sparse_1x data
#            (each event in 5 windows, each 10-minute window holds a sixth of a key's 15 events:
#            about 2.5 per non-empty window)
#   dense_avro  the dense workload on an Avro source: the same events (the same generator draws)
#            as bare Avro bodies (bench/gen_events.py --format avro: user_id string, ts long
#            timestamp-millis, amount int, page string; about 43 bytes) on their own topic, read
#            with format => 'avro' and the schema inline (format_options->>'schema'; no registry
#            framing), columns from the schema. Measured (a) and (b) only, no plain SQL; its
#            target is against the JSON source of the same run: b/dense = stoatflow's events/s
#            on Avro / on JSON (medians) >= 0.9. Needs dense listed before it; the repetitions
#            run interleaved (rep 1 of every workload, then rep 2, ...), and in the first one the
#            Avro sink is compared row by row with the JSON sink. The generator's Avro encoding
#            is checked against python3-avro first (gen_events.py --self-check).
#   dense_avro_registry  the dense workload on an Avro source read through a schema registry:
#            the same events (the same generator draws) Confluent-framed (gen_events.py
#            --schema-id: the byte 0, the schema id as 4 bytes big-endian, then the body; about
#            48 bytes) on their own topic events_dense_avro_registry, read with format => 'avro',
#            format_options => jsonb_build_object('schema_registry_url', <url>) and no columns:
#            they come from the latest version of subject events_dense_avro_registry-value
#            (user_id text, ts timestamptz, amount integer, page text, as dense_avro's). The
#            registry is the test suite's own (test/registry/fake_registry.py, listening on
#            127.0.0.1 only, checked), started for the run and stopped on every exit; the bench
#            registers gen_events.AVRO_SCHEMA under that subject and frames every body with the
#            id the registry answers (the framing is checked too: gen_events.py --self-check
#            --schema-id). Measured and compared like dense_avro: (a) and (b) only, b/dense >=
#            0.9, dense listed before it, its sink row by row against the dense sink. Every
#            repetition checks that the registry was used: create_source read the subject's
#            latest version and the worker fetched the schema by its id (GET /schemas/ids/<id>,
#            answered 200, in the registry's request log during (b)). A registry on the server's
#            own machine may be named by superusers and members of pg_read_server_files only
#            (README "Security"; there is no setting for it): the bench declares its sources as
#            the cluster's superuser postgres, as README "Getting started with Avro" does, and
#            checks that it is one.
#
# Sink and state cost: the server runs with stoatflow.log_commits = on; per run the report
# gives the commits' latency (p50, p99, max over the run's commits), the state rows and bytes
# written per commit, and the sink writes per window.
#
# Checks (the run fails if one does not hold): every partition kept every record (low
# watermark 0, high watermark = lines produced), (a) read every event, (b) and (c) count every
# event (sum of counts = events, x5 for hopping), no late drops, no dead letters; in the first
# repetition the stoatflow sink and the plain-SQL rollup are compared row by row.
#
# Environment:
#   BENCH_BROKER=mock    mock: librdkafka's mock cluster (build/stoatflow-mock-broker, no JVM);
#                        kafka: Apache Kafka 4.x, single node KRaft on 127.0.0.1, started and
#                        stopped by this script (test/kafka/broker/kafka_broker.sh: java, mvn once)
#   BENCH_SCALE=1        key count = 100,000 x scale (events per key and per key-window fixed:
#                        the sizes shrink uniformly and the densities stay what the issue says)
#   BENCH_EVENTS         instead of BENCH_SCALE: about this many events per data set (the key
#                        count follows from the events per key: dense 20, sparse 1.5 x minutes;
#                        at most 1,000,000 keys), e.g. 10000000 for a 10 M event dense run
#   BENCH_SPARSE_MINUTES=30   event-time span of the sparse data (even, 2..60; see above)
#   BENCH_REPS=3         repetitions (SMOKE: 1)
#   BENCH_WORKLOADS="dense sparse hopping sparse_close"   (dense_avro, dense_avro_registry:
#                        add them after dense; sparse_1x, hopping_sparse: the issue's per-window
#                        shapes, on request)
#   BENCH_PARTITIONS     partitions per topic (mock default: max(16, events / 100,000), which
#                        keeps each partition well under the mock broker's ~5 MiB of lz4 batches;
#                        kafka default: 8, what a user would choose, whatever the size)
#   BENCH_ROLLUP_WORK_MEM=256MB   work_mem of the plain-SQL rollup session
#   BENCH_PORT=55491     BENCH_KEEP=1 (keep the work directory)   BENCH_BUILD=1 (make install first)
#   BENCH_LOCALE         initdb --locale (e.g. C.UTF-8, where text keys compare with strcoll);
#                        default --no-locale (C)
#   BENCH_TMP=/tmp       where the work directory (data files, PostgreSQL cluster) goes
#   BENCH_COLUMNS=1      declare the sources with columns (a row type: user_id text, ts bigint,
#                        amount integer, page text) instead of JSON field paths
#   BENCH_EXPR=1         (implies BENCH_COLUMNS=1) the aggregations PostgreSQL's executor runs
#                        : dense groups by a computed key (lower(user_id)) and adds
#                        sum(amount * 2) FILTER (WHERE page <> '/p/0'); sparse counts distinct users
#                        (hll_add_agg) and the p95 amount (tdigest) per page category and minute
#                        (the hll and tdigest extensions must be installed). Same checks against
#                        the plain-SQL rollup (count, sum, max; sparse: grouped by category).
#   BENCH_RESULTS_TSV=FILE   copy the raw measurements there (tab-separated: workload, rep,
#                        metric, value; metric a/b/c_copy/c_rollup are seconds), and the notes
#                        (workload, name, value: events, keys, ...) to FILE.meta
#   BENCH_PROFILE=1      also load pg_stat_statements (track = all) and report the statements
#                        that take stoatflow's worker the longest (adds overhead: for diagnosis,
#                        not for the headline numbers)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh
# shellcheck source=test/registry/registry.sh
source test/registry/registry.sh  # the fake schema registry (dense_avro_registry)

SMOKE=${SMOKE:-0}
BENCH_EXPR=${BENCH_EXPR:-0}
[ "$BENCH_EXPR" = 1 ] && BENCH_COLUMNS=1
if [ "$SMOKE" = 1 ]; then
    BENCH_SCALE=${BENCH_SCALE:-0.02}
    BENCH_REPS=${BENCH_REPS:-1}
fi
BENCH_SCALE=${BENCH_SCALE:-1}
BENCH_REPS=${BENCH_REPS:-3}
BENCH_WORKLOADS=${BENCH_WORKLOADS:-dense sparse hopping sparse_close}
BENCH_ROLLUP_WORK_MEM=${BENCH_ROLLUP_WORK_MEM:-256MB}
BENCH_PORT=${BENCH_PORT:-55491}
BUILD_DIR=${BENCH_BUILD_DIR:-$repo/build}
KCAT_TIMEOUT=${BENCH_KCAT_TIMEOUT:-1800}
run_started=$(bench_now)

KEYS=$(awk -v s="$BENCH_SCALE" 'BEGIN { k = int(100000 * s + 0.5); print (k < 100 ? 100 : k) }')
BENCH_EVENTS=${BENCH_EVENTS:-}
[[ -z $BENCH_EVENTS || $BENCH_EVENTS =~ ^[1-9][0-9]*$ ]] || bench_die "BENCH_EVENTS must be a positive integer"
[[ $BENCH_REPS =~ ^[1-9][0-9]*$ ]] || bench_die "BENCH_REPS must be a positive integer"
for wl in $BENCH_WORKLOADS; do
    case $wl in dense | sparse | hopping | sparse_close | dense_avro | dense_avro_registry | sparse_1x | hopping_sparse) ;;
    *) bench_die "unknown workload $wl (dense, sparse, hopping, sparse_close, dense_avro, dense_avro_registry, sparse_1x, hopping_sparse)" ;;
    esac
done
seen_dense=0
for wl in $BENCH_WORKLOADS; do
    case $wl in
    dense) seen_dense=1 ;;
    dense_avro | dense_avro_registry)
        [ "$seen_dense" = 1 ] ||
            bench_die "$wl is compared with the dense workload: list dense before it (BENCH_WORKLOADS=\"dense $wl\")" ;;
    esac
done

# --- binaries ----------------------------------------------------------------------------------
if [ "${BENCH_BUILD:-0}" = 1 ]; then
    bench_log "building and installing the extension (make && make install)"
    make -s -j"$(nproc)" >/dev/null
    if [ "$(id -u)" -eq 0 ]; then make -s install >/dev/null; else sudo make -s install >/dev/null; fi
fi
[ -f "$(pg_config --pkglibdir)/stoatflow.so" ] ||
    bench_die "stoatflow is not installed in $(pg_config --pkglibdir): run make && make install (or BENCH_BUILD=1)"
# The library every worker of this run loads; reported, and checked again at the end (another
# make install during the run would mix versions).
so_file=$(pg_config --pkglibdir)/stoatflow.so
so_stamp() { echo "stoatflow.so sha256 $(sha256sum "$so_file" | cut -c1-12), built $(date -u -r "$so_file" +%Y-%m-%dT%H:%M:%SZ)"; }
so_identity=$(so_stamp)
so_sha=$(sha256sum "$so_file" | cut -c1-12)
for tool in kcat python3 awk timeout; do command -v $tool >/dev/null || bench_die "$tool not found"; done
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S "$repo" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD_DIR" --target stoatflow-mock-broker stoatflow-raw-consume -- -s >/dev/null ||
    bench_die "cannot build stoatflow-mock-broker / stoatflow-raw-consume in $BUILD_DIR"
MOCK_BROKER=$BUILD_DIR/stoatflow-mock-broker
export MOCK_BROKER
RAW_CONSUME=$BUILD_DIR/stoatflow-raw-consume

# --- work directory, cleanup -------------------------------------------------------------------
bench_workdir bench
# On every exit the fake registry (if started) stops first, then bench_cleanup runs with the
# exit status kept (set +e: a failing stop must not end the trap before the cleanup).
# BENCH_KEEP=1 keeps the registry's directory (its request log) too.
e2e_cleanup() {
    local rc=$?
    set +e
    FAULTS_KEEP=${BENCH_KEEP:-0} fake_registry_stop >/dev/null 2>&1
    (exit "$rc")
    bench_cleanup
}
trap e2e_cleanup EXIT
trap 'bench_log "failed: line $LINENO: $BASH_COMMAND"' ERR

# --- data sets ----------------------------------------------------------------------------------
# dataset -> minutes of event time and events per key; dense and hopping share the "dense" data.
SPARSE_MINUTES=${BENCH_SPARSE_MINUTES:-30}
[[ $SPARSE_MINUTES =~ ^[0-9]+$ ]] && ((SPARSE_MINUTES >= 2 && SPARSE_MINUTES <= 60 && SPARSE_MINUTES % 2 == 0)) ||
    bench_die "BENCH_SPARSE_MINUTES must be an even number of minutes, 2..60"
declare -A MINUTES=([dense]=60 [sparse]=$SPARSE_MINUTES [dense_avro]=60 [dense_avro_registry]=60 [sparse_1x]=60)
declare -A PER_KEY=([dense]=20 [sparse]=$((SPARSE_MINUTES * 3 / 2)) [dense_avro]=20 [dense_avro_registry]=20 [sparse_1x]=15)
declare -A DATASET=([dense]=dense [sparse]=sparse [hopping]=dense [sparse_close]=sparse [dense_avro]=dense_avro
                    [dense_avro_registry]=dense_avro_registry [sparse_1x]=sparse_1x [hopping_sparse]=sparse_1x)
# dense_avro: the dense events encoded as Avro (gen_events.py --format avro), one message per
# record followed by the byte 0x1f, which no record contains (the generator checks it);
# dense_avro_registry: the same, each body framed with the registry's schema id (--schema-id).
declare -A DS_FORMAT=([dense]=json [sparse]=json [dense_avro]=avro [dense_avro_registry]=avro [sparse_1x]=json)
declare -A EVENTS PARTS KEYS_OF
datasets=()
for wl in $BENCH_WORKLOADS; do
    ds=${DATASET[$wl]}
    [[ " ${datasets[*]} " == *" $ds "* ]] || datasets+=("$ds")
done
topics=()
for ds in "${datasets[@]}"; do
    k=$KEYS
    if [ -n "$BENCH_EVENTS" ]; then
        k=$(((BENCH_EVENTS + PER_KEY[$ds] / 2) / PER_KEY[$ds]))
        ((k >= 100 && k <= 1000000)) || bench_die "BENCH_EVENTS=$BENCH_EVENTS gives $k keys for $ds (100..1,000,000)"
    fi
    KEYS_OF[$ds]=$k
    ev=$((k * PER_KEY[$ds]))
    EVENTS[$ds]=$ev
    if [ "$BENCH_BROKER" = kafka ]; then
        PARTS[$ds]=${BENCH_PARTITIONS:-8}
    else
        PARTS[$ds]=${BENCH_PARTITIONS:-$(((ev + 99999) / 100000 < 16 ? 16 : (ev + 99999) / 100000))}
    fi
    topics+=("events_$ds:${PARTS[$ds]}")
done

bench_log "work directory $work; broker $BENCH_BROKER; $(if [ -n "$BENCH_EVENTS" ]; then echo "BENCH_EVENTS=$BENCH_EVENTS"; else echo "scale $BENCH_SCALE ($KEYS keys)"; fi), $BENCH_REPS repetition(s), workloads: $BENCH_WORKLOADS"

# dense_avro_registry: the test suite's fake schema registry for the run (stopped by
# e2e_cleanup), on 127.0.0.1 only; gen_events.AVRO_SCHEMA registered under the topic's value
# subject, and the id it answers is the one every body is framed with.
REGISTRY_SUBJECT=events_dense_avro_registry-value
SCHEMA_ID=
if [[ " ${datasets[*]} " == *" dense_avro_registry "* ]]; then
    TMPDIR=$work fake_registry_start || bench_die "the fake schema registry did not start"
    [[ $REGISTRY_URL =~ ^http://127\.0\.0\.1:[0-9]+$ && $REGISTRY_CONTROL =~ ^http://127\.0\.0\.1:[0-9]+$ ]] ||
        bench_die "the fake registry is not on 127.0.0.1 ($REGISTRY_URL, $REGISTRY_CONTROL)"
    if command -v ss >/dev/null; then  # every socket it listens on (the API and the control door)
        listen=$(ss -Hltnp | awk -v pid="pid=$REGISTRY_PID," 'index($0, pid) { print $4 }')
        [ "$(wc -l <<<"$listen")" -ge 2 ] && ! grep -qv '^127\.0\.0\.1:' <<<"$listen" ||
            bench_die "the fake registry listens on $(echo $listen), not on 127.0.0.1 only"
    fi
    python3 -c 'import sys; sys.path.insert(0, "bench"); import gen_events; print(gen_events.AVRO_SCHEMA)' >"$work/pageview.avsc"
    SCHEMA_ID=$(fake_registry_register "$REGISTRY_SUBJECT" "$work/pageview.avsc") && [[ $SCHEMA_ID =~ ^[0-9]+$ ]] ||
        bench_die "registering the schema under $REGISTRY_SUBJECT failed"
    bench_log "fake schema registry at $REGISTRY_URL (127.0.0.1 only): $REGISTRY_SUBJECT = schema id $SCHEMA_ID"
fi
for ds in "${datasets[@]}"; do
    framing=()
    [ "$ds" = dense_avro_registry ] && framing=(--schema-id "$SCHEMA_ID")
    if [ "${DS_FORMAT[$ds]}" = avro ]; then
        # the hand-written Avro encoding (and the registry framing) against Apache Avro's
        # (python3-avro, Debian's python3)
        avro_py=
        for py in python3 /usr/bin/python3; do
            if "$py" -c 'import avro.io' 2>/dev/null; then avro_py=$py; break; fi
        done
        [ -n "$avro_py" ] || bench_die "$ds: no python3 with the avro module (python3-avro) for the generator's self-check"
        "$avro_py" bench/gen_events.py --self-check "${framing[@]}" >&2 || bench_die "the generator's Avro encoding is wrong"
    fi
    bench_log "generating $ds data: ${KEYS_OF[$ds]} keys x ${PER_KEY[$ds]} events over ${MINUTES[$ds]} min, ${PARTS[$ds]} partitions"
    python3 bench/gen_events.py "$work/data-$ds" --keys "${KEYS_OF[$ds]}" --events-per-key "${PER_KEY[$ds]}" \
        --partitions "${PARTS[$ds]}" --minutes "${MINUTES[$ds]}" --format "${DS_FORMAT[$ds]}" "${framing[@]}" >&2
done

bench_broker_start "${topics[@]}"
bench_log "$BENCH_BROKER Kafka at $KAFKA_BROKERS (topics ${topics[*]})"
for ds in "${datasets[@]}"; do
    t0=$(bench_now)
    for ((p = 0; p < PARTS[$ds]; p++)); do
        if [ "${DS_FORMAT[$ds]}" = avro ]; then
            timeout "$KCAT_TIMEOUT" kcat -P -q -b "$KAFKA_BROKERS" -t "events_$ds" -p "$p" -z lz4 -D '\x1f' \
                <"$work/data-$ds/p$p.avro" || bench_die "producing partition $p of events_$ds failed"
        else
            timeout "$KCAT_TIMEOUT" kcat -P -q -b "$KAFKA_BROKERS" -t "events_$ds" -p "$p" -z lz4 \
                <"$work/data-$ds/p$p.jsonl" || bench_die "producing partition $p of events_$ds failed"
        fi
    done
    # Nothing dropped (the mock keeps ~5 MiB per partition; Apache Kafka's retention is by time
    # and size): low watermark 0, high = lines produced.
    hi=() lo=()
    for ((p = 0; p < PARTS[$ds]; p++)); do hi+=(-t "events_$ds:$p:-1"); lo+=(-t "events_$ds:$p:-2"); done
    timeout 60 kcat -Q -b "$KAFKA_BROKERS" "${hi[@]}" >"$work/hi-$ds" || bench_die "kcat -Q failed"
    timeout 60 kcat -Q -b "$KAFKA_BROKERS" "${lo[@]}" >"$work/lo-$ds" || bench_die "kcat -Q failed"
    awk -v hi="$work/hi-$ds" -v lo="$work/lo-$ds" '
        FNR == NR { if (!/^#/) want[$1] = $2; next }
        FILENAME == hi { gsub(/[][]/, "", $2); got[$2] = $4; next }
        FILENAME == lo { gsub(/[][]/, "", $2); low[$2] = $4 }
        END { for (p in want) if (got[p] != want[p] || low[p] != 0) {
                  printf "partition %s: produced %s, broker holds offsets %s..%s\n", p, want[p], low[p], got[p]; bad = 1 }
              exit bad }' "$work/data-$ds/manifest.txt" "$work/hi-$ds" "$work/lo-$ds" >&2 ||
        bench_die "the broker did not keep every record of events_$ds (use more BENCH_PARTITIONS)"
    bench_log "produced ${EVENTS[$ds]} events into events_$ds (lz4) in $(bench_diff "$t0" "$(bench_now)") s; every partition complete"
done

BENCH_PROFILE=${BENCH_PROFILE:-0}
if [ "$BENCH_PROFILE" = 1 ]; then
    PG_PRELOAD=stoatflow,pg_stat_statements
    PG_EXTRA_CONF="pg_stat_statements.track = all"
fi
pg_start "$work" "$BENCH_PORT" || bench_die "PostgreSQL did not start"
sql -c "CREATE EXTENSION stoatflow" >/dev/null
if [ "$BENCH_EXPR" = 1 ]; then
    sql -c "CREATE EXTENSION hll" -c "CREATE EXTENSION tdigest" >/dev/null ||
        bench_die "BENCH_EXPR=1 needs the hll and tdigest extensions (postgresql-15-hll, postgresql-15-tdigest)"
fi
[ "$BENCH_PROFILE" = 1 ] && sql -c "CREATE EXTENSION pg_stat_statements" >/dev/null
bench_log "PostgreSQL $(sql_val 'SHOW server_version') up (socket $work, port $BENCH_PORT)"
if [ -n "$SCHEMA_ID" ]; then
    # A registry on 127.0.0.1 is an internal address: superusers and members of
    # pg_read_server_files only (README "Security"; no setting widens or narrows it).
    [ "$(sql_val "SELECT rolsuper OR pg_has_role(current_user, 'pg_read_server_files', 'MEMBER')
                    FROM pg_roles WHERE rolname = current_user")" = t ] ||
        bench_die "dense_avro_registry: the bench's role may not name a registry on 127.0.0.1 (superuser or pg_read_server_files)"
fi

results=$work/results.tsv meta=$work/meta.tsv
: >"$results"
: >"$meta"
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$results"; }
note() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$meta"; }

# --- the workloads as SQL ---------------------------------------------------------------------
# Per workload: stoatflow's window and aggregate list; for the plain-SQL rollup the window
# length and whether max(amount) is computed; the factor by which the sum of counts exceeds
# the events (hopping: 5 windows per event); the issue's targets.
declare -A SF_WINDOW SF_AGGS WIN_LEN MULT TITLE TARGETS HAS_MAX SHAPE EMIT OOO
SF_WINDOW[dense]="stoatflow.tumbling('1 hour')"
SF_WINDOW[sparse]="stoatflow.tumbling('1 minute')"
SF_WINDOW[hopping]="stoatflow.hopping('10 minutes', '2 minutes')"
SF_WINDOW[sparse_close]=${SF_WINDOW[sparse]}
SF_WINDOW[dense_avro]=${SF_WINDOW[dense]}
SF_WINDOW[dense_avro_registry]=${SF_WINDOW[dense]}
SF_WINDOW[sparse_1x]=${SF_WINDOW[sparse]}
SF_WINDOW[hopping_sparse]=${SF_WINDOW[hopping]}
# BENCH_COLUMNS=1: the sources declare a row type, so records take the columns path
# (extract, fast-lane conversion) instead of 0.1's field paths; same results.
SF_COLUMNS=
if [ "${BENCH_COLUMNS:-0}" = 1 ]; then
    SF_COLUMNS=", columns => 'user_id text, ts bigint, amount integer, page text'"
fi
SF_AGGS[dense]="count(*) AS n, sum(amount) AS total, max(amount) AS max_amount"
SF_AGGS[sparse]="count(*) AS n, sum(amount) AS total"
SF_AGGS[hopping]="count(*) AS n, sum(amount) AS total"
SF_AGGS[sparse_close]=${SF_AGGS[sparse]}
SF_AGGS[dense_avro]=${SF_AGGS[dense]}
SF_AGGS[dense_avro_registry]=${SF_AGGS[dense]}
SF_AGGS[sparse_1x]=${SF_AGGS[sparse]}
SF_AGGS[hopping_sparse]=${SF_AGGS[hopping]}
# dense_avro: format 'avro', the writer schema inline; its columns come from the schema (typed:
# user_id text, ts timestamptz, amount integer, page text), whatever BENCH_COLUMNS says.
declare -A SF_FORMAT
SF_FORMAT[dense_avro]=", format => 'avro', format_options => jsonb_build_object('schema', '$(python3 -c 'import sys; sys.path.insert(0, "bench"); import gen_events; print(gen_events.AVRO_SCHEMA)')'::jsonb)"
# dense_avro_registry: framed records, the writer schema by its id from the registry, the columns
# from the subject's latest version (no columns given)
SF_FORMAT[dense_avro_registry]=", format => 'avro', format_options => jsonb_build_object('schema_registry_url', '$REGISTRY_URL')"
# BENCH_EXPR=1: run by PostgreSQL's executor (a computed key, FILTER, extensions' aggregates)
declare -A SF_GROUP ROLLUP_KEY
if [ "$BENCH_EXPR" = 1 ]; then
    SF_AGGS[dense]="count(*) AS n, sum(amount) AS total, max(amount) AS max_amount, sum(amount * 2) FILTER (WHERE page <> ''/p/0'') AS total2"
    SF_AGGS[sparse]="count(*) AS n, sum(amount) AS total, public.hll_cardinality(public.hll_add_agg(public.hll_hash_text(user_id))) AS users, public.tdigest_percentile(amount, 100, 0.95) AS p95"
    SF_AGGS[sparse_close]=${SF_AGGS[sparse]}
    SF_AGGS[hopping]="count(*) AS n, sum(amount) AS total, sum(amount * 2) FILTER (WHERE page <> ''/p/0'') AS total2"
    SF_AGGS[dense_avro]=${SF_AGGS[dense]}
    SF_AGGS[dense_avro_registry]=${SF_AGGS[dense]}
    SF_GROUP[dense_avro]=", group_by => 'lower(user_id)'"
    SF_GROUP[dense_avro_registry]=", group_by => 'lower(user_id)'"
    for wl in dense hopping; do SF_GROUP[$wl]=", group_by => 'lower(user_id)'"; done
    # Sketches per user and minute would be 3 M windows of hll's 128 KB in-memory state: the
    # sketch workload counts distinct users and the p95 amount per page category (50) instead.
    for wl in sparse sparse_close; do
        SF_GROUP[$wl]=", group_by => 'split_part(page, ''/'', 3)'"
        ROLLUP_KEY[$wl]="split_part(j->>'page', '/', 3)"
    done
fi
EMIT=([dense]=on_window_update [sparse]=on_window_update [hopping]=on_window_update [sparse_close]=on_window_close
      [dense_avro]=on_window_update [dense_avro_registry]=on_window_update [sparse_1x]=on_window_update
      [hopping_sparse]=on_window_update)
# on_window_update runs keep every window open (the sinks are compared with the full rollup);
# the on_window_close run lets them close as the data streams (in order per partition).
OOO=([dense]="1 hour" [sparse]="1 hour" [hopping]="1 hour" [sparse_close]="0" [dense_avro]="1 hour"
     [dense_avro_registry]="1 hour" [sparse_1x]="1 hour" [hopping_sparse]="1 hour")
HAS_MAX=([dense]=1 [sparse]=0 [hopping]=0 [sparse_close]=0 [dense_avro]=1 [dense_avro_registry]=1 [sparse_1x]=0
         [hopping_sparse]=0)
WIN_LEN=([dense]="1 hour" [sparse]="1 minute" [hopping]="10 minutes" [sparse_close]="1 minute" [dense_avro]="1 hour"
         [dense_avro_registry]="1 hour" [sparse_1x]="1 minute" [hopping_sparse]="10 minutes")
MULT=([dense]=1 [sparse]=1 [hopping]=5 [sparse_close]=1 [dense_avro]=1 [dense_avro_registry]=1 [sparse_1x]=1
      [hopping_sparse]=5)
# the workload whose stoatflow sink this one's must equal row by row (instead of a plain-SQL run)
declare -A SAME_AS=([dense_avro]=dense [dense_avro_registry]=dense)
# The listed workloads whose sinks are compared with workload $1's, in the order listed: $1's
# first sink is kept until the last of them has compared.
variants_of() {
    local w
    for w in $BENCH_WORKLOADS; do
        if [ "${SAME_AS[$w]:-}" = "$1" ]; then echo "$w"; fi
    done
}
TITLE[dense]="1-hour tumbling count+sum+max per user"
TITLE[sparse]="1-minute tumbling count+sum per user"
TITLE[hopping]="10-minute hopping windows advancing by 2 minutes, count+sum per user"
TITLE[sparse_close]="the sparse workload, emit => on_window_close"
TITLE[dense_avro]="the dense workload on an Avro source (inline schema, bare Avro bodies)"
TITLE[dense_avro_registry]="the dense workload on an Avro source through a schema registry (Confluent-framed bodies)"
TITLE[sparse_1x]="1-minute tumbling count+sum per user, ~1.1 events per window"
TITLE[hopping_sparse]="10-minute hopping windows advancing by 2 minutes, count+sum per user, on the sparse_1x data"
SHAPE=([dense]="20 events per key and 1-hour window"
       [sparse]="${PER_KEY[sparse]:-} events per key: 1.5 per key and 1-minute window on average (${MINUTES[sparse]:-} windows per key)"
       [hopping]="20 events per key (the dense data), each event in 5 windows"
       [sparse_close]="the sparse data; max_out_of_orderness 0, so windows close while it streams"
       [dense_avro]="the dense events as Avro records on their own topic"
       [dense_avro_registry]="the dense events as Confluent-framed Avro records (schema id ${SCHEMA_ID:-?}) on their own topic"
       [sparse_1x]="${PER_KEY[sparse_1x]} events per key over ${MINUTES[sparse_1x]} one-minute windows: ~1.1 events per non-empty window"
       [hopping_sparse]="the sparse_1x data, each event in 5 windows: ~2.5 events per non-empty window (a sixth of a key's 15)")
TARGETS=([dense]="b/a>=0.9,b/c>=2.5" [sparse]="b/c>=3" [hopping]="b/a>=0.8" [sparse_close]="" [dense_avro]="b/dense>=0.9"
         [dense_avro_registry]="b/dense>=0.9" [sparse_1x]="b/c>=4" [hopping_sparse]="b/c>=4")
if [ "$BENCH_EXPR" = 1 ]; then  # targets for the executor's workloads (BENCHMARKS.md)
    TITLE[dense]="1-hour tumbling per lower(user_id): count, sum, max and sum(amount * 2) FILTER (...), by PostgreSQL's executor"
    TITLE[hopping]="10-minute hopping windows advancing by 2 minutes per lower(user_id), by PostgreSQL's executor"
    TITLE[sparse]="1-minute tumbling per page category: count, sum, hll distinct users, tdigest p95"
    TITLE[sparse_close]="the sketch workload, emit => on_window_close"
    TARGETS=([dense]="b>=300000" [sparse]="b>=100000" [hopping]="" [sparse_close]="" [dense_avro]="b/dense>=0.9"
             [dense_avro_registry]="b/dense>=0.9" [sparse_1x]="b/c>=4" [hopping_sparse]="b/c>=4")
    TITLE[dense_avro]="the BENCH_EXPR dense workload on an Avro source"
    TITLE[dense_avro_registry]="the BENCH_EXPR dense workload on an Avro source through a schema registry"
fi

# FROM clause of the rollup: e(key, ts, amount, ws) - one row per event and window.
rollup_from() {
    local events="SELECT ${ROLLUP_KEY[$1]:-j->>'user_id'} AS key, to_timestamp((j->>'ts')::bigint / 1000.0) AS ts,
                         (j->>'amount')::int AS amount FROM raw_events"
    case $1 in
    dense) echo "(SELECT r.*, date_bin('1 hour', r.ts, timestamptz 'epoch') AS ws FROM ($events) r) e" ;;
    sparse | sparse_close | sparse_1x) echo "(SELECT r.*, date_bin('1 minute', r.ts, timestamptz 'epoch') AS ws FROM ($events) r) e" ;;
    hopping | hopping_sparse) echo "(SELECT r.*, date_bin('2 minutes', r.ts, timestamptz 'epoch') - g.i * interval '2 minutes' AS ws
                     FROM ($events) r CROSS JOIN generate_series(0, 4) AS g(i)) e" ;;
    esac
}

rollup_sql() {
    local wl=$1 maxcol="" maxval="" maxset=""
    if [ "${HAS_MAX[$wl]}" = 1 ]; then
        maxcol=", max_amount" maxval=", max(e.amount)"
        maxset=", max_amount = greatest(rollup.max_amount, EXCLUDED.max_amount)"
    fi
    cat <<SQL
SET work_mem = '$BENCH_ROLLUP_WORK_MEM';
INSERT INTO rollup AS rollup (key, window_start, window_end, n, total$maxcol, event_time)
SELECT e.key, e.ws, e.ws + interval '${WIN_LEN[$wl]}', count(*), sum(e.amount)$maxval, max(e.ts)
  FROM $(rollup_from "$wl")
 GROUP BY e.key, e.ws
ON CONFLICT (key, window_start) DO UPDATE
   SET n = rollup.n + EXCLUDED.n, total = rollup.total + EXCLUDED.total$maxset,
       event_time = greatest(rollup.event_time, EXCLUDED.event_time);
SQL
}

rollup_table_sql() {
    local maxcol=""
    [ "${HAS_MAX[$1]}" = 1 ] && maxcol="max_amount integer,"
    echo "CREATE TABLE raw_events (j jsonb);
          CREATE TABLE rollup (key text, window_start timestamptz, window_end timestamptz, n bigint,
                               total bigint, $maxcol event_time timestamptz, PRIMARY KEY (key, window_start));"
}

# Waits (bounded) until no stoatflow source worker runs any more.
wait_workers_gone() {
    local i
    for ((i = 0; i < 300; i++)); do
        [ "$(sql_val "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow source %'")" = 0 ] && return 0
        sleep 0.1
    done
    bench_die "a stoatflow source worker did not stop within 30 s"
}

# The statements stoatflow ran during (b), slowest first (BENCH_PROFILE=1), for the report.
profile_statements() {
    local wl=$1 rep=$2
    {
        echo "### $wl, repetition $rep: statements by total time during (b), $3 s"
        echo
        echo '```'
        # segment tables folded into one line (stoatflow_state.<segment>)
        sql -c "SELECT round(sum(total_exec_time))::bigint AS total_ms, sum(calls) AS calls, sum(rows) AS rows,
                       round((sum(total_exec_time) / greatest(sum(rows), 1) * 1000)::numeric, 2) AS us_per_row,
                       q AS query
                  FROM (SELECT *, left(regexp_replace(regexp_replace(query, 'stoatflow_state\.\w+', 'stoatflow_state.<segment>', 'g'),
                                                      '\s+', ' ', 'g'), 140) AS q
                          FROM pg_stat_statements
                         WHERE query NOT LIKE '%wait_caught_up%' AND query NOT LIKE '%create_source%'
                           AND query NOT LIKE '%pg_stat_statements%') s
                 GROUP BY q ORDER BY 1 DESC LIMIT 8"
        echo '```'
        echo
    } >>"$work/profile.md"
    sql -c "SELECT pg_stat_statements_reset()" >/dev/null
}

clk_tck=$(getconf CLK_TCK)

# registry_used WORKLOAD REP LINES: the fake registry's request log after its first LINES lines
# (what (b) asked) must show create_source reading the subject's latest version and the worker
# fetching the writer schema by the id the records carry, both answered 200; else the run fails.
declare -A REG_FETCHES
registry_used() {
    local wl=$1 rep=$2 from=$3 latest byid
    latest=$(tail -n +"$((from + 1))" "$REGISTRY_LOG" |
        grep -F "\"method\":\"GET\",\"path\":\"/subjects/$REGISTRY_SUBJECT/versions/latest\"" | grep -cF '"status":200' || true)
    byid=$(tail -n +"$((from + 1))" "$REGISTRY_LOG" |
        grep -F "\"method\":\"GET\",\"path\":\"/schemas/ids/$SCHEMA_ID\"" | grep -cF '"status":200' || true)
    ((latest >= 1 && byid >= 1)) ||
        bench_die "$wl rep $rep: the registry was not used as it should be: $latest GET /subjects/$REGISTRY_SUBJECT/versions/latest and $byid GET /schemas/ids/$SCHEMA_ID answered 200 during (b) (request log: $(tail -n +"$((from + 1))" "$REGISTRY_LOG" | tr '\n' ' '))"
    REG_FETCHES[$wl]+="${REG_FETCHES[$wl]:+, }rep $rep: $latest + $byid"
}

run_one() {
    local wl=$1 rep=$2 ds=${DATASET[$1]} topic=events_${DATASET[$1]} ev=${EVENTS[${DATASET[$1]}]}
    local want=$((EVENTS[${DATASET[$1]}] * MULT[$1])) t0 t1 lsn0 out src=src_${1}_$2 agg=agg_${1}_$2 sink=sf_${1}_$2

    record "$wl" "$rep" load "$(cut -d' ' -f1 /proc/loadavg)"

    # (a) raw consume
    t0=$(bench_now)
    out=$(timeout "$KCAT_TIMEOUT" "$RAW_CONSUME" "$KAFKA_BROKERS" "$topic") || bench_die "raw consume failed"
    t1=$(bench_now)
    [[ $out == "messages=$ev "* ]] || bench_die "raw consume read '$out', expected $ev messages"
    record "$wl" "$rep" a "$(bench_diff "$t0" "$t1")"

    # (b) stoatflow
    sql -c "CHECKPOINT" >/dev/null
    [ "$BENCH_PROFILE" = 1 ] && sql -c "SELECT pg_stat_statements_reset()" >/dev/null
    lsn0=$(sql_val "SELECT pg_current_wal_lsn()")
    # where each core's time goes during (b): per process and per worker thread (cpu_split.py)
    python3 "$repo/bench/lib/cpu_split.py" snap "$(pg_postmaster_pid)" "$(bench_broker_pid)" >"$work/cpu_before.json" || true
    local reg0=0
    [ "$ds" = dense_avro_registry ] && reg0=$(wc -l <"$REGISTRY_LOG")
    t0=$(bench_now)
    out=$(sql -At -v brokers="$KAFKA_BROKERS" <<SQL
BEGIN;
SELECT stoatflow.create_source('$src', '$topic', :'brokers', key => 'user_id', event_time => 'ts',
                               max_out_of_orderness => '${OOO[$wl]}'${SF_FORMAT[$wl]:-$SF_COLUMNS});
SELECT stoatflow.create_aggregation('$agg', '$src', ${SF_WINDOW[$wl]}, '${SF_AGGS[$wl]}', '$sink',
                                    emit => '${EMIT[$wl]}'${SF_GROUP[$wl]:-});
COMMIT;
SELECT stoatflow.wait_caught_up('$src', '30 minutes');
SQL
    ) || bench_die "stoatflow run failed"
    t1=$(bench_now)
    [ "$(tail -n1 <<<"$out")" = t ] || bench_die "wait_caught_up($src) timed out"
    record "$wl" "$rep" b "$(bench_diff "$t0" "$t1")"
    record "$wl" "$rep" b_wal "$(sql_val "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')")"
    [ "$BENCH_PROFILE" = 1 ] && profile_statements "$wl" "$rep" "$(bench_diff "$t0" "$t1")"
    [ "$ds" = dense_avro_registry ] && registry_used "$wl" "$rep" "$reg0"
    local pid start
    read -r pid start < <(sql_val "SELECT pid, extract(epoch FROM backend_start) FROM pg_stat_activity
                                   WHERE backend_type = 'stoatflow source $src'" | tr '|' ' ')
    if [ -n "${pid:-}" ] && [ -r "/proc/$pid/stat" ]; then
        record "$wl" "$rep" b_cpu "$(awk -v hz="$clk_tck" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / hz }' "/proc/$pid/stat")"
        record "$wl" "$rep" b_start "$(bench_diff "$t0" "$start")"
        local grp secs
        while read -r grp secs; do
            record "$wl" "$rep" "cpu_$grp" "$secs"
        done < <(python3 "$repo/bench/lib/cpu_split.py" diff "$work/cpu_before.json" "$(pg_postmaster_pid)" "$pid" "$(bench_broker_pid)" || true)
    fi
    out=$(sql_val "SELECT (SELECT coalesce(sum(n), 0) FROM $sink) || ' ' || records_in || ' ' || dropped_late_window
                          || ' ' || dropped_late_session || ' ' || dead_letters || ' ' || (SELECT count(*) FROM $sink)
                     FROM stoatflow.stats WHERE aggregation_name = '$agg'")
    local sum records late late_s dead rows closed_by
    read -r sum records late late_s dead rows <<<"$out"
    # on_window_close: only the windows W has closed are in the sink (checked against the rollup below)
    [ "${EMIT[$wl]}" = on_window_close ] && want=$sum
    [ "$sum" = "$want" ] && [ "$records" = "$ev" ] && [ "$late" = 0 ] && [ "$late_s" = 0 ] && [ "$dead" = 0 ] ||
        bench_die "stoatflow $wl: sum(n)=$sum (want $want), records_in=$records (want $ev), late=$late/$late_s, dead letters=$dead"
    closed_by=$(sql_val "SELECT stoatflow._ms_timestamptz(watermark_ms) FROM stoatflow.source_progress
                          JOIN stoatflow.source USING (source_id) WHERE source_name = '$src'")
    read -r out <<<"$(sql_val "SELECT (SELECT commit_seq FROM stoatflow.source_progress p JOIN stoatflow.source s USING (source_id)
                                         WHERE s.source_name = '$src')
                                  || ' ' || windows_emitted + windows_reemitted || ' ' || state_rows_written
                             FROM stoatflow.stats WHERE aggregation_name = '$agg'")"
    local commits sink_writes state_rows
    read -r commits sink_writes state_rows <<<"$out"
    record "$wl" "$rep" b_commits "$commits"
    record "$wl" "$rep" b_sink_writes "$sink_writes"
    record "$wl" "$rep" b_state_rows "$state_rows"
    record "$wl" "$rep" b_sink_rows "$rows"
    if [ "${EMIT[$wl]}" = on_window_close ]; then
        [ "$sink_writes" = "$rows" ] && [ "$(sql_val "SELECT count(*) FROM $sink WHERE NOT final")" = 0 ] ||
            bench_die "$wl: on_window_close wrote $sink_writes times for $rows windows (or left a row not final)"
    fi
    # Commit latency and state written per commit, from the worker's log lines
    # (stoatflow.log_commits): commits p50 p99 max(ms) state_bytes state_rows state_ms sink_ms sink_rows
    local cstats
    cstats=$(grep -a "stoatflow commit: source=$src " "$work/server.log" | sed 's/.*stoatflow commit: //' |
        awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
               print v["ms"], v["state_bytes"], v["state_rows"], v["state_ms"], v["sink_ms"], v["sink_rows"] }' | sort -n |
        awk '{ ms[n++] = $1; sb += $2; sr += $3; stm += $4; skm += $5; skr += $6 }
             END { if (n == 0) { print "0 0 0 0 0 0 0 0 0"; exit }
                   printf "%d %.1f %.1f %.1f %d %d %.1f %.1f %d\n", n, ms[int((n - 1) / 2)], ms[int((n - 1) * 0.99 + 0.5)],
                          ms[n - 1], sb, sr, stm, skm, skr }')
    local lc p50 p99 pmax sbytes srows stms skms skrows
    read -r lc p50 p99 pmax sbytes srows stms skms skrows <<<"$cstats"
    [ "$lc" -gt 0 ] || bench_die "$wl: no 'stoatflow commit:' lines in the server log (stoatflow.log_commits)"
    record "$wl" "$rep" b_commit_p50 "$p50"
    record "$wl" "$rep" b_commit_p99 "$p99"
    record "$wl" "$rep" b_commit_max "$pmax"
    record "$wl" "$rep" b_logged_commits "$lc"
    record "$wl" "$rep" b_state_bytes "$sbytes"
    record "$wl" "$rep" b_state_us_per_row "$(awk -v t="$stms" -v r="$srows" 'BEGIN { printf "%.2f", (r > 0 ? t * 1000 / r : 0) }')"
    record "$wl" "$rep" b_sink_us_per_row "$(awk -v t="$skms" -v r="$skrows" 'BEGIN { printf "%.2f", (r > 0 ? t * 1000 / r : 0) }')"
    sql -c "SELECT stoatflow.drop_source('$src', cascade => true)" >/dev/null
    wait_workers_gone

    # Sink columns compared row by row (stoatflow's sum is numeric, its max double precision).
    local cols="key, window_start, window_end, n, total::numeric, event_time"
    [ "${HAS_MAX[$wl]}" = 1 ] && cols+=", max_amount::float8"
    local diff
    if [ -n "${SAME_AS[$wl]:-}" ]; then
        # No plain SQL: the sink must equal the sink of the workload it is the variant of
        # (its first repetition, kept until now).
        if [ "$rep" = 1 ]; then
            local other=sf_${SAME_AS[$wl]}_1
            diff=$(sql_val "SELECT (SELECT count(*) FROM (SELECT $cols FROM $sink EXCEPT ALL SELECT $cols FROM $other) x)
                                || ' ' || (SELECT count(*) FROM (SELECT $cols FROM $other EXCEPT ALL SELECT $cols FROM $sink) y)")
            [ "$diff" = "0 0" ] || bench_die "$wl: its sink and the ${SAME_AS[$wl]} sink differ ($diff rows only in one of them)"
            note "$wl" check "stoatflow sink = the ${SAME_AS[$wl]} workload's stoatflow sink (JSON source), row by row ($rows rows)"
            # the last variant to compare drops it
            if [ "$(variants_of "${SAME_AS[$wl]}" | tail -n1)" = "$wl" ]; then sql -c "DROP TABLE $other" >/dev/null; fi
        fi
        sql -c "DROP TABLE $sink" >/dev/null
        bench_log "$wl rep $rep: $(awk -F'\t' -v w="$wl" -v r="$rep" -v ev="$ev" '$1 == w && $2 == r && $3 !~ /^b_|^load$|_wal$/ {
            printf "%s %.2f s (%.0f ev/s)  ", $3, $4, ev / $4 }' "$results")"
        return 0
    fi

    # (c) plain SQL: kcat | COPY, then the rollup
    sql -c "DROP TABLE IF EXISTS raw_events, rollup" -c "$(rollup_table_sql "$wl")" -c "CHECKPOINT" >/dev/null
    lsn0=$(sql_val "SELECT pg_current_wal_lsn()")
    t0=$(bench_now)
    # CSV with delimiter/quote bytes that valid JSON text never contains: no escaping needed
    # (backslashes are literal in CSV, and a JSON line is never "\.").
    out=$(timeout "$KCAT_TIMEOUT" kcat -C -b "$KAFKA_BROKERS" -t "$topic" -o beginning -e -q -f '%s\n' |
        sql_tags -c "COPY raw_events (j) FROM STDIN (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')" 2>&1 |
        tail -n1) || bench_die "kcat | COPY failed: $out"
    t1=$(bench_now)
    [ "$out" = "COPY $ev" ] || bench_die "COPY loaded '$out', expected $ev events"
    record "$wl" "$rep" c_copy "$(bench_diff "$t0" "$t1")"
    t0=$(bench_now)
    rollup_sql "$wl" | sql >/dev/null || bench_die "rollup failed"
    t1=$(bench_now)
    record "$wl" "$rep" c_rollup "$(bench_diff "$t0" "$t1")"
    record "$wl" "$rep" c_wal "$(sql_val "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')")"
    sum=$(sql_val "SELECT coalesce(sum(n), 0) FROM rollup")
    [ "$sum" = "$((EVENTS[$ds] * MULT[$wl]))" ] || bench_die "plain SQL $wl: sum(n)=$sum, want $((EVENTS[$ds] * MULT[$wl]))"

    if [ "$rep" = 1 ]; then
        # Same rows both ways.
        # on_window_close: the sink holds exactly the rollup's windows that W closed
        local closed="true"
        [ "${EMIT[$wl]}" = on_window_close ] && closed="window_end <= '$closed_by'::timestamptz"
        diff=$(sql_val "SELECT (SELECT count(*) FROM (SELECT $cols FROM $sink EXCEPT ALL SELECT $cols FROM rollup) x)
                            || ' ' || (SELECT count(*) FROM (SELECT $cols FROM rollup WHERE $closed EXCEPT ALL SELECT $cols FROM $sink) y)")
        [ "$diff" = "0 0" ] || bench_die "$wl: stoatflow sink and plain-SQL rollup differ ($diff rows only in one of them)"
        note "$wl" check "stoatflow sink = plain-SQL rollup, row by row ($rows rows; $(awk -v e="$ev" -v m="${MULT[$wl]}" -v r="$rows" 'BEGIN { printf "%.2f", e * m / r }') events per non-empty key-window)"
    fi
    sql -c "DROP TABLE raw_events, rollup" >/dev/null
    # a variant's first repetition compares its sink with this one's (above)
    [ "$rep" = 1 ] && [ -n "$(variants_of "$wl")" ] || sql -c "DROP TABLE $sink" >/dev/null
    bench_log "$wl rep $rep: $(awk -F'\t' -v w="$wl" -v r="$rep" -v ev="$ev" '$1 == w && $2 == r && $3 !~ /^b_|^load$|_wal$/ {
        printf "%s %.2f s (%.0f ev/s)  ", $3, $4, ev / $4 }' "$results")"
}

for wl in $BENCH_WORKLOADS; do
    ds=${DATASET[$wl]}
    note "$wl" events "${EVENTS[$ds]}"
    note "$wl" keys "${KEYS_OF[$ds]}"
    note "$wl" minutes "${MINUTES[$ds]}"
    note "$wl" partitions "${PARTS[$ds]}"
    note "$wl" title "${TITLE[$wl]}"
    note "$wl" targets "${TARGETS[$wl]}"
    note "$wl" shape "${SHAPE[$wl]}; stoatflow: ${SF_WINDOW[$wl]}, '${SF_AGGS[$wl]}'"
done
# Interleaved (rep 1 of every workload, then rep 2, ...): a ratio between two workloads
# (dense_avro / dense) compares runs made under about the same load.
for ((rep = 1; rep <= BENCH_REPS; rep++)); do
    for wl in $BENCH_WORKLOADS; do
        run_one "$wl" "$rep"
    done
done
for wl in "${!REG_FETCHES[@]}"; do
    note "$wl" registry "schema registry used (the suite's fake one, 127.0.0.1): subject $REGISTRY_SUBJECT, schema id $SCHEMA_ID; GET .../versions/latest (create_source) + GET /schemas/ids/$SCHEMA_ID (the worker), answered 200, per repetition: ${REG_FETCHES[$wl]}"
done

runtime=$(bench_diff "$run_started" "$(bench_now)")
if [ "$(sha256sum "$so_file" | cut -c1-12)" != "$so_sha" ]; then
    bench_log "WARNING: stoatflow.so was reinstalled during the run; repetitions may mix versions"
    note _run warning "stoatflow.so was reinstalled during the run (now: $(so_stamp)); repetitions may mix versions"
fi
note _run date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
note _run machine "$(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM"
note _run postgres "$(sql_val 'SELECT version()')"
note _run broker "$(bench_broker_describe); topics produced with kcat -z lz4"
note _run settings "shared_buffers=1GB synchronous_commit=on max_wal_size=4GB checkpoint_timeout=30min stoatflow.commit_interval=1000; plain-SQL rollup work_mem=$BENCH_ROLLUP_WORK_MEM; CHECKPOINT before (b) and (c)"
note _run scale "$(if [ -n "$BENCH_EVENTS" ]; then echo "BENCH_EVENTS=$BENCH_EVENTS"; else echo "BENCH_SCALE=$BENCH_SCALE: $KEYS keys"; fi)$(if [ "$SMOKE" = 1 ]; then echo ' (SMOKE)'; fi)"
note _run stoatflow "$so_identity (installed when the run started; repository HEAD $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'))"
note _run columns "$(if [ "$BENCH_EXPR" = 1 ]; then echo "sources declared with columns; aggregations run by PostgreSQL's executor (BENCH_EXPR=1)"; elif [ "${BENCH_COLUMNS:-0}" = 1 ]; then echo "sources declared with columns (row type)"; else echo "sources declared with JSON field paths (0.1)"; fi)"
note _run reps "$BENCH_REPS$(if [ "$BENCH_PROFILE" = 1 ]; then echo '; PROFILE run: pg_stat_statements loaded, numbers include its overhead'; fi)"
note _run runtime "$runtime s (whole script, including data generation and produce)"

mkdir -p "$repo/bench/results"
suffix=
[ "$SMOKE" = 1 ] && suffix=-smoke
md=$repo/bench/results/e2e-$(date +%Y%m%d-%H%M%S)-$BENCH_BROKER$suffix.md
python3 bench/lib/report.py "$results" "$meta" "$md"
# BENCH_RESULTS_TSV=FILE: also keep the raw measurements (workload, rep, metric, value) there
# (bench/ab.sh reads them).
if [ -n "${BENCH_RESULTS_TSV:-}" ]; then cp "$results" "$BENCH_RESULTS_TSV"; cp "$meta" "$BENCH_RESULTS_TSV.meta"; fi
if [ "$BENCH_PROFILE" = 1 ]; then
    { echo "## Where stoatflow's worker spends its statement time (pg_stat_statements, track = all)"
      echo
      cat "$work/profile.md"; } >>"$md"
    echo
    cat "$work/profile.md"
fi
echo
echo "run time ${runtime} s; markdown: ${md#"$repo"/}"
