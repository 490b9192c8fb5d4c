#!/usr/bin/env bash
# Fault scenario: an owner's code that loops or sleeps (README "User code is a guest"). One
# source, three aggregations run by PostgreSQL's executor: `sibling` (built-in sum and count),
# `looper` (a transition function that loops forever on v = 13) and `sleeper` (one that sleeps
# 30 s on v = 7). With stoatflow.user_code_timeout = 1s:
#   - the sibling stays fresh: every batch is in its sink within user_code_timeout + 2 s;
#   - the looping and sleeping records are dead letters of their aggregation (user_code_timeout,
#     naming it and the function); stats shows the aggregation 'stalled' while it rests;
#   - nothing is lost: for each aggregation, records folded + its dead letters = records produced.
# With the timeout off (0), a worker inside the loop must still end: pg_terminate_backend within
# 10 s, and `pg_ctl stop -m fast` within 10 s; never a SIGKILL, never a crash in the server log.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin user_code
SOURCE=guests
FRESH_LIMIT=3     # s: user_code_timeout (1 s) + 2 s
END_LIMIT=10      # s: terminate / fast shutdown with a looping function
BATCHES=8

broker_start "guests:2" || fail "the $TEST_BROKER broker did not start"
pg_init
echo "stoatflow.user_code_timeout = '1s'" >>"$PGDATA_DIR/postgresql.conf"
pg_start
sql "CREATE EXTENSION stoatflow" >/dev/null
psql_try <<'EOF' >/dev/null || { cat "$WORK/psql.err" >&2; fail "setup failed"; }
CREATE FUNCTION public.loop_on_13(s bigint, v integer) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF v = 13 THEN LOOP END LOOP; END IF;
    RETURN s + v;
END $$;
CREATE AGGREGATE public.looping_sum(integer) (sfunc = public.loop_on_13, stype = bigint, initcond = '0');
CREATE FUNCTION public.sleep_on_7(s bigint, v integer) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF v = 7 THEN PERFORM pg_catalog.pg_sleep(30); END IF;
    RETURN s + v;
END $$;
CREATE AGGREGATE public.sleeping_sum(integer) (sfunc = public.sleep_on_7, stype = bigint, initcond = '0');
EOF
sql "SELECT stoatflow.create_source('$SOURCE', 'guests', '$KAFKA_BROKERS', key => 'u', event_time => 'ts',
        max_out_of_orderness => '1 hour', columns => 'u text, ts bigint, v integer');
     SELECT stoatflow.create_aggregation('sibling', '$SOURCE', stoatflow.tumbling('1 hour'),
        'count(*) AS n, sum(v) AS total', 'sibling', group_by => 'u');
     SELECT stoatflow.create_aggregation('looper', '$SOURCE', stoatflow.tumbling('1 hour'),
        'public.looping_sum(v) AS total', 'looper', group_by => 'u');
     SELECT stoatflow.create_aggregation('sleeper', '$SOURCE', stoatflow.tumbling('1 hour'),
        'public.sleeping_sum(v) AS total', 'sleeper', group_by => 'u')" >/dev/null
wait_worker ""
log "worker pid $WORKER_PID"

produced=0
produce() { # produce V...: one record per value, alternating partitions
    local v p lines=()
    for v in "$@"; do
        p=$((produced % 2))
        printf '{"u":"u%d","ts":%d,"v":%d}\n' "$((produced % 3))" "$((1000 * produced))" "$v" \
            >>"$WORK/p$p.jsonl.new"
        produced=$((produced + 1))
    done
    for p in 0 1; do
        [ -f "$WORK/p$p.jsonl.new" ] || continue
        timeout "$KCAT_TIMEOUT" kcat -P -q -b "$KAFKA_BROKERS" -t guests -p "$p" -l "$WORK/p$p.jsonl.new" ||
            fail "kcat failed"
        cat "$WORK/p$p.jsonl.new" >>"$WORK/p$p.jsonl"
        rm -f "$WORK/p$p.jsonl.new"
    done
}
sibling_n() { psql_try -c "SELECT coalesce(sum(n), 0) FROM sibling" || echo "?"; }

# Batches with a looping and a sleeping record among ordinary ones: the sibling must show each
# batch within FRESH_LIMIT of producing it.
for ((b = 0; b < BATCHES; b++)); do
    case $b in
    1) produce 1 2 13 3 ;;
    3) produce 4 7 5 ;;
    5) produce 13 6 7 8 ;;
    *) produce 1 2 3 ;;
    esac
    t0=$(date +%s.%N)
    fresh() { [ "$(sibling_n)" = "$produced" ]; }
    wait_until 30 "the sibling's sink holds all $produced records" fresh
    took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    log "batch $b: sibling fresh after ${took}s"
    awk -v t="$took" -v l="$FRESH_LIMIT" 'BEGIN { exit !(t <= l) }' ||
        fail "batch $b: the sibling took ${took}s (limit ${FRESH_LIMIT}s)"
done
stalled=$(sql "SELECT string_agg(aggregation_name || '=' || status, ',' ORDER BY 1) FROM stoatflow.stats")
log "stats status: $stalled"
[[ $stalled == *"looper=stalled"* || $stalled == *"sleeper=stalled"* ]] ||
    fail "no aggregation shows status 'stalled' after its code timed out: $stalled"
reason=$(sql "SELECT count(*) FROM stoatflow.dead_letters WHERE reason = 'user_code_timeout'
                AND detail LIKE 'aggregation \"looper\"%loop_on_13%'")
[ "$reason" -ge 1 ] || fail "no user_code_timeout dead letter naming looper and public.loop_on_13"

# Nothing lost: every record is folded into each aggregation or is its dead letter.
sql "SELECT stoatflow.wait_caught_up('$SOURCE', '60 seconds')" >/dev/null
for a in sibling looper sleeper; do
    got=$(sql "SELECT p.records_in + (SELECT count(*) FROM stoatflow.dead_letters d
                 WHERE d.source_name = '$SOURCE' AND d.detail LIKE 'aggregation \"$a\"%')
                 FROM stoatflow.aggregation a JOIN stoatflow.aggregation_progress p USING (aggregation_id)
                WHERE a.aggregation_name = '$a'")
    [ "$got" = "$produced" ] || fail "$a: records_in + its dead letters = $got, produced $produced"
done
total=$(awk -F'"v":' '{ split($2, a, "}"); s += a[1] } END { print s }' "$WORK"/p*.jsonl)
[ "$(sql "SELECT sum(total) FROM sibling")" = "$total" ] || fail "the sibling's sum is not $total"
log "nothing lost: records_in + dead letters = $produced for each aggregation; sibling exact"

# The timeout off: a worker inside the loop still ends on pg_terminate_backend and fast shutdown.
sql "ALTER SYSTEM SET stoatflow.user_code_timeout = 0" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sleep 1
sql "SELECT stoatflow.drop_aggregation('sleeper')" >/dev/null
# a fresh worker (no aggregation resting), then the looping record
one_worker_pid
sql "SELECT pg_terminate_backend($VICTIM)" >/dev/null
wait_worker "$VICTIM"
before=$(sibling_n)
produce 13
sleep 3
[ "$(sibling_n)" = "$before" ] || fail "the worker is not inside the loop (the sibling moved on)"
one_worker_pid
old=$VICTIM
t0=$(date +%s)
sql "SELECT pg_terminate_backend($old)" >/dev/null
gone() { ! kill -0 "$old" 2>/dev/null; }
wait_until "$END_LIMIT" "the worker ($old) to end after pg_terminate_backend" gone
log "pg_terminate_backend: the worker ended after $(($(date +%s) - t0))s"
wait_worker "$old"
sleep 3
t0=$(date +%s)
timeout $((END_LIMIT + 5)) "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t "$END_LIMIT" stop \
    >"$WORK/pg_ctl.out" 2>&1 || { cat "$WORK/pg_ctl.out" >&2; fail "fast shutdown did not finish in ${END_LIMIT}s"; }
log "fast shutdown with a looping function: $(($(date +%s) - t0))s"

# Back with the timeout: the looping record is looper's dead letter, and the sibling exact.
sed -i '/stoatflow.user_code_timeout/d' "$PGDATA_DIR/postgresql.auto.conf"
pg_start
sql "SELECT stoatflow.wait_caught_up('$SOURCE', '60 seconds')" >/dev/null
total=$(awk -F'"v":' '{ split($2, a, "}"); s += a[1] } END { print s }' "$WORK"/p*.jsonl)
[ "$(sql "SELECT sum(total) FROM sibling")" = "$total" ] || fail "the sibling's sum is not $total"
[ "$(sql "SELECT sum(n) FROM sibling")" = "$produced" ] || fail "the sibling did not count $produced"

# A sink trigger that loops (the owner's code too, in its sandbox, not bounded by the timeout):
# a fast shutdown still ends within seconds, and a cancel lets its owner drop the trigger.
psql_try <<'EOF' >/dev/null || { cat "$WORK/psql.err" >&2; fail "trigger setup failed"; }
CREATE FUNCTION public.stuck() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN LOOP END LOOP; END $$;
CREATE TRIGGER stuck BEFORE INSERT OR UPDATE ON sibling FOR EACH ROW EXECUTE FUNCTION public.stuck();
EOF
before=$(sibling_n)
produce 1 2
sleep 3
[ "$(sibling_n)" = "$before" ] || fail "the sibling's looping trigger did not hold its write"
t0=$(date +%s)
timeout $((END_LIMIT + 5)) "${RUN_AS[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA_DIR" -m fast -w -t "$END_LIMIT" stop \
    >"$WORK/pg_ctl.out" 2>&1 || { cat "$WORK/pg_ctl.out" >&2; fail "fast shutdown with a looping sink trigger did not finish in ${END_LIMIT}s"; }
log "fast shutdown with a looping sink trigger: $(($(date +%s) - t0))s"
pg_start
wait_worker ""
sleep 2
psql_try -c "DROP TRIGGER stuck ON sibling" >/dev/null 2>&1 &
dropper=$!
sleep 1
sql "SELECT pg_cancel_backend($WORKER_PID)" >/dev/null
wait "$dropper" || fail "DROP TRIGGER did not get through after a cancel"
sql "SELECT stoatflow.wait_caught_up('$SOURCE', '60 seconds')" >/dev/null
total=$(awk -F'"v":' '{ split($2, a, "}"); s += a[1] } END { print s }' "$WORK"/p*.jsonl)
[ "$(sql "SELECT sum(total) FROM sibling")" = "$total" ] || fail "the sibling's sum is not $total after the trigger"
[ "$(sql "SELECT sum(n) FROM sibling")" = "$produced" ] || fail "the sibling did not count $produced after the trigger"
log "looping sink trigger: cancelled, dropped, the sibling exact"
check_log
log "RESULT records=$produced fresh_limit=${FRESH_LIMIT}s match=yes"
faults_pass
