// Consumption aligned by event time (README "Aligned consumption"): the worker pauses the
// partitions that run ahead of the slowest one (the decision is flow::align's; this only feeds
// it the partitions and applies it to the consumer), and logs when partitions start or stop
// waiting.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/worker/source_worker.hpp"

namespace stoatflow::pg {

constexpr core::Millis kAlignLogMs = 60'000;

flow::Alignment SourceWorker::alignment(bool drain) const {
    std::vector<flow::PartitionTime> parts;
    flow::RecordPath& path = pipeline_->path();
    const core::Watermark& wm = path.watermark();
    for (const auto& [tp, high] : high_) {
        // A backfill's partition stopped at its bound is not read anyway.
        if (parked_.count(tp) || to_park_.count(tp)) continue;
        const auto next = path.next_offsets().find(tp);
        const std::int64_t pos = next == path.next_offsets().end() ? 0 : next->second;
        parts.push_back({tp, wm.partition_max(tp.id()), high > pos, wm.is_idle(tp.id())});
    }
    std::set<core::TopicPartition> before;
    for (const auto& p : consumer_->paused()) before.insert(p.first);
    return flow::align(parts, before, flow::alignment_span(wm.max_out_of_orderness()), drain);
}

void SourceWorker::align_consumption() {
    const flow::Alignment a = alignment(memory_draining_);
    // Paused at the next offset the record path wants: read again from there.
    std::map<core::TopicPartition, std::int64_t> paused;
    const auto& next = pipeline_->path().next_offsets();
    for (const core::TopicPartition tp : a.paused) {
        const auto it = next.find(tp);
        if (it != next.end()) paused[tp] = it->second;
    }
    if (!consumer_->set_paused(paused)) return;
    const std::size_t n = paused.size();
    // A line when partitions start or stop waiting, at most one a minute (they may take turns).
    const core::Millis now = clock_.now();
    if ((n == 0) == (aligned_shown_ == 0) || now - aligned_logged_at_ < kAlignLogMs) return;
    aligned_shown_ = n;
    aligned_logged_at_ = now;
    const std::string msg =
        n == 0
            ? std::string("every partition is read again")
            : std::to_string(n) + " of " + std::to_string(high_.size()) +
                  " partitions wait: their event time is ahead of the slowest partition's by " +
                  (memory_draining_
                       ? std::string("any amount (window state near stoatflow.worker_memory_limit)")
                       : "more than the alignment span");
    pg_call([&] { elog(LOG, "stoatflow source %d: %s", source_id_, msg.c_str()); });
}

// The server log says when draining starts and ends (at most one line a minute), with the state
// and the partitions' times at the decision: the slowest partition read and how many wait.
void SourceWorker::show_drain(bool drain, std::int64_t used, std::int64_t limit, core::Millis now) {
    if (drain_logged_at_ != 0 && now - drain_logged_at_ < kAlignLogMs) return;
    drain_logged_at_ = now;
    const flow::Alignment a = alignment(true);
    const std::string at = a.floor == core::kNoTime ? std::string("none") : std::to_string(a.floor);
    const std::string msg =
        std::string(drain ? "draining: " : "draining ends: ") + "window state of " +
        megabytes(used) + " against stoatflow.worker_memory_limit (" + megabytes(limit) + "); " +
        (drain ? std::to_string(a.paused.size()) + " of " + std::to_string(high_.size()) +
                     " partitions wait, the slowest at event time " + at + " ms is read"
               : std::string("every partition is read as usual"));
    pg_call([&] { elog(LOG, "stoatflow source %d: %s", source_id_, msg.c_str()); });
}

}  // namespace stoatflow::pg
