// Records in → rows out, per window kind: the seed's timeline, grid, sliding (KIP-450)
// and session scenarios, late drops by reason.
#include "engine_harness.hpp"

#include <gtest/gtest.h>

using namespace stoatflow::test;

namespace {
constexpr Millis kMin = 60'000;
Millis at(int h, int m, int s = 0) { return (h * 60 + m) * kMin + s * 1000; }
}  // namespace

// The seed's timeline: 5-minute tumbling windows, 10 s out-of-orderness, no grace.
// a 10:01, b 10:02, c 10:04, d 10:06, e 10:08 in order; a record that happened 10:00
// arrives after d (at 10:07) and finds 10:00–10:05 closed.
TEST(SeedTimeline, FiveMinuteTumblingWithALateRecord) {
    Harness h(WindowSpec::tumbling(5 * kMin), EmitStrategy::OnWindowUpdate, 10'000);
    h.push({{"u", at(10, 1), 1}, {"u", at(10, 2), 1}, {"u", at(10, 4), 1}, {"u", at(10, 6), 1}});
    EXPECT_EQ(h.wm.current(), at(10, 5, 50));  // 10:06 − 10 s: past 10:05, W1 is closed
    h.push({"u", at(10, 0), 1});               // happened 10:00, arrived after 10:06
    h.push({"u", at(10, 8), 1});
    h.commit();
    EXPECT_EQ(h.rows(), (std::vector<Row>{
                            {"u", at(10, 0), at(10, 5), at(10, 4), {"3", "3"}, true},
                            {"u", at(10, 5), at(10, 10), at(10, 8), {"2", "2"}, false},
                        }));
    EXPECT_EQ(h.agg.stats().dropped_late_window, 1);
    EXPECT_EQ(h.agg.stats().records_in, 6);
    // An idle stream leaves the last window open; a later record closes it.
    h.push({"u", at(10, 20), 1});
    h.commit();
    EXPECT_TRUE(h.sink.at({"u", at(10, 5)}).final);
}

TEST(Tumbling, AssignmentIgnoresArrivalOrder) {
    Harness in_order(WindowSpec::tumbling(10), EmitStrategy::OnWindowUpdate, 100);
    Harness shuffled(WindowSpec::tumbling(10), EmitStrategy::OnWindowUpdate, 100);
    in_order.push({{"k", 1, 1}, {"k", 9, 2}, {"k", 10, 3}, {"k", 25, 4}});
    shuffled.push({{"k", 25, 4}, {"k", 10, 3}, {"k", 1, 1}, {"k", 9, 2}});
    in_order.commit(1000);
    shuffled.commit(1000);
    EXPECT_EQ(in_order.rows(), shuffled.rows());
    EXPECT_EQ(in_order.rows(), (std::vector<Row>{{"k", 0, 10, 9, {"2", "3"}, true},
                                                 {"k", 10, 20, 10, {"1", "3"}, true},
                                                 {"k", 20, 30, 25, {"1", "4"}, true}}));
}

TEST(Tumbling, NegativeTimesAreEpochAligned) {
    Harness h(WindowSpec::tumbling(10), EmitStrategy::OnWindowUpdate, 100);
    h.push({{"k", -1, 1}, {"k", -10, 1}, {"k", -11, 1}});
    h.commit(1000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"k", -20, -10, -11, {"1", "1"}, true},
                                          {"k", -10, 0, -1, {"2", "2"}, true}}));
}

TEST(Tumbling, GraceKeepsAWindowOpenPastItsEnd) {
    // size 10, grace 5: [0,10) closes once W ≥ 15.
    Harness h(WindowSpec::tumbling(10, 5));
    h.push({{"k", 3, 1}, {"k", 14, 1}, {"k", 4, 1}});  // W = 14: still open
    EXPECT_EQ(h.agg.stats().dropped_late_window, 0);
    h.push({{"k", 15, 1}, {"k", 5, 1}});  // W = 15: closed, 5 is late
    EXPECT_EQ(h.agg.stats().dropped_late_window, 1);
    h.commit();
    EXPECT_EQ(h.sink.at({"k", 0}), (Row{"k", 0, 10, 4, {"2", "2"}, true}));
}

// Hopping size 10 advance 5 grace 5, adapted from Kafka Streams' hopping-window
// aggregation tests: each record lands in size/advance = 2 windows; a late record
// counts one drop per closed window and still lands in the windows that are open.
TEST(Hopping, OverlappingWindowsWithGrace) {
    Harness h(WindowSpec::hopping(10, 5, 5));
    h.push({"a", 0, 1});   // [-5,5) [0,10)
    h.push({"a", 7, 2});   // [0,10) [5,15)
    h.push({"a", 14, 3});  // [5,15) [10,20); W = 14: [-5,5) closed at 10
    h.push({"a", 3, 4});   // [-5,5) closed → 1 drop; [0,10) open (closes at 15)
    EXPECT_EQ(h.agg.stats().dropped_late_window, 1);
    h.push({"a", 21, 0});  // W = 21: [0,10) closed at 15, [5,15) at 20
    h.push({"a", 9, 5});   // [0,10) and [5,15) both closed → 2 drops
    EXPECT_EQ(h.agg.stats().dropped_late_window, 3);
    h.commit(1000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", -5, 5, 0, {"1", "1"}, true},
                                          {"a", 0, 10, 7, {"3", "7"}, true},
                                          {"a", 5, 15, 14, {"2", "5"}, true},
                                          {"a", 10, 20, 14, {"1", "3"}, true},
                                          {"a", 15, 25, 21, {"1", "0"}, true},
                                          {"a", 20, 30, 21, {"1", "0"}, true}}));
}

TEST(Hopping, WindowsPerRecordIsSizeOverAdvance) {
    WindowAssigner a(WindowSpec::hopping(60, 20));
    std::vector<Window> got;
    a.for_each(45, [&](Window w) { got.push_back(w); });
    EXPECT_EQ(got, (std::vector<Window>{{40, 100}, {20, 80}, {0, 60}}));
    EXPECT_EQ(a.windows_per_record(), 3);
}

// Sliding D = 10, grace 5, after Kafka Streams' sliding-window tests (KIP-450): left
// window [t−D, t] per record, right window [t+1, t+1+D] while a record lies in it,
// reported as [start, start + D + 1).
TEST(Sliding, InOrderRecordsMakeLeftAndRightWindows) {
    Harness h(WindowSpec::sliding(10, 5), EmitStrategy::OnWindowUpdate, 0,
              {{AggFn::CountStar, "", "n"}});
    h.push({{"k", 10}, {"k", 15}, {"k", 20}, {"k", 22}, {"k", 30}});
    h.commit(1000);
    std::vector<std::pair<Millis, std::string>> got;
    for (auto& r : h.rows()) {
        EXPECT_EQ(r.end, r.start + 11);
        got.emplace_back(r.start, r.values[0]);
    }
    EXPECT_EQ(got, (std::vector<std::pair<Millis, std::string>>{{0, "1"},
                                                                {5, "2"},
                                                                {10, "3"},
                                                                {11, "2"},
                                                                {12, "3"},
                                                                {16, "2"},
                                                                {20, "3"},
                                                                {21, "2"},
                                                                {23, "1"}}));
}

TEST(Sliding, OutOfOrderRecordUpdatesAndCreatesWindows) {
    Harness h(WindowSpec::sliding(10, 5), EmitStrategy::OnWindowUpdate, 20,
              {{AggFn::CountStar, "", "n"}});
    h.push({{"k", 10}, {"k", 15}, {"k", 20}, {"k", 22}, {"k", 30}, {"k", 13}});
    EXPECT_EQ(h.agg.stats().dropped_late_window, 0);
    h.commit(1000);
    std::vector<std::pair<Millis, std::string>> got;
    for (auto& r : h.rows()) got.emplace_back(r.start, r.values[0]);
    EXPECT_EQ(got, (std::vector<std::pair<Millis, std::string>>{{0, "1"},
                                                                {3, "2"},
                                                                {5, "3"},
                                                                {10, "4"},
                                                                {11, "3"},
                                                                {12, "4"},
                                                                {14, "3"},
                                                                {16, "2"},
                                                                {20, "3"},
                                                                {21, "2"},
                                                                {23, "1"}}));
}

TEST(Sliding, RecordWhoseOwnWindowClosedIsDroppedWhole) {
    Harness h(WindowSpec::sliding(10, 5), EmitStrategy::OnWindowUpdate, 0,
              {{AggFn::CountStar, "", "n"}});
    h.push({{"k", 10}, {"k", 30}});
    h.push({"k", 24});  // [14,24] closes at 24+1+5 = 30 ≤ W → late
    EXPECT_EQ(h.agg.stats().dropped_late_window, 1);
    h.push({"k", 25});  // closes at 31 > 30 → accepted
    EXPECT_EQ(h.agg.stats().dropped_late_window, 1);
    h.commit(1000);
    std::vector<std::pair<Millis, std::string>> got;
    for (auto& r : h.rows()) got.emplace_back(r.start, r.values[0]);
    // L(10)=[0,10]; L(25)=[15,25]; L(30)=[20,30]={25,30}; R(25)=[26,36]={30}
    EXPECT_EQ(got, (std::vector<std::pair<Millis, std::string>>{
                       {0, "1"}, {15, "1"}, {20, "2"}, {26, "1"}}));
}

TEST(Sliding, RecordsFartherApartThanDShareNoWindow) {
    Harness h(WindowSpec::sliding(10), EmitStrategy::OnWindowUpdate, 100,
              {{AggFn::CountStar, "", "n"}});
    h.push({{"k", 0}, {"k", 11}});  // 11 − 0 > 10
    h.commit(1000);
    for (auto& r : h.rows()) EXPECT_EQ(r.values[0], "1") << r;
    Harness g(WindowSpec::sliding(10), EmitStrategy::OnWindowUpdate, 100,
              {{AggFn::CountStar, "", "n"}});
    g.push({{"k", 0}, {"k", 10}});  // exactly D apart: one window holds both
    g.commit(1000);
    EXPECT_EQ(g.sink.at({"k", 0}).values[0], "2");
}

// Sessions, gap 10: merges when a record bridges sessions; the merged-away row is
// deleted in the same commit; count and sum add.
TEST(Session, BridgingRecordMergesAndRetracts) {
    Harness h(WindowSpec::session(10), EmitStrategy::OnWindowUpdate, 1000);
    h.push({{"a", 0, 1}, {"a", 25, 2}});
    h.commit();
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 1, 0, {"1", "1"}, false},
                                          {"a", 25, 26, 25, {"1", "2"}, false}}));
    h.push({"a", 10, 3});  // extends [0,0] to [0,10]
    h.push({"a", 17, 4});  // within 10 of both: merges [0,10] and [25,25]
    auto out = h.commit();
    ASSERT_EQ(out.deletes.size(), 1u);
    EXPECT_EQ(out.deletes[0].start, 25);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 26, 25, {"4", "10"}, false}}));
    EXPECT_EQ(h.agg.stats().sessions_merged, 1);
}

TEST(Session, ExtendingBackwardsMovesTheRow) {
    Harness h(WindowSpec::session(10), EmitStrategy::OnWindowUpdate, 1000);
    h.push({"a", 20, 1});
    h.commit();
    h.push({"a", 12, 1});
    auto out = h.commit();
    ASSERT_EQ(out.deletes.size(), 1u);
    EXPECT_EQ(out.deletes[0].start, 20);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 12, 21, 20, {"2", "2"}, false}}));
}

TEST(Session, ClosedSessionNeverReopens) {
    // gap 10, grace 0, no out-of-orderness: [0,5] closes once W ≥ 5 + 1 + 10 = 16.
    Harness h(WindowSpec::session(10));
    h.push({{"a", 0, 1}, {"a", 5, 1}, {"a", 16, 1}});
    h.commit();
    EXPECT_TRUE(h.sink.at({"a", 0}).final);
    h.push({"a", 12, 1});  // within the gap of [0,5], which is closed: joins [16,16]
    h.push({"a", 3, 1});   // own [3,3] closed at 14 ≤ 16, but within gap of the open
                           // [12,16]: joins it, over closed [0,5], which stays as it was
    h.push({"a", 17, 1});  // within gap of [0,5]... no: 17 > 5 + 10; joins [3,16]
    EXPECT_EQ(h.agg.stats().dropped_late_session, 0);
    h.commit(1000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 6, 5, {"2", "2"}, true},
                                          {"a", 3, 18, 17, {"4", "4"}, true}}));
}

// A record that would bridge into closed sessions only, its own session closed: dropped.
TEST(Session, RecordNearOnlyClosedSessionsIsDropped) {
    Harness h(WindowSpec::session(10));
    h.push({{"a", 0, 1}, {"a", 5, 1}, {"b", 30, 1}});  // W = 30 closes [0,5]
    h.commit();
    h.push({"a", 8, 1});  // own [8,8] closed at 19 ≤ 30, no open session: dropped
    EXPECT_EQ(h.agg.stats().dropped_late_session, 1);
    h.commit(1000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 6, 5, {"2", "2"}, true},
                                          {"b", 30, 31, 30, {"1", "1"}, true}}));
}

TEST(Session, LateRecordInsideAnOpenSessionCounts) {
    Harness h(WindowSpec::session(10));
    h.push({{"a", 0, 1}, {"a", 9, 1}, {"a", 18, 1}, {"a", 27, 1}});  // W = 27, one session
    h.push({"a", 4, 5});  // its own [4,4] would close at 15 ≤ 27, but [0,27] is open
    EXPECT_EQ(h.agg.stats().dropped_late_session, 0);
    h.commit();
    EXPECT_EQ(h.sink.at({"a", 0}).values, (std::vector<std::string>{"5", "9"}));
}

// README "Window kinds": a record within gap of an open session joins it even when its own [t, t]
// is closed, extending the session backwards; the row under the old start is retracted.
TEST(Session, LateRecordExtendsAnOpenSessionBackwards) {
    // session(20 s, grace 3 s), W = max event time − 10 s
    Harness h(WindowSpec::session(20000, 3000), EmitStrategy::OnWindowUpdate, 10000);
    h.push({{"a", 30000, 1}, {"a", 50000, 2}});  // W = 40 s
    h.commit();
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 30000, 50001, 50000, {"2", "3"}, false}}));
    h.push({"a", 15000, 4});  // its own [15 s] closed at 38.001 s ≤ 40 s, but 30 s is open
    EXPECT_EQ(h.agg.stats().dropped_late_session, 0);
    auto out = h.commit();
    ASSERT_EQ(out.deletes.size(), 1u);
    EXPECT_EQ(out.deletes[0].start, 30000);
    int tombstones = 0;
    for (auto& s : out.state) tombstones += s.removed && s.start == 30000;
    EXPECT_EQ(tombstones, 1);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 15000, 50001, 50000, {"3", "7"}, false}}));
    h.commit(1000000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 15000, 50001, 50000, {"3", "7"}, true}}));
    EXPECT_EQ(h.agg.stats().dropped_late_session, 0);
}

// The sink knows a session by (key, first record): a late extension may reach back over a
// closed session, but never come to start where it starts (that would overwrite its final row).
TEST(Session, LateExtensionNeverTakesAClosedSessionsStart) {
    // gap 10, no grace, no out-of-orderness: [0,0] closes once W ≥ 11.
    Harness h(WindowSpec::session(10));
    h.push({{"a", 0, 1}, {"b", 11, 1}});  // W = 11 closes a's [0,0]
    h.commit();
    EXPECT_TRUE(h.sink.at({"a", 0}).final);
    h.push({"a", 13, 1});  // own [13,13] open (closes at 24): a new session, not [0,0]
    h.push({"a", 0, 5});   // late, within gap of [13,13]: would start at 0, where [0,0] does
    h.push({"a", 4, 5});   // late, within gap of [13,13]: extends it to [4,13]
    EXPECT_EQ(h.agg.stats().dropped_late_session, 1);
    h.commit(1000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 1, 0, {"1", "1"}, true},
                                          {"a", 4, 14, 13, {"2", "6"}, true},
                                          {"b", 11, 12, 11, {"1", "1"}, true}}));
}

// A closed session keeps its start reserved until W ≥ end + retention + gap, whether it
// closed in this commit or an earlier one, and across a restart.
TEST(Session, ClosedSessionStartStaysReservedForAWhile) {
    for (int variant : {0, 1, 2}) {
        // gap 10, no grace, out-of-orderness 20; retention = gap + grace = 10
        Harness first(WindowSpec::session(10), EmitStrategy::OnWindowUpdate, 20);
        first.push({{"a", 0, 1}, {"a", 2, 1}, {"a", 15, 1}, {"a", 13, 1}});  // [0,2], [13,15]
        first.push({"b", 40, 1});  // W = 20 closes [0,2] (at 13); [13,15] open (until 26)
        if (variant >= 1) first.commit();
        std::unique_ptr<Harness> after = variant == 2 ? first.restarted() : nullptr;
        Harness& h = after ? *after : first;
        h.push({"a", 4, 1});  // late, after [0,2]'s last: extends [13,15] to [4,15]
        h.push({"a", 0, 1});  // late, within gap of [4,15], but where [0,2] starts: dropped
        h.push({"a", 2, 1});  // late, onto [0,2]'s last record: joins, [2,15]
        h.push({"a", 3, 1});  // joins
        EXPECT_EQ(h.agg.stats().dropped_late_session, 1) << variant;
        h.commit(1000);
        EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 3, 2, {"2", "2"}, true},
                                              {"a", 2, 16, 15, {"5", "5"}, true},
                                              {"b", 40, 41, 40, {"1", "1"}, true}}))
            << variant;
    }
    // Once W ≥ 3 + 10 + 10 = 23 it is forgotten: the open [15] may no longer extend back
    // to its last record (2) or before, since whether a session began there is not known.
    Harness h(WindowSpec::session(10), EmitStrategy::OnWindowUpdate, 20);
    h.push({{"a", 0, 1}, {"a", 2, 1}, {"a", 15, 1}});
    h.push({"b", 43, 1});  // W = 23: [0,2] closed and forgotten; [15] open until 26
    h.commit();
    h.push({"a", 5, 1});  // joins [15] → [5,15]
    h.push({"a", 2, 1});  // onto the forgotten [0,2]'s last record: dropped
    h.push({"a", 3, 1});  // joins → [3,15]
    EXPECT_EQ(h.agg.stats().dropped_late_session, 1);
    h.commit(1000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 3, 2, {"2", "2"}, true},
                                          {"a", 3, 16, 15, {"3", "3"}, true},
                                          {"b", 43, 44, 43, {"1", "1"}, true}}));
}

// README "Window kinds"'s own case: a late record extends an open session that itself began late.
TEST(Session, LateRecordExtendsASessionThatBeganLate) {
    // gap 30 s, grace 10 s, no out-of-orderness
    Harness h(WindowSpec::session(30000, 10000));
    h.push({"x", 100000, 1});  // W = 100 s
    h.push({"b", 65000, 1});   // own [65] open until 106 s: a session
    h.push({"b", 58000, 1});   // own [58] closed (99 s), within gap of [65]: joins
    EXPECT_EQ(h.agg.stats().dropped_late_session, 0);
    h.commit(10000000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"b", 58000, 65001, 65000, {"2", "2"}, true},
                                          {"x", 100000, 100001, 100000, {"1", "1"}, true}}));
}

TEST(Session, KeysAreIndependent) {
    Harness h(WindowSpec::session(5), EmitStrategy::OnWindowUpdate, 100);
    h.push({{"a", 0, 1}, {"b", 3, 1}, {"a", 4, 1}});
    h.commit(1000);
    EXPECT_EQ(h.rows(), (std::vector<Row>{{"a", 0, 5, 4, {"2", "2"}, true},
                                          {"b", 3, 4, 3, {"1", "1"}, true}}));
}

// A closed session's final state version goes to the segment of last + gap, which is kept
// as long as the closed session is remembered (W < end + retention + gap).
TEST(Session, FinalStateRowLiesInTheSegmentOfLastPlusGap) {
    Harness h(WindowSpec::session(10));  // retention 10: segments of 60 s
    h.push({"a", 59990, 1});
    h.commit();               // [59990] open: its row is in the segment of its last record (0)
    h.push({"b", 60006, 1});  // W = 60006 closes [59990] (at 60001)
    h.push({"a", 60005, 1});  // not within gap of [59990]: a session of its own
    auto out = h.commit();
    std::vector<Millis> segments;
    for (const auto& s : out.state)
        if (s.key == "a" && s.start == 59990 && !s.removed) segments.push_back(s.segment);
    EXPECT_EQ(segments, std::vector<Millis>{60000});
    // After a restart the closed session is still remembered (until W ≥ 59991 + 10 + 10).
    auto r = h.restarted();
    r->push({"a", 59995, 1});  // own [59995] closed, within gap of [60005]: extends it
    r->push({"a", 59990, 1});  // would start where closed [59990] starts: dropped
    EXPECT_EQ(r->agg.stats().dropped_late_session, 1);
    r->commit(1000000);
    EXPECT_EQ(r->rows(), (std::vector<Row>{{"a", 59990, 59991, 59990, {"1", "1"}, true},
                                           {"a", 59995, 60006, 60005, {"2", "2"}, true},
                                           {"b", 60006, 60007, 60006, {"1", "1"}, true}}));
}

// A long open session may extend back as far as what could have been forgotten when it
// began (Kafka Streams accepts these too), and keeps that bound across a restart.
TEST(Session, LongSessionExtendsBackToItsFloorAcrossRestarts) {
    // gap 30 s, grace 10 s, retention 40 s: floor = W − 1 − 70 s when the session begins
    Harness h(WindowSpec::session(30000, 10000));
    h.push({{"a", 100000, 1}, {"a", 125000, 1}, {"a", 150000, 1}, {"a", 175000, 1}});  // W = 175 s
    h.commit();
    auto r = h.restarted();
    r->push({"a", 80000, 1});  // 95 s behind W, within gap of [100, 175]: joins
    r->push({"a", 55000, 1});  // likewise
    r->push({"a", 29000, 1});  // within gap, but at the floor (W was 100 s when the session
                               // began: 100 − 0.001 − 70 s): dropped
    EXPECT_EQ(r->agg.stats().dropped_late_session, 1);
    r->push({"a", 30000, 1});  // above it: joins
    r->commit(10000000);
    EXPECT_EQ(r->agg.stats().dropped_late_session, 1);
    EXPECT_EQ(r->rows(), (std::vector<Row>{{"a", 30000, 175001, 175000, {"7", "7"}, true}}));
}
