# shellcheck shell=bash
# The one switch between the two Kafka brokers the tests run against:
#
#   STOATFLOW_TEST_BROKER=mock   (default) librdkafka's mock cluster, test/kafka/mock_broker.sh:
#                                no JVM, starts in milliseconds, keeps ~5 MiB per partition
#   STOATFLOW_TEST_BROKER=kafka  Apache Kafka 4.x, single node KRaft,
#                                test/kafka/broker/kafka_broker.sh: needs java, mvn once
#
# Sourced by test/pg_regress.sh and test/faults/lib.sh, which use only these:
#
#   broker_check                  what this broker needs is there (or a clear message, 1)
#   broker_start TOPIC:PARTITIONS...   exports KAFKA_BROKERS
#   broker_stop                   idempotent: call it and register it with trap EXIT
#   broker_down; broker_up        an outage: connections refused, then the same address again
#                                 (mock: listeners closed; kafka: clean shutdown and start,
#                                 same ports and data)
#   TEST_BROKER                   "mock" or "kafka"

TEST_BROKER=${STOATFLOW_TEST_BROKER:-mock}
_test_broker_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

case $TEST_BROKER in
mock)
    # shellcheck source=test/kafka/mock_broker.sh
    source "$_test_broker_dir/mock_broker.sh"
    broker_check() {
        [[ -x $MOCK_BROKER ]] || { echo "no mock broker at $MOCK_BROKER (cmake --build build --target stoatflow-mock-broker, or set MOCK_BROKER)" >&2; return 1; }
    }
    broker_start() { mock_broker_start "$@"; }
    broker_stop() { mock_broker_stop; }
    broker_down() { mock_broker_down; }
    broker_up() { mock_broker_up; }
    ;;
kafka)
    # shellcheck source=test/kafka/broker/kafka_broker.sh
    source "$_test_broker_dir/broker/kafka_broker.sh"
    broker_check() { _kafka_broker_need java kcat python3 && kafka_broker_fetch; }
    broker_start() { kafka_broker_start "$@"; }
    broker_stop() { kafka_broker_stop; }
    broker_down() { kafka_broker_down; }
    broker_up() { kafka_broker_up; }
    ;;
*)
    echo "STOATFLOW_TEST_BROKER='$TEST_BROKER': want mock or kafka" >&2
    return 2 2>/dev/null || exit 2
    ;;
esac
