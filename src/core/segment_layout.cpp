// Segment arithmetic: interval = max(retention/2, 60 s, window length); a segment is
// dropped whole once it lies entirely at or before frontier − retention.
#include "stoatflow/core/segment_layout.hpp"

#include <algorithm>

namespace stoatflow::core {

SegmentLayout::SegmentLayout(Millis retention, Millis window_length)
    : retention_(retention),
      interval_(std::max({retention / 2, kMinSegmentInterval, window_length})) {}

bool SegmentLayout::expired(Millis segment_start, Millis span, Millis frontier, Millis retention) {
    if (frontier == kNoTime) return false;
    return segment_start + span <= frontier - retention;
}

long SegmentLayout::max_live_segments(Millis max_out_of_orderness) const {
    const Millis span = retention_ + max_out_of_orderness;
    return static_cast<long>((span + interval_ - 1) / interval_) + 1;
}

}  // namespace stoatflow::core
