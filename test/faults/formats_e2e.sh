#!/usr/bin/env bash
# End to end over the four formats (README "Formats"): the SAME events (events.py) as JSON, as
# Avro through a schema registry (two writer schema versions interleaved record by record on one
# topic), as Protobuf and as CSV, each on its own topic, each read by its own source into an
# aggregation with the same window and aggregates. The records are written by the reference
# libraries (test/registry/produce.py: python3-avro, python3-protobuf, Python's csv), not by
# stoatflow. Every sink must equal events.py's independent computation row for row
# (verify_sink), and the four sinks must be identical (EXCEPT both ways, against the JSON one).
#
# Avro: the registry is the suite's fake one (test/registry/fake_registry.py; Apicurio Registry
# cannot be fetched here: test/registry/README.md). Subject fe_avro-value holds v1 (user_id,
# ts, amount int, note) and v2 (amount long, no note, region with the default "eu"); the
# source's columns come from the latest version (v2) at declaration, so a v1 record resolves
# by Avro's rules: amount promoted int -> long, note ignored, region its default. The Avro
# aggregation keeps only region = 'eu': a v1 record whose region were not the default would be
# missing from its sink.
# Protobuf: through the registry (subject fe_proto-value holds the message as .proto text,
# schemaType PROTOBUF), records framed with the message-index array in its short and long form
# in turn; FORMATS_E2E_PROTO=inline: an inline descriptor (descriptor + message), bare bodies.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=test/registry/registry.sh
source "$FAULTS_REPO/test/registry/registry.sh"

faults_begin formats_e2e
registry_scenario_begin faults_cleanup || fail "the registry tools are missing"

EVENTS=${FORMATS_E2E_EVENTS:-20000}
KEYS=256
NCHUNKS=8 # 96 minutes of event time: windows close under the hour of out-of-orderness
# FORMATS_E2E_FORMATS: the formats to run (json first: the reference); default all four.
read -r -a FORMATS <<<"${FORMATS_E2E_FORMATS:-json avro proto csv}"
[ "${FORMATS[0]}" = json ] || { echo "formats_e2e: FORMATS_E2E_FORMATS must start with json" >&2; exit 2; }
COLUMNS='user_id text, ts bigint, amount bigint'

cat >"$WORK/v1.avsc" <<'EOF'
{"type": "record", "name": "Event", "namespace": "stoatflow.test", "fields": [
 {"name": "user_id", "type": "string"}, {"name": "ts", "type": "long"},
 {"name": "amount", "type": "int"}, {"name": "note", "type": "string", "default": "from v1"}]}
EOF
cat >"$WORK/v2.avsc" <<'EOF'
{"type": "record", "name": "Event", "namespace": "stoatflow.test", "fields": [
 {"name": "user_id", "type": "string"}, {"name": "ts", "type": "long"},
 {"name": "amount", "type": "long"}, {"name": "region", "type": "string", "default": "eu"}]}
EOF
cat >"$WORK/event.spec.json" <<'EOF'
{"package": "stoatflow.test", "message": "Event",
 "fields": [["user_id", "string", 1], ["ts", "int64", 2], ["amount", "int64", 3]]}
EOF

gen_events 401 "$EVENTS" "$KEYS" "$NCHUNKS"
topics=()
for f in "${FORMATS[@]}"; do topics+=("fe_$f:$PARTITIONS"); done
broker_start "${topics[@]}" || fail "the $TEST_BROKER broker did not start"
fake_registry_start || fail "the fake registry did not start"
ID1=$(fake_registry_register fe_avro-value "$WORK/v1.avsc") || fail "could not register v1"
ID2=$(fake_registry_register fe_avro-value "$WORK/v2.avsc") || fail "could not register v2"
log "fake registry at $REGISTRY_URL: fe_avro-value v1 = id $ID1, v2 = id $ID2"
DESCRIPTOR=$(registry_py produce.py proto-schema "$WORK/event.spec.json" --descriptor) || fail "no descriptor"
PROTO_VIA=${FORMATS_E2E_PROTO:-registry}
if [ "$PROTO_VIA" = registry ]; then
    registry_py produce.py proto-schema "$WORK/event.spec.json" --proto >"$WORK/event.proto" || fail "no .proto"
    ID_PROTO=$(fake_registry_register fe_proto-value "$WORK/event.proto" PROTOBUF) || fail "could not register the .proto"
    log "fe_proto-value = id $ID_PROTO (PROTOBUF)"
fi

# produce_format FORMAT: every chunk of every partition, in order, to topic fe_FORMAT.
declare -A PRODUCED_BY
produce_format() {
    local fmt=$1 p c n files delim=()
    PRODUCED_BY[$fmt]=0
    for ((p = 0; p < PARTITIONS; p++)); do
        files=()
        for ((c = 0; c < NCHUNKS; c++)); do files+=("$EVENTS_DIR/chunk-$(printf '%02d' "$c")-p$p.jsonl"); done
        n=$(cat "${files[@]}" | wc -l)
        ((n > 0)) || continue
        case $fmt in
        json) cat "${files[@]}" >"$WORK/records.bin" ;;
        csv) registry_py produce.py csv --columns user_id,ts,amount "${files[@]}" >"$WORK/records.bin" ;;
        avro) registry_py produce.py avro --schema "$ID1=$WORK/v1.avsc" --schema "$ID2=$WORK/v2.avsc" \
            "${files[@]}" >"$WORK/records.bin" ;;
        proto) if [ "$PROTO_VIA" = registry ]; then
            registry_py produce.py protobuf --message "$WORK/event.spec.json" --id "$ID_PROTO" --index-form mixed \
                "${files[@]}" >"$WORK/records.bin"
        else
            registry_py produce.py protobuf --message "$WORK/event.spec.json" --plain "${files[@]}" >"$WORK/records.bin"
        fi ;;
        esac || fail "produce.py $fmt failed"
        delim=()
        case $fmt in avro | proto) delim=(-D "$DELIM") ;; esac
        timeout "$KCAT_TIMEOUT" kcat -P "${delim[@]}" -b "$KAFKA_BROKERS" -t "fe_$fmt" -p "$p" -z lz4 \
            <"$WORK/records.bin" 2>"$WORK/kcat.err" || { cat "$WORK/kcat.err" >&2; fail "kcat could not produce fe_$fmt"; }
        if grep -qi "fail\|error" "$WORK/kcat.err"; then cat "$WORK/kcat.err" >&2; fail "kcat reported errors (fe_$fmt)"; fi
        PRODUCED_BY[$fmt]=$((PRODUCED_BY[$fmt] + n))
    done
}

pg_init
pg_start
sql "CREATE EXTENSION stoatflow" >/dev/null
for f in "${FORMATS[@]}"; do produce_format "$f"; done
log "produced $EVENTS events to each of ${topics[*]} (Avro: v1/v2 interleaved)"

common="key => 'user_id', event_time => 'ts', max_out_of_orderness => '1 hour'"
declare_pipeline() { # prints the declaration of source src_FORMAT and aggregation agg_FORMAT
    local fmt=$1 how filter=""
    case $fmt in
    json) how="columns => '$COLUMNS'" ;;
    avro) # the columns from the subject's latest version (v2); a v1 record's region: the default
        how="format => 'avro', format_options => jsonb_build_object('schema_registry_url', '$REGISTRY_URL')"
        filter=", filter => 'region = ''eu'''" ;;
    proto) if [ "$PROTO_VIA" = registry ]; then
            how="format => 'protobuf', format_options => jsonb_build_object('schema_registry_url', '$REGISTRY_URL'),
                 columns => '$COLUMNS'"
        else
            how="format => 'protobuf', format_options => jsonb_build_object('descriptor', '$DESCRIPTOR',
                 'message', 'stoatflow.test.Event'), columns => '$COLUMNS'"
        fi ;;
    csv) how="format => 'csv', columns => '$COLUMNS'" ;;
    esac
    echo "SELECT stoatflow.create_source('src_$fmt', 'fe_$fmt', '$KAFKA_BROKERS', $how, $common);
          SELECT stoatflow.create_aggregation('agg_$fmt', 'src_$fmt', stoatflow.tumbling('1 minute'),
              'count(*) AS n, sum(amount) AS total', 'sink_$fmt'$filter);"
}
# One transaction: every source and aggregation starts together.
statements="BEGIN;"
for f in "${FORMATS[@]}"; do statements+=$(declare_pipeline "$f"); done
sql "$statements COMMIT;" >/dev/null
if [[ " ${FORMATS[*]} " == *" avro "* ]]; then
    log "declared; the Avro source's columns (from v2): $(sql "SELECT columns FROM stoatflow.source WHERE source_name = 'src_avro'")"
fi

for f in "${FORMATS[@]}"; do
    SOURCE=src_$f
    wait_worker ""
    wait_caught_up
done
log "all caught up: ${FORMATS[*]}"
for f in "${FORMATS[@]}"; do
    SOURCE=src_$f
    PRODUCED=${PRODUCED_BY[$f]}
    verify_sink "sink_$f" "agg_$f"
done

# The sinks identical: each against the JSON one, both ways.
for f in "${FORMATS[@]:1}"; do
    diff=$(sql "SELECT (SELECT count(*) FROM (SELECT key, window_start, window_end, n, total, event_time FROM sink_json
                        EXCEPT SELECT key, window_start, window_end, n, total, event_time FROM sink_$f) a) || ' ' ||
                       (SELECT count(*) FROM (SELECT key, window_start, window_end, n, total, event_time FROM sink_$f
                        EXCEPT SELECT key, window_start, window_end, n, total, event_time FROM sink_json) b)")
    [ "$diff" = "0 0" ] || fail "sink_json and sink_$f differ: rows only in sink_json, only in sink_$f: $diff"
done
[ "$(sql "SELECT count(*) FROM stoatflow.dead_letters")" = 0 ] || fail "dead letters: $(sql "SELECT source_name, reason, count(*) FROM stoatflow.dead_letters GROUP BY 1, 2")"
if [[ " ${FORMATS[*]} " == *" avro "* ]]; then
    grep -Fq "\"path\":\"/schemas/ids/$ID1\"" "$REGISTRY_LOG" && grep -Fq "\"path\":\"/schemas/ids/$ID2\"" "$REGISTRY_LOG" ||
        fail "the worker did not fetch both writer schemas from the registry"
fi
check_log
log "RESULT events=$EVENTS formats=${FORMATS[*]} rows_per_sink=$VERIFY_ROWS identical=yes"
faults_pass
