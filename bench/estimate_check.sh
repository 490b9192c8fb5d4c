#!/usr/bin/env bash
# stoatflow.estimate against what the worker measures (README "Estimating cost").
#
#   bench/estimate_check.sh                       # 4,000 keys, the three workloads below
#   ESTIMATE_KEYS=5000 bench/estimate_check.sh    # (the mock broker keeps ~5 MiB a partition)
#   ESTIMATE_WORKLOADS=hopping bench/estimate_check.sh   # some of the workloads
#   PG_CONFIG=/opt/pg-x/usr/lib/postgresql/15/bin/pg_config bench/estimate_check.sh
#                                                 # a PostgreSQL (with stoatflow) of your own
#
# The shapes of bench/e2e.sh (bench/gen_events.py data, the mock broker by default), smaller, with
# the source's default max_out_of_orderness of 10 s (ESTIMATE_OOO): per workload a source and one aggregation
# consume every record (wait_caught_up), then the estimate for the same window, aggregates,
# max_out_of_orderness and the keys that hold windows is printed beside
#   memory  stoatflow.aggregation_progress.memory_bytes (the engine's heap at the last commit,
#           what stoatflow.worker_memory_limit counts)
#   disk    the segment tables' size (pg_total_relation_size over stoatflow.segment), the
#           largest after any commit
# with measured / estimated. Workloads:
#   dense    1-hour tumbling count+sum+max per user, 20 events per key and hour over 4 hours
#            (a quarter of the keys: the mock broker's room)
#   sparse   1-minute tumbling count+sum per user, 1.5 events per key and minute over 10 minutes
#   hopping  10-minute windows advancing by 2 minutes, count+sum, on the dense data
# The estimate is given the stream's records per second of event time and, as commit_interval,
# the event time of one piece (one commit per piece); disk is the largest size after any commit
# (the estimate's disk is the peak, just before the oldest segment is dropped), memory the last.
# Prints a markdown table (and writes it to bench/results/estimate-<date>.md).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
if [ -n "${PG_CONFIG:-}" ]; then PG_BIN=$("$PG_CONFIG" --bindir); export PG_BIN; fi
# shellcheck source=bench/lib/common.sh
source bench/lib/common.sh

KEYS=${ESTIMATE_KEYS:-4000}
PORT=${BENCH_PORT:-55493}
BUILD_DIR=${BENCH_BUILD_DIR:-$repo/build}
MOCK_BROKER=${MOCK_BROKER:-$BUILD_DIR/stoatflow-mock-broker}
export MOCK_BROKER
# One partition, in event-time order: W trails the newest record by max_out_of_orderness, as in a
# steady stream. Over several partitions read from a backlog, W is the slowest one's and the keys
# of the others pile up windows meanwhile (and a key's block of windows never shrinks).
PARTS=${BENCH_PARTITIONS:-1}
SPARSE_MINUTES=10
for tool in kcat python3 awk; do command -v $tool >/dev/null || bench_die "$tool not found"; done

bench_workdir estimate
bench_log "work directory $work; $KEYS keys; $PARTS partitions per topic"
# Dense over several segments (1 hour each; the peak of the state tables is two of them) in
# a quarter of the keys (as many records as 4,000 keys in one hour: the mock broker's room).
DENSE_HOURS=4
DENSE_KEYS=$((KEYS / 4))
python3 bench/gen_events.py "$work/data-dense" --keys "$DENSE_KEYS" --events-per-key $((DENSE_HOURS * 20)) \
    --partitions "$PARTS" --minutes $((DENSE_HOURS * 60)) >&2
python3 bench/gen_events.py "$work/data-sparse" --keys "$KEYS" \
    --events-per-key $((SPARSE_MINUTES * 3 / 2)) --partitions "$PARTS" --minutes "$SPARSE_MINUTES" >&2
bench_broker_start "events_dense:$PARTS" "events_sparse:$PARTS" "events_hopping:$PARTS"
# The data in pieces of event time, each consumed and committed before the next: W moves
# by a piece per commit, as a live stream's does (a backlog read in one go moves W by minutes per
# commit, and the windows of a key pile up until the commit closes them).
# Dense and hopping in 240 pieces of one minute of event time, sparse in 60 of 10 s. A grid
# window is let go at the first commit after W passed its end: a key holds its closed windows
# beside its new ones until then, which the estimate counts with commit_interval (the event
# time of a piece here); the fewer the pieces, the further from a live stream.
declare -A CHUNKS_OF DATA
DATA=([dense]=dense [sparse]=sparse [hopping]=dense)
CHUNKS_OF=([dense]=${ESTIMATE_CHUNKS:-240} [sparse]=${ESTIMATE_CHUNKS:-60} [hopping]=${ESTIMATE_CHUNKS:-240})
for wl in dense sparse hopping; do
    for ((p = 0; p < PARTS; p++)); do
        mkdir -p "$work/chunks-$wl-$p"
        split -n "l/${CHUNKS_OF[$wl]}" -d -a 3 "$work/data-${DATA[$wl]}/p$p.jsonl" "$work/chunks-$wl-$p/c"
    done
done
produce_chunk() { # topic workload chunk
    local p
    for ((p = 0; p < PARTS; p++)); do
        kcat -P -q -b "$KAFKA_BROKERS" -t "$1" -p "$p" -z lz4 <"$work/chunks-$2-$p/c$(printf %03d "$3")" ||
            bench_die "producing chunk $3 of $1 failed"
    done
}
conf="shared_buffers = 256MB"
# more settings for the server, e.g. ESTIMATE_PG_CONF="stoatflow.log_commits = on"
[ -z "${ESTIMATE_PG_CONF:-}" ] || conf+=$'\n'"$ESTIMATE_PG_CONF"
PG_EXTRA_CONF=$conf pg_start "$work" "$PORT"
sql -c "CREATE EXTENSION stoatflow"

declare -A WINDOW AGGS RPS PIECE
# records per second of event time, and the event time of one piece (= between two commits)
RPS=([dense]="$DENSE_KEYS * 20 / 3600.0" [sparse]="$KEYS * 1.5 / 60.0" [hopping]="$DENSE_KEYS * 20 / 3600.0")
PIECE=([dense]="$((DENSE_HOURS * 3600 / CHUNKS_OF[dense])) seconds"
    [sparse]="$((SPARSE_MINUTES * 60 / CHUNKS_OF[sparse])) seconds"
    [hopping]="$((DENSE_HOURS * 3600 / CHUNKS_OF[hopping])) seconds")
WINDOW=([dense]="stoatflow.tumbling('1 hour')" [sparse]="stoatflow.tumbling('1 minute')"
    [hopping]="stoatflow.hopping('10 minutes', '2 minutes')")
AGGS=([dense]="count(*), sum(amount), max(amount)" [sparse]="count(*), sum(amount)"
    [hopping]="count(*), sum(amount)")
# The source default: a watermark that moves while the data streams (bench/e2e.sh's '1 hour' keeps
# every window of its bounded data open, which no steady stream does).
OOO=${ESTIMATE_OOO:-10 seconds}

mkdir -p bench/results
md=bench/results/estimate-$(date -u +%Y%m%d-%H%M%S).md
{
    echo "| workload | keys | open windows per key (est. / measured) | memory est. | memory measured | measured / est. | disk est. | disk measured | measured / est. |"
    echo "|---|---|---|---|---|---|---|---|---|"
} >"$md"
for wl in ${ESTIMATE_WORKLOADS:-dense sparse hopping}; do
    bench_log "$wl: consuming"
    sql -v brokers="$KAFKA_BROKERS" <<SQL
SELECT stoatflow.create_source('src_$wl', 'events_$wl', :'brokers', key => 'user_id',
                               event_time => 'ts', max_out_of_orderness => '$OOO');
SELECT stoatflow.create_aggregation('agg_$wl', 'src_$wl', ${WINDOW[$wl]}, '${AGGS[$wl]}', 'sink_$wl');
SQL
    peak_disk=0
    for ((c = 0; c < CHUNKS_OF[$wl]; c++)); do
        produce_chunk "events_$wl" "$wl" "$c"
        [ "$(sql_val "SELECT stoatflow.wait_caught_up('src_$wl', '600 seconds')")" = t ] ||
            bench_die "$wl: the worker did not catch up"
        d=$(sql_val "SELECT coalesce(sum(pg_total_relation_size(s.relid)), 0) FROM stoatflow.segment s
                      JOIN stoatflow.aggregation a USING (aggregation_id) WHERE a.aggregation_name = 'agg_$wl'")
        [ "$d" -gt "$peak_disk" ] && peak_disk=$d
    done
    # the progress row of the last commit (wait_caught_up returns once it is committed)
    row=$(sql_val "
WITH m AS (
    SELECT p.memory_bytes, p.keys_with_open_windows AS keys, p.open_windows,
           $peak_disk::bigint AS disk
      FROM stoatflow.aggregation a JOIN stoatflow.aggregation_progress p USING (aggregation_id)
     WHERE a.aggregation_name = 'agg_$wl')
SELECT concat_ws('|', m.keys, e.open_windows_per_key,
                 round(m.open_windows::numeric / greatest(m.keys, 1), 2),
                 e.memory_bytes, m.memory_bytes,
                 round(m.memory_bytes::numeric / greatest(e.memory_bytes, 1), 2),
                 e.disk_bytes, m.disk, round(m.disk::numeric / greatest(e.disk_bytes, 1), 2))
  FROM m, stoatflow.estimate(${WINDOW[$wl]}, m.keys, NULL, '${AGGS[$wl]}', '$OOO',
                             ${RPS[$wl]}, '${PIECE[$wl]}') e")
    IFS='|' read -r keys est_open open est_mem mem mem_ratio est_disk disk disk_ratio <<<"$row"
    echo "| $wl | $keys | $est_open / $open | $est_mem | $mem | $mem_ratio | $est_disk | $disk | $disk_ratio |" >>"$md"
    sql -c "SELECT stoatflow.drop_source('src_$wl', \"cascade\" => true)"
done
bench_log "written $md"
cat "$md"
