#!/usr/bin/env bash
# Fault scenario (Apache Kafka only: the mock cluster cannot look offsets up by time):
# create_aggregation's start_from (README "Backfill and start_from"). Chunks 0-2 are produced,
# then (a second later) the time T is taken, then (a second later) chunk 3: its Kafka
# timestamps are after T. The source's first aggregation agg reads everything; agg_t, declared
# on the running source with start_from => T, backfills from the first offset at or after T per
# partition and must equal the computation over chunks 3-9 exactly; agg_l, declared with
# start_from => 'latest' once the source caught up on chunk 3, must equal the computation over
# chunks 4-9 (no backfill); so must agg_ahead, whose start is ahead of its new source's
# position (see below). A create_source with start_offset => a timestamp (src_t) reads from
# T too.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin start_from
require_kafka "the mock cluster cannot look offsets up by time (rd_kafka_offsets_for_times)"
EVENTS=${START_FROM_EVENTS:-50000}
KEYS=${START_FROM_KEYS:-256}
NCHUNKS=10
CAUGHT_UP_TIMEOUT=${CAUGHT_UP_TIMEOUT:-60}

gen_events 223 "$EVENTS" "$KEYS" "$NCHUNKS"
ALL_DIR=$EVENTS_DIR
# shellcheck disable=SC2046  # one argument per topic
broker_start $(broker_topics) || fail "the $TEST_BROKER broker did not start"
pg_init
pg_start
sql "CREATE EXTENSION stoatflow" >/dev/null
sql "SELECT stoatflow.create_source('$SOURCE', '$(source_topics)', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour')" >/dev/null
sql "SELECT stoatflow.create_aggregation('agg', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', '$SINK')" >/dev/null
produce_chunks 0 2
sleep 1.5
T=$(sql "SELECT now()::text")
sleep 1.5
produce_chunks 3 3
wait_caught_up
log "T = $T; agg caught up on chunks 0-3"

# A source of its own that starts at T (start_offset => a timestamp).
sql "SELECT stoatflow.create_source('src_t', '$(source_topics)', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour', start_offset => '$T')" >/dev/null
sql "SELECT stoatflow.create_aggregation('agg_src_t', 'src_t', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_src_t')" >/dev/null
sql "SELECT stoatflow.create_aggregation('agg_t', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_t', start_from => '$T')" >/dev/null
sql "SELECT stoatflow.create_aggregation('agg_l', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_l', start_from => 'latest')" >/dev/null
[ "$(sql "SELECT status FROM stoatflow.stats WHERE aggregation_name = 'agg_l'")" = running ] ||
    fail "agg_l ('latest' on a running source) does not start at the source's position"
[ "$(sql "SELECT status FROM stoatflow.stats WHERE aggregation_name = 'agg_t'")" = backfilling ] ||
    fail "agg_t (a timestamp on a running source) does not backfill"
# Ahead of the source: a new source reading from 'earliest' with agg_e, and agg_ahead starting
# at 'latest' (the end of the topic when its backfill starts: after chunk 3), declared together.
# The source starts behind agg_ahead; agg_ahead folds nothing before its start and joins once the
# source reaches it: it must equal the computation over chunks 4-9, like agg_l.
sql "SELECT stoatflow.create_source('src_e', '$(source_topics)', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour')" >/dev/null
sql "BEGIN; SELECT stoatflow.create_aggregation('agg_e', 'src_e', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_e');
     SELECT stoatflow.create_aggregation('agg_ahead', 'src_e', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_ahead', start_from => 'latest'); COMMIT;" >/dev/null
[ "$(sql "SELECT status FROM stoatflow.stats WHERE aggregation_name = 'agg_ahead'")" = backfilling ] ||
    fail "agg_ahead ('latest' on a new source reading from 'earliest') does not backfill"
ahead_started() {
    [ "$(psql_try -c "SELECT count(*) FROM stoatflow.backfill_offset o JOIN stoatflow.aggregation a USING (aggregation_id)
                      WHERE a.aggregation_name = 'agg_ahead'" || echo 0)" -gt 0 ]
}
wait_until 60 "agg_ahead's start positions" ahead_started
log "agg_ahead starts at $(sql "SELECT string_agg(o.partition || ':' || o.next_offset, ' ' ORDER BY o.partition)
    FROM stoatflow.backfill_offset o JOIN stoatflow.aggregation a USING (aggregation_id) WHERE a.aggregation_name = 'agg_ahead'")"
produce_chunks 4 9
wait_caught_up
for other in src_t src_e; do
    r=$(sql "SELECT stoatflow.wait_caught_up('$other', '$CAUGHT_UP_TIMEOUT seconds')")
    [ "$r" = t ] || fail "$other did not catch up"
done

# The expected windows of a range of chunks: their files alone.
subset() { # subset FIRST LAST: sets EXPECTED_CSV and EVENTS_TOTAL to those chunks'
    local dir=$WORK/events-$1-$2 c p
    mkdir -p "$dir"
    for ((c = $1; c <= $2; c++)); do
        for ((p = 0; p < PARTITIONS; p++)); do
            cp "$ALL_DIR/chunk-$(printf '%02d' "$c")-p$p.jsonl" "$dir/"
        done
    done
    EXPECTED_CSV=$WORK/expected-$1-$2.csv
    EVENTS_TOTAL=$(python3 "$FAULTS_DIR/events.py" expected "$dir" "$EXPECTED_CSV") || fail "events.py expected failed"
}
ALL_TOTAL=$EVENTS_TOTAL
ALL_CSV=$EXPECTED_CSV
verify_sink "$SINK" agg
verify_sink sink_e agg_e
VERIFY_OFFSETS_ARE_EVENTS=0 # the source's offsets count every chunk, the aggregations below less
PRODUCED_ALL=$PRODUCED
subset 3 9
PRODUCED=$EVENTS_TOTAL
verify_sink sink_t agg_t
verify_sink sink_src_t agg_src_t
subset 4 9
PRODUCED=$EVENTS_TOTAL
verify_sink sink_l agg_l
verify_sink sink_ahead agg_ahead
PRODUCED=$PRODUCED_ALL EVENTS_TOTAL=$ALL_TOTAL EXPECTED_CSV=$ALL_CSV
check_log
log "RESULT T='$T' match=yes"
faults_pass
