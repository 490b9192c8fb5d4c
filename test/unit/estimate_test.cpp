// stoatflow.estimate's arithmetic (core::estimate_cost, README "Estimating cost"): the open
// windows per kind, the segment rule with out-of-orderness, and memory from the engine's own
// per-window and per-key bytes.
#include "stoatflow/core/cost_estimate.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window/window_store.hpp"

#include <gtest/gtest.h>

#include <cmath>

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
    // the rows at their peak: windows starting over retention + interval + ooo = 610 s, a
    // window each 300 s, one version each: ceil(10 × 610 / 300)
    EXPECT_EQ(e.state_rows, 21);
    // no out-of-orderness: two segments' worth exactly
    EXPECT_EQ(run(WindowSpec::tumbling(300'000), 10).state_rows, 20);
    // hopping 10 min / 2 min: retention 600 s, interval 600 s: 1210 s of starts, 5 per 600 s
    EXPECT_EQ(run(WindowSpec::hopping(600'000, 120'000), 10, kNoTime, 10'000).state_rows,
              static_cast<std::int64_t>(std::ceil(10 * 1210.0 / 120.0)));
}

CostEstimate run_rate(WindowSpec spec, std::int64_t keys, double rps, Millis commit_interval,
                      Millis ooo = 10'000) {
    CostInputs in;
    in.spec = spec;
    in.keys = keys;
    in.retention = resolve_retention(spec, kNoTime);
    in.max_out_of_orderness = ooo;
    in.records_per_second = rps;
    in.commit_interval = commit_interval;
    return estimate_cost(in);
}

TEST(CostEstimate, RateSizesTheBlock) {
    // 1000 keys at 25 records per second: 0.025 a key and second. A key's block grows to two
    // places only with a record in the 10 s after its window's end or before the commit that
    // lets it go (half of 1 s on average): 1 − e^(−0.025 · 10.5).
    const CostEstimate t = run_rate(WindowSpec::tumbling(60'000), 1000, 25.0, 1000);
    const double places = 1.0 + (1.0 - std::exp(-0.025 * 10.5));
    EXPECT_EQ(t.memory_bytes, static_cast<std::int64_t>(std::ceil(
                                  1000 * (places * static_cast<double>(t.state_bytes_per_window) +
                                          static_cast<double>(t.key_bytes)))));
    // without a rate: the bound, two places
    const CostEstimate b = run(WindowSpec::tumbling(60'000), 1000, kNoTime, 10'000);
    EXPECT_EQ(b.memory_bytes, 1000 * (2 * b.state_bytes_per_window + b.key_bytes));
    EXPECT_LT(t.memory_bytes, b.memory_bytes);
    // no out-of-orderness, no grace, no commit interval: one place whatever the rate; a commit
    // each second keeps the last window until it: 1 − e^(−0.025 · 0.5)
    EXPECT_EQ(run_rate(WindowSpec::tumbling(60'000), 1000, 25.0, 0, 0).memory_bytes,
              1000 * (t.state_bytes_per_window + t.key_bytes));
    EXPECT_EQ(
        run_rate(WindowSpec::tumbling(60'000), 1000, 25.0, 1000, 0).memory_bytes,
        static_cast<std::int64_t>(std::ceil(
            1000 * ((2.0 - std::exp(-0.025 * 0.5)) * static_cast<double>(t.state_bytes_per_window) +
                    static_cast<double>(t.key_bytes)))));
    // hopping: the reserve holds a record's windows from the first record on
    const CostEstimate h = run_rate(WindowSpec::hopping(600'000, 120'000), 1000, 1.0, 1000);
    EXPECT_EQ(h.memory_bytes, 1000 * (6 * h.state_bytes_per_window + h.key_bytes));
}

TEST(CostEstimate, ClosedWindowsWaitForTheCommit) {
    // hopping 10 / 2 min, 10 s out of order: a commit each minute holds ceil(670 / 120) = 6
    // windows, the reserve; a commit each 4 minutes ceil(850 / 120) = 8: a block of 12
    const CostEstimate m1 = run_rate(WindowSpec::hopping(600'000, 120'000), 1000, 1.0, 60'000);
    EXPECT_EQ(m1.memory_bytes, 1000 * (6 * m1.state_bytes_per_window + m1.key_bytes));
    const CostEstimate m4 = run_rate(WindowSpec::hopping(600'000, 120'000), 1000, 1.0, 240'000);
    EXPECT_EQ(m4.memory_bytes, 1000 * (12 * m4.state_bytes_per_window + m4.key_bytes));
    // tumbling with grace: at most two windows at once while grace + ooo + a commit < size
    // (ceil(2.0333) = 3 open windows would make a block of 4)
    const CostEstimate g = run(WindowSpec::tumbling(300'000, 30'000), 1000, kNoTime, 10'000);
    EXPECT_EQ(g.memory_bytes, 1000 * (2 * g.state_bytes_per_window + g.key_bytes));
}

TEST(CostEstimate, RateAndCommitsMakeVersions) {
    // 1-hour window, a commit each 240 s: 15 commits while records reach it; 20 records a key
    // and hour: each commit saw one of the key's with 1 − e^(−20 · 240 / 3600)
    const CostEstimate d =
        run_rate(WindowSpec::tumbling(3'600'000), 1000, 1000 * 20 / 3600.0, 240'000);
    EXPECT_NEAR(d.versions_per_window, 15 * (1 - std::exp(-20.0 * 240 / 3600)), 1e-9);
    // retention 3600 s + interval 3600 s of starts, a window an hour (each complete as W
    // reaches the segment's end)
    EXPECT_EQ(d.state_rows,
              static_cast<std::int64_t>(std::ceil(1000 * 2.0 * d.versions_per_window)));
    // hopping 10 / 2 min, a commit a minute: the windows of the last 10 minutes before W are
    // partly written: 1200 / 120 − 600 / 240 + 1 / 2 = 8 windows' worth a key
    const CostEstimate h =
        run_rate(WindowSpec::hopping(600'000, 120'000), 1000, 1000 * 20 / 3600.0, 60'000);
    EXPECT_EQ(h.state_rows,
              static_cast<std::int64_t>(std::ceil(1000 * 8.0 * h.versions_per_window)));
    // a commit less often than a window: one commit, a version when the key had a record
    const CostEstimate s = run_rate(WindowSpec::tumbling(60'000), 100, 100 * 0.5 / 60.0, 600'000);
    EXPECT_NEAR(s.versions_per_window, 1 - std::exp(-0.5), 1e-9);
    // a busy key under frequent commits: a version each commit
    const CostEstimate busy = run_rate(WindowSpec::tumbling(60'000), 1, 1000.0, 1000);
    EXPECT_NEAR(busy.versions_per_window, 60, 1e-9);
    // without a rate: one version a window
    EXPECT_EQ(run(WindowSpec::tumbling(60'000), 1).versions_per_window, 1);
}

TEST(CostEstimate, OutOfRangeIsRefused) {
    // more bytes than a bigint holds: refused, not wrapped
    EXPECT_THROW(run(WindowSpec::tumbling(60'000), 9'000'000'000'000'000'000), Error);
    EXPECT_THROW(run_rate(WindowSpec::tumbling(86'400'000), 1'000'000'000'000, 1e300, 1), Error);
    EXPECT_NO_THROW(run(WindowSpec::tumbling(60'000), 1'000'000'000));
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
