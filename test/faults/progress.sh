#!/usr/bin/env bash
# Fault scenario (Apache Kafka only: the mock cluster keeps only a few MiB per partition, far
# less than the backlog): progress you can watch (README "Progress"). A backlog of
# PROGRESS_EVENTS records (default 10,000,000: produced in about 20 s, caught up in 4-20 s
# depending on the machine, the whole scenario one to two minutes) is produced into 4 partitions
# before the source exists; then the source and
# its aggregation agg catch up while stoatflow.stats and stoatflow.sources are sampled every
# 0.2 s. Asserted from the samples: after the first non-NULL poll records_per_second, lag and
# (while behind) eta are never NULL; lag never grows; progress_at moves at least every 2 s while
# consuming; the status follows the catching-up rule on the numbers published with it (behind
# while lag >= 50,000 and more than 2 s of reading at records_per_second; ± 10 % at the edge),
# and goes catching_up → running; from 20 % on, eta is within 2× of the time
# that was actually left (± 2 s: numbers published every second, and
# the last second's hand-over or commit). Then agg_b is
# declared on the caught-up source (start_from 'earliest': it backfills the whole backlog): its
# own row shows status 'backfilling' with its own progress, the same checks, then 'running'.
# Last, agg_future (start_from a time after every record) must be named in the server log as
# starting at the partitions' ends, and small_old ('earliest' on a topic whose partition 0 lost
# its first 40 records to DeleteRecords, as retention would) as starting at offset 40 there.
# Every aggregation must count every record.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin progress
require_kafka "the backlog does not fit the mock cluster's partitions"
EVENTS=${PROGRESS_EVENTS:-10000000}
KEYS=${PROGRESS_KEYS:-1000}
CATCHUP_LIMIT=${PROGRESS_CATCHUP_LIMIT:-240} # seconds per catch-up

broker_start "$TOPIC:$PARTITIONS" small:2 || fail "the $TEST_BROKER broker did not start"
pg_init
pg_start
sql "CREATE EXTENSION stoatflow" >/dev/null

# The backlog: per partition EVENTS / PARTITIONS records, event times spread over the last two
# hours in order (so lag_time falls as it is read), produced by 4 kcat runs at once.
per=$((EVENTS / PARTITIONS))
now_ms=$(($(date +%s) * 1000))
t_produce=$(date +%s.%N)
pids=()
for ((p = 0; p < PARTITIONS; p++)); do
    awk -v n="$per" -v p="$p" -v keys="$KEYS" -v base=$((now_ms - 7200000)) 'BEGIN {
            step = 7200000 / n
            for (i = 0; i < n; i++)
                printf "{\"user_id\":\"u%d\",\"ts\":%.0f,\"amount\":%d}\n", (i * 7 + p) % keys, base + i * step, i % 100
        }' | timeout 600 kcat -P -b "$KAFKA_BROKERS" -t "$TOPIC" -p "$p" -z lz4 \
        -X queue.buffering.max.messages=1000000 -X linger.ms=50 -X batch.num.messages=100000 \
        2>"$WORK/kcat-$p.err" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || fail "kcat could not produce the backlog"; done
if grep -qi "fail\|error" "$WORK"/kcat-*.err; then
    cat "$WORK"/kcat-*.err >&2
    fail "kcat reported errors producing the backlog"
fi
PRODUCED=$((per * PARTITIONS))
log "produced $PRODUCED records in $(awk -v a="$t_produce" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

# sample AGG OUT: every 0.2 s one line of the aggregation's row (and its source's status and lag)
# until its lag is 0 with every record counted and status running, or CATCHUP_LIMIT passes.
# Columns: t | status | lag | records_per_second | eta (s) | progress_at | records_in | source
# statuses | source lag.
sample() {
    local agg=$1 out=$2 deadline line
    deadline=$(($(date +%s) + CATCHUP_LIMIT))
    : >"$out"
    while (($(date +%s) < deadline)); do
        line=$(psql_try -c "SELECT extract(epoch FROM clock_timestamp()), st.status, st.lag,
                   st.records_per_second, extract(epoch FROM st.eta), extract(epoch FROM st.progress_at),
                   coalesce(st.records_in, 0),
                   (SELECT string_agg(DISTINCT s.status, '/') FROM stoatflow.sources s WHERE s.source_name = '$SOURCE'),
                   (SELECT sum(s.lag) FROM stoatflow.sources s WHERE s.source_name = '$SOURCE')
              FROM stoatflow.stats st WHERE st.aggregation_name = '$agg'") || line=""
        [ -n "$line" ] && printf '%s\n' "$line" >>"$out"
        if [[ $line == *"|running|0|"*"|$PRODUCED|"* ]]; then return 0; fi
        sleep 0.2
    done
    fail "$agg did not catch up within ${CATCHUP_LIMIT}s (last sample: $(tail -n1 "$out"))"
}

# check_samples FILE BUSY_STATUS: the assertions of the header over one catch-up's samples.
check_samples() {
    python3 - "$1" "$2" <<'EOF'
import sys
path, busy = sys.argv[1], sys.argv[2]
rows = []
for line in open(path):
    f = line.rstrip("\n").split("|")
    num = lambda s: None if s == "" else float(s)
    rows.append(dict(t=float(f[0]), status=f[1], lag=num(f[2]), rate=num(f[3]), eta=num(f[4]),
                     at=num(f[5]), records=int(f[6])))
bad = []
first = next((i for i, r in enumerate(rows) if r["rate"] is not None), None)
if first is None:
    sys.exit("no sample ever showed records_per_second")
live = rows[first:]
end = next((r["t"] for r in live if r["lag"] == 0), None)
if end is None:
    sys.exit("lag never reached 0")
lag0 = live[0]["lag"]
BEHIND_LAG = 50000   # the catch-up threshold (README "Progress")
clearly_behind = 0
prev = None
statuses = []
last_at, max_gap = live[0]["at"], 0.0
for r in live:
    consuming = r["lag"] is not None and r["lag"] > 0
    for k in ("rate", "lag", "at"):
        if r[k] is None:
            bad.append("%s NULL after the first rate at t=%.1f" % (k, r["t"]))
    if consuming and r["eta"] is None:
        bad.append("eta NULL while %d records behind at t=%.1f" % (r["lag"], r["t"]))
    if prev is not None and r["lag"] is not None and prev["lag"] is not None and r["lag"] > prev["lag"]:
        bad.append("lag grew from %d to %d at t=%.1f" % (prev["lag"], r["lag"], r["t"]))
    if r["at"] is not None:
        if r["at"] != last_at:
            max_gap = max(max_gap, r["at"] - last_at)
            last_at = r["at"]
        if consuming and r["t"] - r["at"] > 2.5:   # 2 s, plus the sample's own time
            bad.append("progress_at %.1f s old at t=%.1f while consuming" % (r["t"] - r["at"], r["t"]))
    if not statuses or statuses[-1] != r["status"]:
        statuses.append(r["status"])
    # The catching-up rule on the numbers published with the status (a backfill shows its own
    # status throughout). Near the rule's edge either status is right: the two numbers are
    # rounded, and the sum over partitions of a rate can differ in the last digits.
    if busy == "catching_up" and r["rate"] is not None and r["lag"] is not None:
        if r["lag"] >= BEHIND_LAG and r["lag"] > 2.2 * r["rate"]:
            clearly_behind += 1
            if r["status"] != "catching_up":
                bad.append("status %s with %d records behind at %.0f/s at t=%.1f (want catching_up)"
                           % (r["status"], r["lag"], r["rate"], r["t"]))
        elif (r["lag"] < BEHIND_LAG or r["lag"] < 1.8 * r["rate"]) and r["status"] == "catching_up":
            bad.append("status catching_up with %d records behind at %.0f/s at t=%.1f (want running)"
                       % (r["lag"], r["rate"], r["t"]))
    # the estimate, from 20 % of the backlog on
    if consuming and r["eta"] is not None and lag0 and r["lag"] <= 0.8 * lag0:
        left = end - r["t"]
        if not (left / 2 - 2.0 <= r["eta"] <= 2 * left + 2.0):
            bad.append("eta %.1f s at t=%.1f, actually %.1f s were left" % (r["eta"], r["t"], left))
    prev = r
if max_gap > 2.0 + 0.6:
    bad.append("progress_at moved by %.1f s at once (want at most every 2 s)" % max_gap)
if busy == "catching_up" and clearly_behind == 0:
    bad.append("no sample was more than 2 s of reading behind (rate up to %.0f/s): the backlog drained "
               "too fast to watch; raise PROGRESS_EVENTS" % max(r["rate"] for r in live))
if statuses != [busy, "running"]:
    bad.append("statuses %s, want %s then running" % (statuses, busy))
etas = [r for r in live if r["eta"] is not None and r["lag"] <= 0.8 * lag0]
print("samples %d, catch-up %.1f s from the first rate, rate %.0f..%.0f/s, statuses %s, eta checked %d times, "
      "status rule checked behind %d times, largest progress_at step %.1f s" % (len(live), end - live[0]["t"],
      min(r["rate"] for r in live), max(r["rate"] for r in live), "->".join(statuses), len(etas),
      clearly_behind, max_gap))
if bad:
    print("\n".join(bad[:20]))
    sys.exit(1)
EOF
}

t_start=$(date +%s.%N)
sql "SELECT stoatflow.create_source('$SOURCE', '$TOPIC', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour')" >/dev/null
sql "SELECT stoatflow.create_aggregation('agg', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', '$SINK')" >/dev/null
sample agg "$WORK/samples-agg.txt"
took=$(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
check_samples "$WORK/samples-agg.txt" catching_up >"$WORK/check-agg.txt" || { cat "$WORK/check-agg.txt" >&2; fail "progress samples of agg do not hold"; }
log "agg caught up on $PRODUCED records in $took s: $(head -n1 "$WORK/check-agg.txt")"
cut -d'|' -f8 "$WORK/samples-agg.txt" | grep -qx catching_up ||
    fail "stoatflow.sources never showed catching_up"

# A backfill: its own progress on its own row.
t_start=$(date +%s.%N)
sql "SELECT stoatflow.create_aggregation('agg_b', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_b', start_from => 'earliest')" >/dev/null
sample agg_b "$WORK/samples-agg_b.txt"
took=$(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
check_samples "$WORK/samples-agg_b.txt" backfilling >"$WORK/check-agg_b.txt" || { cat "$WORK/check-agg_b.txt" >&2; fail "progress samples of agg_b do not hold"; }
log "agg_b backfilled $PRODUCED records in $took s: $(head -n1 "$WORK/check-agg_b.txt")"

# A start after every record: the log names the aggregation and says where it starts.
future=$(sql "SELECT (now() + interval '1 minute')::text")
sql "SELECT stoatflow.create_aggregation('agg_future', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_future', start_from => '$future')" >/dev/null
said() { grep -q "aggregation \"agg_future\": start_from .*has no record at or after that time yet: starts at its end" "$SERVER_LOG"; }
wait_until 60 "the log line naming agg_future's start" said
log "server log: $(grep -m1 'aggregation "agg_future": start_from' "$SERVER_LOG" | sed 's/.*stoatflow backfill: //')"

# 'earliest' after retention moved the log start: small's partition 0 holds offsets 40-99 only.
for p in 0 1; do
    seq 0 99 | awk -v p="$p" '{ printf "{\"user_id\":\"s%d\",\"ts\":%.0f,\"amount\":1}\n", $1 % 7, '"$now_ms"' - 200000 + $1 * 1000 }' |
        timeout "$KCAT_TIMEOUT" kcat -P -b "$KAFKA_BROKERS" -t small -p "$p" 2>"$WORK/kcat-small.err" ||
        { cat "$WORK/kcat-small.err" >&2; fail "kcat could not produce into small"; }
done
kafka_delete_records small 0 40 || fail "DeleteRecords small[0] before 40 failed"
sql "SELECT stoatflow.create_source('small_src', 'small', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour')" >/dev/null
sql "SELECT stoatflow.create_aggregation('small_first', 'small_src', stoatflow.tumbling('1 minute'),
        'count(*) AS n', 'sink_small_first')" >/dev/null
[ "$(sql "SELECT stoatflow.wait_caught_up('small_src', '60 seconds')")" = t ] || fail "small_src did not catch up"
sql "SELECT stoatflow.create_aggregation('small_old', 'small_src', stoatflow.tumbling('1 minute'),
        'count(*) AS n', 'sink_small_old', start_from => 'earliest')" >/dev/null
said_old() { grep -q 'aggregation "small_old": start_from earliest: partition 0 starts at offset 40, the earliest the topic still holds' "$SERVER_LOG"; }
wait_until 60 "the log line naming small_old's start" said_old
! grep -q 'aggregation "small_old": start_from earliest: partition 1' "$SERVER_LOG" ||
    fail "small_old's partition 1 starts where asked, yet the log says otherwise"
log "server log: $(grep -m1 'aggregation "small_old": start_from' "$SERVER_LOG" | sed 's/.*stoatflow backfill: //')"
small_done() { [ "$(psql_try -c "SELECT records_in FROM stoatflow.stats WHERE aggregation_name = 'small_old' AND status = 'running'")" = 160 ]; }
wait_until 60 "small_old backfilled the 160 records left" small_done

for a in agg agg_b; do
    n=$(sql "SELECT records_in FROM stoatflow.stats WHERE aggregation_name = '$a'")
    [ "$n" = "$PRODUCED" ] || fail "$a counted $n records, $PRODUCED were produced"
    total=$(sql "SELECT sum(n) FROM $([ $a = agg ] && echo "$SINK" || echo sink_b)")
    [ "$total" = "$PRODUCED" ] || fail "$a's sink holds $total records, $PRODUCED were produced"
done
check_log
faults_pass
