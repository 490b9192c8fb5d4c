#!/usr/bin/env bash
# The Apache Kafka helper's own test (kafka_broker.sh), the real-broker twin of
# test/kafka/roundtrip.sh: start with two topics, keyed records in and back exactly once, add
# partitions, SIGKILL + up (the data survives), restart, SIGSTOP (metadata times out, the
# port stays open) + SIGCONT, delete a topic, stop. Prints how long each step took.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
# shellcheck source=test/kafka/broker/kafka_broker.sh
source test/kafka/broker/kafka_broker.sh
trap kafka_broker_stop EXIT

t=$(date +%s.%N)
step() { # step WHAT: prints the time since the previous step
    local now
    now=$(date +%s.%N)
    printf 'selftest: %-34s %5.1fs\n' "$1" "$(awk -v a="$t" -v b="$now" 'BEGIN { print b - a }')"
    t=$now
}
fail() { echo "selftest: FAIL: $*" >&2; exit 1; }

kafka_broker_fetch
step "jars (cached after the first run)"
kafka_broker_start st_a:3 st_b:1
step "start + 2 topics ($KAFKA_BROKERS)"

consume() { # consume TOPIC: "partition key value" lines, sorted
    timeout 60 kcat -C -b "$KAFKA_BROKERS" -t "$1" -o beginning -e -q -f '%p %k %s\n' | sort
}
seq 1 3000 | awk '{ print "k" ($1 % 7) ":v" $1 }' |
    timeout 60 kcat -P -b "$KAFKA_BROKERS" -t st_a -K: -z zstd
got=$(consume st_a | wc -l)
[ "$got" = 3000 ] || fail "read back $got of 3000 records"
[ "$(consume st_a | awk '{ print $3 }' | sort -u | wc -l)" = 3000 ] || fail "duplicates or losses"
[ "$(consume st_a | awk '{ print $1 }' | sort -u | wc -l)" = 3 ] || fail "not spread over 3 partitions"
step "3000 records in and back"

kafka_topic_add_partitions st_a 5
echo x:new | kcat -P -b "$KAFKA_BROKERS" -t st_a -K: -p 4
[ "$(consume st_a | grep -c '^4 x new$')" = 1 ] || fail "no record in the added partition 4"
step "partitions 3 -> 5"

kafka_broker_kill
timeout 10 kcat -L -b "$KAFKA_BROKERS" -m 2 >/dev/null 2>&1 && fail "metadata served after SIGKILL"
kafka_broker_up
[ "$(consume st_a | wc -l)" = 3001 ] || fail "records lost across SIGKILL"
step "SIGKILL + up (data kept)"

kafka_broker_restart
[ "$(consume st_a | wc -l)" = 3001 ] || fail "records lost across restart"
step "restart (SIGTERM + up)"

kafka_broker_pause
timeout 10 kcat -L -b "$KAFKA_BROKERS" -m 2 >/dev/null 2>&1 && fail "metadata served while paused"
kafka_broker_resume
timeout 30 kcat -L -b "$KAFKA_BROKERS" -m 20 >/dev/null 2>&1 || fail "no metadata after SIGCONT"
step "SIGSTOP + SIGCONT"

kafka_topic_delete st_b
step "delete a topic"

kafka_broker_stop || fail "stop returned $?"
step "stop"
echo "selftest: ok"
