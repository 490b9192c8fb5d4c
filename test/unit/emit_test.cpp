// Emission per strategy (on_window_update: changed windows per commit and a final
// upsert at close; on_window_close: exactly one final write per window), changed
// state per commit, and recovery from persisted state.
#include "engine_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace stoatflow::test;

TEST(OnWindowUpdate, ChangedWindowsPerCommitThenFinalAtClose) {
    Harness h(WindowSpec::tumbling(10));
    h.push({{"a", 1, 1}, {"b", 2, 1}});
    auto c1 = h.commit();
    EXPECT_EQ(c1.upserts.size(), 2u);
    EXPECT_FALSE(h.sink.at({"a", 0}).final);
    h.push({"a", 3, 1});
    auto c2 = h.commit();
    ASSERT_EQ(c2.upserts.size(), 1u);  // only the window that changed
    EXPECT_EQ(c2.upserts[0].key, "a");
    EXPECT_EQ(h.sink.at({"a", 0}).values[0], "2");
    auto c3 = h.commit();
    EXPECT_TRUE(c3.upserts.empty());  // nothing changed, nothing written
    EXPECT_TRUE(c3.state.empty());
    h.push({"a", 10, 1});  // W = 10 closes [0,10)
    auto c4 = h.commit();
    EXPECT_EQ(c4.upserts.size(), 3u);  // a and b final, [10,20) new
    EXPECT_TRUE(h.sink.at({"a", 0}).final);
    EXPECT_TRUE(h.sink.at({"b", 0}).final);
    EXPECT_FALSE(h.sink.at({"a", 10}).final);
    EXPECT_EQ(h.agg.stats().windows_emitted, 3);
    EXPECT_EQ(h.agg.stats().windows_reemitted, 3);
    EXPECT_EQ(h.agg.open_windows(), 1u);
    EXPECT_EQ(h.agg.keys_with_open_windows(), 1u);
}

TEST(OnWindowClose, ExactlyOneFinalWritePerWindow) {
    Harness h(WindowSpec::tumbling(10, 2), EmitStrategy::OnWindowClose);
    h.push({{"a", 1, 1}, {"a", 2, 1}, {"b", 5, 1}});
    auto c1 = h.commit();
    EXPECT_TRUE(c1.upserts.empty());
    EXPECT_EQ(c1.state.size(), 2u);  // state is still made durable
    h.push({"a", 11, 1});            // W = 11: [0,10) closes at 12, still open
    EXPECT_TRUE(h.commit().upserts.empty());
    h.push({"a", 7, 1});   // within grace
    h.push({"a", 12, 1});  // W = 12: closed
    h.commit();
    h.push({"a", 8, 1});  // late: dropped, no write
    h.commit();
    h.commit(1000);
    EXPECT_EQ(h.writes, (std::map<std::pair<std::string, Millis>, int>{
                            {{"a", 0}, 1}, {{"b", 0}, 1}, {{"a", 10}, 1}}));
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 10, 7, {"3", "3"}, true},
                                          {"a", 10, 20, 12, {"2", "2"}, true},
                                          {"b", 0, 10, 5, {"1", "1"}, true}}));
    EXPECT_EQ(h.agg.stats().dropped_late_window, 1);
}

TEST(OnWindowClose, SessionsMergeWithoutAnyRetraction) {
    Harness h(WindowSpec::session(13), EmitStrategy::OnWindowClose, 100);
    h.push({{"a", 0, 1}, {"a", 25, 1}});
    h.commit();
    h.push({"a", 13, 1});  // bridges both
    auto c = h.commit();
    EXPECT_TRUE(c.deletes.empty());
    EXPECT_TRUE(c.upserts.empty());
    h.commit(1000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 26, 25, {"3", "3"}, true}}));
}

TEST(ChangedState, OnlyWindowsChangedSinceTheLastCommit) {
    Harness h(WindowSpec::hopping(10, 5), EmitStrategy::OnWindowUpdate, 100);
    for (int k = 0; k < 50; ++k) h.push({"k" + std::to_string(k), 1, 1});
    EXPECT_EQ(h.commit().state.size(), 100u);  // 50 keys × 2 windows
    h.push({"k7", 2, 1});
    auto c = h.commit();
    EXPECT_EQ(c.state.size(), 2u);
    for (auto& s : c.state) EXPECT_EQ(s.key, "k7");
}

TEST(ChangedState, EveryWindowWrittenToTheSinkHasAStateRow) {
    // A window opened and closed between two commits gets its state row in that commit,
    // like every other window the sink receives (resync_sink rewrites the sink from them).
    Harness h(WindowSpec::tumbling(10, 0), EmitStrategy::OnWindowUpdate);
    h.push({{"a", 1, 1}, {"b", 2, 1}, {"a", 15, 1}});  // W = 15: [0,10) closed
    auto c = h.commit();
    ASSERT_EQ(c.state.size(), 3u);
    EXPECT_EQ(c.upserts.size(), 3u);
    for (const auto& u : c.upserts) {
        const auto hit = std::find_if(c.state.begin(), c.state.end(), [&](const auto& s) {
            return s.key == u.key && s.start == u.start && s.end == u.end && !s.removed;
        });
        ASSERT_NE(hit, c.state.end()) << u.key << " " << u.start;
        EXPECT_TRUE(hit->cells == std::vector<AggCell>(u.cells));
    }
    // Unchanged since its last state row: the final upsert needs no second copy.
    h.push({"a", 25, 1});  // W = 25 closes [10,20), unchanged since the last commit
    auto c2 = h.commit();
    EXPECT_EQ(c2.upserts.size(), 2u);  // [10,20) final, [20,30) new
    ASSERT_EQ(c2.state.size(), 1u);
    EXPECT_EQ(c2.state[0].start, 20);
    // on_window_close: the window is written once, at close, with its state row.
    for (auto spec : {WindowSpec::tumbling(10), WindowSpec::session(5), WindowSpec::sliding(5)}) {
        Harness o(spec, EmitStrategy::OnWindowClose);
        o.push({{"a", 1, 1}, {"b", 2, 1}, {"a", 40, 1}});
        auto oc = o.commit();
        std::set<std::pair<std::string, Millis>> with_state;
        for (auto& s : oc.state)
            if (!s.removed) with_state.insert({s.key, s.start});
        ASSERT_FALSE(oc.upserts.empty()) << spec.describe();
        for (auto& u : oc.upserts)
            EXPECT_TRUE(with_state.count({u.key, u.start})) << spec.describe();
    }
    // Restore still skips windows the committed W has closed.
    Harness r(WindowSpec::tumbling(10, 0), EmitStrategy::OnWindowUpdate);
    for (auto& s : h.state_log) r.agg.restore(s, h.wm.current());
    EXPECT_EQ(r.agg.resident_windows(), 1u);  // [20,30) only
}

TEST(ChangedState, SessionMergeWritesTombstones) {
    Harness h(WindowSpec::session(13), EmitStrategy::OnWindowUpdate, 100);
    h.push({{"a", 0, 1}, {"a", 25, 1}});
    h.commit();
    h.push({"a", 13, 1});
    auto c = h.commit();
    int tombstones = 0, rows = 0;
    for (auto& s : c.state) (s.removed ? tombstones : rows)++;
    EXPECT_EQ(tombstones, 1);
    EXPECT_EQ(rows, 1);
}

// Recovery: replaying the committed state into a fresh engine continues exactly as an
// uninterrupted run would.
namespace {
void restore_from(Harness& fresh, const Harness& crashed, Millis committed_w) {
    std::map<std::pair<std::string, Millis>, WindowStateRow> newest;
    for (auto& s : crashed.state_log) newest[{s.key, s.start}] = s;
    for (auto& [k, s] : newest) fresh.agg.restore(s, committed_w);
    fresh.sink = crashed.sink;
    fresh.wm.restore(crashed.wm.serialize());
}
}  // namespace

TEST(Recovery, RestoredEngineContinuesLikeAnUninterruptedOne) {
    for (auto spec : {WindowSpec::tumbling(10, 3), WindowSpec::hopping(10, 5, 2),
                      WindowSpec::sliding(10, 3), WindowSpec::session(10, 3)}) {
        for (auto emit : {EmitStrategy::OnWindowUpdate, EmitStrategy::OnWindowClose}) {
            std::vector<In> first = {{"a", 1, 1}, {"b", 4, 2},  {"a", 15, 3},
                                     {"a", 9, 4}, {"b", 22, 5}, {"a", 31, 6}};
            std::vector<In> second = {
                {"a", 28, 7}, {"b", 33, 8}, {"a", 45, 9}, {"b", 40, 1}, {"a", 60, 2}};
            Harness whole(spec, emit, 5), crashed(spec, emit, 5);
            for (auto& r : first) {
                whole.push(r);
                crashed.push(r);
            }
            whole.commit();
            crashed.commit();
            Harness resumed(spec, emit, 5);
            restore_from(resumed, crashed, crashed.wm.current());
            for (auto& r : second) {
                whole.push(r);
                resumed.push(r);
            }
            whole.commit(1000);
            resumed.commit(1000);
            EXPECT_EQ(whole.rows(), resumed.rows()) << spec.describe() << " " << to_string(emit);
        }
    }
}

// The segment tables the next commit writes: counted as windows change (one per distinct
// segment), so the worker can commit before one commit locks too many of them.
TEST(ChangedState, PendingSegmentsCountsDistinctSegmentsOfChangedWindows) {
    Harness h(WindowSpec::tumbling(10));  // minimum retention: segments of 60 s
    EXPECT_EQ(h.agg.pending_segments(), 0u);
    h.push({{"a", 1, 1}, {"b", 2, 1}, {"a", 30'000, 1}});
    EXPECT_EQ(h.agg.pending_segments(), 1u);  // all within the first minute
    h.push({{"a", 61'000, 1}, {"c", 125'000, 1}});
    EXPECT_EQ(h.agg.pending_segments(), 3u);
    h.commit();
    EXPECT_EQ(h.agg.pending_segments(), 0u);
    h.push({"c", 126'000, 1});
    EXPECT_EQ(h.agg.pending_segments(), 1u);
}
