#!/usr/bin/env bash
# Fault scenario: a backfill's hand-over does not stall its siblings (README "Backfill and
# start_from"). A running aggregation agg (JSON paths, the built-in fast path) has read a history
# of most of EVENTS (200,000) events; agg_b is added and backfills it. All the while small pieces
# of the remaining events keep arriving, one after the other: after each, the time until agg's
# worker has committed everything produced (what wait_caught_up waits for, but for the backfill)
# is one sample. The samples run across the join and after it; their maximum must stay below
# HANDOVER_MAX_MS (2000). Then both sinks must be exact, and the server log must show agg_b joining
# the running pipeline (its siblings not restarted).
#
# HANDOVER_STALL=1 (the scenario backfill_hold_stall runs it so): the backfill worker is stopped
# (SIGSTOP) as soon as it asked the source to hold. Once the source holds, a piece is produced;
# the source's worker holds (agg commits nothing for at least 5 s) and releases the hold within
# its bound (10 s): agg commits the piece within 10 s + STALL_SLACK_MS of the hold. The backfill
# is continued (SIGCONT), asks again and joins; the sinks are exact.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STALL=${HANDOVER_STALL:-0}
if [ "$STALL" = 1 ]; then faults_begin backfill_hold_stall; else faults_begin backfill_handover; fi
EVENTS=${HANDOVER_EVENTS:-200000}
MAX_MS=${HANDOVER_MAX_MS:-2000}
PIECE=${HANDOVER_PIECE:-40} # records per partition per sample

gen_events 223 "$EVENTS" 1024 10
# shellcheck disable=SC2046  # one argument per topic
broker_start $(broker_topics) || fail "the $TEST_BROKER broker did not start"
pg_init
pg_start
# Every partition holds records when the source starts (none runs ahead of the watermark).
produce_chunk 0
setup_pipeline
wait_worker ""
wait_caught_up
produce_chunks 1 7
wait_caught_up
log "agg caught up on the history: $PRODUCED events"

# The rest, in pieces of PIECE records per partition (each partition's pieces in order).
mkdir -p "$WORK/pieces"
for ((p = 0; p < PARTITIONS; p++)); do
    cat "$EVENTS_DIR/chunk-08-p$p.jsonl" "$EVENTS_DIR/chunk-09-p$p.jsonl" |
        split -l "$PIECE" -d -a 4 - "$WORK/pieces/p$p-"
done
npieces=$(find "$WORK/pieces" -name 'p0-*' | wc -l)
produce_piece() { # produce_piece I: piece I of every partition (none left: false)
    local p f tp n any=1
    for ((p = 0; p < PARTITIONS; p++)); do
        f=$WORK/pieces/p$p-$(printf '%04d' "$1")
        [ -f "$f" ] || continue
        any=0
        n=$(wc -l <"$f")
        read -r -a tp <<<"$(topic_partition "$p")"
        timeout "$KCAT_TIMEOUT" kcat -P -b "$KAFKA_BROKERS" -t "${tp[0]}" -p "${tp[1]}" <"$f" 2>"$WORK/kcat.err" ||
            { cat "$WORK/kcat.err" >&2; fail "kcat could not produce $f"; }
        PRODUCED=$((PRODUCED + n))
    done
    return $any
}
backfilling() { psql_try -c "SELECT count(*) FROM stoatflow.backfill" || echo "?"; }

sql "SELECT stoatflow.create_aggregation('agg_b', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_b')" >/dev/null
log "agg_b declared: backfilling ($(backfilling) backfill row)"

max=0 max_at=0 joined_at=-1 i=0 after=0
samples=()
if [ "$STALL" = 1 ]; then
    # In one session (no psql start-up between): as soon as agg_b asks for the hold, its pid.
    pid=$(psql_try -c "DO \$\$ BEGIN
            WHILE NOT EXISTS (SELECT 1 FROM stoatflow.backfill WHERE hold_requested) AND
                  EXISTS (SELECT 1 FROM stoatflow.backfill) LOOP PERFORM pg_sleep(0.002); END LOOP;
        END \$\$" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'stoatflow backfill agg_b'" || true)
    [ -n "$pid" ] || fail "agg_b joined before it could be stopped at the hold"
    kill -STOP "$pid"
    log "SIGSTOP backfill worker $pid: it asked to hold"
    # The source answers the hold at its next commit (a piece produced before that is committed
    # with it): the stall starts once the hold is held.
    held_deadline=$(($(date +%s%3N) + 10000))
    while true; do
        hold=$(psql_try -c "SELECT coalesce(bool_or(held)::text, 'joined') FROM stoatflow.backfill" || echo "?")
        [ "$hold" != true ] || break
        [ "$hold" != joined ] || { kill -CONT "$pid"; fail "agg_b joined before it was stopped (pid $pid)"; }
        (($(date +%s%3N) < held_deadline)) || { kill -CONT "$pid"; fail "the source did not answer agg_b's hold within 10 s"; }
        sleep 0.01
    done
    t0=$(date +%s%3N)
    log "the source holds for the stopped backfill"
    produce_piece "$i" || true
    i=$((i + 1))
    deadline=$((t0 + 30000))
    while [ "$(committed)" != "$PRODUCED" ] && (($(date +%s%3N) < deadline)); do sleep 0.02; done
    t1=$(date +%s%3N)
    caught=$([ "$(committed)" = "$PRODUCED" ] && echo yes || echo no)
    kill -CONT "$pid"
    log "SIGCONT backfill worker $pid; agg committed the piece produced during the stall: $caught, $((t1 - t0)) ms after the hold"
    [ "$caught" = yes ] || fail "agg did not commit within 30 s of the hold: the hold was not released"
    (($((t1 - t0)) < 10000 + ${STALL_SLACK_MS:-5000})) || fail "agg took $((t1 - t0)) ms after the hold (bound 10 s)"
    # ... and not before the release: while it holds, the source consumes nothing.
    (($((t1 - t0)) >= 5000)) || fail "agg committed the piece $((t1 - t0)) ms after the hold: the source did not hold"
    grep -q 'released the hold of a backfill that did not join' "$SERVER_LOG" ||
        fail "no log line of the source's worker releasing the hold"
    wait_caught_up
    [ "$(backfilling)" = 0 ] || fail "agg_b still backfills after wait_caught_up"
    while produce_piece "$i"; do i=$((i + 1)); done
    wait_caught_up
    grep -q 'aggregation "agg_b" (start_from earliest) joined' "$SERVER_LOG" || fail "no log line of agg_b joining"
    verify_sink "$SINK" agg
    verify_sink sink_b agg_b
    check_log
    log "RESULT events=$EVENTS stall_release_ms=$((t1 - t0)) match=yes"
    faults_pass
    exit 0
fi
while ((i < npieces)); do
    state=$(backfilling)
    produce_piece "$i" || break
    t1=$(date +%s%3N)
    deadline=$((t1 + 60000))
    while [ "$(committed)" != "$PRODUCED" ]; do
        (($(date +%s%3N) < deadline)) || fail "sample $i: agg did not commit $PRODUCED within 60 s"
        sleep 0.02
    done
    ms=$(($(date +%s%3N) - t1))
    now_state=$(backfilling)
    samples+=("$ms")
    if ((joined_at < 0)) && [ "$now_state" = 0 ]; then joined_at=$i; fi
    if ((ms > max)); then max=$ms max_at=$i; fi
    log "sample $i: ${ms} ms (backfill rows before $state, after $now_state)"
    i=$((i + 1))
    if ((joined_at >= 0)); then
        after=$((after + 1))
        ((after < 5)) || break
    fi
    sleep 0.1
done
((joined_at >= 0)) || fail "agg_b had not joined after $i samples (all pieces produced): no sample across the join"
log "HANDOVER samples=${#samples[@]} joined_at_sample=$joined_at max_ms=$max (sample $max_at) all_ms=${samples[*]}"
((max < MAX_MS)) || fail "agg's freshness reached $max ms (>= $MAX_MS) at sample $max_at (agg_b joined at sample $joined_at)"

# The pieces left, then everything must be exact.
while produce_piece "$i"; do i=$((i + 1)); done
wait_caught_up
grep -q 'aggregation "agg_b" joined the running pipeline' "$SERVER_LOG" ||
    fail "no log line of agg_b joining the running pipeline"
verify_sink "$SINK" agg
verify_sink sink_b agg_b
check_log
log "RESULT events=$EVENTS max_ms=$max joined_at_sample=$joined_at match=yes"
faults_pass
