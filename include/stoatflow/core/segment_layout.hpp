// Segment arithmetic of README "Exactly once: the commit cycle": the interval formula, which
// segment a window lives in, when a segment may be dropped whole, and how many segments can be
// live.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"

namespace stoatflow::core {

inline constexpr Millis kMinSegmentInterval = 60'000;

class SegmentLayout {
public:
    // interval = max(retention / 2, 60 s, window length)
    SegmentLayout(Millis retention, Millis window_length);
    // The interval a state table was created with (stored in the catalog; it survives retention
    // changes, so it is never recomputed for an existing aggregation).
    static SegmentLayout with_interval(Millis retention, Millis interval) {
        return SegmentLayout(retention, interval, Stored{});
    }

    Millis interval() const { return interval_; }
    Millis retention() const { return retention_; }

    // Epoch-aligned segment holding time t (time windows: the window start;
    // sessions: the session's last record).
    Millis segment_of(Millis t) const { return floor_to(t, interval_); }

    // A segment [a, a + span) may be dropped once a + span ≤ frontier − retention.
    // span is the interval the segment was created with (it survives retention changes).
    static bool expired(Millis segment_start, Millis span, Millis frontier, Millis retention);
    bool expired(Millis segment_start, Millis frontier) const {
        return expired(segment_start, interval_, frontier, retention_);
    }

    // Worst-case number of live segments: ceil((retention + max_out_of_orderness) / interval)
    // + 1 (records up to max_out_of_orderness ahead of W make windows in segments ahead of W).
    long max_live_segments(Millis max_out_of_orderness = 0) const;

private:
    struct Stored {};
    SegmentLayout(Millis retention, Millis interval, Stored)
        : retention_(retention), interval_(interval) {}

    Millis retention_;
    Millis interval_;
};

}  // namespace stoatflow::core
