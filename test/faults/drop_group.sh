#!/usr/bin/env bash
# Fault scenario: what drop_source removes from Kafka (README "Removing a pipeline"). After the
# worker committed, the source's consumer group (stoatflow-<database>-<source>) holds offsets in
# Kafka; drop_source removes it and says so in a NOTICE (Apache Kafka: the group is gone from
# the broker's group list afterwards; librdkafka's mock cluster has no DeleteGroups: a NOTICE
# says the offsets were not removed). With the broker down, the drop of a second source must
# still succeed, within 10 s, with a NOTICE that the offsets were not removed.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin drop_group
EVENTS=${DROP_GROUP_EVENTS:-10000}
KEYS=64
NCHUNKS=2
GROUP="stoatflow-postgres-$SOURCE"

groups() { _kafka_tool org.apache.kafka.tools.consumer.group.ConsumerGroupCommand \
    --bootstrap-server "$KAFKA_BROKERS" --list 2>/dev/null; }

start_stream 707
wait_warm
produce_chunk 1
wait_warm
# A second source over the same topic, for the drop with the broker down.
sql "SELECT stoatflow.create_source('${SOURCE}_2', '$(source_topics)', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts'); SELECT stoatflow.create_aggregation('agg_2', '${SOURCE}_2',
        stoatflow.tumbling('1 minute'), 'count(*) AS n', 'sink_2')" >/dev/null
second_committed() { [ "$(psql_try -c "SELECT coalesce(sum(committed_offset), 0) FROM stoatflow.sources
                                        WHERE source_name = '${SOURCE}_2'")" = "$PRODUCED" ]; }
wait_until 60 "source ${SOURCE}_2 to commit all $PRODUCED events" second_committed

if [ "$TEST_BROKER" = kafka ]; then
    groups | grep -qx "$GROUP" || fail "the consumer group $GROUP is not on the broker before the drop: $(groups | tr '\n' ' ')"
fi
psql_try -c "SET client_min_messages = notice" -c "SELECT stoatflow.drop_source('$SOURCE', \"cascade\" => true)" >/dev/null ||
    { cat "$WORK/psql.err" >&2; fail "drop_source failed"; }
said=$(cat "$WORK/psql.err")
log "drop_source said: $(tr '\n' ' ' <<<"$said")"
grep -q "aggregation \"agg\" dropped; its sink table public.$SINK stays, with [0-9]* rows not final" <<<"$said" ||
    fail "drop_source did not name the sink that stays"
if [ "$TEST_BROKER" = kafka ]; then
    grep -q "NOTICE:  the Kafka consumer group of source \"$SOURCE\" was removed with its committed offsets" <<<"$said" ||
        fail "drop_source did not say the consumer group was removed"
    ! groups | grep -qx "$GROUP" || fail "the consumer group $GROUP is still on the broker after the drop"
    log "consumer group $GROUP removed from the broker"
else
    grep -q "NOTICE:  the Kafka consumer group of source \"$SOURCE\" was not removed" <<<"$said" ||
        fail "drop_source on the mock broker (no DeleteGroups) did not say that the group stays"
fi
[ "$(sql "SELECT count(*) FROM stoatflow.source WHERE source_name = '$SOURCE'")" = 0 ] || fail "the source is still there"

# The broker down: the drop goes on, bounded, and warns.
broker_down
t=$(date +%s.%N)
psql_try -c "SET client_min_messages = notice" -c "SELECT stoatflow.drop_source('${SOURCE}_2', \"cascade\" => true)" >/dev/null ||
    { cat "$WORK/psql.err" >&2; fail "drop_source with the broker down failed"; }
took=$(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
said=$(cat "$WORK/psql.err")
log "with the broker down, drop_source took ${took}s and said: $(tr '\n' ' ' <<<"$said")"
grep -q "NOTICE:  the Kafka consumer group of source \"${SOURCE}_2\" was not removed" <<<"$said" ||
    fail "drop_source with the broker down did not say that the group's offsets stay"
awk -v t="$took" 'BEGIN { exit !(t < 10) }' || fail "drop_source with the broker down took ${took}s"
[ "$(sql "SELECT count(*) FROM stoatflow.source WHERE source_name = '${SOURCE}_2'")" = 0 ] || fail "the second source is still there"
check_log
log "RESULT events=$EVENTS drops=2 broker=$TEST_BROKER"
faults_pass
