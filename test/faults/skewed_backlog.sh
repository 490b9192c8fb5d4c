#!/usr/bin/env bash
# Fault scenario: a skewed backlog (README "Aligned consumption"). Of 24 partitions, partition 0
# holds ten times as many records per hour of event time as each other one, all of it waiting in
# the topic when the source starts: read side by side, the other partitions run hours ahead of
# it in event time, their windows cannot close (the watermark waits for partition 0) and their
# state passes a low stoatflow.worker_memory_limit. Without alignment the worker then stops
# consuming, and partition 0, the one that holds the watermark, is never read again: a stall
# forever. With it, the partitions ahead wait while partition 0 catches up: the source catches
# up without a memory stop, its state within the limit (near it only the slowest partitions
# are read, README "Aligned consumption"), across a kill -9 mid-catch-up, and the sink is exact.
#
# The large run (issue target: 10 M events in 48 partitions under the default 1 GB limit), on
# Apache Kafka, by hand (BENCHMARKS.md "Skewed backlog"):
#   STOATFLOW_TEST_BROKER=kafka SCENARIO_TIMEOUT=3600 KCAT_TIMEOUT=900 SKEW_PARTITIONS=48 \
#   SKEW_HOURS=24 SKEW_DENSE=2000000 SKEW_SPARSE=170000 SKEW_LIMIT_KB=1048576 \
#   SKEW_FETCH_BYTES=1048576 SKEW_KILL_AFTER_S=30 SKEW_CATCHUP_S=1800 \
#   bash test/faults/run.sh skewed_backlog
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin skewed_backlog
PARTITIONS=${SKEW_PARTITIONS:-24}
HOURS=${SKEW_HOURS:-8}        # event time the stream spans
DENSE=${SKEW_DENSE:-48000}    # records of partition 0 (about 3 MiB: mock partitions keep ~5 MiB)
SPARSE=${SKEW_SPARSE:-4800}   # records of each other partition
KEYS_PER_PARTITION=${SKEW_KEYS_PER_PARTITION:-400}
# Above what the state holds once everything is read (the last hour's windows of every key, about
# 26 MB: no order of reading frees those); all of the others read first: over it.
LIMIT_KB=${SKEW_LIMIT_KB:-32768}
KILL_AFTER_S=${SKEW_KILL_AFTER_S:-4}

# The stream, written in events.py's file layout (one chunk; key i in partition i % 24, each
# partition in time order), so that events.py computes the expected windows from the files.
mkdir -p "$EVENTS_DIR"
python3 - "$EVENTS_DIR" "$PARTITIONS" "$HOURS" "$DENSE" "$SPARSE" "$KEYS_PER_PARTITION" <<'PY'
import json, random, sys
out, parts, hours, dense, sparse, kpp = sys.argv[1], *map(int, sys.argv[2:])
base, span = 1764500000000, hours * 3600000
rng = random.Random(2024)
for p in range(parts):
    n = dense if p == 0 else sparse
    events = sorted((base + rng.randrange(span), f"u{p + parts * rng.randrange(kpp):05d}",
                     rng.randint(1, 99999)) for _ in range(n))
    with open(f"{out}/chunk-00-p{p}.jsonl", "w") as f:
        for ts, key, amount in events:
            f.write(json.dumps({"user_id": key, "ts": ts, "amount": amount}, separators=(",", ":")) + "\n")
PY
EVENTS_TOTAL=$(python3 "$FAULTS_DIR/events.py" expected "$EVENTS_DIR" "$EXPECTED_CSV") || fail "events.py expected failed"
[ "$EVENTS_TOTAL" -eq $((DENSE + (PARTITIONS - 1) * SPARSE)) ] || fail "events.py read back $EVENTS_TOTAL events"
log "generated $EVENTS_TOTAL events over ${HOURS}h; partition 0 holds $DENSE; $(wc -l <"$EXPECTED_CSV") expected windows"

broker_start "$(broker_topics)" || fail "the $TEST_BROKER broker did not start"
pg_init
echo "stoatflow.worker_memory_limit = '${LIMIT_KB}kB'" >>"$PGDATA_DIR/postgresql.conf"
pg_start
# Mock partitions keep ~5 MiB: so that each partition is many fetches long, as in a real backlog,
# records go in small producer batches and the source fetches 16 KiB per partition at a time.
for ((p = 0; p < PARTITIONS; p++)); do
    timeout "$KCAT_TIMEOUT" kcat -P -b "$KAFKA_BROKERS" -t "$TOPIC" -p "$p" -X batch.num.messages=100 \
        <"$EVENTS_DIR/chunk-00-p$p.jsonl" 2>"$WORK/kcat.err" || { cat "$WORK/kcat.err" >&2; fail "kcat could not produce partition $p"; }
    PRODUCED=$((PRODUCED + $(wc -l <"$EVENTS_DIR/chunk-00-p$p.jsonl")))
done
sql "CREATE EXTENSION stoatflow" >/dev/null
sql "SELECT stoatflow.create_source('$SOURCE', '$TOPIC', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour',
        kafka_options => '{\"max.partition.fetch.bytes\": \"${SKEW_FETCH_BYTES:-16384}\"}')" >/dev/null
sql "SELECT stoatflow.create_aggregation('agg', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', '$SINK')" >/dev/null
wait_worker ""
log "worker pid $WORKER_PID; limit ${LIMIT_KB} kB; the whole backlog waits in the topic"

# Watch the state while the backlog drains: the largest memory_bytes any commit reported, and
# whether the source ever showed the memory stop.
PEAK=0
STOPPED=""
watch() {
    local m s
    m=$(sql "SELECT coalesce(max(memory_bytes), 0) FROM stoatflow.aggregation_progress" 2>/dev/null || echo 0)
    [[ $m =~ ^[0-9]+$ ]] && ((m > PEAK)) && PEAK=$m
    s=$(source_status 2>/dev/null || true)
    [[ $s == "error|"*"worker_memory_limit"* ]] && STOPPED=$s
    return 0
}
deadline=$(($(date +%s) + KILL_AFTER_S))
while (($(date +%s) < deadline)); do watch; sleep 0.3; done
at=$(committed)
((at < EVENTS_TOTAL)) || fail "caught up before the kill ($at of $EVENTS_TOTAL committed): nothing in flight"
one_worker_pid
kill -9 "$VICTIM" || fail "kill -9 $VICTIM failed"
KILLED_PIDS+=("$VICTIM")
log "kill -9 of $VICTIM at $at of $EVENTS_TOTAL committed"
wait_worker "$VICTIM"

caught() { watch; [ "$(sql "SELECT stoatflow.wait_caught_up('$SOURCE', '1 second')")" = t ]; }
wait_until "${SKEW_CATCHUP_S:-60}" "the skewed backlog caught up (status: $(source_status))" caught
watch
log "caught up; state peaked at $((PEAK / 1024)) kB"
[ -z "$STOPPED" ] || fail "the worker stopped at the memory limit: $STOPPED"
grep -q "partitions wait: their event time is ahead" "$SERVER_LOG" ||
    fail "the server log never says partitions waited"
verify_sink
# Near the limit the worker drains (reads only the slowest partitions); the limit is a bound.
((PEAK <= LIMIT_KB * 1024)) || fail "state peaked at $((PEAK / 1024)) kB, over the limit of ${LIMIT_KB} kB"
check_log
log "RESULT events=$EVENTS_TOTAL peak_kb=$((PEAK / 1024)) limit_kb=$LIMIT_KB rows_compared=$VERIFY_ROWS match=yes"
faults_pass
