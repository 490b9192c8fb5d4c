// An aggregation's window state in PostgreSQL: its segment tables (stoatflow_state.aN_START,
// registered in stoatflow.segment), created on first write, appended to in bulk each commit,
// read back newest-version-first to restore, and dropped whole once expired.
#pragma once

#include "stoatflow/core/windowed_aggregation.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"

namespace stoatflow::pg {

// A segment table of one aggregation, as registered in stoatflow.segment.
struct Segment {
    core::Millis start = 0;
    core::Millis span = 0;
    std::string relname;
    Oid relid = InvalidOid;  // looked up when first written, if not recorded
};

class SegmentStore {
public:
    // interval: the stored segment interval (stoatflow.aggregation.segment_interval_ms);
    // retention: the aggregation's, for expiry.
    SegmentStore(std::int32_t aggregation_id, core::Millis interval, core::Millis retention)
        : aggregation_id_(aggregation_id), interval_(interval), retention_(retention) {}

    // Loads the registered segments (SPI connected).
    void load();
    // The newest version of every window (tombstones included), one segment at a time, each
    // segment's read lock released once it is read: f(row) per window.
    void read_windows(const core::AggLayout& layout,
                      const std::function<void(const core::WindowStateRow&)>& f) const;

    struct Written {
        std::int64_t rows = 0, bytes = 0;
    };
    // Appends the rows (one bulk append per segment table, creating tables on the way),
    // tagged with commit `seq`.
    Written write(const core::AggLayout& layout, const std::vector<core::WindowStateRow>& rows,
                  std::int64_t seq);
    // Drops every segment lying wholly before frontier − retention (whole tables only).
    void expire(core::Millis frontier);

    // The bytes `rows` window states take in segment tables (the columns created here, heap
    // pages filled to their end, no index): keys of key_length bytes, states of state_bytes.
    // stoatflow.estimate's disk term (README "Estimating cost").
    static std::int64_t table_bytes(std::int64_t rows, std::size_t key_length,
                                    std::size_t state_bytes);

private:
    Segment& segment_for(core::Millis start);

    std::int32_t aggregation_id_;
    core::Millis interval_, retention_;
    std::map<core::Millis, Segment> segments_;
};

}  // namespace stoatflow::pg
