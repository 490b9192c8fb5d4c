// Consumption aligned by event time (include/stoatflow/flow/alignment.hpp).
#include "stoatflow/flow/alignment.hpp"

#include <algorithm>
#include <cstdint>

namespace stoatflow::flow {

core::Millis alignment_span(core::Millis max_out_of_orderness) {
    return std::max(max_out_of_orderness, kMinAlignmentSpan);
}

Alignment align(const std::vector<PartitionTime>& parts,
                const std::set<core::TopicPartition>& paused_before, core::Millis span,
                bool drain) {
    Alignment a;
    for (const PartitionTime& p : parts)
        if (p.unread && !p.idle && p.max != core::kNoTime)
            a.floor = a.floor == core::kNoTime ? p.max : std::min(a.floor, p.max);
    if (a.floor == core::kNoTime) return a;  // nothing to align: everything is read
    const core::Millis pause_at = drain ? 0 : span;
    const core::Millis resume_at = drain ? 0 : span / 2;
    for (const PartitionTime& p : parts) {
        if (!p.unread || p.idle || p.max == core::kNoTime) continue;
        // Event times come from records: any two may be as far apart as int64 allows.
        core::Millis ahead = 0;
        if (__builtin_sub_overflow(p.max, a.floor, &ahead)) ahead = INT64_MAX;
        const bool was = paused_before.count(p.tp) != 0;
        if (ahead > pause_at || (was && ahead > resume_at)) a.paused.insert(p.tp);
    }
    return a;
}

MemoryAction memory_action(std::int64_t used, std::int64_t limit, bool draining,
                           bool drain_pauses) {
    if (limit <= 0) return MemoryAction::read;
    if (used > limit) return MemoryAction::stop;
    if (!drain_pauses)
        return MemoryAction::read;  // every partition is at the floor: nothing to wait
    const double from = static_cast<double>(limit) * (draining ? kDrainUntil : kDrainFrom);
    return static_cast<double>(used) > from ? MemoryAction::drain : MemoryAction::read;
}

}  // namespace stoatflow::flow
