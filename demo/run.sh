#!/usr/bin/env bash
# The one-command demo: installs what a fresh Debian 12 needs, builds stoatflow, starts a
# throwaway PostgreSQL and the local mock Kafka cluster, streams sample page views (some out
# of order, some late, one malformed), declares two aggregations and prints the results.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# --- 1. what a fresh machine needs -----------------------------------------------------------
need=()
command -v pg_config >/dev/null && [ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql-15)
[ -d /usr/include/postgresql/15/server ] || need+=(postgresql-server-dev-15)
[ -f /usr/include/librdkafka/rdkafka_mock.h ] || need+=(librdkafka-dev)
[ -f /usr/include/simdjson.h ] || need+=(libsimdjson-dev)
command -v kcat >/dev/null || need+=(kcat)
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
[ -f /usr/include/gtest/gtest.h ] || need+=(libgtest-dev)
if [ ${#need[@]} -gt 0 ]; then
    say "Installing ${need[*]}"
    sudo=(); [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" </dev/null
fi

# --- 2. build and install ----------------------------------------------------------------------
say "Building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target stoatflow-mock-broker >/dev/null
make -s -j"$(nproc)" >/dev/null
if [ "$(id -u)" -eq 0 ]; then make -s install >/dev/null; else sudo make -s install >/dev/null; fi

# --- 3. a throwaway PostgreSQL and the mock Kafka cluster ------------------------------------
run_as=(); [ "$(id -u)" -eq 0 ] && run_as=(runuser -u postgres --)
bindir=$(pg_config --bindir)
work=$(mktemp -d /tmp/stoatflow-demo.XXXXXX)
chmod 755 "$work"
[ "$(id -u)" -eq 0 ] && chown postgres: "$work"
port=${DEMO_PORT:-55488}

# shellcheck source=test/kafka/mock_broker.sh
source test/kafka/mock_broker.sh
cleanup() {
    if [ -f "$work/data/postmaster.pid" ]; then
        "${run_as[@]}" "$bindir/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    mock_broker_stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

say "Starting the mock Kafka cluster and PostgreSQL 15 (throwaway, in $work)"
mock_broker_start pageviews:4
echo "Kafka bootstrap: $KAFKA_BROKERS"
"${run_as[@]}" "$bindir/initdb" -D "$work/data" -U postgres -A trust --no-locale -E UTF8 >"$work/initdb.log"
cat >>"$work/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$work'
port = $port
shared_preload_libraries = 'stoatflow'
stoatflow.database = 'postgres'
stoatflow.commit_interval = 200
CONF
"${run_as[@]}" "$bindir/pg_ctl" -D "$work/data" -l "$work/server.log" -w start >/dev/null
psql() { "${run_as[@]}" "$bindir/psql" -X -q -h "$work" -p "$port" -U postgres -d postgres "$@"; }

# --- 4. sample page views --------------------------------------------------------------------
# 20 users, one event every ~0.4 s of event time for 10 minutes from 2026-11-30 10:00 UTC,
# 4 partitions by user; each partition slightly out of order (within the 10 s allowance).
say "Producing sample page views"
base=1796032800000   # 2026-11-30T10:00:00Z
for p in 0 1 2 3; do
    awk -v p="$p" -v base="$base" 'BEGIN {
        srand(42 + p); pages[0] = "/"; pages[1] = "/pricing"; pages[2] = "/docs"; pages[3] = "/blog";
        for (i = 0; i < 400; i++) {
            t = base + i * 1500 + int(rand() * 4000);            # jitter: up to 4 s out of order
            if (i > 150 && i < 190 && p == 1) continue;          # a pause: user sessions end
            u = p + 4 * int(rand() * 5);
            printf "{\"user_id\":\"user%02d\",\"ts\":%.0f,\"amount\":%d,\"page\":\"%s\"}\n", u, t, 1 + int(rand() * 50), pages[int(rand() * 4)]
        }
    }' | kcat -P -q -b "$KAFKA_BROKERS" -t pageviews -p "$p"
done
echo "produced $((4 * 400 - 39)) page views into 4 partitions"

# --- 5. declare, wait, look --------------------------------------------------------------------
say "Declaring a source and two aggregations"
psql -v brokers="$KAFKA_BROKERS" <<'SQL'
CREATE EXTENSION stoatflow;
SELECT stoatflow.create_source('pageviews', 'pageviews', :'brokers',
    key => 'user_id', event_time => 'ts', max_out_of_orderness => '10 seconds');
-- one transaction: the worker starts both aggregations from the first record
BEGIN;
-- page views and revenue per user per minute
SELECT stoatflow.create_aggregation('views_per_minute', 'pageviews', stoatflow.tumbling('1 minute'),
    'count(*) AS views, sum(amount) AS revenue, max(amount)', 'views_per_minute');
-- visits: a session ends after 30 s without a page view
SELECT stoatflow.create_aggregation('visits', 'pageviews', stoatflow.session('30 seconds'),
    'count(*) AS views, sum(amount) AS revenue', 'visits', emit => 'on_window_close');
COMMIT;
SQL
echo "(the worker consumes in the background; waiting for it to catch up)"
psql -c "SELECT stoatflow.wait_caught_up('pageviews', '60 seconds') AS caught_up"

say "Late arrivals: two events from 10:01 (the watermark is past 10:09 now) and a broken message"
printf '%s\n' \
    '{"user_id":"user00","ts":1796032865000,"amount":999,"page":"/late"}' \
    '{"user_id":"user04","ts":1796032870000,"amount":999,"page":"/late"}' \
    '{"user_id": "broken", "ts": ' | kcat -P -q -b "$KAFKA_BROKERS" -t pageviews -p 0
psql -c "SELECT stoatflow.wait_caught_up('pageviews', '60 seconds') AS caught_up"

say "views_per_minute for user00 (final = the watermark has closed the window)"
psql -c "SET timezone = 'UTC'" -c "SELECT key, window_start, window_end, views, revenue, max_amount, final
           FROM views_per_minute WHERE key = 'user00' ORDER BY window_start"
say "visits (sessions), the five longest"
psql -c "SET timezone = 'UTC'" -c "SELECT key, window_start, window_end - window_start AS duration, views, revenue
           FROM visits ORDER BY duration DESC, key LIMIT 5"
say "Reconciliation: every valid on-time event is counted once"
psql -c "SELECT sum(views) AS views_in_windows, (SELECT sum(records_in - dropped_late_window) FROM stoatflow.stats
           WHERE aggregation_name = 'views_per_minute') AS records_in_minus_late FROM views_per_minute"
say "stoatflow.stats"
psql -x -c "SELECT aggregation_name, records_in, dropped_late_window, dropped_late_session, dead_letters,
           open_windows, keys_with_open_windows, windows_emitted, windows_reemitted, sessions_merged,
           watermark, live_segments, state_bytes FROM stoatflow.stats ORDER BY 1"
say "stoatflow.sources"
psql -c "SELECT source_name, status, partition, committed_offset, high_watermark, lag FROM stoatflow.sources"
say "stoatflow.dead_letters"
psql -c "SELECT partition, \"offset\", reason, payload FROM stoatflow.dead_letters"
say "Done: PostgreSQL and the mock cluster stop now"
echo "(to try it yourself in psql: bash demo/cluster.sh start, then README \"Getting started\")"
