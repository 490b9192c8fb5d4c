#!/usr/bin/env bash
# Kafka Streams vs stoatflow: final windows on random single-partition streams.
#
#   bench/peers/kafka-streams/semantics.sh      # SEMANTICS_STREAMS=20 SEMANTICS_SEED=1
#
# Generates SEMANTICS_STREAMS random streams (seeded; out-of-order records, records late beyond
# grace, a few keys, 200-2000 records) plus the hand-made examples of semantics.py, produces each
# to a one-partition topic of a throwaway Apache Kafka 4.1.1 broker (test/kafka/broker), and runs
# over every stream, with the same windows (semantics.py specs):
#   - Kafka Streams 4.1.1 (KsWindows: count + sum(amount), EmitStrategy.onWindowClose), and
#   - stoatflow in a throwaway PostgreSQL (max_out_of_orderness => '0', future_limit => NULL,
#     emit => 'on_window_close'),
# each stream ending with a sentinel record a day later (closes every window in both). Then it
# compares the final windows per stream and window kind (sessions normalised to [first, last+1ms))
# and prints "KIND: N passed, M failed". Exit 1 on a mismatch the by-design differences (README,
# "Compared with Kafka Streams") do not explain.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
STREAMS=${SEMANTICS_STREAMS:-20}
SEED=${SEMANTICS_SEED:-1}
BATCH=${SEMANTICS_BATCH:-8} # stoatflow sources (one worker each) running at once
PG_BIN=$(pg_config --bindir)
T0=$(date +%s.%N)
log() { printf '[semantics %5.1fs] %s\n' "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')" "$*"; }
die() { echo "semantics: $*" >&2; exit 1; }

for tool in java mvn kcat python3 "$PG_BIN/initdb" "$PG_BIN/pg_ctl" "$PG_BIN/psql"; do
    command -v "$tool" >/dev/null || die "missing: $tool"
done

# ---- build (once; again when a source changed) ----
stamp=$HERE/target/.built
if [[ ! -f $stamp ]] || [[ -n $(find "$HERE/pom.xml" "$HERE/src" -newer "$stamp" -type f) ]]; then
    log "building the Kafka Streams peer (mvn package)"
    mvn -q -B -f "$HERE/pom.xml" package >"${TMPDIR:-/tmp}/semantics-mvn.$$.log" 2>&1 ||
        { cat "${TMPDIR:-/tmp}/semantics-mvn.$$.log" >&2; die "mvn package failed"; }
    rm -f "${TMPDIR:-/tmp}/semantics-mvn.$$.log"
    touch "$stamp"
fi
CP="$HERE/target/classes:$HERE/target/lib/*"

# ---- scratch dir, cleanup ----
RUN_AS=()
if [ "$(id -u)" -eq 0 ]; then RUN_AS=(runuser -u postgres --); fi
WORK=$(mktemp -d "/tmp/stoatflow-semantics.XXXXXX")
chmod 755 "$WORK"
PGDATA_DIR=$WORK/data
cleanup() {
    local rc=$?
    set +e
    if [[ -f $PGDATA_DIR/postmaster.pid ]]; then
        "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m immediate -w -t 30 stop >/dev/null 2>&1
    fi
    kafka_broker_stop >/dev/null 2>&1
    if [[ ${SEMANTICS_KEEP:-0} == 1 ]]; then echo "semantics: kept $WORK" >&2; else rm -rf "$WORK"; fi
    exit "$rc"
}
# shellcheck source=test/kafka/broker/kafka_broker.sh
source "$REPO/test/kafka/broker/kafka_broker.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- streams ----
python3 "$HERE/semantics.py" gen "$WORK/streams" --seed "$SEED" --streams "$STREAMS"
mapfile -t NAMES < <(awk '{ print $1 }' "$WORK/streams/streams.txt")
TOTAL=$(awk '{ s += $3 } END { print s }' "$WORK/streams/streams.txt")
declare -A SPEC
while read -r kind rest; do SPEC[$kind]=$rest; done < <(python3 "$HERE/semantics.py" specs)
log "${#NAMES[@]} streams (seed $SEED; ${STREAMS} random + examples), $TOTAL records; windows (ms): tumbling ${SPEC[tumbling]}, hopping ${SPEC[hopping]}, session ${SPEC[session]}"

# ---- broker, topics, records ----
# (retention.ms=-1: Kafka Streams stamps its results with event times months in the past, and
# the broker's default 7-day retention would delete them within seconds)
kafka_broker_start
topics=()
for n in "${NAMES[@]}"; do topics+=("semantics_$n"); done
java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$CP" dev.stoatflow.peers.CreateTopics \
    "$KAFKA_BROKERS" 1 --config retention.ms=-1 semantics_out "${topics[@]}" || die "could not create the topics"
for n in "${NAMES[@]}"; do
    timeout 60 kcat -P -b "$KAFKA_BROKERS" -t "semantics_$n" -p 0 -K '|' <"$WORK/streams/$n.kv" ||
        die "kcat could not produce stream $n"
done
log "Apache Kafka at $KAFKA_BROKERS: produced ${#NAMES[@]} topics"

# ---- Kafka Streams ----
read -r ts tg <<<"${SPEC[tumbling]}"
read -r hs ha hg <<<"${SPEC[hopping]}"
read -r sg sgr <<<"${SPEC[session]}"
inputs=$(IFS=,; echo "${topics[*]}")
java -Xmx512m -XX:+UseSerialGC -cp "$CP" dev.stoatflow.peers.KsWindows --bootstrap "$KAFKA_BROKERS" \
    --output semantics_out --input "$inputs" --window tumbling "$ts" "$tg" \
    --window hopping "$hs" "$ha" "$hg" --window session "$sg" "$sgr" \
    --expect-records "$TOTAL" --idle-seconds 20 --run-seconds 150 --state-dir "$WORK/ks-state" --no-changelog \
    --keep-until-emitted 2>"$WORK/ks.err" || { cat "$WORK/ks.err" >&2; die "Kafka Streams failed"; }
# (--keep-until-emitted: with its default stores, onWindowClose never emits a window that a jump of
# stream time closes and expires at once, e.g. every window the sentinel closes; see KsWindows)
stopped=$(grep "KsWindows: stopped" "$WORK/ks.err") || { cat "$WORK/ks.err" >&2; die "KsWindows did not stop cleanly"; }
echo "$stopped"
timeout 60 kcat -C -b "$KAFKA_BROKERS" -t semantics_out -e -q >"$WORK/ks.jsonl" || die "could not read semantics_out"
written=$(sed -n 's/.* \([0-9]*\) windows written to .*/\1/p' <<<"$stopped")
[[ $written == "$(wc -l <"$WORK/ks.jsonl")" ]] ||
    die "KsWindows wrote $written windows, semantics_out holds $(wc -l <"$WORK/ks.jsonl")"
log "Kafka Streams: $(wc -l <"$WORK/ks.jsonl") final windows"

# ---- stoatflow ----
PG_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
mkdir "$PGDATA_DIR" "$WORK/run" "$WORK/pg"
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$PGDATA_DIR" "$WORK/run"; fi
"${RUN_AS[@]}" "$PG_BIN/initdb" -D "$PGDATA_DIR" -U postgres -A trust --no-locale -E UTF8 >"$WORK/initdb.log" 2>&1 ||
    { cat "$WORK/initdb.log" >&2; die "initdb failed"; }
cat >>"$PGDATA_DIR/postgresql.conf" <<EOF
port = $PG_PORT
listen_addresses = ''
unix_socket_directories = '$WORK/run'
shared_preload_libraries = 'stoatflow'
stoatflow.database = 'postgres'
stoatflow.commit_interval = 200
max_worker_processes = $((BATCH + 8))
EOF
"${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -l "$PGDATA_DIR/server.log" -w -t 60 start >/dev/null ||
    { tail -n 30 "$PGDATA_DIR/server.log" >&2; die "pg_ctl start failed"; }
sql() { "$PG_BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$WORK/run" -p "$PG_PORT" -U postgres -d postgres "$@"; }
sql -c "CREATE EXTENSION stoatflow" >/dev/null
ms() { echo "'$1 milliseconds'"; }
declare -A WIN=(
    [tumbling]="stoatflow.tumbling($(ms "$ts"), grace => $(ms "$tg"))"
    [hopping]="stoatflow.hopping($(ms "$hs"), $(ms "$ha"), grace => $(ms "$hg"))"
    [session]="stoatflow.session($(ms "$sg"), grace => $(ms "$sgr"))"
)
for ((i = 0; i < ${#NAMES[@]}; i += BATCH)); do
    batch=("${NAMES[@]:i:BATCH}")
    for n in "${batch[@]}"; do
        # one transaction: every aggregation exists before the source's worker reads a record
        {
            echo "SELECT stoatflow.create_source('src_$n', 'semantics_$n', '$KAFKA_BROKERS', key => 'user_id',
                event_time => 'ts', max_out_of_orderness => '0', future_limit => NULL);"
            for kind in tumbling hopping session; do
                echo "SELECT stoatflow.create_aggregation('${n}_$kind', 'src_$n', ${WIN[$kind]},
                    'count(*) AS n, sum(amount) AS total', 'sink_${n}_$kind', emit => 'on_window_close');"
            done
        } | sql --single-transaction >/dev/null || die "could not create the pipeline of stream $n"
    done
    for n in "${batch[@]}"; do
        r=$(sql -c "SELECT stoatflow.wait_caught_up('src_$n', '120 seconds')")
        [[ $r == t ]] || { sql -c "SELECT * FROM stoatflow.sources" >&2; die "stream $n: wait_caught_up returned '$r'"; }
        want=$(awk -v n="$n" '$1 == n { print $3 }' "$WORK/streams/streams.txt")
        got=$(sql -c "SELECT string_agg(DISTINCT records_in::text, ',') FROM stoatflow.stats
            WHERE aggregation_name IN ('${n}_tumbling', '${n}_hopping', '${n}_session')")
        [[ $got == "$want" ]] || die "stream $n: the aggregations read $got records (stats.records_in), produced $want"
        for kind in tumbling hopping session; do
            sql -c "COPY (SELECT key, (extract(epoch FROM window_start) * 1000)::bigint,
                (extract(epoch FROM window_end) * 1000)::bigint, n, total FROM sink_${n}_$kind WHERE final
                ORDER BY 1, 2) TO STDOUT WITH (FORMAT csv)" >"$WORK/pg/$n.$kind.csv"
        done
        sql -c "SELECT stoatflow.drop_source('src_$n', cascade => true)" >/dev/null
    done
    log "stoatflow: streams $((i + 1))-$((i + ${#batch[@]})) caught up"
done
sql -c "SELECT 'stoatflow dead letters: ' || count(*) FROM stoatflow.dead_letters"

# ---- compare ----
rc=0
python3 "$HERE/semantics.py" compare "$WORK/streams" "$WORK/ks.jsonl" "$WORK/pg" || rc=$?
log "done"
exit "$rc"
