// What alter_aggregation may change on a running aggregation and what it becomes (README
// "Altering an aggregation"): grace, emit and retention, decided here; what a change does to the
// windows already held is the engine's restore (closed_through, the committed emit).
#pragma once
#include "stoatflow/core/emit/emit_strategy.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <optional>
#include <string>
#include <vector>

namespace stoatflow::core {

// The parameters of an aggregation that alter_aggregation reads and writes.
struct AggregationParams {
    WindowSpec spec;
    EmitStrategy emit = EmitStrategy::OnWindowUpdate;
    Millis retention = 0;
    Millis segment_interval = 0;  // as its state tables were laid out (never changed)
};

// What the caller asked for (nullopt: keep).
struct AlterRequest {
    std::optional<Millis> grace;
    std::optional<EmitStrategy> emit;
    std::optional<Millis> retention;
};

struct AlterPlan {
    AggregationParams after;
    bool changes = false;              // false: nothing to write
    std::vector<std::string> notices;  // for the user (e.g. "nothing to change")
};

// Throws Error (22023) naming what cannot be honoured: a negative or too large grace, a
// retention below the window's minimum, or one whose segment interval (SegmentLayout's formula)
// would exceed the interval the state tables were laid out with. Without a retention, a grace
// that needs more than the current retention raises it to the new minimum (with a notice).
AlterPlan plan_alter(const AggregationParams& before, const AlterRequest& request);

// The longest retention an aggregation laid out in segments of `segment_interval` can take: the
// largest whose formula interval is not longer than the stored one.
Millis max_retention_for(Millis segment_interval, Millis window_length);

}  // namespace stoatflow::core
