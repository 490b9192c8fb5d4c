// stoatflow.estimate's arithmetic over the engine's formulas (README "Estimating cost").
#include "stoatflow/core/cost_estimate.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window/window_store.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace stoatflow::core {

namespace {
Millis ceil_div(Millis a, Millis b) { return (a + b - 1) / b; }
}  // namespace

CostEstimate estimate_cost(const CostInputs& in) {
    const WindowSpec& w = in.spec;
    CostEstimate e;
    // open windows per key, and how often a key's windows start
    const SegmentLayout segments(in.retention, w.length());
    e.segment_interval = segments.interval();
    e.live_segments_max = segments.max_live_segments(in.max_out_of_orderness);
    // windows of one key starting per `step` milliseconds
    double per_step = 1;
    Millis step = w.advance;
    // ceil((length + grace) / step) windows are open behind W; records up to max_out_of_orderness
    // ahead of W keep ooo / step more open on average (the share of the time a key's next window
    // is open ahead of W).
    const double ooo = static_cast<double>(in.max_out_of_orderness);
    switch (w.kind) {
    case WindowKind::Tumbling:
    case WindowKind::Hopping:
        e.open_windows_per_key = static_cast<double>(ceil_div(w.size + w.grace, w.advance)) +
                                 ooo / static_cast<double>(w.advance);
        break;
    case WindowKind::Session:
        e.open_windows_per_key = static_cast<double>(ceil_div(w.size + w.grace, w.size)) +
                                 ooo / static_cast<double>(w.size);
        step = w.size;
        break;
    case WindowKind::Sliding:
        e.open_windows_per_key = 2.0 * (static_cast<double>(ceil_div(w.size + w.grace, w.size)) +
                                        ooo / static_cast<double>(w.size));
        step = w.size;
        per_step = 2;
        break;
    }
    e.state_bytes_per_window =
        static_cast<std::int64_t>(WindowStore::window_bytes(w.kind, in.aggregates));
    e.key_bytes = static_cast<std::int64_t>(WindowStore::key_bytes(w.kind, in.key_length));
    const double keys = static_cast<double>(in.keys);
    // A key's records per millisecond, when the rate is known.
    const double rate =
        in.records_per_second > 0 && in.keys > 0 ? in.records_per_second / keys / 1000.0 : 0;
    // The windows a key's block must hold at once. A grid window is let go at the first commit
    // after W passed its end + grace (WindowStore::close_due runs at each commit's flush), so
    // the block holds the windows of size + grace + ooo + one commit interval of event time.
    const double held =
        w.kind == WindowKind::Tumbling || w.kind == WindowKind::Hopping
            ? static_cast<double>(ceil_div(
                  w.size + w.grace + in.max_out_of_orderness + in.commit_interval, w.advance))
            : e.open_windows_per_key;
    double places = WindowStore::window_places(w, held);
    if (rate > 0 && w.kind != WindowKind::Hopping && places > 1) {
        // A block of one place grows only when a key's next window opens while the last is
        // still held: a record of the key in the grace + max_out_of_orderness after the last
        // window's end, and until the commit that lets it go (half a commit interval on
        // average): probability 1 − e^(−λ (grace + ooo + commit_interval / 2)). A key that has
        // none is let go with its window and starts again with one place. (Hopping: the reserve
        // holds a record's windows from the first record on.)
        const double bridge =
            1.0 - std::exp(-rate * (static_cast<double>(w.grace + in.max_out_of_orderness) +
                                    static_cast<double>(in.commit_interval) / 2.0));
        places = 1.0 + (places - 1.0) * bridge;
    }
    if (rate > 0) {
        const double length = static_cast<double>(w.size);
        const double commits = in.commit_interval > 0
                                   ? std::max(1.0, length / static_cast<double>(in.commit_interval))
                                   : 1.0;
        e.versions_per_window = commits * (1.0 - std::exp(-rate * length / commits));
    }
    const double memory = std::ceil(keys * (places * static_cast<double>(e.state_bytes_per_window) +
                                            static_cast<double>(e.key_bytes)));
    // The peak comes as W reaches a segment's end: the windows starting over retention +
    // interval behind W are in the state tables. Written once each (no rate), so are the ones
    // ahead of W (max_out_of_orderness). With versions over a window's life, the ones starting
    // in the last `size` before W have only part of theirs (a share (W − start) / size): the
    // starts a step apart from W − size to W add (size / step − 1) / 2 windows' worth, not
    // size / step, and those ahead of W next to none.
    const double r_i = static_cast<double>(in.retention + e.segment_interval);
    const double a = static_cast<double>(step);
    const double starts = rate > 0 ? r_i / a - static_cast<double>(w.size) / (2.0 * a) + 0.5
                                   : (r_i + static_cast<double>(in.max_out_of_orderness)) / a;
    const double rows = std::ceil(keys * starts * per_step * e.versions_per_window);
    // Beyond these a bigint of bytes would overflow (rows: one page of 8 kB each at worst).
    constexpr double kMaxBytes = 4.0e18, kMaxRows = 4.0e14;
    if (!(memory <= kMaxBytes) || !(rows <= kMaxRows))
        throw Error(sqlstate::kInvalidParameterValue,
                    "the estimate is out of range (more than 4e18 bytes or 4e14 state rows)",
                    "Give fewer keys, a lower records_per_second or a longer commit_interval.");
    e.memory_bytes = static_cast<std::int64_t>(memory);
    e.state_rows = static_cast<std::int64_t>(rows);
    return e;
}

}  // namespace stoatflow::core
