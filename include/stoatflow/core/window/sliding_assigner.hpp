// Sliding windows (KIP-450): a record's left window [t−D, t] and the right windows of it
// and of its predecessor, derived from existing windows' aggregates, never from stored
// records; a record whose own left window is closed is dropped whole (late_window).
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/window/window_store.hpp"

namespace stoatflow::core {

class SlidingAssigner {
public:
    explicit SlidingAssigner(WindowStore& store) : store_(store) {}
    void assign(WindowStore::KeyIt kit, Millis t, const Value* values, Millis w,
                AggregationStats& stats);

private:
    // Is the window some record's left window (its latest record at start + D)?
    bool is_record_window(const WindowState& ws) const {
        return ws.max_time == ws.start + store_.spec().size;
    }

    WindowStore& store_;
};

}  // namespace stoatflow::core
