#!/usr/bin/env bash
# Kafka Streams vs stoatflow: throughput and CPU on the same Apache Kafka topic.
#
#   bench/peers/kafka-streams/perf.sh             # dense, sparse, hopping; 3 repetitions each
#   SMOKE=1 bench/peers/kafka-streams/perf.sh     # tiny sizes, 1 repetition: validates the script
#
# One throwaway Apache Kafka 4.1.1 (test/kafka/broker, single node KRaft on 127.0.0.1) and one
# throwaway PostgreSQL 15 with the installed stoatflow. Per shape, the same generated JSON events
# ({"user_id", "ts", "amount", "page"}, bench/gen_events.py; the Kafka message key is user_id,
# in event-time order within each partition) go into one topic of PERF_PARTITIONS partitions,
# followed by one sentinel record per partition stamped with the end of the last window: it
# closes every window of the data in both systems (its own window stays open and is never
# emitted). Then, PERF_REPS times, alternating, over that same topic:
#
#   (a) Kafka Streams  in each configuration of PERF_KS_CONFIGS (below), one after the other:
#                      KsWindows (this folder): groupByKey, windowedBy(TimeWindows.ofSizeAndGrace
#                      (SIZE, 0)[.advanceBy]), emitStrategy(EmitStrategy.onWindowClose()), aggregate count +
#                      sum(amount), final windows as JSON lines to an output topic; state stores
#                      with their changelog topics (Kafka Streams' default, fault tolerant).
#                      Time: from streams.start() to the last input record processed (as KsWindows
#                      reports it; JVM start and the close are outside, the consumer group join
#                      inside). CPU: the whole JVM (/usr/bin/time: user + system).
#   (b) stoatflow      create_source(max_out_of_orderness => '0') + create_aggregation(
#                      stoatflow.tumbling(SIZE), 'count(*) AS n, sum(amount) AS total',
#                      emit => 'on_window_close') in one transaction, until wait_caught_up returns:
#                      every record consumed, every final window a durable row (synchronous_commit
#                      on). CPU: the source worker backend (/proc/PID/stat) and the whole server
#                      (the postmaster, its live children and those that exited), as deltas.
# and the broker JVM's CPU during each. Checks (the run fails otherwise): both read every record;
# both emitted the same number of final windows; in both the sum of counts is the number of events
# and the sum of sums the sum of amounts; stoatflow dropped nothing late, no dead letters.
#
# Shapes (the same window definitions on both sides; grace 0 and max_out_of_orderness 0: the data
# is in order within each partition, so neither drops a record):
#   dense   PERF_DENSE_KEYS (10,000) keys x PERF_DENSE_PER_KEY (200) events over one hour,
#           1-hour tumbling: few keys, 200 events per window, every window closed by the sentinel
#   sparse  PERF_SPARSE_KEYS (100,000) keys over PERF_SPARSE_MINUTES (20) minutes, 1.5 events per
#           key and 1-minute window on average, 1-minute tumbling: windows close while it streams
#   hopping the sparse shape's data (a topic of its own), 10-minute windows advancing by 2 minutes:
#           every event in 5 windows; the sentinel stands 8 minutes after the data (size - advance)
#
# Kafka Streams configurations (PERF_KS_CONFIGS, default all four; at_least_once, the JVM's
# default JIT (C2), changelog topics on, in every one):
#   strict        record cache 0, closed windows looked for after every record, 1 stream thread
#                 (what this script ran before: the emission nearest to stoatflow's, and Kafka
#                 Streams' slowest)
#   default       Kafka Streams' defaults: 10 MiB record cache, emit check at most once a second,
#                 1 stream thread
#   default_2t    the defaults with 2 stream threads (both cores)
#   cache100m_2t  a 100 MiB record cache, 2 stream threads
# With an emit interval the last closed windows would never be emitted (onWindowClose looks only
# while it processes a record): KsWindows --flush-topic writes one record per partition to a
# second input once the data is read and an interval has passed. With it, and in every run of the
# hopping shape, KsWindows --keep-until-emitted (see README.md: without it Kafka Streams 4.1 drops
# closed windows whose start falls out of the store's retention before the next emit check, which
# a replay at full speed does). Kafka Streams' time is to its last data record read (its last
# windows, emitted after the flush, are outside it, its CPU inside).
#
# Environment: PERF_SHAPES ("dense sparse hopping"), PERF_REPS (3), PERF_PARTITIONS (8), the sizes
# above, PERF_KS_CONFIGS (above), PERF_KS_HEAP (1g), PERF_KS_CONFIG (space-separated KEY=VALUE
# Kafka Streams settings over every configuration, passed as KsWindows --config), BENCH_PORT
# (55493), BENCH_TMP (/tmp), BENCH_KEEP=1.
# Needs java 17+, mvn (builds KsWindows: mvn -q -B package), kcat, the extension installed.
# Results: a table on stdout and bench/results/ks-perf-DATE.md.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$HERE/../../.." && pwd)
cd "$repo"
BENCH_BROKER=kafka
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh

SMOKE=${SMOKE:-0}
if [ "$SMOKE" = 1 ]; then
    PERF_REPS=${PERF_REPS:-1}
    PERF_DENSE_KEYS=${PERF_DENSE_KEYS:-200}
    PERF_SPARSE_KEYS=${PERF_SPARSE_KEYS:-2000}
    PERF_SPARSE_MINUTES=${PERF_SPARSE_MINUTES:-10}
fi
PERF_SHAPES=${PERF_SHAPES:-dense sparse hopping}
PERF_KS_CONFIGS=${PERF_KS_CONFIGS:-strict default default_2t cache100m_2t}
PERF_REPS=${PERF_REPS:-3}
PERF_PARTITIONS=${PERF_PARTITIONS:-8}
PERF_DENSE_KEYS=${PERF_DENSE_KEYS:-10000}
PERF_DENSE_PER_KEY=${PERF_DENSE_PER_KEY:-200}
PERF_SPARSE_KEYS=${PERF_SPARSE_KEYS:-100000}
PERF_SPARSE_MINUTES=${PERF_SPARSE_MINUTES:-20}
PERF_KS_HEAP=${PERF_KS_HEAP:-1g}
PERF_KS_CONFIG=${PERF_KS_CONFIG:-}
PORT=${BENCH_PORT:-55493}
[[ $PERF_REPS =~ ^[1-9][0-9]*$ ]] || bench_die "PERF_REPS must be a positive integer"
((PERF_SPARSE_MINUTES % 2 == 0)) || bench_die "PERF_SPARSE_MINUTES must be even (1.5 events per key-window)"
for s in $PERF_SHAPES; do
    case $s in dense | sparse | hopping) ;; *) bench_die "unknown shape $s (dense, sparse, hopping)" ;; esac
done
# a configuration: its KsWindows arguments
declare -A KS_ARGS=(
    [strict]=""
    [default]="--config statestore.cache.max.bytes=10485760 --config __emit.interval.ms.kstreams.windowed.aggregation__=1000"
    [default_2t]="--config statestore.cache.max.bytes=10485760 --config __emit.interval.ms.kstreams.windowed.aggregation__=1000 --config num.stream.threads=2"
    [cache100m_2t]="--config statestore.cache.max.bytes=104857600 --config __emit.interval.ms.kstreams.windowed.aggregation__=1000 --config num.stream.threads=2"
)
for c in $PERF_KS_CONFIGS; do
    [ -n "${KS_ARGS[$c]+x}" ] || bench_die "unknown Kafka Streams configuration $c (strict, default, default_2t, cache100m_2t)"
done
for tool in java mvn kcat python3 /usr/bin/time; do command -v "$tool" >/dev/null || bench_die "$tool not found"; done
[ -f "$(pg_config --pkglibdir)/stoatflow.so" ] || bench_die "stoatflow is not installed: make && make install"
run_started=$(bench_now)
so_file=$(pg_config --pkglibdir)/stoatflow.so
so_sha=$(sha256sum "$so_file" | cut -c1-12)

# ---- KsWindows (again when a source changed) ----
stamp=$HERE/target/.built
if [[ ! -f $stamp ]] || [[ -n $(find "$HERE/pom.xml" "$HERE/src" -newer "$stamp" -type f) ]]; then
    bench_log "building KsWindows (mvn -q -B package)"
    mvn -q -B -f "$HERE/pom.xml" package >"${BENCH_TMP:-/tmp}/ks-perf-mvn.$$.log" 2>&1 ||
        { cat "${BENCH_TMP:-/tmp}/ks-perf-mvn.$$.log" >&2; bench_die "mvn package failed"; }
    rm -f "${BENCH_TMP:-/tmp}/ks-perf-mvn.$$.log"
    touch "$stamp"
fi
CP="$HERE/target/classes:$HERE/target/lib/*"

bench_workdir ks-perf
trap 'bench_log "failed: line $LINENO: $BASH_COMMAND"' ERR

# ---- data ----
declare -A SENTINEL_TS
BASE_MS=1796032800000 # bench/gen_events.py: 2026-11-30T10:00:00Z
declare -A KEYS PER_KEY MINUTES SIZE_MS ADVANCE_MS EVENTS AMOUNTS SF_WINDOW
KEYS=([dense]=$PERF_DENSE_KEYS [sparse]=$PERF_SPARSE_KEYS [hopping]=$PERF_SPARSE_KEYS)
PER_KEY=([dense]=$PERF_DENSE_PER_KEY [sparse]=$((PERF_SPARSE_MINUTES * 3 / 2)) [hopping]=$((PERF_SPARSE_MINUTES * 3 / 2)))
MINUTES=([dense]=60 [sparse]=$PERF_SPARSE_MINUTES [hopping]=$PERF_SPARSE_MINUTES)
SIZE_MS=([dense]=3600000 [sparse]=60000 [hopping]=600000)
ADVANCE_MS=([dense]=3600000 [sparse]=60000 [hopping]=120000)
SF_WINDOW=([dense]="stoatflow.tumbling('1 hour')" [sparse]="stoatflow.tumbling('1 minute')"
           [hopping]="stoatflow.hopping('10 minutes', '2 minutes')")
# windows per event: the sums of counts and of sums over the final windows
declare -A FANOUT=([dense]=1 [sparse]=1 [hopping]=5)
P=$PERF_PARTITIONS
topics=()
for s in $PERF_SHAPES; do topics+=("perf_$s:$P"); done
bench_broker_start "${topics[@]}"
bench_log "Apache Kafka $KAFKA_BROKER_VERSION at $KAFKA_BROKERS (pid $KAFKA_BROKER_PID), topics ${topics[*]}"
for s in $PERF_SHAPES; do
    python3 bench/gen_events.py "$work/data-$s" --keys "${KEYS[$s]}" --events-per-key "${PER_KEY[$s]}" \
        --partitions "$P" --minutes "${MINUTES[$s]}" >&2
    EVENTS[$s]=$((KEYS[$s] * PER_KEY[$s]))
    AMOUNTS[$s]=$(cat "$work/data-$s"/p*.jsonl | awk -F'"amount": ' '{ split($2, a, ","); t += a[1] } END { printf "%d", t }')
    sentinel_ts=$((BASE_MS + MINUTES[$s] * 60000 + SIZE_MS[$s] - ADVANCE_MS[$s]))
    SENTINEL_TS[$s]=$sentinel_ts
    t0=$(bench_now)
    for ((p = 0; p < P; p++)); do
        { awk '{ print substr($2, 2, 10) "|" $0 }' "$work/data-$s/p$p.jsonl"
          echo "zz-sentinel-$p|{\"user_id\": \"zz-sentinel-$p\", \"ts\": $sentinel_ts, \"amount\": 0, \"page\": \"/\"}"
        } | timeout 600 kcat -P -q -b "$KAFKA_BROKERS" -t "perf_$s" -p "$p" -K '|' -z lz4 ||
            bench_die "producing partition $p of perf_$s failed"
    done
    hi=()
    for ((p = 0; p < P; p++)); do hi+=(-t "perf_$s:$p:-1"); done
    held=$(timeout 60 kcat -Q -b "$KAFKA_BROKERS" "${hi[@]}" | awk '{ t += $4 } END { print t }')
    [ "$held" = $((EVENTS[$s] + P)) ] || bench_die "perf_$s holds $held records, want $((EVENTS[$s] + P))"
    bench_log "$s: ${EVENTS[$s]} events (+ $P sentinels) produced in $(bench_diff "$t0" "$(bench_now)") s; ${KEYS[$s]} keys x ${PER_KEY[$s]} over ${MINUTES[$s]} min"
done

# ---- PostgreSQL ----
pg_start "$work" "$PORT" || bench_die "PostgreSQL did not start"
sql -c "CREATE EXTENSION stoatflow" >/dev/null
PM_PID=$(pg_postmaster_pid)
bench_log "PostgreSQL $(sql_val 'SHOW server_version') (postmaster $PM_PID)"

results=$work/results.tsv
: >"$results"
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$results"; }
ks_conf=()
for kv in $PERF_KS_CONFIG; do ks_conf+=(--config "$kv"); done

run_ks() {
    local s=$1 rep=$2 cfg=$3 out=perf_out_${1}_$2_$3 flush=perf_flush_${1}_$2_$3 ev=${EVENTS[$1]} b0 b1 line
    local -a args
    read -r -a args <<<"${KS_ARGS[$cfg]}"
    local -a topics_new=("$out")
    if [ "$cfg" != strict ]; then
        topics_new+=("$flush")
        args+=(--flush-topic "$flush" --flush-ts "${SENTINEL_TS[$s]}")
    fi
    if [ "$cfg" != strict ] || [ "$s" = hopping ]; then args+=(--keep-until-emitted); fi
    local window=(tumbling "${SIZE_MS[$s]}" 0)
    [ "$s" = hopping ] && window=(hopping "${SIZE_MS[$s]}" "${ADVANCE_MS[$s]}" 0)
    java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$CP" dev.stoatflow.peers.CreateTopics \
        "$KAFKA_BROKERS" "$P" --config retention.ms=-1 "${topics_new[@]}" >/dev/null || bench_die "could not create $out"
    b0=$(proc_cpu "$KAFKA_BROKER_PID")
    /usr/bin/time -f '%e %U %S' -o "$work/ks-time" \
        java -Xms"$PERF_KS_HEAP" -Xmx"$PERF_KS_HEAP" -cp "$CP" dev.stoatflow.peers.KsWindows \
        --bootstrap "$KAFKA_BROKERS" --input "perf_$s" --output "$out" \
        --window "${window[@]}" --expect-records $((ev + P)) --idle-seconds 60 \
        --run-seconds 1500 --app-id "perf-$s-$rep-$cfg-$$" --state-dir "$work/ks-state" "${args[@]}" "${ks_conf[@]}" \
        2>"$work/ks.err" || { tail -n 30 "$work/ks.err" >&2; bench_die "Kafka Streams failed"; }
    b1=$(proc_cpu "$KAFKA_BROKER_PID")
    line=$(grep "KsWindows: stopped" "$work/ks.err") || bench_die "no summary line from KsWindows"
    bench_log "$line"
    # "... after W s: N records read (first after F s, last after L s), K windows written ..."
    local read last windows
    read -r read last windows < <(sed -E 's/.*: ([0-9]+) records read \(first after [0-9.]+ s, last after ([0-9.]+) s\), ([0-9]+) windows.*/\1 \2 \3/' <<<"$line")
    [ "$read" = $((ev + P)) ] || bench_die "Kafka Streams read $read records, want $((ev + P))"
    read -r wall user sys <"$work/ks-time"
    record "$s" "$rep" "ks_s:$cfg" "$last"
    record "$s" "$rep" "ks_wall:$cfg" "$wall"
    record "$s" "$rep" "ks_cpu:$cfg" "$(awk -v u="$user" -v y="$sys" 'BEGIN { printf "%.2f", u + y }')"
    record "$s" "$rep" "ks_broker_cpu:$cfg" "$(bench_diff "$b0" "$b1")"
    # the output: every final window once; counts and sums add up
    local sums
    sums=$(timeout 300 kcat -C -b "$KAFKA_BROKERS" -t "$out" -o beginning -e -q -f '%s\n' |
        awk -F'[:,}]' '{ for (i = 1; i < NF; i++) { if ($i == "\"count\"") c += $(i + 1); if ($i == "\"sum\"") t += $(i + 1) } n++ }
                       END { printf "%d %d %d\n", n, c, t }')
    local n c t
    read -r n c t <<<"$sums"
    local fan=${FANOUT[$s]}
    [ "$n" = "$windows" ] && [ "$c" = $((ev * fan)) ] && [ "$t" = $((AMOUNTS[$s] * fan)) ] ||
        bench_die "Kafka Streams $s ($cfg): $n windows in $out ($windows reported), sum of counts $c (want $((ev * fan))), sum of sums $t (want $((AMOUNTS[$s] * fan)))"
    record "$s" "$rep" "ks_windows:$cfg" "$n"
}

run_sf() {
    local s=$1 rep=$2 src=src_${1}_$2 agg=agg_${1}_$2 sink=sf_${1}_$2 ev=${EVENTS[$1]} t0 t1 out
    local b0 b1 pm0 pm1 pid
    sql -c "CHECKPOINT" >/dev/null
    b0=$(proc_cpu "$KAFKA_BROKER_PID")
    pm0=$(tree_cpu "$PM_PID")
    t0=$(bench_now)
    out=$(sql -At -v brokers="$KAFKA_BROKERS" <<SQL
BEGIN;
SELECT stoatflow.create_source('$src', 'perf_$s', :'brokers', key => 'user_id', event_time => 'ts',
                               max_out_of_orderness => '0');
SELECT stoatflow.create_aggregation('$agg', '$src', ${SF_WINDOW[$s]}, 'count(*) AS n, sum(amount) AS total',
                                    '$sink', emit => 'on_window_close');
COMMIT;
SELECT stoatflow.wait_caught_up('$src', '30 minutes');
SQL
    ) || bench_die "stoatflow run failed"
    t1=$(bench_now)
    [ "$(tail -n1 <<<"$out")" = t ] || bench_die "wait_caught_up($src) timed out"
    pid=$(sql_val "SELECT pid FROM pg_stat_activity WHERE backend_type = 'stoatflow source $src'")
    [ -n "$pid" ] && record "$s" "$rep" sf_worker_cpu "$(proc_cpu "$pid")"
    pm1=$(tree_cpu "$PM_PID")
    b1=$(proc_cpu "$KAFKA_BROKER_PID")
    record "$s" "$rep" sf_s "$(bench_diff "$t0" "$t1")"
    record "$s" "$rep" sf_server_cpu "$(bench_diff "$pm0" "$pm1")"
    record "$s" "$rep" sf_broker_cpu "$(bench_diff "$b0" "$b1")"
    local sum total records late dead rows notfinal
    read -r sum total records late dead rows notfinal <<<"$(sql_val "SELECT (SELECT coalesce(sum(n), 0) || ' ' || coalesce(sum(total), 0) FROM $sink)
            || ' ' || records_in || ' ' || dropped_late_window || ' ' || dead_letters
            || ' ' || (SELECT count(*) FROM $sink) || ' ' || (SELECT count(*) FROM $sink WHERE NOT final)
          FROM stoatflow.stats WHERE aggregation_name = '$agg'")"
    local fan=${FANOUT[$s]}
    [ "$sum" = $((ev * fan)) ] && [ "$total" = $((AMOUNTS[$s] * fan)) ] && [ "$records" = $((ev + P)) ] && [ "$late" = 0 ] &&
        [ "$dead" = 0 ] && [ "$notfinal" = 0 ] ||
        bench_die "stoatflow $s: sum(n)=$sum (want $((ev * fan))), sum(total)=$total (want $((AMOUNTS[$s] * fan))), records_in=$records (want $((ev + P))), late=$late, dead=$dead, not final=$notfinal"
    record "$s" "$rep" sf_windows "$rows"
    sql -c "SELECT stoatflow.drop_source('$src', cascade => true)" >/dev/null
    local i
    for ((i = 0; i < 300; i++)); do
        [ "$(sql_val "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow source %'")" = 0 ] && break
        sleep 0.1
    done
    sql -c "DROP TABLE $sink" >/dev/null
}

for s in $PERF_SHAPES; do
    for ((rep = 1; rep <= PERF_REPS; rep++)); do
        record "$s" "$rep" load "$(cut -d' ' -f1 /proc/loadavg)"
        for cfg in $PERF_KS_CONFIGS; do run_ks "$s" "$rep" "$cfg"; done
        run_sf "$s" "$rep"
        sfw=$(awk -F'\t' -v s="$s" -v r="$rep" '$1 == s && $2 == r && $3 == "sf_windows" { print $4 }' "$results")
        for cfg in $PERF_KS_CONFIGS; do
            ksw=$(awk -F'\t' -v s="$s" -v r="$rep" -v k="ks_windows:$cfg" '$1 == s && $2 == r && $3 == k { print $4 }' "$results")
            [ "$ksw" = "$sfw" ] || bench_die "$s rep $rep: Kafka Streams ($cfg) emitted $ksw final windows, stoatflow $sfw"
        done
        bench_log "$s rep $rep: $(awk -F'\t' -v s="$s" -v r="$rep" -v ev="${EVENTS[$s]}" '$1 == s && $2 == r {
            if ($3 ~ /^ks_s:/ || $3 == "sf_s") printf "%s %.2f s (%.0f ev/s)  ", $3, $4, ev / $4
            else if ($3 ~ /cpu/) printf "%s %.2f  ", $3, $4 }' "$results")windows $sfw"
    done
done

runtime=$(bench_diff "$run_started" "$(bench_now)")
mkdir -p "$repo/bench/results"
md=$repo/bench/results/ks-perf-$(date +%Y%m%d-%H%M%S)$([ "$SMOKE" = 1 ] && echo -smoke || true).md
meta=$work/meta.tsv
{
    printf 'date\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    printf 'machine\t%s\n' "$(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo))"
    printf 'broker\t%s\n' "$(bench_broker_describe); $P partitions per topic"
    printf 'kafka_streams\t%s\n' "Kafka Streams $(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$HERE/pom.xml") (KsWindows, $(java -version 2>&1 | head -n1), heap $PERF_KS_HEAP; configurations $PERF_KS_CONFIGS; extra config over all: ${PERF_KS_CONFIG:-none})"
    printf 'postgres\t%s\n' "$(sql_val 'SELECT version()')"
    printf 'stoatflow\t%s\n' "stoatflow.so sha256 $so_sha$([ "$(sha256sum "$so_file" | cut -c1-12)" = "$so_sha" ] || echo ' (REINSTALLED during the run: repetitions may mix builds)'); repository HEAD $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'); synchronous_commit=on, stoatflow.commit_interval=1000"
    printf 'runtime\t%s s\n' "$runtime"
    for s in $PERF_SHAPES; do
        printf 'shape_%s\t%s events, %s keys x %s events over %s min, %s-ms windows advancing by %s ms, grace 0\n' \
            "$s" "${EVENTS[$s]}" "${KEYS[$s]}" "${PER_KEY[$s]}" "${MINUTES[$s]}" "${SIZE_MS[$s]}" "${ADVANCE_MS[$s]}"
        printf 'events_%s\t%s\n' "$s" "${EVENTS[$s]}"
    done
} >"$meta"
python3 - "$results" "$meta" "$md" "$PERF_KS_CONFIGS" <<'PY'
import statistics, sys
from collections import defaultdict
res, meta_path, md_path, configs = sys.argv[1:5]
configs = configs.split()
v = defaultdict(lambda: defaultdict(list))
order = []
for line in open(res):
    s, rep, k, x = line.rstrip("\n").split("\t")
    if s not in order:
        order.append(s)
    v[s][k].append(float(x))
meta = dict(l.rstrip("\n").split("\t", 1) for l in open(meta_path))
med = lambda xs: statistics.median(xs) if xs else float("nan")
md = ["# Kafka Streams vs stoatflow, %s" % meta["date"], ""]
for k in ("machine", "broker", "kafka_streams", "postgres", "stoatflow", "runtime"):
    md.append("- %s: %s" % (k, meta[k]))
md.append("")
md.append("Per shape, stoatflow against Kafka Streams' best configuration of the run, by events/s and by events per CPU-second (Kafka Streams: the whole JVM; stoatflow: the whole PostgreSQL server; the broker apart):")
md.append("")
md.append("| shape | events | stoatflow events/s | best KS events/s (config) | stoatflow / best KS | stoatflow events per CPU-s | best KS events per CPU-s (config) | stoatflow / best KS per CPU-s |")
md.append("|---|---:|---:|---:|---:|---:|---:|---:|")
for s in order:
    ev = int(meta["events_" + s])
    d = v[s]
    sf = med([ev / x for x in d["sf_s"]])
    sf_cpu = ev / med(d["sf_server_cpu"])
    rate = {c: med([ev / x for x in d["ks_s:" + c]]) for c in configs}
    per_cpu = {c: ev / med(d["ks_cpu:" + c]) for c in configs}
    br = max(configs, key=lambda c: rate[c])
    bc = max(configs, key=lambda c: per_cpu[c])
    md.append("| %s | {:,} | {:,.0f} | {:,.0f} (%s) | **%.2f** | {:,.0f} | {:,.0f} (%s) | **%.2f** |".format(
        ev, sf, rate[br], sf_cpu, per_cpu[bc]) % (s, br, sf / rate[br], bc, sf_cpu / per_cpu[bc]))
md.append("")
md.append("Every configuration (medians, range of events/s in brackets):")
md.append("")
md.append("| shape | side (config) | events/s | / stoatflow | CPU s | events per CPU-s | broker CPU s | final windows | reps |")
md.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for s in order:
    ev = int(meta["events_" + s])
    d = v[s]
    sf = [ev / x for x in d["sf_s"]]
    md.append("| %s | stoatflow (server; worker %.2f CPU s) | {:,.0f} ({:,.0f}–{:,.0f}) | 1.00 | %.2f | {:,.0f} | %.2f | {:,.0f} | %d |".format(
        med(sf), min(sf), max(sf), ev / med(d["sf_server_cpu"]), med(d["sf_windows"]))
        % (s, med(d["sf_worker_cpu"]), med(d["sf_server_cpu"]), med(d["sf_broker_cpu"]), len(sf)))
    for c in configs:
        ks = [ev / x for x in d["ks_s:" + c]]
        md.append("| %s | Kafka Streams (%s) | {:,.0f} ({:,.0f}–{:,.0f}) | %.2f | %.2f | {:,.0f} | %.2f | {:,.0f} | %d |".format(
            med(ks), min(ks), max(ks), ev / med(d["ks_cpu:" + c]), med(d["ks_windows:" + c]))
            % (s, c, med(ks) / med(sf), med(d["ks_cpu:" + c]), med(d["ks_broker_cpu:" + c]), len(ks)))
md.append("")
for s in order:
    d = v[s]
    md.append("- %s: %s" % (s, meta["shape_" + s]))
    md.append("  - seconds per rep: stoatflow %s; %s; load at start %s" % (
        " ".join("%.2f" % x for x in d["sf_s"]),
        "; ".join("KS %s %s (process wall %s)" % (c, " ".join("%.2f" % x for x in d["ks_s:" + c]),
                                                 " ".join("%.1f" % x for x in d["ks_wall:" + c])) for c in configs),
        " ".join("%.2f" % x for x in d["load"])))
md.append("")
md.append("Configurations: strict = record cache 0, emit check after every record, 1 stream thread; default = Kafka Streams' defaults (10 MiB cache, emit check at most once a second), 1 thread; default_2t = the defaults, 2 threads; cache100m_2t = 100 MiB cache, 2 threads. All at_least_once, C2 JIT, changelog topics on.")
md.append("Both sides read every record, emitted the same number of final windows, and their counts sum to the events (times windows per event) and their sums to the sum of amounts (checked per repetition and configuration).")
open(md_path, "w").write("\n".join(md) + "\n")
print("\n".join(md))
PY
echo
echo "run time ${runtime} s; markdown: ${md#"$repo"/}"
