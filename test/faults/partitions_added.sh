#!/usr/bin/env bash
# Fault scenario (Apache Kafka only):
# partitions added to the topic while the source runs. The topic starts with 2
# of the stream's 4 partitions (FAULTS_TOPICS=2: the source reads two topics, `faults` with
# stream partition 0 and `faults_b` with stream partition 1; faults_b grows to 3 partitions,
# stream partitions 2-3: a partition added to the second topic of a source, README "Expressions and PostgreSQL aggregates"); chunks 0-1 of partitions 0-1 go in and are committed; then
# the topic grows to 4 partitions (TopicCommand --alter) and chunks 0-1 of partitions 2-3
# go in. The new partitions must be consumed from their start (within NEW_PARTITION_TIMEOUT
# seconds: librdkafka refreshes metadata every topic.metadata.refresh.interval.ms, 5 min by
# default, so a source that relies on that alone is too slow), then the rest of the stream;
# the sink must end exact (with an hour of out-of-orderness no record of the new
# partitions is late when it arrives).
#
# The source worker asks for the partition count every 10 s and, when it grew, commits and
# starts over with every partition assigned (src/pg/worker/source_worker/source_worker.cpp partitions_added); an added
# partition is read from its start. (Before that fix the records of partitions 2-3 waited for a restart.)
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin partitions_added
require_kafka "the mock cannot add partitions"
EVENTS=${PARTITIONS_EVENTS:-40000}
KEYS=1024
NCHUNKS=6   # 72 minutes of event time: windows older than the hour of out-of-orderness close
NEW_PARTITION_TIMEOUT=${NEW_PARTITION_TIMEOUT:-60}

produce_part() { # produce_part CHUNK PARTITION
    local f n tp
    f=$EVENTS_DIR/chunk-$(printf '%02d' "$1")-p$2.jsonl
    n=$(wc -l <"$f")
    [ "$n" -gt 0 ] || return 0
    read -r -a tp <<<"$(topic_partition "$2")"
    timeout "$KCAT_TIMEOUT" kcat -P -b "$KAFKA_BROKERS" -t "${tp[0]}" -p "${tp[1]}" -z lz4 <"$f" \
        2>"$WORK/kcat.err" || { cat "$WORK/kcat.err" >&2; fail "kcat could not produce $f"; }
    PRODUCED=$((PRODUCED + n))
}

gen_events 606 "$EVENTS" "$KEYS" "$NCHUNKS"
if [ "$FAULTS_TOPICS" = 2 ]; then
    broker_start "$TOPIC:1" "${TOPIC}_b:1" || fail "the broker did not start"
    grow() { kafka_topic_add_partitions "${TOPIC}_b" 3; }
else
    broker_start "$TOPIC:2" || fail "the broker did not start"
    grow() { kafka_topic_add_partitions "$TOPIC" 4; }
fi
pg_init
pg_start
produce_part 0 0
produce_part 0 1
setup_pipeline
wait_worker ""
wait_warm
produce_part 1 0
produce_part 1 1
wait_warm
log "partitions 0-1 of chunks 0-1 committed ($PRODUCED events); adding partitions 2-3"
grow || fail "could not add partitions"
produce_part 0 2
produce_part 0 3
produce_part 1 2
produce_part 1 3
t=$(date +%s)
consumed_all() { [ "$(committed)" = "$PRODUCED" ]; }
deadline=$((t + NEW_PARTITION_TIMEOUT))
while ! consumed_all && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.5; done
if ! consumed_all; then
    log "source partitions: $(psql_try -c "SELECT string_agg(topic || '/' || partition || ':' || committed_offset, ' ' ORDER BY topic, partition) FROM stoatflow.sources WHERE source_name = '$SOURCE'")"
    fail "added partitions not consumed within ${NEW_PARTITION_TIMEOUT}s: committed $(committed) of $PRODUCED"
fi
log "added partitions consumed after $(($(date +%s) - t))s"
for ((c = 2; c < NCHUNKS; c++)); do
    wait_warm
    produce_chunk "$c"
done
wait_caught_up
verify_sink
check_log
log "RESULT events=$EVENTS topics=$FAULTS_TOPICS partitions=2+2 rows_compared=$VERIFY_ROWS match=yes"
faults_pass
