// What a worker reads, published for the views (README "Progress"): about once a second, one
// entry per partition of the progress board in shared memory (progress_board.hpp; the source's
// worker as worker 0, a backfill worker as its aggregation's id). The numbers come from
// flow::ProgressMeter, fed from the positions and the consumer's cached high watermarks: nothing
// is counted per record. The main thread publishes in its step, the consume thread while a
// commit is written (never both at once: the main thread joins it first), so a long commit does
// not hide the progress; publishing makes no PostgreSQL call.
#include "stoatflow/core/error.hpp"

#include <string>

#include "stoatflow/pg/worker/progress_board.hpp"
#include "stoatflow/pg/worker/source_worker.hpp"
#include "stoatflow/pg/worker/worker_loop.hpp"

namespace stoatflow::pg {

// On the main thread at start: the board's entries of the partitions this run reads (the same
// ones as the last run's, found again, so the numbers stay shown across a restart).
void SourceWorker::claim_progress() {
    const core::Millis now = clock_.now();
    bool full = false;
    for (const auto& [tp, h] : high_) {
        if (board_entries_.count(tp)) continue;
        const int at = progress_board::claim({source_id_, backfill_, tp.topic, tp.partition}, now);
        if (at < 0)
            full = true;
        else
            board_entries_[tp] = at;
    }
    if (full && !board_full_logged_) {
        board_full_logged_ = true;
        pg_call([&] {
            elog(LOG,
                 "stoatflow source %d: the progress board is full: some partitions show no "
                 "progress in stoatflow.sources and stoatflow.stats",
                 source_id_);
        });
    }
}

// Fed after each batch (either thread): positions and the consumer's cached high watermarks;
// once a second the numbers go to the board.
void SourceWorker::meter_progress(flow::RecordPath& path, core::Millis now) {
    const auto& next = path.next_offsets();
    for (const auto& [tp, at] : board_entries_) {
        const auto it = next.find(tp);
        if (it == next.end()) continue;
        meter_.observe(tp, it->second, consumer_->cached_high(tp));
    }
    if (!meter_.due(now)) return;
    const bool behind = meter_.shown_behind();
    for (const auto& [tp, at] : board_entries_) {
        const flow::ProgressMeter::Partition* p = meter_.partition(tp);
        if (p == nullptr) continue;
        progress_board::Values v;
        v.next_offset = p->position;
        v.high = p->high;
        v.lag = p->lag();
        v.has_rate = p->rate.has_value();
        v.rate = p->rate.value_or(0.0);
        v.newest_event_ms = path.watermark().partition_max(tp.id());
        v.has_event = v.newest_event_ms != core::kNoTime;
        v.behind = behind;
        v.updated_ms = now;
        progress_board::write(at, {source_id_, backfill_, tp.topic, tp.partition}, v);
    }
}

// Not consuming (paused, held for a backfill's join, no aggregations): 0 records/s, not behind.
void SourceWorker::quiet_progress() {
    if (progress_quiet_) return;
    progress_quiet_ = true;
    const core::Millis now = clock_.now();
    for (const auto& [tp, at] : board_entries_) {
        const flow::ProgressMeter::Partition* p = meter_.partition(tp);
        if (p == nullptr) continue;
        progress_board::Values v;
        v.next_offset = p->position;
        v.high = p->high;
        v.lag = p->lag();
        v.has_rate = true;
        v.updated_ms = now;
        progress_board::write(at, {source_id_, backfill_, tp.topic, tp.partition}, v);
    }
}

// A backfill that joined (or whose aggregation is gone): its entries go; the source's worker's
// show the aggregation from now on.
void SourceWorker::forget_progress() {
    if (backfill_ == 0) return;
    progress_board::release(source_id_, backfill_);
    board_entries_.clear();
}

}  // namespace stoatflow::pg
