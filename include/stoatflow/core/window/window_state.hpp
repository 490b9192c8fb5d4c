// One window of one key as the engine holds it in memory: bounds, the record times it has
// seen, what the sink and the state tables already have of it, and its aggregate state.
#pragma once
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/external_aggregate.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"

#include <cstdint>

namespace stoatflow::core {

struct WindowState {
    Millis start = 0;
    Millis end = 0;  // exclusive
    Millis max_time = kNoTime;
    Millis emitted_start = kNoTime;  // start of the sink row written for it, if any
    // Sessions: a late record may extend the session back only to times after this
    // (SessionMerger::may_start_at); persisted with its state.
    Millis floor = kNoTime;
    bool dirty = false;
    bool closed = false;
    bool persisted = false;
    bool ever_emitted = false;
    bool gone = false;  // leaves memory at the end of this flush
    CellArray cells;
    ExternalState ext;  // the external aggregates' state (empty when there are none)
};

// What one aggregation has counted since it started.
struct AggregationStats {
    std::int64_t records_in = 0;
    std::int64_t dropped_late_window = 0;
    std::int64_t dropped_late_session = 0;
    std::int64_t windows_emitted = 0;    // first emission of a window
    std::int64_t windows_reemitted = 0;  // later emissions of the same window
    std::int64_t sessions_merged = 0;    // sessions absorbed by a merge
    std::int64_t filtered = 0;  // records the aggregation's filter skipped (counted by the path)
};

}  // namespace stoatflow::core
