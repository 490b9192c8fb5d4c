#!/usr/bin/env bash
# Fault scenario: roll-ups across kill -9 (README "Roll-ups"). One source, a 1-minute
# aggregation, the roll-up chain 1 minute -> 10 minutes -> 1 hour and 1 minute -> 1 hour, and the
# direct 10-minute and 1-hour aggregations of the same records. 60,000 events over 64 keys and 4
# partitions in 10 chunks (2 hours of event time, max_out_of_orderness 1 hour: windows close while
# the stream runs); once the worker committed everything produced so far, the next chunk goes in
# and after a varying pause the source worker gets SIGKILL, so kills land while upstream windows
# close and feed the roll-ups (at least 3 of the 10 on events not yet committed). Then records late beyond every
# grace (dropped by the minute and the hour alike) and one record per partition 10 hours ahead
# that closes every window. At the end every roll-up's final rows equal the direct aggregation's
# row for row (EXCEPT both ways empty), and the direct hour equals the independent computation
# (events.py) in count and sum.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin rollup_kill9
EVENTS=${ROLLUP_EVENTS:-60000}
KEYS=64
NCHUNKS=10
DELAYS=(0 0.05 0.3 0.1 0.2 0 0.15 0.25 0.05 0.1)

gen_events 211 "$EVENTS" "$KEYS" "$NCHUNKS"
python3 "$FAULTS_DIR/events.py" expected "$EVENTS_DIR" "$WORK/expected_1h.csv" --window-ms 3600000 >/dev/null ||
    fail "events.py expected (1 hour) failed"
# shellcheck disable=SC2046  # one argument per topic
broker_start $(broker_topics) || fail "the $TEST_BROKER broker did not start"
pg_init
pg_start
produce_chunk 0
sql "CREATE EXTENSION stoatflow" >/dev/null
sql "SELECT stoatflow.create_source('$SOURCE', '$(source_topics)', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour')" >/dev/null
aggs="count(*) AS n, sum(amount) AS total, min(amount) AS lo, max(amount) AS hi"
rolled="sum(n) AS n, sum(total) AS total, min(lo) AS lo, max(hi) AS hi"
# one transaction: every aggregation from the first record
sql "BEGIN;
     SELECT stoatflow.create_aggregation('m1', '$SOURCE', stoatflow.tumbling('1 minute'), '$aggs', 's_m1');
     SELECT stoatflow.create_aggregation('m10', '$SOURCE', stoatflow.tumbling('10 minutes'), '$aggs', 's_m10');
     SELECT stoatflow.create_aggregation('h1', '$SOURCE', stoatflow.tumbling('1 hour'), '$aggs', 's_h1');
     SELECT stoatflow.create_aggregation('m10_of_m1', 'm1', stoatflow.tumbling('10 minutes'), '$rolled', 's_m10_of_m1');
     SELECT stoatflow.create_aggregation('h1_of_m10', 'm10_of_m1', stoatflow.tumbling('1 hour'), '$rolled', 's_h1_of_m10');
     SELECT stoatflow.create_aggregation('h1_of_m1', 'm1', stoatflow.tumbling('1 hour'), '$rolled', 's_h1_of_m1',
                                         emit => 'on_window_close');
     COMMIT" >/dev/null
wait_worker ""
pids=("$WORKER_PID")
in_flight=0
log "worker pid $WORKER_PID; $PRODUCED events in Kafka"

for ((c = 0; c < NCHUNKS; c++)); do
    # The worker restored and committed everything so far (so a kill leaves committed state
    # behind, roll-ups included); then the next chunk goes in and the kill follows its pause.
    wait_warm
    one_worker_pid
    victim=$VICTIM
    if ((c > 0)); then produce_chunk "$c"; fi
    sleep "${DELAYS[$c]}"
    # committed just before the kill: below what was produced, the kill hits data in flight
    before=$(committed)
    kill -9 "$victim" || fail "kill -9 $victim failed"
    KILLED_PIDS+=("$victim")
    if [[ $before =~ ^[0-9]+$ ]] && ((before < PRODUCED)); then in_flight=$((in_flight + 1)); fi
    wait_worker "$victim"
    pids+=("$WORKER_PID")
    log "kill $((c + 1)): SIGKILL pid $victim after chunk $c (+${DELAYS[$c]}s), $before of $PRODUCED committed; new worker pid $WORKER_PID"
done
log "kills with uncommitted events: $in_flight of ${#KILLED_PIDS[@]}"
((in_flight >= 3)) || fail "only $in_flight kills hit uncommitted events: the kills test little"

# Late beyond every grace: the stream's first minute again (its hour closed long ago, once the
# worker read every partition's last chunk).
wait_caught_up
base=$(python3 -c "import json; print(json.load(open('$EVENTS_DIR/manifest.json'))['base_ms'])")
python3 -c "
import json
for i in range(40):
    print(json.dumps({'user_id': 'u%05d' % (i % 4), 'ts': $base + i * 1000, 'amount': 7}))" >"$WORK/late.jsonl"
read -r -a tp <<<"$(topic_partition 0)"
kcat -P -b "$KAFKA_BROKERS" -t "${tp[0]}" -p "${tp[1]}" <"$WORK/late.jsonl" 2>/dev/null || fail "kcat (late records)"
for ((p = 0; p < PARTITIONS; p++)); do
    read -r -a tp <<<"$(topic_partition "$p")"
    echo "{\"user_id\": \"zz_end\", \"ts\": $((base + 36000000)), \"amount\": 0}" |
        kcat -P -b "$KAFKA_BROKERS" -t "${tp[0]}" -p "${tp[1]}" 2>/dev/null || fail "kcat (closing record)"
done
wait_caught_up
log "caught up"

# Every late record dropped by the minute and by the direct hour; none reached a roll-up.
late=$(sql "SELECT string_agg(aggregation_name || '=' || dropped_late_window, ' ' ORDER BY aggregation_name)
              FROM stoatflow.stats WHERE source_name = '$SOURCE'")
log "late drops: $late"
[[ $late == *"h1=40"* && $late == *"m1=40"* && $late == *"h1_of_m1=0"* && $late == *"h1_of_m10=0"* ]] ||
    fail "late drops are not 40 for m1 and h1 and 0 for the roll-ups: $late"

cols="key, window_start, window_end, n, total, lo, hi"
differ() { # differ DIRECT ROLLUP: rows in one of the two final row sets only
    sql "SELECT count(*) FROM ((SELECT $cols FROM $1 WHERE final AND key <> 'zz_end'
                               EXCEPT SELECT $cols FROM $2 WHERE final)
                              UNION ALL (SELECT $cols FROM $2 WHERE final AND key <> 'zz_end'
                               EXCEPT SELECT $cols FROM $1 WHERE final)) d"
}
for pair in "s_m10 s_m10_of_m1" "s_h1 s_h1_of_m1" "s_h1 s_h1_of_m10"; do
    read -r direct rollup <<<"$pair"
    n=$(sql "SELECT count(*) FROM $direct WHERE final AND key <> 'zz_end'")
    d=$(differ "$direct" "$rollup")
    log "$rollup vs $direct: $n final rows, $d differ"
    [ "$d" = 0 ] || fail "$rollup differs from $direct in $d rows"
    ((n > 0)) || fail "$direct has no final rows"
done

# The direct hour against the independent computation (key, window_start_ms, n, total).
sql "CREATE TABLE expected_1h (key text, start_ms bigint, n bigint, total numeric, max_ts bigint)" >/dev/null
psql_try -c "\\copy expected_1h FROM '$WORK/expected_1h.csv' WITH (FORMAT csv)" >/dev/null ||
    fail "could not load the expected hours"
d=$(sql "SELECT count(*) FROM ((SELECT key, start_ms, n, total FROM expected_1h
                                EXCEPT SELECT key, (extract(epoch FROM window_start) * 1000)::bigint, n, total
                                         FROM s_h1_of_m10 WHERE final)
                               UNION ALL (SELECT key, (extract(epoch FROM window_start) * 1000)::bigint, n, total
                                            FROM s_h1_of_m10 WHERE final AND key <> 'zz_end'
                                EXCEPT SELECT key, start_ms, n, total FROM expected_1h)) d")
rows=$(sql "SELECT count(*) FROM expected_1h")
log "s_h1_of_m10 vs the independent computation: $rows hours, $d differ"
[ "$d" = 0 ] || fail "the chain's hours differ from the independent computation in $d rows"
total=$(sql "SELECT sum(n) FROM s_h1_of_m1 WHERE final AND key <> 'zz_end'")
[ "$total" = "$EVENTS" ] || fail "the hour roll-up counts $total events, $EVENTS were produced in time"
check_log
log "RESULT events=$EVENTS kills=${#KILLED_PIDS[@]} rows_compared=$rows match=yes"
faults_pass
