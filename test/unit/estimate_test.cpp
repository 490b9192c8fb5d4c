// stoatflow.estimate's arithmetic (core::estimate_cost, README "Estimating cost"): the open
// windows per kind, the segment rule with out-of-orderness, and memory from the engine's own
// per-window and per-key bytes.
#include "stoatflow/core/cost_estimate.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window/window_store.hpp"

#include <gtest/gtest.h>

namespace stoatflow::core {
namespace {

CostEstimate run(WindowSpec spec, std::int64_t keys, Millis retention = kNoTime, Millis ooo = 0,
                 std::size_t aggregates = 1) {
    CostInputs in;
    in.spec = spec;
    in.keys = keys;
    in.retention = resolve_retention(spec, retention);
    in.max_out_of_orderness = ooo;
    in.aggregates = aggregates;
    return estimate_cost(in);
}

TEST(CostEstimate, OpenWindowsPerKind) {
    EXPECT_EQ(run(WindowSpec::tumbling(300'000), 1).open_windows_per_key, 1);
    EXPECT_EQ(run(WindowSpec::tumbling(300'000, 30'000), 1).open_windows_per_key, 2);
    EXPECT_EQ(run(WindowSpec::hopping(600'000, 120'000), 1).open_windows_per_key, 5);
    EXPECT_EQ(run(WindowSpec::hopping(600'000, 120'000, 1), 1).open_windows_per_key, 6);
    EXPECT_EQ(run(WindowSpec::session(60'000, 60'000), 1).open_windows_per_key, 2);
    EXPECT_EQ(run(WindowSpec::sliding(60'000, 10'000), 1).open_windows_per_key, 4);
    // W trails the newest record by max_out_of_orderness: its windows are open too
    EXPECT_DOUBLE_EQ(run(WindowSpec::tumbling(300'000), 1, kNoTime, 30'000).open_windows_per_key,
                     1.1);
    EXPECT_EQ(run(WindowSpec::tumbling(60'000), 1, kNoTime, 3'600'000).open_windows_per_key, 61);
    EXPECT_EQ(run(WindowSpec::hopping(600'000, 120'000), 1, kNoTime, 60'000).open_windows_per_key,
              5.5);
}

TEST(CostEstimate, SegmentsWithOutOfOrderness) {
    // interval max(150 s, 60 s, 300 s); live ceil((300 + 10) / 300) + 1
    const CostEstimate e = run(WindowSpec::tumbling(300'000), 10, kNoTime, 10'000);
    EXPECT_EQ(e.segment_interval, 300'000);
    EXPECT_EQ(e.live_segments_max, 3);
    EXPECT_EQ(run(WindowSpec::tumbling(300'000), 10).live_segments_max, 2);
    EXPECT_EQ(SegmentLayout(300'000, 300'000).max_live_segments(10'000), 3);
    EXPECT_EQ(e.state_rows, 10 * 1 * 3);
}

TEST(CostEstimate, MemoryFromTheEnginesBytes) {
    const CostEstimate t = run(WindowSpec::tumbling(60'000), 1000);
    EXPECT_EQ(t.state_bytes_per_window,
              static_cast<std::int64_t>(WindowStore::window_bytes(WindowKind::Tumbling, 1)));
    EXPECT_EQ(t.memory_bytes, 1000 * (t.state_bytes_per_window + t.key_bytes));
    // hopping: a key's block holds a record's windows and one more, and doubles
    const CostEstimate h = run(WindowSpec::hopping(600'000, 120'000), 1000);
    EXPECT_EQ(h.memory_bytes, 1000 * (6 * h.state_bytes_per_window + h.key_bytes));
    const CostEstimate h2 = run(WindowSpec::hopping(600'000, 120'000), 1000, kNoTime, 3'600'000);
    EXPECT_EQ(h2.open_windows_per_key, 35);
    EXPECT_EQ(h2.memory_bytes, 1000 * (48 * h2.state_bytes_per_window + h2.key_bytes));
    // tumbling: 1.1 windows a key need a block of 2
    const CostEstimate t2 = run(WindowSpec::tumbling(300'000), 1000, kNoTime, 30'000);
    EXPECT_EQ(t2.memory_bytes, 1000 * (2 * t2.state_bytes_per_window + t2.key_bytes));
    // more aggregates than fit a window inline cost their cells
    EXPECT_GT(run(WindowSpec::tumbling(60'000), 1, kNoTime, 0, 5).state_bytes_per_window,
              t.state_bytes_per_window);
    EXPECT_EQ(run(WindowSpec::tumbling(60'000), 0).memory_bytes, 0);
}

}  // namespace
}  // namespace stoatflow::core
