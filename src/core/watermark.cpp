// The per-source watermark: per-partition max event time, min over partitions that
// hold data, minus max out-of-orderness; never decreases; idle partitions excluded.
#include "stoatflow/core/watermark.hpp"

#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <sstream>

namespace stoatflow::core {

Watermark::Watermark(Millis max_out_of_orderness, Millis idle_timeout)
    : max_ooo_(max_out_of_orderness), idle_timeout_(idle_timeout) {}

void Watermark::assign(PartitionId partition, bool holds_data) {
    slowest_known_ = false;
    Partition& p = parts_[partition];
    // A restored partition already has its max; only a fresh one can be waiting.
    p.holds_data = holds_data && p.max == kNoTime;
    p.caught_up = false;
    p.idle = false;
    // No recompute: partitions are assigned one at a time, and after a restore W must not
    // move on the ones assigned so far while a later one still has data waiting (W would
    // then pass where it stood before the restart). The next record, tick or caught_up
    // recomputes with every partition in place.
}

void Watermark::revoke(PartitionId partition) {
    parts_.erase(partition);
    recompute();
}

Millis Watermark::observe(PartitionId partition, Millis t, Millis now) {
    Partition& p = parts_[partition];
    // Called for every record: when the partition already counts in the minimum and is not the
    // slowest, a larger max of its own cannot move the minimum, so W stays (no walk over every
    // partition).
    const bool counted = !p.holds_data && !p.idle && p.max != kNoTime;
    const bool above_slowest = counted && slowest_known_ && p.max > slowest_;
    p.max = std::max(p.max, t);
    p.holds_data = false;
    p.caught_up = false;
    p.idle = false;
    p.last_activity = now;
    if (!above_slowest) recompute();
    return w_;
}

void Watermark::data_pending(PartitionId partition) {
    slowest_known_ = false;
    Partition& p = parts_[partition];
    if (p.max == kNoTime && !p.holds_data) {
        p.holds_data = true;
        p.caught_up = false;
    }
}

void Watermark::caught_up(PartitionId partition, Millis now) {
    Partition& p = parts_[partition];
    p.caught_up = true;
    if (p.max == kNoTime) {
        // It turned out to have nothing to deliver: it never holds W back.
        p.holds_data = false;
        p.last_activity = now;
    }
    recompute();
}

Millis Watermark::tick(Millis now) {
    if (idle_timeout_ > 0) {
        for (auto& [id, p] : parts_) {
            if (p.caught_up && !p.idle && p.max != kNoTime &&
                now - p.last_activity >= idle_timeout_)
                p.idle = true;
        }
    }
    recompute();
    return w_;
}

void Watermark::recompute() {
    Millis min_max = kNoTime, idle_max = kNoTime;
    bool any = false;
    slowest_known_ = false;
    for (const auto& [id, p] : parts_) {
        if (p.holds_data) return;  // a partition with data not yet read pins W
        if (p.max == kNoTime) continue;
        if (p.idle) {
            idle_max = std::max(idle_max, p.max);
            continue;
        }
        min_max = any ? std::min(min_max, p.max) : p.max;
        any = true;
    }
    // Idle partitions hold nothing back; when every partition is idle the stream as a
    // whole has reached its newest record (whose own window still stays open).
    slowest_known_ = any;
    slowest_ = min_max;
    if (!any) min_max = idle_max;
    if (min_max == kNoTime) return;
    const Millis candidate = min_max - max_ooo_;
    if (w_ == kNoTime || candidate > w_) w_ = candidate;
}

Millis Watermark::partition_max(PartitionId partition) const {
    auto it = parts_.find(partition);
    return it == parts_.end() ? kNoTime : it->second.max;
}

bool Watermark::is_idle(PartitionId partition) const {
    auto it = parts_.find(partition);
    return it != parts_.end() && it->second.idle;
}

// "w1 W id:max ...": a partition of the first topic has id = its number, so a one-topic state
// reads as it did in 0.1.
std::string Watermark::serialize() const {
    std::ostringstream os;
    os << "w1 " << w_;
    for (const auto& [id, p] : parts_)
        if (p.max != kNoTime) os << ' ' << id << ':' << p.max;
    return os.str();
}

void Watermark::restore(const std::string& blob) {
    std::istringstream is(blob);
    std::string tag;
    Millis w = kNoTime;
    if (!(is >> tag >> w) || tag != "w1")
        throw Error(sqlstate::kDataCorrupted, "stored watermark is malformed: \"" + blob + "\"");
    std::map<PartitionId, Partition> parts;
    std::string item;
    while (is >> item) {
        const auto colon = item.find(':');
        if (colon == std::string::npos)
            throw Error(sqlstate::kDataCorrupted,
                        "stored watermark is malformed: \"" + blob + "\"");
        try {
            parts[std::stoll(item.substr(0, colon))].max = std::stoll(item.substr(colon + 1));
        } catch (const std::logic_error&) {
            throw Error(sqlstate::kDataCorrupted,
                        "stored watermark is malformed: \"" + blob + "\"");
        }
    }
    w_ = w;
    parts_ = std::move(parts);
    slowest_known_ = false;
}

}  // namespace stoatflow::core
