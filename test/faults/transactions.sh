#!/usr/bin/env bash
# Fault scenario (Apache Kafka only): transactional producers. Every partition
# file of every chunk is produced twice, each time in a transaction of its own (kcat -X
# transactional.id=...): first a copy that is never committed (kcat gets SIGINT once the
# records went out; it exits "terminated while producing" without an abort, so the broker
# aborts the transaction after transaction.timeout.ms, 10 s here), then the real one,
# committed. The source reads with isolation.level=read_committed: the aborted copies must
# never be counted, the committed records exactly once (the sink equal to the independent
# computation), and wait_caught_up must see the source caught up although the last offset
# of each partition is a transaction marker, not a record.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin transactions
require_kafka "a transactional producer"
EVENTS=${TX_EVENTS:-20000}
KEYS=1024
NCHUNKS=6
ABORT_FLUSH_S=1   # s between the aborted copy's records sent and kcat's SIGINT
# A transaction left open holds every read_committed consumer at its first offset until the
# broker aborts it after transaction.timeout.ms (librdkafka's default: 60 s): bound the stall.
ABORT_TX_TIMEOUT_MS=${ABORT_TX_TIMEOUT_MS:-10000}

tx_produce() { # tx_produce CHUNK PARTITION commit|abort
    local f n id kpid
    f=$EVENTS_DIR/chunk-$(printf '%02d' "$1")-p$2.jsonl
    n=$(wc -l <"$f")
    [ "$n" -gt 0 ] || return 0
    id=stoatflow-faults-$3-$1-$2
    if [ "$3" = commit ]; then
        timeout "$KCAT_TIMEOUT" kcat -P -b "$KAFKA_BROKERS" -t "$TOPIC" -p "$2" -X transactional.id="$id" \
            <"$f" 2>"$WORK/kcat.err" || { cat "$WORK/kcat.err" >&2; fail "kcat could not commit $f"; }
        PRODUCED=$((PRODUCED + n))
    else
        rm -f "$WORK/fifo"
        mkfifo "$WORK/fifo"
        kcat -P -b "$KAFKA_BROKERS" -t "$TOPIC" -p "$2" -X transactional.id="$id" \
            -X transaction.timeout.ms="$ABORT_TX_TIMEOUT_MS" <"$WORK/fifo" 2>"$WORK/kcat-abort.err" &
        kpid=$!
        exec 7>"$WORK/fifo"
        cat "$f" >&7
        sleep "$ABORT_FLUSH_S"
        kill -INT "$kpid"
        exec 7>&-
        wait "$kpid" || true
        ABORTED=$((ABORTED + n))
    fi
}
ABORTED=0
produce_tx_chunk() { # both copies of every partition file of a chunk: aborted, then committed
    local p
    for ((p = 0; p < PARTITIONS; p++)); do
        tx_produce "$1" "$p" abort
        tx_produce "$1" "$p" commit
    done
}

gen_events 808 "$EVENTS" "$KEYS" "$NCHUNKS"
broker_start "$TOPIC:$PARTITIONS" || fail "the broker did not start"
pg_init
pg_start
produce_tx_chunk 0
setup_pipeline
wait_worker ""
for ((c = 1; c < NCHUNKS; c++)); do produce_tx_chunk "$c"; done
log "produced $PRODUCED events committed, $ABORTED aborted (as copies), in $((2 * NCHUNKS * PARTITIONS)) transactions"
records_in() { psql_try -c "SELECT records_in FROM stoatflow.stats WHERE aggregation_name = 'agg'" || true; }
all_in() { [ "$(records_in)" -ge "$PRODUCED" ] 2>/dev/null; }
t_in=$(date +%s)
wait_until 120 "records_in to reach the $PRODUCED committed events" all_in
sleep 2
log "all committed events in after $(($(date +%s) - t_in))s; records_in $(records_in); committed offsets $(committed); per partition: $(psql_try -c "SELECT string_agg(partition || ':' || committed_offset || '/' || high_watermark, ' ' ORDER BY partition) FROM stoatflow.sources WHERE source_name = '$SOURCE'")"
r=$(sql "SELECT stoatflow.wait_caught_up('$SOURCE', '20 seconds')")
log "wait_caught_up('20 seconds'): $r"
VERIFY_OFFSETS_ARE_EVENTS=0
verify_sink
check_log
[ "$r" = t ] || fail "wait_caught_up never sees the source caught up: the committed offsets stop before the transaction markers"
log "RESULT events=$EVENTS aborted_copies=$ABORTED rows_compared=$VERIFY_ROWS match=yes"
faults_pass
