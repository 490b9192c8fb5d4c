#!/usr/bin/env bash
# Runs the pg_regress suite (sql/, expected/, test/schedule) against the installed extension in a
# throwaway --temp-instance that preloads stoatflow; as root, pg_regress runs as user postgres.
# Fails on any test failure and on any crash in the server log ("terminated by signal").
#
#   STOATFLOW_TEST_BROKER=mock|kafka   the Kafka broker kafka_e2e consumes from (default mock;
#                                      see test/kafka/test_broker.sh)
#   REGRESS_TESTS="kafka_e2e"          run only these tests instead of test/schedule
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

PG_CONFIG=${PG_CONFIG:-pg_config}
bindir=$("$PG_CONFIG" --bindir)
pg_regress="$(dirname "$("$PG_CONFIG" --pgxs)")/../test/regress/pg_regress"

bash test/check_schedule.sh

# The end-to-end tests consume from a Kafka broker on 127.0.0.1 (librdkafka's mock cluster, or
# Apache Kafka with STOATFLOW_TEST_BROKER=kafka); its address reaches them as $KAFKA_BROKERS
# (psql: \getenv). Topics: name:partitions.
# shellcheck source=test/kafka/test_broker.sh
source test/kafka/test_broker.sh
broker_check
trap 'broker_stop' EXIT
broker_t0=$(date +%s)
broker_start e2e_pageviews:2 e2e_idle:2 e2e_faults:1 e2e_rows:1 e2e_multi_a:2 e2e_multi_b:3 e2e_race:2 e2e_pause:1 e2e_csv:2 e2e_csv_json:2 e2e_alter:1 e2e_alter_flow:1 e2e_avro:2 e2e_avro_reg:1 e2e_avro_key:1 e2e_avro_nested:1 e2e_rollup:1 e2e_proto:2 e2e_proto_reg:1 e2e_bfdrop:1 e2e_bfrace:1
echo "pg_regress.sh: $TEST_BROKER broker at $KAFKA_BROKERS (up in $(($(date +%s) - broker_t0))s)"

# pg_regress, initdb and the server need a tree they own: copy the inputs into a scratch dir.
run_as=()
tmp_root=${TMPDIR:-/tmp}
if [ "$(id -u)" -eq 0 ]; then
    run_as=(runuser -u postgres -- env TMPDIR=/tmp)
    tmp_root=/tmp
fi
work=$(mktemp -d "$tmp_root/stoatflow-regress.XXXXXX")
trap 'rm -rf "$work"; broker_stop' EXIT
cp -r sql expected test/schedule test/pg_regress.conf test/upgrade/catalog.sql test/rollup/events.py "$work/"
cp -r test/registry "$work/"  # avro_e2e, protobuf_e2e: the test registry and the producer
if [ "$(id -u)" -eq 0 ]; then
    chown -R postgres: "$work"
fi

tests=(--schedule="$work/schedule")
if [ -n "${REGRESS_TESTS:-}" ]; then
    read -r -a tests <<<"$REGRESS_TESTS"
fi

status=0
(cd "$work" && "${run_as[@]}" "$pg_regress" \
    --temp-instance="$work/tmp_check" \
    --temp-config="$work/pg_regress.conf" \
    --inputdir="$work" --outputdir="$work" \
    --bindir="$bindir" \
    "${tests[@]}" \
    --dbname=contrib_regression \
    --encoding=UTF8 --no-locale \
    ${REGRESS_PORT:+--port="$REGRESS_PORT"}) || status=$?

# Keep the outputs in the repo (ignored by git) for a look after a failure.
rm -rf results log regression.diffs regression.out
for f in results log regression.diffs regression.out; do
    if [ -e "$work/$f" ]; then cp -r "$work/$f" .; fi
done

server_log="$work/log/postmaster.log"
if [ ! -f "$server_log" ]; then
    echo "pg_regress.sh: no server log at $server_log (did the temp instance start?)" >&2
    cat "$work"/log/*.log 2>/dev/null >&2 || true
    status=1
elif grep -n "terminated by signal" "$server_log" >&2; then
    echo "pg_regress.sh: the server crashed during the tests (see log/postmaster.log)" >&2
    status=1
fi
if [ "$status" -ne 0 ] && [ -f regression.diffs ]; then
    cat regression.diffs >&2
fi
exit "$status"
