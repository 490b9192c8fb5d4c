#!/usr/bin/env bash
# Fault scenario (Apache Kafka only): the topic's retention deletes records the source has
# not read yet. The log start is moved with Kafka's DeleteRecords (what retention
# does, at a chosen offset):
#   A. with PostgreSQL stopped: chunk 2 goes in, partition 0 loses its first half; at start
#      the worker finds its committed offset below the log start;
#   B. with the source worker SIGSTOPped (its fetcher frozen too, nothing in flight): chunk 4
#      goes in, partition 1 loses its first half; when it runs again its next fetch is out of
#      range (librdkafka with auto.offset.reset=error reports it; never a silent jump).
# Both times the policy of README "Operations" must hold: the source moves to the log start,
# the skipped offsets are counted in stoatflow.sources.offsets_skipped of that partition and
# listed as one dead letter (reason offsets_skipped, offset = the first one skipped), the
# server log has a WARNING, the source goes on; the sink equals the windows of the records
# that were not deleted, exactly.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin retention
require_kafka "the mock cannot delete records"
EVENTS=${RETENTION_EVENTS:-40000}
KEYS=1024
NCHUNKS=6

declare -A LINES  # lines produced so far per partition = the next offset there
count_chunk() { # count_chunk CHUNK: adds the chunk's lines to LINES
    local p f
    for ((p = 0; p < PARTITIONS; p++)); do
        f=$EVENTS_DIR/chunk-$(printf '%02d' "$1")-p$p.jsonl
        LINES[$p]=$((${LINES[$p]:-0} + $(wc -l <"$f")))
    done
}
# delete_half CHUNK PARTITION: deletes the first half of that chunk's records in the partition
# (the chunk must be the last one produced there); drops those lines from the expected events.
declare -A SKIPPED
delete_half() {
    local f n half before
    f=$EVENTS_DIR/chunk-$(printf '%02d' "$1")-p$2.jsonl
    n=$(wc -l <"$f")
    half=$((n / 2))
    before=$((LINES[$2] - n + half))
    kafka_delete_records "$TOPIC" "$2" "$before" || fail "DeleteRecords $TOPIC[$2] before $before failed"
    SKIPPED[$2]=$((${SKIPPED[$2]:-0} + half))
    FIRST_SKIPPED[$2]=$((LINES[$2] - n))
    tail -n +"$((half + 1))" "$f" >"$KEPT_DIR/$(basename "$f")"
    log "partition $2: deleted offsets $((LINES[$2] - n)) to $((before - 1)) ($half records of chunk $1)"
}
declare -A FIRST_SKIPPED

gen_events 808 "$EVENTS" "$KEYS" "$NCHUNKS"
KEPT_DIR=$WORK/kept
cp -r "$EVENTS_DIR" "$KEPT_DIR"
broker_start "$TOPIC:$PARTITIONS" || fail "the broker did not start"
pg_init
pg_start
produce_chunk 0
count_chunk 0
setup_pipeline
wait_worker ""
wait_warm
produce_chunk 1
count_chunk 1
wait_caught_up

# A: retention while PostgreSQL is down
pg_stop fast
produce_chunk 2
count_chunk 2
delete_half 2 0
pg_start
wait_worker ""
produce_chunk 3
count_chunk 3
wait_caught_up

# B: retention while the worker is frozen
one_worker_pid
kill -STOP "$VICTIM"
sleep 1  # the fetch in flight (fetch.wait.max.ms = 100) is answered before anything new exists
produce_chunk 4
count_chunk 4
delete_half 4 1
sleep 1
kill -CONT "$VICTIM"
produce_chunk 5
count_chunk 5
wait_caught_up

# The sink: the windows of the records that survived.
EVENTS_TOTAL=$(python3 "$FAULTS_DIR/events.py" expected "$KEPT_DIR" "$EXPECTED_CSV") ||
    fail "events.py expected failed"
PRODUCED=$EVENTS_TOTAL
VERIFY_OFFSETS_ARE_EVENTS=0
verify_sink

# The skips: counted per partition, one dead letter each, offsets past everything.
for ((p = 0; p < PARTITIONS; p++)); do
    got=$(sql "SELECT offsets_skipped || '|' || committed_offset FROM stoatflow.sources
               WHERE source_name = '$SOURCE' AND partition = $p")
    [ "$got" = "${SKIPPED[$p]:-0}|${LINES[$p]}" ] ||
        fail "partition $p: offsets_skipped|committed_offset = $got, expected ${SKIPPED[$p]:-0}|${LINES[$p]}"
done
letters=$(sql "SELECT string_agg(partition || ':' || \"offset\", ' ' ORDER BY partition)
               FROM stoatflow.dead_letters WHERE reason = 'offsets_skipped'")
[ "$letters" = "0:${FIRST_SKIPPED[0]} 1:${FIRST_SKIPPED[1]}" ] ||
    fail "offsets_skipped dead letters: '$letters', expected '0:${FIRST_SKIPPED[0]} 1:${FIRST_SKIPPED[1]}'"
warnings=$(grep -c "WARNING:.*were deleted by the topic's retention before they were read" "$SERVER_LOG" || true)
[ "$warnings" -ge 2 ] || fail "expected a server log WARNING per skip, found $warnings"
[[ $(source_status) == running\|* ]] || fail "source status after the skips: $(source_status)"
log "skips: p0 ${SKIPPED[0]} p1 ${SKIPPED[1]}; dead letters $letters; status $(source_status)"
check_log
log "RESULT events=$EVENTS skipped=$((SKIPPED[0] + SKIPPED[1])) rows_compared=$VERIFY_ROWS match=yes"
faults_pass
