// stoatflow.estimate's arithmetic over the engine's formulas (README "Estimating cost").
#include "stoatflow/core/cost_estimate.hpp"

#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window/window_store.hpp"

#include <cmath>
#include <cstddef>

namespace stoatflow::core {

namespace {
Millis ceil_div(Millis a, Millis b) { return (a + b - 1) / b; }
}  // namespace

CostEstimate estimate_cost(const CostInputs& in) {
    const WindowSpec& w = in.spec;
    CostEstimate e;
    // open windows per key, and windows of one key starting in one segment
    const SegmentLayout segments(in.retention, w.length());
    e.segment_interval = segments.interval();
    e.live_segments_max = segments.max_live_segments(in.max_out_of_orderness);
    double per_segment = 0;
    // ceil((length + grace) / step) windows are open behind W; records up to max_out_of_orderness
    // ahead of W keep ooo / step more open on average (the share of the time a key's next window
    // is open ahead of W).
    const double ooo = static_cast<double>(in.max_out_of_orderness);
    switch (w.kind) {
    case WindowKind::Tumbling:
    case WindowKind::Hopping:
        e.open_windows_per_key = static_cast<double>(ceil_div(w.size + w.grace, w.advance)) +
                                 ooo / static_cast<double>(w.advance);
        per_segment = static_cast<double>(ceil_div(e.segment_interval, w.advance));
        break;
    case WindowKind::Session:
        e.open_windows_per_key = static_cast<double>(ceil_div(w.size + w.grace, w.size)) +
                                 ooo / static_cast<double>(w.size);
        per_segment = static_cast<double>(ceil_div(e.segment_interval, w.size));
        break;
    case WindowKind::Sliding:
        e.open_windows_per_key = 2.0 * (static_cast<double>(ceil_div(w.size + w.grace, w.size)) +
                                        ooo / static_cast<double>(w.size));
        per_segment = 2.0 * static_cast<double>(ceil_div(e.segment_interval, w.size));
        break;
    }
    e.state_bytes_per_window =
        static_cast<std::int64_t>(WindowStore::window_bytes(w.kind, in.aggregates));
    e.key_bytes = static_cast<std::int64_t>(WindowStore::key_bytes(w.kind, in.key_length));
    const double places = WindowStore::window_places(w, e.open_windows_per_key);
    const double keys = static_cast<double>(in.keys);
    e.memory_bytes = static_cast<std::int64_t>(
        std::ceil(keys * (places * static_cast<double>(e.state_bytes_per_window) +
                          static_cast<double>(e.key_bytes))));
    e.state_rows = static_cast<std::int64_t>(
        std::ceil(keys * per_segment * static_cast<double>(e.live_segments_max)));
    return e;
}

}  // namespace stoatflow::core
