#!/usr/bin/env bash
# Round trip through the mock broker: keyed JSON produced with kcat comes back
# exactly once, spread over all partitions; SIGUSR1/SIGUSR2 take brokers down/up.
#
#   MOCK_BROKER=build/stoatflow-mock-broker test/kafka/roundtrip.sh
set -euo pipefail

# shellcheck source=test/kafka/mock_broker.sh
source "$(dirname "${BASH_SOURCE[0]}")/mock_broker.sh"

TOPIC=roundtrip
PARTITIONS=3
MESSAGES=${ROUNDTRIP_MESSAGES:-3000}
KEYS=$((MESSAGES < 100 ? MESSAGES : 100))  # distinct keys; the hash partitioner spreads them
KCAT_TIMEOUT=30          # seconds; bound on each kcat run that should succeed
DOWN_METADATA_TIMEOUT=3  # kcat -m while brokers are down

passed=0
failed=0
work=$(mktemp -d "${TMPDIR:-/tmp}/stoatflow-roundtrip.XXXXXX")
cleanup() {
    mock_broker_stop || true
    rm -rf "$work"
}
trap cleanup EXIT

check() { # check NAME COMMAND...
    local name=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
        echo "ok   $name"
    else
        failed=$((failed + 1))
        echo "FAIL $name"
    fi
}

equal() { # equal ACTUAL EXPECTED
    [[ $1 == "$2" ]] || { echo "     got '${1:0:200}', want '$2'"; return 1; }
}

consume_into() { # consume_into FILE: every record as "partition offset key payload"
    # No -G: kcat assigns all partitions itself, so no ~3 s group join.
    timeout "$KCAT_TIMEOUT" kcat -C -b "$KAFKA_BROKERS" -t "$TOPIC" \
        -o beginning -e -q -f '%p %o %k %s\n' >"$1" 2>"$work/consume.err"
}

metadata() { # metadata SECONDS: topic metadata, bounded by kcat -m and timeout
    timeout $(($1 + 5)) kcat -L -b "$KAFKA_BROKERS" -t "$TOPIC" -m "$1" \
        >"$work/metadata.out" 2>"$work/metadata.err"
}
metadata_fails() { ! metadata "$1"; }
same_records() { diff -q <(sort "$1") <(sort "$2"); }

command -v kcat >/dev/null || { echo "roundtrip: kcat not found" >&2; exit 1; }
mock_broker_start "$TOPIC:$PARTITIONS"
echo "mock broker at $KAFKA_BROKERS"

# --- produce -----------------------------------------------------------------
ts0=1700000000000
for ((i = 0; i < MESSAGES; i++)); do
    user=$((i % KEYS))
    printf 'user-%d:{"user_id":%d,"ts":%d,"seq":%d}\n' "$user" "$user" $((ts0 + i * 10)) "$i"
done >"$work/produced"
sed 's/^[^:]*://' "$work/produced" | sort >"$work/produced.payloads"

# Lines on stdin, one message each (a file argument would be one message).
check "produce $MESSAGES keyed messages" \
    timeout "$KCAT_TIMEOUT" kcat -P -b "$KAFKA_BROKERS" -t "$TOPIC" -K: \
    -X message.timeout.ms=$((KCAT_TIMEOUT * 1000 - 5000)) <"$work/produced"

# --- consume back --------------------------------------------------------------
check "consume to end of all partitions" consume_into "$work/consumed"
cut -d' ' -f4- "$work/consumed" | sort >"$work/consumed.payloads"

check "message count" equal "$(wc -l <"$work/consumed")" "$MESSAGES"
check "every payload back exactly once" \
    diff -q "$work/produced.payloads" "$work/consumed.payloads"
check "keys survive (key matches user_id)" equal \
    "$(awk '{ if ($3 != "user-" substr($4, 12, index($4, ",") - 12)) bad++ } END { print bad + 0 }' "$work/consumed")" 0
check "messages spread over all $PARTITIONS partitions" equal \
    "$(cut -d' ' -f1 "$work/consumed" | sort -u | tr '\n' ' ')" "0 1 2 "
check "each key lives in one partition" equal \
    "$(awk '{ print $3, $1 }' "$work/consumed" | sort -u | wc -l)" "$KEYS"
check "offsets per partition are 0..n-1" equal \
    "$(awk '{ if ($2 != next_off[$1]++) bad++ } END { print bad + 0 }' "$work/consumed")" 0
echo "     per partition: $(cut -d' ' -f1 "$work/consumed" | sort | uniq -c | awk '{ printf "p%s=%s ", $2, $1 }')"

# --- broker faults -------------------------------------------------------------
check "metadata while brokers up" metadata 5
check "SIGUSR1 acknowledged" mock_broker_down
start=$SECONDS
check "metadata fails while brokers down" metadata_fails "$DOWN_METADATA_TIMEOUT"
check "  ... within bounded time" test $((SECONDS - start)) -le $((DOWN_METADATA_TIMEOUT + 3))
check "  ... with a transport error" grep -q "Connection refused\|transport failure" "$work/metadata.err"
check "SIGUSR2 acknowledged" mock_broker_up
check "metadata again after brokers up" metadata 5
check "  ... lists $PARTITIONS partitions" equal \
    "$(grep -c '^ *partition ' "$work/metadata.out")" "$PARTITIONS"
check "consume again after down/up" consume_into "$work/consumed2"
check "  ... same records as before" same_records "$work/consumed" "$work/consumed2"

# --- shutdown ------------------------------------------------------------------
check "broker exits 0 on SIGTERM" mock_broker_stop

echo "roundtrip: $passed passed, $failed failed"
((failed == 0))
