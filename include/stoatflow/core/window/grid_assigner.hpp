// Tumbling and hopping windows: a record joins its epoch-aligned windows (WindowAssigner)
// that are still open; one whose windows are all closed is dropped (late_window).
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/window/window_assigner.hpp"
#include "stoatflow/core/window/window_store.hpp"

namespace stoatflow::core {

class GridAssigner {
public:
    explicit GridAssigner(WindowStore& store) : store_(store), grid_(store.spec()) {}
    void assign(WindowStore::KeyIt kit, Millis t, const Value* values, Millis w,
                AggregationStats& stats);

private:
    WindowStore& store_;
    WindowAssigner grid_;
};

}  // namespace stoatflow::core
