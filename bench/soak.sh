#!/usr/bin/env bash
# A steady load held for a long time: does the cost of a commit stay flat as the sink grows?
# Events are generated as they are produced (nothing is prepared ahead, so the run can last
# as long as asked): SOAK_RATE events/s with event times at the wall clock, keys uniform over
# SOAK_KEYS, into SOAK_PARTITIONS partitions; one caught-up stoatflow source runs a 1-minute
# tumbling count+sum per user, on_window_update, stoatflow.commit_interval = 1 s. Reported per
# slice of SOAK_SLICE seconds: the commits' latency (p50, p99, max; from stoatflow.log_commits),
# the freshness of what the sink shows, the sink's size and the worker's private RSS; then the last
# slice's p99 against the first's.
#
# Freshness: with every second's events, each partition also gets one probe event (key
# "~probe<p>", event time = the moment its second's events start being produced). The sink's
# row of that key is read every 0.25 s (by its primary key: cheap however large the sink is);
# a probe's freshness is the time from its event time to the first read that shows it (so it
# includes producing and the read's own 0.25 s spacing).
#
#   bash bench/soak.sh                                   # 100,000 events/s for 30 min, Apache Kafka
#   SOAK_RATE=20000 SOAK_MINUTES=3 SOAK_SLICE=60 bash bench/soak.sh   # a short look
#   SOAK_SINK=partitioned bash bench/soak.sh             # the sink partitioned by window_start
#
# Environment: SOAK_RATE (100000), SOAK_MINUTES (30), SOAK_SLICE (300), SOAK_KEYS (100000),
# SOAK_PARTITIONS (4), SOAK_SINK (plain | partitioned: by window_start, SOAK_PARTITION_MIN = 10
# minutes each, all created before the run, as pg_partman's premake would), BENCH_BROKER (kafka
# here: the mock cluster keeps only a few MiB per partition), BENCH_PORT (55493), BENCH_TMP,
# BENCH_KEEP=1. Needs the extension installed, java (and mvn once) for Apache Kafka, kcat.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
BENCH_BROKER=${BENCH_BROKER:-kafka}
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh

RATE=${SOAK_RATE:-100000}
MINUTES=${SOAK_MINUTES:-30}
SLICE=${SOAK_SLICE:-300}
KEYS=${SOAK_KEYS:-100000}
PARTS=${SOAK_PARTITIONS:-4}
SINK_KIND=${SOAK_SINK:-plain}
PART_MIN=${SOAK_PARTITION_MIN:-10}
PORT=${BENCH_PORT:-55493}
SECS=$((MINUTES * 60))
((RATE % PARTS == 0)) || bench_die "SOAK_RATE must be a multiple of SOAK_PARTITIONS"
case $SINK_KIND in plain | partitioned) ;; *) bench_die "SOAK_SINK is plain or partitioned" ;; esac
[ -f "$(pg_config --pkglibdir)/stoatflow.so" ] || bench_die "stoatflow is not installed: make && make install"
command -v kcat >/dev/null || bench_die "kcat is missing (apt-get install kcat)"

bench_workdir soak
bench_broker_start "soak:$PARTS"
bench_log "$BENCH_BROKER Kafka at $KAFKA_BROKERS"
# the commit lines' times are read as UTC
PG_EXTRA_CONF="log_timezone = 'UTC'" pg_start "$work" "$PORT" || bench_die "PostgreSQL did not start"
t_start_ms=$(($(date +%s) * 1000))

sql -v brokers="$KAFKA_BROKERS" <<SQL >/dev/null
CREATE EXTENSION stoatflow;
SELECT stoatflow.create_source('soak', 'soak', :'brokers', key => 'user_id', event_time => 'ts',
                               max_out_of_orderness => '5 seconds');
SQL
if [ "$SINK_KIND" = partitioned ]; then
    # The sink stoatflow would create (its columns, types and collations), partitioned by
    # window_start; every partition the run needs made now.
    sql <<SQL >/dev/null
SELECT stoatflow.create_aggregation('shape', 'soak', stoatflow.tumbling('1 minute'),
                                    'count(*) AS n, sum(amount) AS total', 'shape_sink');
CREATE TABLE soak_sink (LIKE shape_sink INCLUDING DEFAULTS) PARTITION BY RANGE (window_start);
ALTER TABLE soak_sink ADD PRIMARY KEY (key, window_start);
SELECT stoatflow.drop_aggregation('shape', drop_sink => true);
DO \$\$
DECLARE
    t timestamptz := date_trunc('hour', to_timestamp($t_start_ms / 1000.0));
BEGIN
    WHILE t < to_timestamp($t_start_ms / 1000.0) + interval '$((MINUTES + 2 * PART_MIN)) minutes' LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF soak_sink FOR VALUES FROM (%L) TO (%L)',
                       'soak_sink_' || to_char(t AT TIME ZONE 'UTC', 'YYYYMMDD_HH24MI'), t,
                       t + interval '$PART_MIN minutes');
        t := t + interval '$PART_MIN minutes';
    END LOOP;
END
\$\$;
SQL
fi
sql <<SQL >/dev/null
SELECT stoatflow.create_aggregation('soak_1m', 'soak', stoatflow.tumbling('1 minute'),
                                    'count(*) AS n, sum(amount) AS total', 'soak_sink');
SQL
worker=$(bench_wait_worker soak)

# The reader: every 0.25 s the newest probe each partition's row shows; every 5 s the sink's
# size and the worker's private RSS (RssAnon: VmRSS also counts the shared buffers it touched,
# up to shared_buffers, 1 GB here). Lines: "p <read at ms> <partition> <probe ms>", "s <ms> <bytes> <rss kB>".
probe_sql="SELECT 'p', (extract(epoch FROM clock_timestamp()) * 1000)::bigint, substr(key, 7),
                  (SELECT (extract(epoch FROM event_time) * 1000)::bigint FROM soak_sink s
                    WHERE s.key = k.key ORDER BY window_start DESC LIMIT 1)
             FROM (SELECT '~probe' || g AS key FROM generate_series(0, $((PARTS - 1))) g) k"
# pg_partition_tree has no rows for a table that is not partitioned: then the table's own size
size_sql="SELECT coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree('soak_sink')),
                          pg_total_relation_size('soak_sink'))"
(
    n=0
    while :; do
        sql -At -F ' ' -c "$probe_sql" 2>/dev/null || true
        if ((n % 20 == 0)); then
            printf 's %s %s %s\n' "$(($(date +%s%N) / 1000000))" \
                "$(sql_val "$size_sql" 2>/dev/null || echo 0)" \
                "$(awk '/^RssAnon/ { print $2 }' "/proc/$worker/status" 2>/dev/null || echo 0)"
        fi
        n=$((n + 1))
        sleep 0.25
    done
) >"$work/reads.txt" &
reader=$!

bench_log "producing $RATE events/s for $MINUTES min ($KEYS keys, $PARTS partitions, $SINK_KIND sink)"
per=$((RATE / PARTS))
t0=$(bench_now)
late_seconds=0
for ((s = 0; s < SECS; s++)); do
    now_ms=$(($(date +%s%N) / 1000000))
    pids=()
    # times with %.0f: mawk's %d stops at 2^31
    for ((p = 0; p < PARTS; p++)); do
        awk -v n="$per" -v p="$p" -v keys="$KEYS" -v base="$now_ms" -v seed=$((s * PARTS + p + 1)) 'BEGIN {
                srand(seed)
                printf "{\"user_id\":\"~probe%d\",\"ts\":%.0f,\"amount\":0}\n", p, base
                for (i = 0; i < n; i++)
                    printf "{\"user_id\":\"u%d\",\"ts\":%.0f,\"amount\":%d}\n", int(rand() * keys), base + int(i * 1000 / n), i % 100
            }' | timeout 60 kcat -P -q -b "$KAFKA_BROKERS" -t soak -p "$p" -z lz4 -X linger.ms=20 &
        pids+=($!)
    done
    wait "${pids[@]}" || bench_die "producing second $s failed"
    left=$(awk -v t0="$t0" -v s="$s" -v now="$(bench_now)" 'BEGIN { d = t0 + s + 1 - now; print (d > 0 ? d : 0) }')
    [ "$left" = 0 ] && late_seconds=$((late_seconds + 1))
    sleep "$left"
    if (((s + 1) % 60 == 0)); then bench_log "minute $(((s + 1) / 60)) of $MINUTES produced"; fi
done
t1=$(bench_now)
[ "$(sql_val "SELECT stoatflow.wait_caught_up('soak', '10 minutes')")" = t ] || bench_die "wait_caught_up timed out"
sleep 1
kill "$reader" 2>/dev/null || true
wait "$reader" 2>/dev/null || true
produced=$((SECS * (RATE + PARTS)))
sum=$(sql_val "SELECT coalesce(sum(n), 0) FROM soak_sink")
late=$(sql_val "SELECT dropped_late_window FROM stoatflow.stats WHERE aggregation_name = 'soak_1m'")
[ "$((sum + late))" = "$produced" ] || bench_die "the sink counts $sum events and $late were dropped late; $produced were produced"

grep -a "stoatflow commit: source=soak " "$work/server.log" >"$work/commits.txt" || bench_die "no commit lines in the server log"
report=$(python3 - "$work/commits.txt" "$work/reads.txt" "$t0" "$SLICE" "$SECS" <<'EOF'
import datetime, re, statistics, sys
commits, reads, t0, slice_s, secs = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round((len(xs) - 1) * q)))] if xs else float("nan")
nslices = max(1, secs // slice_s)
def slot(t):
    i = int((t - t0) // slice_s)
    return i if 0 <= i < nslices else None
lat = [[] for _ in range(nslices)]
for line in open(commits):
    m = re.match(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) (\w+)", line)
    f = dict(kv.split("=", 1) for kv in line.split("stoatflow commit: ", 1)[1].split())
    if not m or int(f["records"]) == 0:
        continue
    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
    i = slot(t)
    if i is not None:
        lat[i].append(float(f["ms"]))
first_seen, sizes = {}, [None] * nslices
for line in open(reads):
    f = line.split()
    if f[0] == "p" and len(f) == 4 and f[3]:
        key = (f[2], int(f[3]))
        first_seen.setdefault(key, int(f[1]))
    elif f[0] == "s" and len(f) == 4:
        i = slot(int(f[1]) / 1000.0)
        if i is not None:
            sizes[i] = (int(f[2]), int(f[3]))
fresh = [[] for _ in range(nslices)]
for (p, probe), seen in first_seen.items():
    i = slot(probe / 1000.0)
    if i is not None:
        fresh[i].append((seen - probe) / 1000.0)
print("| slice (min) | commits | commit p50 ms | p99 ms | max ms | freshness p50 s | p99 s | probes | sink MB | worker private RSS MB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for i in range(nslices):
    sz = sizes[i] or (0, 0)
    print("| %g-%g | %d | %.0f | %.0f | %.0f | %.2f | %.2f | %d | %.0f | %.0f |" % (
        i * slice_s / 60, (i + 1) * slice_s / 60, len(lat[i]), pct(lat[i], 0.5), pct(lat[i], 0.99),
        max(lat[i]) if lat[i] else float("nan"), pct(fresh[i], 0.5), pct(fresh[i], 0.99), len(fresh[i]),
        sz[0] / 1e6, sz[1] / 1024))
allc = [x for s in lat for x in s]
allf = [x for s in fresh for x in s]
print()
print("whole run: commit p50 %.0f ms, p99 %.0f ms (target <= 500); freshness p50 %.2f s, p99 %.2f s (target <= 2)"
      % (pct(allc, 0.5), pct(allc, 0.99), pct(allf, 0.5), pct(allf, 0.99)))
if nslices >= 2 and lat[0] and lat[-1]:
    print("last slice / first: commit p99 %.2f x, freshness p99 %.2f x (target <= 1.2)"
          % (pct(lat[-1], 0.99) / pct(lat[0], 0.99), pct(fresh[-1], 0.99) / max(pct(fresh[0], 0.99), 1e-9)))
EOF
)
prod_s=$(bench_diff "$t0" "$t1")
echo "events: $produced in $prod_s s (asked: $RATE/s for $SECS s; $late_seconds seconds produced late), $sum in the sink, $late dropped late"
echo "$report"
mkdir -p "$repo/bench/results"
md=$repo/bench/results/soak-$(date +%Y%m%d-%H%M%S)-$BENCH_BROKER-$SINK_KIND.md
{
    echo "# stoatflow soak, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "- machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(sql_val 'SELECT version()')"
    echo "- broker: $(bench_broker_describe)"
    echo "- stoatflow: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'); 1-minute tumbling count+sum, $KEYS keys, $PARTS partitions, $RATE events/s for $MINUTES min, commit_interval 1 s, $SINK_KIND sink"
    echo "- events: $produced in $prod_s s ($late_seconds seconds produced late), $sum in the sink, $late dropped late"
    echo
    echo "$report"
} >"$md"
echo "markdown: ${md#"$repo"/}"
