#!/usr/bin/env bash
# Commit latency under a steady load. Events are produced into
# Kafka (the mock cluster, or Apache Kafka with BENCH_BROKER=kafka) at a fixed rate while a caught-up stoatflow source consumes them (1-minute
# tumbling count+sum per user, on_window_update, stoatflow.commit_interval = 1 s); the
# worker's commits during that time (stoatflow.log_commits) are summarised: latency
# p50/p99/max, records, state rows and sink rows per commit, microseconds per state and sink
# row. e2e.sh measures catch-up (a backlog consumed at full speed: few, large commits); this
# measures the steady state (a commit every second).
#
#   bash bench/live.sh           # LIVE_RATE=50000 events/s for LIVE_SECONDS=30, 100,000 keys
#   SMOKE=1 bash bench/live.sh   # 5,000 events/s for 5 s, 1,000 keys
#   BENCH_BROKER=kafka bash bench/live.sh   # against Apache Kafka 4.x (test/kafka/broker)
#
# Environment: LIVE_RATE, LIVE_SECONDS, LIVE_KEYS, LIVE_PARTITIONS (4), BENCH_PORT (55492),
# BENCH_BROKER=mock|kafka (see bench/lib/common.sh), BENCH_TMP (/tmp), BENCH_KEEP=1 (keep the
# work directory). Needs the extension installed (make && make install), and for the mock
# build/stoatflow-mock-broker (cmake; see BENCHMARKS.md); for kafka java (and mvn once).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh

if [ "${SMOKE:-0}" = 1 ]; then
    LIVE_RATE=${LIVE_RATE:-5000} LIVE_SECONDS=${LIVE_SECONDS:-5} LIVE_KEYS=${LIVE_KEYS:-1000}
fi
RATE=${LIVE_RATE:-50000}
SECS=${LIVE_SECONDS:-30}
KEYS=${LIVE_KEYS:-100000}
PARTS=${LIVE_PARTITIONS:-4}
PORT=${BENCH_PORT:-55492}
EVENTS=$((RATE * SECS))
((EVENTS % KEYS == 0)) || bench_die "LIVE_RATE x LIVE_SECONDS must be a multiple of LIVE_KEYS"
((RATE % PARTS == 0)) || bench_die "LIVE_RATE must be a multiple of LIVE_PARTITIONS"
[ -f "$(pg_config --pkglibdir)/stoatflow.so" ] || bench_die "stoatflow is not installed: make && make install"
[ "$BENCH_BROKER" != mock ] || [ -x "${MOCK_BROKER:-$repo/build/stoatflow-mock-broker}" ] ||
    cmake --build "$repo/build" --target stoatflow-mock-broker -- -s >/dev/null ||
    bench_die "cannot build build/stoatflow-mock-broker"

bench_workdir live

# One chunk per partition per second, in event-time order within each partition.
bench_log "generating $EVENTS events ($KEYS keys, $PARTS partitions), $RATE events/s for $SECS s"
python3 bench/gen_events.py "$work/data" --keys "$KEYS" --events-per-key $((EVENTS / KEYS)) \
    --partitions "$PARTS" --minutes 60 >&2
mkdir -p "$work/chunks"
for ((p = 0; p < PARTS; p++)); do
    split -l $((RATE / PARTS)) -d -a 4 "$work/data/p$p.jsonl" "$work/chunks/p$p."
done

bench_broker_start "live:$PARTS"
bench_log "$BENCH_BROKER Kafka at $KAFKA_BROKERS"
pg_start "$work" "$PORT" || bench_die "PostgreSQL did not start"
# Each second carries 60/SECS minutes of event time per partition, and the partitions' chunks
# arrive a little apart: allow two seconds' worth of out-of-orderness (nothing late), so
# windows still close while the data streams.
OOO_MIN=$(((120 + SECS - 1) / SECS + 1))
sql -v brokers="$KAFKA_BROKERS" <<SQL >/dev/null
CREATE EXTENSION stoatflow;
SELECT stoatflow.create_source('live', 'live', :'brokers', key => 'user_id', event_time => 'ts',
                               max_out_of_orderness => '$OOO_MIN minutes');
SELECT stoatflow.create_aggregation('live_1m', 'live', stoatflow.tumbling('1 minute'),
                                    'count(*) AS n, sum(amount) AS total', 'live_sink');
SQL
bench_wait_worker live >/dev/null

bench_log "producing for $SECS s"
t0=$(bench_now)
for ((s = 0; s < SECS; s++)); do
    chunk=$(printf '%04d' "$s")
    pids=()
    for ((p = 0; p < PARTS; p++)); do
        timeout 60 kcat -P -q -b "$KAFKA_BROKERS" -t live -p "$p" -z lz4 <"$work/chunks/p$p.$chunk" &
        pids+=($!)
    done
    wait "${pids[@]}" || bench_die "producing second $s failed"  # not the mock broker, also a child
    # the next second starts on the clock, not after this one's produce time
    left=$(awk -v t0="$t0" -v s="$s" -v now="$(bench_now)" 'BEGIN { d = t0 + s + 1 - now; print (d > 0 ? d : 0) }')
    sleep "$left"
done
t1=$(bench_now)
[ "$(sql_val "SELECT stoatflow.wait_caught_up('live', '5 minutes')")" = t ] || bench_die "wait_caught_up timed out"
t2=$(bench_now)
sum=$(sql_val "SELECT coalesce(sum(n), 0) FROM live_sink")
late=$(sql_val "SELECT dropped_late_window FROM stoatflow.stats WHERE aggregation_name = 'live_1m'")
[ "$sum" = "$EVENTS" ] || bench_die "the sink counts $sum events, $EVENTS were produced ($late dropped late)"

# The commits that carried records: ms state_rows sink_rows records state_ms sink_ms
stats=$(grep -a "stoatflow commit: source=live " "$work/server.log" | sed 's/.*stoatflow commit: //' |
    awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
           if (v["records"] > 0) print v["ms"], v["state_rows"], v["sink_rows"], v["records"], v["state_ms"], v["sink_ms"] }')
[ -n "$stats" ] || bench_die "no commit lines in the server log"
report=$(sort -n <<<"$stats" | awk -v rate="$RATE" -v secs="$SECS" -v prod="$(bench_diff "$t0" "$t1")" \
                                    -v tail="$(bench_diff "$t1" "$t2")" '
    { ms[n] = $1; st[n] = $2; sk[n] = $3; rec[n] = $4; n++; sr += $2; skr += $3; stm += $5; skm += $6 }
    function med(a,   i, j, t, b, k) { k = 0; for (i in a) b[k++] = a[i]
        for (i = 1; i < k; i++) { t = b[i]; for (j = i - 1; j >= 0 && b[j] > t; j--) b[j + 1] = b[j]; b[j + 1] = t }
        return b[int((k - 1) / 2)] }
    END {
        printf "events: %d at %d events/s for %d s (produced in %.1f s); caught up %.2f s after the last chunk\n",
               rate * secs, rate, secs, prod, tail
        printf "commits with records: %d\n", n
        printf "commit latency: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", ms[int((n - 1) / 2)], ms[int((n - 1) * 0.99 + 0.5)], ms[n - 1]
        printf "per commit (median): %d records, %d state rows, %d sink rows\n", med(rec), med(st), med(sk)
        printf "writing cost: state %.2f us per state row, sink %.2f us per sink row\n",
               (sr > 0 ? stm * 1000 / sr : 0), (skr > 0 ? skm * 1000 / skr : 0)
    }')
echo "$report"
mkdir -p "$repo/bench/results"
md=$repo/bench/results/live-$(date +%Y%m%d-%H%M%S)-$BENCH_BROKER$([ "${SMOKE:-0}" = 1 ] && echo -smoke || true).md
{
    echo "# stoatflow live load, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo
    echo "- machine: $(nproc) CPUs, $(sql_val 'SELECT version()')"
    echo "- broker: $(bench_broker_describe)"
    echo "- stoatflow: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'); 1-minute tumbling count+sum, $KEYS keys, $PARTS partitions, commit_interval 1 s, max_out_of_orderness $OOO_MIN min"
    echo
    sed 's/^/- /' <<<"$report"
} >"$md"
echo "markdown: ${md#"$repo"/}"
