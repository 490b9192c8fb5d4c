#!/usr/bin/env bash
# Fault scenario: the schema registry goes away under a running Avro source (README "Formats":
# a registry that cannot answer is a source error, retried with backoff; nothing is
# dead-lettered for it; only a 404 makes a record bad_schema_id). An Avro source reads
# Confluent-framed records through the suite's fake registry (test/registry/fake_registry.py,
# basic auth on), events flowing. Three outages, each while a chunk written with a NEW schema
# version (registered during the outage, so the worker must fetch it) waits:
#
#   1. down (connections refused), then 500 without a pause in between
#   2. slow: every answer later than the client's timeout
#
# Each time: status 'error' with a last_error naming the registry URL and what went wrong
# (refused / HTTP 500 / timed out), nothing of the chunk committed (the records wait: not
# skipped, not dead-lettered), the registry saw the worker ask for the new id, and the password
# never shown. Switched back: status 'running', everything committed. Then records of all
# versions interleaved, and the sink must equal events.py's independent computation row for
# row. Last, a record with an id nobody registered (404) is exactly one bad_schema_id dead
# letter and the hostile ones (wrong magic byte, a truncated frame, a body that does not
# decode) are bad_avro, while the sink stays as it was and the status 'running'.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=test/registry/registry.sh
source "$FAULTS_REPO/test/registry/registry.sh"

faults_begin registry_outage
registry_scenario_begin faults_cleanup || fail "the registry tools are missing"

EVENTS=${REGISTRY_OUTAGE_EVENTS:-12000}
KEYS=128
NCHUNKS=6
ERROR_TIMEOUT=${REGISTRY_ERROR_TIMEOUT:-45} # s: an outage shows in the status within this
HOLD=2                                      # s: the waiting chunk stays uncommitted this long
SLOW_S=15                                   # s: the slow registry's delay (the client gives up at 10 s)
REG_USER=stoat
REG_PASSWORD=pw-$RANDOM-not-to-be-shown
SUBJECT=$TOPIC-value

# Writer schemas: v1 declared before the source; v2 promotes amount int -> long, drops note and
# adds region with a default; v3 adds a nullable channel; v4 orders the fields differently.
cat >"$WORK/v1.avsc" <<'EOF'
{"type": "record", "name": "Event", "namespace": "stoatflow.test", "fields": [
 {"name": "user_id", "type": "string"}, {"name": "ts", "type": "long"},
 {"name": "amount", "type": "int"}, {"name": "note", "type": "string", "default": "v1"}]}
EOF
cat >"$WORK/v2.avsc" <<'EOF'
{"type": "record", "name": "Event", "namespace": "stoatflow.test", "fields": [
 {"name": "user_id", "type": "string"}, {"name": "ts", "type": "long"},
 {"name": "amount", "type": "long"}, {"name": "region", "type": "string", "default": "eu"}]}
EOF
cat >"$WORK/v3.avsc" <<'EOF'
{"type": "record", "name": "Event", "namespace": "stoatflow.test", "fields": [
 {"name": "user_id", "type": "string"}, {"name": "ts", "type": "long"},
 {"name": "amount", "type": "long"}, {"name": "region", "type": "string", "default": "eu"},
 {"name": "channel", "type": ["null", "string"], "default": null}]}
EOF
cat >"$WORK/v4.avsc" <<'EOF'
{"type": "record", "name": "Event", "namespace": "stoatflow.test", "fields": [
 {"name": "amount", "type": "long"}, {"name": "channel", "type": ["null", "string"], "default": null},
 {"name": "ts", "type": "long"}, {"name": "user_id", "type": "string"}]}
EOF

gen_events 307 "$EVENTS" "$KEYS" "$NCHUNKS"
broker_start "$TOPIC:$PARTITIONS" || fail "the $TEST_BROKER broker did not start"
fake_registry_start --user "$REG_USER" --password "$REG_PASSWORD" --slow-seconds "$SLOW_S" ||
    fail "the fake registry did not start"
ID1=$(fake_registry_register "$SUBJECT" "$WORK/v1.avsc") || fail "could not register v1"
log "fake registry at $REGISTRY_URL (basic auth); $SUBJECT v1 = id $ID1"

# produce_avro FIRST LAST --schema ID=FILE...: chunks FIRST..LAST of every partition, framed
# by produce.py (python3-avro), the writer schema picked round-robin among those given.
produce_avro() {
    local first=$1 last=$2 p c n files
    shift 2
    for ((p = 0; p < PARTITIONS; p++)); do
        files=()
        for ((c = first; c <= last; c++)); do files+=("$EVENTS_DIR/chunk-$(printf '%02d' "$c")-p$p.jsonl"); done
        n=$(cat "${files[@]}" | wc -l)
        ((n > 0)) || continue
        registry_py produce.py avro "$@" "${files[@]}" >"$WORK/records.bin" || fail "produce.py avro failed"
        timeout "$KCAT_TIMEOUT" kcat -P -D "$DELIM" -b "$KAFKA_BROKERS" -t "$TOPIC" -p "$p" -z lz4 \
            <"$WORK/records.bin" 2>"$WORK/kcat.err" || { cat "$WORK/kcat.err" >&2; fail "kcat could not produce"; }
        if grep -qi "fail\|error" "$WORK/kcat.err"; then cat "$WORK/kcat.err" >&2; fail "kcat reported errors"; fi
        PRODUCED=$((PRODUCED + n))
    done
}

pg_init
pg_start
produce_avro 0 0 --schema "$ID1=$WORK/v1.avsc"
sql "CREATE EXTENSION stoatflow" >/dev/null
sql "SELECT stoatflow.create_source('$SOURCE', '$TOPIC', '$KAFKA_BROKERS', format => 'avro',
        format_options => jsonb_build_object('schema_registry_url', '$REGISTRY_URL',
            'schema_registry_user', '$REG_USER', 'schema_registry_password', '$REG_PASSWORD'),
        columns => 'user_id text, ts bigint, amount bigint', key => 'user_id', event_time => 'ts',
        max_out_of_orderness => '1 hour')" >/dev/null
sql "SELECT stoatflow.create_aggregation('agg', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', '$SINK')" >/dev/null
wait_worker ""
wait_caught_up
log "chunk 0 (v1, id $ID1) committed: $(committed) of $PRODUCED"

dead_letters() { sql "SELECT count(*) FROM stoatflow.dead_letters"; }
# Every row of the source in status error, its last_error naming the registry and matching RE.
registry_error() { # registry_error REGEX
    local s
    s=$(source_status)
    [ -n "$s" ] && [ "$(wc -l <<<"$s")" = 1 ] && [[ $s == "error|"* ]] || return 1
    [[ ${s#error|} == *"$REGISTRY_URL"* ]] || return 1
    grep -Eqi "$1" <<<"${s#error|}"
}
status_running() { [[ "$(source_status)" == "running|"* ]] && [ "$(wc -l <<<"$(source_status)")" = 1 ]; }
# The worker asked the registry for schema ID while it was in MODE (the request log).
asked() { # asked ID MODE
    grep -F "\"path\":\"/schemas/ids/$1\"" "$REGISTRY_LOG" | grep -Fq "\"mode\":\"$2\""
}
waiting_chunk_holds() { # committed offsets still BEFORE, no dead letter, status still error
    local what=$1 before=$2
    [ "$(committed)" = "$before" ] || fail "$what: committed $(committed), want $before: records of an unknown id were not held"
    [ "$(dead_letters)" = 0 ] || fail "$what: $(dead_letters) dead letters while the registry cannot answer: $(sql "SELECT reason, detail FROM stoatflow.dead_letters LIMIT 3")"
    [ -n "$(worker_pid)" ] || fail "$what: no source worker"
}
recover() { # recover WHAT: the registry back to normal, everything committed, status running
    local t
    t=$(date +%s)
    fake_registry_mode normal || fail "fake_registry control normal failed"
    wait_caught_up
    wait_until 30 "status 'running' after the registry came back ($1)" status_running
    [ "$(committed)" = "$PRODUCED" ] || fail "$1: committed $(committed) of $PRODUCED after the registry came back"
    [ "$(dead_letters)" = 0 ] || fail "$1: $(dead_letters) dead letters after the registry came back"
    log "$1: registry normal again; caught up in $(($(date +%s) - t))s, status $(source_status | cut -d'|' -f1)"
}

# 1. down, then 500.
fake_registry_mode down || fail "fake_registry control down failed"
ID2=$(fake_registry_register "$SUBJECT" "$WORK/v2.avsc") || fail "could not register v2"
before=$PRODUCED
produce_avro 1 1 --schema "$ID2=$WORK/v2.avsc"
t=$(date +%s)
wait_until "$ERROR_TIMEOUT" "status 'error' naming $REGISTRY_URL (down: refused)" registry_error "connect|refused"
log "down: v2 = id $ID2 waiting; status error after $(($(date +%s) - t))s: $(source_status)"
sleep "$HOLD"
waiting_chunk_holds "down" "$before"
registry_error "connect|refused" || fail "down: the status left the refusal: $(source_status)"

fake_registry_mode 500 || fail "fake_registry control 500 failed"
t=$(date +%s)
wait_until "$ERROR_TIMEOUT" "status 'error' naming $REGISTRY_URL and HTTP 500" registry_error "HTTP 500"
asked "$ID2" 500 || fail "500: the registry never saw a request for id $ID2 while answering 500"
log "500: status error after $(($(date +%s) - t))s: $(source_status)"
sleep "$HOLD"
waiting_chunk_holds "500" "$before"
recover "down+500"
asked "$ID2" normal || fail "the worker did not fetch id $ID2 once the registry answered"

# 2. slow: answers only after SLOW_S seconds, past the client's timeout.
ID3=$(fake_registry_register "$SUBJECT" "$WORK/v3.avsc") || fail "could not register v3"
fake_registry_mode "slow:$SLOW_S" || fail "fake_registry control slow failed"
before=$PRODUCED
produce_avro 2 2 --schema "$ID3=$WORK/v3.avsc"
t=$(date +%s)
wait_until "$ERROR_TIMEOUT" "status 'error' naming $REGISTRY_URL (slow: timed out)" registry_error "timed out|timeout"
asked "$ID3" slow || fail "slow: the registry never saw a request for id $ID3 while slow"
log "slow: v3 = id $ID3 waiting; status error after $(($(date +%s) - t))s: $(source_status)"
waiting_chunk_holds "slow" "$before"
recover "slow"

# The rest: every version interleaved record by record (v4 new to the worker, fetched at once).
ID4=$(fake_registry_register "$SUBJECT" "$WORK/v4.avsc") || fail "could not register v4"
produce_avro 3 $((NCHUNKS - 1)) --schema "$ID1=$WORK/v1.avsc" --schema "$ID2=$WORK/v2.avsc" \
    --schema "$ID3=$WORK/v3.avsc" --schema "$ID4=$WORK/v4.avsc"
wait_caught_up
wait_until 30 "status 'running'" status_running
verify_sink

# The password: never in the views, the status, the server log or the dead letters.
# (the catalog table stoatflow.source keeps it, like the Kafka passwords: no PUBLIC access)
leaks=$(sql "SELECT count(*) FROM (SELECT s::text FROM stoatflow.sources s UNION ALL SELECT s::text FROM stoatflow.stats s
             UNION ALL SELECT d::text FROM stoatflow.dead_letters d) x(t) WHERE t LIKE '%$REG_PASSWORD%'")
[ "$leaks" = 0 ] || fail "the registry password shows in $leaks rows of stoatflow.sources / stats / dead_letters"
! grep -Fq "$REG_PASSWORD" "$SERVER_LOG" || fail "the registry password is in the server log"
grep -q '"auth":true' "$REGISTRY_LOG" && ! grep -q '"auth":false' "$REGISTRY_LOG" ||
    fail "the worker asked the registry without its credentials"

# 3. A 404, hostile frames and hostile schemas in the registry, on partition 0 after everything
# else. The registry's hostile answers (each a bad_avro dead letter, no crash): JSON that is no
# Avro schema, a PROTOBUF schema under the Avro subject, a writer whose amount is a string
# (cannot be read into a bigint column), records nested 3,000 deep.
echo '{"type": "nonsense", "fields": 7}' >"$WORK/h1.avsc"
echo 'syntax = "proto3"; message Event { string user_id = 1; }' >"$WORK/h2.proto"
cat >"$WORK/h3.avsc" <<'EOF'
{"type": "record", "name": "Event", "namespace": "stoatflow.test", "fields": [
 {"name": "user_id", "type": "string"}, {"name": "ts", "type": "long"}, {"name": "amount", "type": "string"}]}
EOF
python3 -c '
d = 3000
print("".join("{\"type\": \"record\", \"name\": \"R%d\", \"fields\": [{\"name\": \"f\", \"type\": " % i for i in range(d))
      + "\"long\"" + "}]}" * d)' >"$WORK/h4.avsc"
HOSTILE_IDS=()
for h in h1.avsc h3.avsc h4.avsc; do
    HOSTILE_IDS+=("$(fake_registry_register "$SUBJECT-hostile" "$WORK/$h")") || fail "could not register $h"
done
HOSTILE_IDS+=("$(fake_registry_register "$SUBJECT-hostile" "$WORK/h2.proto" PROTOBUF)") || fail "could not register h2.proto"
log "hostile schemas registered as ids ${HOSTILE_IDS[*]}"
python3 - "$WORK/bad.bin" "$ID1" "$DELIM" "${HOSTILE_IDS[@]}" <<'EOF'
import struct, sys
out, known, delim = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode().decode("unicode_escape").encode("latin-1")
hostile = [int(x) for x in sys.argv[4:]]
ok_body = b"\x0au0000\xd0\x0f\x02\x02v"  # user_id "u0000", ts 1000, amount 1, note "v"
records = [
    b"\x00" + struct.pack(">I", 424242) + ok_body,        # an id nobody registered: 404
    b"\x01" + struct.pack(">I", known) + ok_body,         # wrong magic byte
    b"\x00\x00\x01",                                      # shorter than a frame
    b"\x00" + struct.pack(">I", known) + b"\x0a",         # the body ends inside user_id
    b"\x00" + struct.pack(">I", known) + b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # a string of length -2^63
    b"\x00" + struct.pack(">I", known) + b"\xfe\xff\xff\xff\x0f" + b"x" * 16,          # length 2^31 - 1, 16 bytes there
] + [b"\x00" + struct.pack(">I", h) + ok_body for h in hostile]  # written by the hostile schemas
with open(out, "wb") as f:
    for r in records:
        f.write(r + delim)
EOF
timeout "$KCAT_TIMEOUT" kcat -P -D "$DELIM" -b "$KAFKA_BROKERS" -t "$TOPIC" -p 0 <"$WORK/bad.bin" 2>"$WORK/kcat.err" ||
    { cat "$WORK/kcat.err" >&2; fail "kcat could not produce the bad records"; }
bad_records=$((6 + ${#HOSTILE_IDS[@]}))
PRODUCED=$((PRODUCED + bad_records))
all_committed_now() { [ "$(committed)" = "$PRODUCED" ]; }
wait_until 60 "the $bad_records bad records committed" all_committed_now
dl=$(sql "SELECT string_agg(reason || ':' || \"offset\", ',' ORDER BY \"offset\") FROM stoatflow.dead_letters")
log "dead letters: $dl"
[ "$(sql "SELECT count(*) FROM stoatflow.dead_letters WHERE reason = 'bad_schema_id'")" = 1 ] ||
    fail "want exactly one bad_schema_id dead letter (the 404), have: $dl"
[ "$(sql "SELECT count(*) FROM stoatflow.dead_letters WHERE reason = 'bad_avro'")" = $((bad_records - 1)) ] ||
    fail "want $((bad_records - 1)) bad_avro dead letters, have: $dl"
first_bad=$(sql "SELECT committed_offset FROM stoatflow.sources WHERE source_name = '$SOURCE' AND partition = 0")
first_bad=$((first_bad - bad_records))
[ "$(sql "SELECT \"offset\" FROM stoatflow.dead_letters WHERE reason = 'bad_schema_id'")" = "$first_bad" ] ||
    fail "the bad_schema_id dead letter is not at offset $first_bad of partition 0: $dl"
[ "$(grep -cF '"path":"/schemas/ids/424242"' "$REGISTRY_LOG")" = 1 ] ||
    fail "the unknown id was asked $(grep -cF '"path":"/schemas/ids/424242"' "$REGISTRY_LOG") times (want once: a 404 is cached)"
status_running || fail "a 404 or a bad record made the source status $(source_status)"
[ "$(sql "SELECT sum(n) FROM $SINK")" = "$EVENTS_TOTAL" ] || fail "the bad records changed the sink"
check_log
log "bad_avro details of the hostile schemas: $(sql "SELECT string_agg(left(detail, 120), ' | ' ORDER BY \"offset\") FROM stoatflow.dead_letters WHERE \"offset\" > $first_bad + 5")"
[ -n "$(worker_pid)" ] || fail "no source worker after the hostile records"
log "RESULT events=$EVENTS outages=3 (down, 500, slow) schema_versions=4 rows_compared=$VERIFY_ROWS bad_schema_id=1 bad_avro=$((bad_records - 1)) match=yes"
faults_pass
