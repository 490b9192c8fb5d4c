#!/usr/bin/env bash
# Fault scenario: aggregations added to a running source backfill (README "Backfill and
# start_from"). The README's Getting-started order, each declaration its own statement: the
# source, records produced, aggregation agg (the source's first: it starts with the source),
# wait, more records, aggregation agg_b (fast path) and agg_c (PostgreSQL's executor: a filter),
# more records while they backfill, more after. Every aggregation must hold every record: each
# sink equals the independent computation over all produced events, row for row.
#
# BACKFILL_KILLS=1 (the scenario backfill_kill9 runs it so): the worker gets SIGKILL several times
# while agg_b and agg_c backfill, and right when a backfill has asked its source to hold (the
# hand-over), and right after the source's worker adopted a joined aggregation; crash recovery
# restarts every worker from its committed state. The sinks must still be exact.
#
# Also measured (printed, and bounded by BACKFILL_FRESH_MAX_MS when set): while the backfill of
# the large history runs, a small chunk produced reaches the committed positions of the source's
# running aggregation (its sibling stays fresh).
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KILLS=${BACKFILL_KILLS:-0}
if [ "$KILLS" = 1 ]; then faults_begin backfill_kill9; else faults_begin backfill; fi
EVENTS=${BACKFILL_EVENTS:-200000}
KEYS=${BACKFILL_KEYS:-1024}
NCHUNKS=10
FAULTS_COLUMNS=1 # a row type: agg_c runs in PostgreSQL's executor (filter)

gen_events 211 "$EVENTS" "$KEYS" "$NCHUNKS"
# shellcheck disable=SC2046  # one argument per topic
broker_start $(broker_topics) || fail "the $TEST_BROKER broker did not start"
pg_init
pg_start
sql "CREATE EXTENSION stoatflow" >/dev/null
sql "SELECT stoatflow.create_source('$SOURCE', '$(source_topics)', '$KAFKA_BROKERS', key => 'user_id',
        event_time => 'ts', max_out_of_orderness => '1 hour',
        columns => 'user_id text, ts bigint, amount integer')" >/dev/null
produce_chunk 0
sql "SELECT stoatflow.create_aggregation('agg', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', '$SINK')" >/dev/null
wait_worker ""
wait_caught_up
log "agg caught up on chunk 0"
# The history the later aggregations must backfill: most of the events.
produce_chunks 1 6
wait_caught_up
log "agg caught up on chunks 0-6 ($PRODUCED events)"

backfilling() { # the number of aggregations backfilling
    psql_try -c "SELECT count(*) FROM stoatflow.stats WHERE status = 'backfilling'" || echo "?"
}
backfill_pids() {
    psql_try -c "SELECT pid FROM pg_stat_activity WHERE backend_type LIKE 'stoatflow backfill %'" || true
}
some_backfill() { [ -n "$(backfill_pids)" ]; }
all_committed() { [ "$(committed)" = "$PRODUCED" ]; }

# Separate statements, on a running source: both backfill (start_from NULL: 'earliest').
sql "SELECT stoatflow.create_aggregation('agg_b', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_b')" >/dev/null
sql "SELECT stoatflow.create_aggregation('agg_c', '$SOURCE', stoatflow.tumbling('1 minute'),
        'count(*) AS n, sum(amount) AS total', 'sink_c', filter => 'amount IS NOT NULL OR true')" >/dev/null
[ "$(sql "SELECT string_agg(aggregation_name || '=' || status, ',' ORDER BY aggregation_name) FROM stoatflow.stats")" = \
    "agg=running,agg_b=backfilling,agg_c=backfilling" ] ||
    fail "stats does not show agg_b and agg_c backfilling: $(sql "SELECT aggregation_name, status FROM stoatflow.stats")"
log "agg_b and agg_c declared: backfilling"

if [ "$KILLS" = 1 ]; then
    # Kills while backfilling (the workers restart from what they committed; every backend dies
    # with the postmaster's crash recovery), then at the hand-over: as soon as a backfill has
    # asked its source to hold.
    handover_kills=0
    for k in 1 2 3; do
        pid=$(backfill_pids | head -n 1)
        if [ -z "$pid" ]; then log "kill $k: no backfill running any more"; break; fi
        sleep "0.$k"
        kill -9 "$pid" 2>/dev/null && KILLED_PIDS+=("$pid") && log "kill $k: SIGKILL backfill worker $pid while backfilling ($(backfilling) backfilling)"
        wait_worker ""
    done
    for k in 1 2 3; do
        held=
        deadline=$(($(date +%s) + 60))
        while (($(date +%s) < deadline)); do
            # Waited for in one session (the hand-over lasts about a second): no psql start-up
            # between looks.
            held=$(psql_try -c "DO \$\$ DECLARE t timestamptz := clock_timestamp(); BEGIN
                    WHILE NOT EXISTS (SELECT 1 FROM stoatflow.backfill WHERE hold_requested) AND
                          EXISTS (SELECT 1 FROM stoatflow.backfill) AND
                          clock_timestamp() < t + interval '10 seconds' LOOP PERFORM pg_sleep(0.002); END LOOP;
                END \$\$" -c "SELECT a.aggregation_name FROM stoatflow.backfill b JOIN stoatflow.aggregation a USING (aggregation_id)
                                 WHERE b.hold_requested LIMIT 1" || true)
            [ -n "$held" ] && break
            [ "$(backfilling)" = 0 ] && break
            sleep 0.02
        done
        [ -n "$held" ] || { log "hand-over kill $k: no backfill left"; break; }
        handover_kills=$((handover_kills + 1))
        state=$(psql_try -c "SELECT CASE WHEN b.held THEN 'held' ELSE 'hold requested' END FROM stoatflow.backfill b
                              JOIN stoatflow.aggregation a USING (aggregation_id) WHERE a.aggregation_name = '$held'" || true)
        pid=$(psql_try -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'stoatflow backfill $held'" || true)
        [ -n "$pid" ] || pid=$(worker_pid)
        if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
            KILLED_PIDS+=("$pid")
            log "hand-over kill $k: SIGKILL $pid while $held hands over (${state:-joined})"
        fi
        wait_worker ""
    done
    # And right after the source's worker took a joined aggregation into its running pipeline
    # (before it committed with it): it restarts from what is committed, like any worker.
    adopted() { grep -c 'joined the running pipeline' "$SERVER_LOG" || true; }
    n0=$(adopted)
    deadline=$(($(date +%s) + 60))
    while (($(date +%s) < deadline)) && [ "$(adopted)" = "$n0" ]; do
        [ "$(backfilling)" = 0 ] && break
        sleep 0.02
    done
    if [ "$(adopted)" != "$n0" ]; then
        pid=$(worker_pid)
        if [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
            KILLED_PIDS+=("$pid")
            log "adoption kill: SIGKILL source worker $pid right after it adopted a joined aggregation"
        fi
        wait_worker ""
    else
        log "adoption kill: no aggregation joined the running pipeline now ($n0 before; or restarted instead)"
    fi
    ((${#KILLED_PIDS[@]} >= 3 && handover_kills >= 1)) ||
        fail "the kills missed the backfill: ${#KILLED_PIDS[@]} kills, $handover_kills at the hand-over (need >= 3 and >= 1)"
fi

# The sibling stays fresh: a chunk produced while they backfill reaches agg's committed
# positions within FRESH ms.
[ "$KILLS" = 1 ] || wait_until 60 "a backfill worker" some_backfill
before=$PRODUCED
t0=$(date +%s%3N)
produce_chunk 7
t1=$(date +%s%3N)
wait_until 60 "agg's committed positions to reach $PRODUCED" all_committed
t2=$(date +%s%3N)
still=$(backfilling)
log "FRESH chunk 7 ($((PRODUCED - before)) events, produced in $((t1 - t0)) ms) committed by agg $((t2 - t1)) ms after it was produced; backfilling then: $still"
if [ -n "${BACKFILL_FRESH_MAX_MS:-}" ] && [ "$still" != 0 ]; then
    (($((t2 - t1)) <= BACKFILL_FRESH_MAX_MS)) || fail "the sibling took $((t2 - t1)) ms (> $BACKFILL_FRESH_MAX_MS) while backfills ran"
fi

produce_chunks 8 9
wait_caught_up
log "caught up: $(sql "SELECT string_agg(aggregation_name || '=' || status, ',' ORDER BY aggregation_name) FROM stoatflow.stats")"
[ "$(backfilling)" = 0 ] || fail "aggregations still backfilling after wait_caught_up"
[ "$(sql "SELECT count(*) FROM stoatflow.backfill")" = 0 ] || fail "backfill rows left after the join"
grep -q 'aggregation "agg_b" (start_from earliest) joined' "$SERVER_LOG" || fail "no log line of agg_b joining"
verify_sink "$SINK" agg
verify_sink sink_b agg_b
verify_sink sink_c agg_c
check_log
log "RESULT events=$EVENTS kills=${#KILLED_PIDS[@]} fresh_ms=$((t2 - t1)) match=yes"
faults_pass
