// Consumption aligned by event time (README "Aligned consumption"): the worker pauses the
// partitions that run ahead of the slowest one (the decision is flow::align's; this only feeds
// it the partitions and applies it to the consumer), and logs when partitions start or stop
// waiting.
#include <string>
#include <vector>

#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/worker/source_worker.hpp"

namespace stoatflow::pg {

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
    return flow::align(parts, consumer_->paused(), flow::alignment_span(wm.max_out_of_orderness()),
                       drain);
}

void SourceWorker::align_consumption() {
    const flow::Alignment a = alignment(memory_draining_);
    if (!consumer_->set_paused(a.paused)) return;
    const std::size_t n = a.paused.size();
    if ((n == 0) == (aligned_shown_ == 0)) {
        aligned_shown_ = n;
        return;
    }
    aligned_shown_ = n;
    const std::string msg =
        n == 0
            ? std::string("every partition is read again")
            : std::to_string(n) + " of " + std::to_string(high_.size()) +
                  " partitions wait: their event time is ahead of the slowest partition's by " +
                  (memory_draining_ ? std::string("any amount (over stoatflow.worker_memory_limit)")
                                    : "more than the alignment span");
    pg_call([&] { elog(LOG, "stoatflow source %d: %s", source_id_, msg.c_str()); });
}

}  // namespace stoatflow::pg
