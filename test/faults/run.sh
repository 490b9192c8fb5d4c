#!/usr/bin/env bash
# Process-level fault tests (README "Exactly once: the commit cycle", "Operations", "Security"): each
# scenario starts its own throwaway PostgreSQL cluster (unix socket only) and Kafka broker (127.0.0.1),
# streams deterministic events (events.py) through stoatflow while injecting one kind of
# fault, and compares the sink with an independent computation row for row.
#
#   test/faults/run.sh [SCENARIO...]      # default: all, in this order
#
#   kill9              kill -9 of the source worker, 10 times, 200,000 events
#   restart_immediate  pg_ctl restart -m immediate, twice mid-stream
#   broker_down        brokers away mid-stream: status 'error', then back to 'running'
#   sigterm            pg_ctl stop -m fast mid-stream, then start
#   pause_restart      a paused source across pg_ctl restart -m immediate: stays paused, then resumes
#   drop_group         drop_source removes the Kafka consumer group (Apache Kafka; a WARNING on the
#                      mock); with the broker down the drop still succeeds, bounded, with a WARNING
#   memory_limit       stoatflow.worker_memory_limit far too low: consuming stops, resumes on reload
#   memory_states      PostgreSQL aggregate states growing past the limit: RSS bounded, stop, resume
#   user_code          transition functions that loop or sleep: siblings fresh, dead letters, terminate
#                      and fast shutdown within 10 s
#   sink_fuzz          random hostile changes to one aggregation's sink; its sibling stays fresh
#                      (SINK_FUZZ_SECONDS, default 40; SINK_FUZZ_SEED to replay)
#   backfill           aggregations added to a running source backfill, siblings stay fresh
#   backfill_kill9     the same with kill -9 during the backfill and the hand-over
#   backfill_handover  a backfill of 200,000 events joins while records keep arriving: the
#                      sibling's commits stay under 2 s behind across the join (no restart)
#   backfill_hold_stall  the backfill worker stopped at the hold: the source releases it within
#                      10 s and goes on; the backfill asks again and joins; sinks exact
#   rollup_kill9       roll-up chains (1 min -> 10 min -> 1 h) across kill -9: equal to the direct
#                      aggregations, late records dropped alike
#   registry_outage    the schema registry down, then 500, then slow under an Avro source: status
#                      'error' naming it, nothing dead-lettered, exact after; a 404 is bad_schema_id
#   formats_e2e        the same events as JSON, Avro (registry, two versions), Protobuf, CSV: four
#                      identical sinks, each equal to the independent computation
#   start_from         Apache Kafka only: start_from 'latest' and a timestamp, start_offset a timestamp
#   broker_kill        Apache Kafka only: broker SIGKILL + restart, then SIGSTOP for 30 s
#   topic_deleted      Apache Kafka only: the topic deleted under the running source
#   transactions       Apache Kafka only: aborted and committed transactions, read_committed
#   skewed_backlog     one partition hours behind the others in event time, a low memory limit: consumption
#                      aligned by event time drains it under the limit, across a kill -9; the sink exact
#   partitions_added   Apache Kafka only: partitions added mid-stream are consumed from their start
#   retention          Apache Kafka only: records deleted before they were read (server down, worker
#                      frozen): skipped to the log start, counted, one dead letter each
#   progress           Apache Kafka only: a backlog (PROGRESS_EVENTS, default 10,000,000) caught up and
#                      backfilled while the progress columns are sampled: never NULL, lag monotone,
#                      fresh every 2 s, catching_up → running, eta within 2× of the time left
#
# STOATFLOW_TEST_BROKER=mock (default: librdkafka's mock cluster, built here if missing) or
# kafka (Apache Kafka 4.x, test/kafka/broker/kafka_broker.sh: java, and mvn for the first fetch).
# Needs: the extension installed (make install), kcat, python3. As root, servers run as user postgres. Ends with the line
# "faults: N passed, M failed" and exits non-zero if any scenario failed.
# FAULTS_KEEP=1 keeps each scenario's scratch dir (server log, events) for inspection.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"

SCENARIO_TIMEOUT=${SCENARIO_TIMEOUT:-300}   # seconds, hard bound per scenario
all=(kill9 restart_immediate broker_down sigterm pause_restart drop_group memory_limit memory_states user_code sink_fuzz backfill backfill_kill9 rollup_kill9 registry_outage formats_e2e broker_kill topic_deleted transactions start_from
    partitions_added retention progress skewed_backlog backfill_handover backfill_hold_stall)
extra=()
if (($#)); then scenarios=("$@"); else scenarios=("${all[@]}"); fi
for s in "${scenarios[@]}"; do
    [ -f "$here/$s.sh" ] || { echo "faults: unknown scenario '$s' (have: ${all[*]} ${extra[*]})" >&2; exit 2; }
done

pkglibdir=$("${PG_CONFIG:-pg_config}" --pkglibdir)
[ -f "$pkglibdir/stoatflow.so" ] || { echo "faults: stoatflow is not installed in $pkglibdir (run make install)" >&2; exit 1; }
for tool in kcat python3; do
    command -v "$tool" >/dev/null || { echo "faults: $tool not found" >&2; exit 1; }
done
broker=${STOATFLOW_TEST_BROKER:-mock}
case $broker in
mock)
    MOCK_BROKER=${MOCK_BROKER:-$repo/build/stoatflow-mock-broker}
    export MOCK_BROKER
    if [ ! -x "$MOCK_BROKER" ]; then
        echo "faults: building the mock broker"
        cmake -S . -B build >/dev/null
        cmake --build build --target stoatflow-mock-broker >/dev/null
    fi
    ;;
kafka)
    # the jars once, before any scenario's clock starts
    (source test/kafka/broker/kafka_broker.sh && _kafka_broker_need java kcat python3 && kafka_broker_fetch) ||
        { echo "faults: the Apache Kafka broker cannot run here (see above)" >&2; exit 1; }
    ;;
*) echo "faults: STOATFLOW_TEST_BROKER='$broker': want mock or kafka" >&2; exit 2 ;;
esac
export STOATFLOW_TEST_BROKER=$broker
if ((!$#)) && [ "$broker" = mock ]; then
    scenarios=(kill9 restart_immediate broker_down sigterm pause_restart drop_group memory_limit sink_fuzz backfill backfill_kill9 rollup_kill9 registry_outage formats_e2e backfill_hold_stall skewed_backlog) # the rest need kafka
fi

passed=0
failed=0
summary=()
for s in "${scenarios[@]}"; do
    echo
    echo "==== faults: $s ($broker broker) ===="
    start=$(date +%s.%N)
    rc=0
    timeout -k 30 "$SCENARIO_TIMEOUT" bash "$here/$s.sh" || rc=$?
    took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    if ((rc == 0)); then
        passed=$((passed + 1))
        summary+=("ok    $s (${took}s)")
    else
        failed=$((failed + 1))
        if ((rc == 124)); then
            summary+=("FAIL  $s (${took}s, killed after ${SCENARIO_TIMEOUT}s)")
        else
            summary+=("FAIL  $s (${took}s, exit $rc)")
        fi
    fi
done

echo
for line in "${summary[@]}"; do echo "  $line"; done
echo "faults ($broker broker): $passed passed, $failed failed"
((failed == 0))
