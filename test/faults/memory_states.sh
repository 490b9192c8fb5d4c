#!/usr/bin/env bash
# Fault scenario: PostgreSQL aggregate states against stoatflow.worker_memory_limit (README
# "Operations", Memory). A user aggregate whose text state grows by 10 kB per record, over 6,000
# keys, under a 256 MB limit: the worker's RSS, sampled every 0.1 s, must stay below
# limit x 1.2 + 64 MB; the source stops consuming with status 'error' naming the limit and the
# aggregation (stats shows that aggregation 'error'), instead of growing until the kernel kills
# it. Dropping the aggregation lets the source resume; its sibling ends exact. No crash.
set -euo pipefail
# shellcheck source=test/faults/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

faults_begin memory_states
SOURCE=grow
LIMIT_MB=256
KEYS=6000
PER_KEY=5
STOP_TIMEOUT=120

broker_start "grow:2" || fail "the $TEST_BROKER broker did not start"
pg_init
echo "stoatflow.worker_memory_limit = '${LIMIT_MB}MB'" >>"$PGDATA_DIR/postgresql.conf"
pg_start
sql "CREATE EXTENSION stoatflow" >/dev/null
psql_try <<'EOF' >/dev/null || { cat "$WORK/psql.err" >&2; fail "setup failed"; }
CREATE FUNCTION public.grow_by(s text, v text) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT s || repeat(v, 1000) $$;
CREATE AGGREGATE public.growing(text) (sfunc = public.grow_by, stype = text, initcond = '');
EOF
sql "SELECT stoatflow.create_source('$SOURCE', 'grow', '$KAFKA_BROKERS', key => 'u', event_time => 'ts',
        max_out_of_orderness => '1 hour', columns => 'u text, ts bigint, v text');
     SELECT stoatflow.create_aggregation('counts', '$SOURCE', stoatflow.tumbling('1 hour'),
        'count(*) AS n', 'counts', group_by => 'u');
     SELECT stoatflow.create_aggregation('big', '$SOURCE', stoatflow.tumbling('1 hour'),
        'length(public.growing(v)) AS len', 'big', group_by => 'u')" >/dev/null
wait_worker ""
log "worker pid $WORKER_PID"

python3 - "$KEYS" "$PER_KEY" >"$WORK/records.jsonl" <<'EOF'
import sys
keys, per = int(sys.argv[1]), int(sys.argv[2])
n = 0
for r in range(per):
    for k in range(keys):
        print('{"u":"k%d","ts":%d,"v":"0123456789"}' % (k, n))
        n += 1
EOF
total=$((KEYS * PER_KEY))
timeout "$KCAT_TIMEOUT" kcat -P -q -b "$KAFKA_BROKERS" -t grow -p 0 -l "$WORK/records.jsonl" ||
    fail "kcat failed"
log "produced $total records"

max_rss=0
max_anon=0
sample() { # the worker's RSS in kB, the largest seen in max_rss
    local pid rss
    pid=$(worker_pid)
    [[ $pid =~ ^[0-9]+$ ]] || return 0
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ -n "$anon" ] && ((anon > max_anon)) && max_anon=$anon
    [ -n "$rss" ] && ((rss > max_rss)) && max_rss=$rss
    return 0
}
stopped() {
    sample
    [[ $(source_status) == "error|"*"worker_memory_limit"*"big"* ]]
}
deadline=$((SECONDS + STOP_TIMEOUT))
until stopped; do
    ((SECONDS < deadline)) || fail "no stop naming the limit and aggregation \"big\" in ${STOP_TIMEOUT}s: $(source_status)"
    sleep 0.1
done
for _ in $(seq 20); do sample; sleep 0.1; done
bound=$((LIMIT_MB * 1024 * 12 / 10 + 64 * 1024))
log "stopped: $(source_status | cut -c1-160)"
log "worker RSS at most $((max_rss / 1024)) MB, private $((max_anon / 1024)) MB (bound $((bound / 1024)) MB)"
((max_rss <= bound)) || fail "worker RSS reached $((max_rss / 1024)) MB, over the bound $((bound / 1024)) MB"
st=$(sql "SELECT status FROM stoatflow.stats WHERE aggregation_name = 'big'")
[ "$st" = error ] || fail "stats shows aggregation big as '$st', not 'error'"
[ -n "$(worker_pid)" ] || fail "no source worker while stopped"

sql "SELECT stoatflow.drop_aggregation('big')" >/dev/null
sql "SELECT stoatflow.wait_caught_up('$SOURCE', '120 seconds')" >/dev/null
[ "$(sql "SELECT sum(n) FROM counts")" = "$total" ] || fail "the sibling did not count $total records"
[ "$(sql "SELECT count(*) FROM counts")" = "$KEYS" ] || fail "the sibling does not hold $KEYS keys"
check_log
log "RESULT records=$total max_rss_mb=$((max_rss / 1024)) bound_mb=$((bound / 1024)) match=yes"
faults_pass
