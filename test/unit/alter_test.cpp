// alter_aggregation's decisions (core::plan_alter) and what an engine restored under the new
// parameters does with the windows it held (README "Altering an aggregation").
#include "engine_harness.hpp"

#include "stoatflow/core/alter_plan.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/segment_layout.hpp"

#include <gtest/gtest.h>

namespace stoatflow::test {
namespace {

AggregationParams params(WindowSpec spec, Millis retention = kNoTime,
                         EmitStrategy emit = EmitStrategy::OnWindowUpdate) {
    const Millis r = resolve_retention(spec, retention);
    return {spec, emit, r, SegmentLayout(r, spec.length()).interval()};
}

std::string sqlstate_of(const AggregationParams& p, const AlterRequest& req) {
    try {
        plan_alter(p, req);
    } catch (const Error& e) {
        return e.sqlstate();
    }
    return "";
}

TEST(AlterPlan, NothingGivenIsANotice) {
    const AlterPlan plan = plan_alter(params(WindowSpec::tumbling(60'000)), {});
    EXPECT_FALSE(plan.changes);
    ASSERT_EQ(plan.notices.size(), 1u);
    EXPECT_NE(plan.notices[0].find("nothing to change"), std::string::npos);
}

TEST(AlterPlan, SameValuesChangeNothing) {
    const auto p = params(WindowSpec::tumbling(60'000, 5'000));
    const AlterPlan plan = plan_alter(p, {5'000, EmitStrategy::OnWindowUpdate, std::nullopt});
    EXPECT_FALSE(plan.changes);
    EXPECT_EQ(plan.notices.size(), 1u);
}

TEST(AlterPlan, GraceRaisedRaisesAMinimalRetention) {
    const auto p = params(WindowSpec::tumbling(60'000));  // retention 60 s, segments of 60 s
    const AlterPlan plan = plan_alter(p, {30'000, std::nullopt, std::nullopt});
    EXPECT_TRUE(plan.changes);
    EXPECT_EQ(plan.after.spec.grace, 30'000);
    EXPECT_EQ(plan.after.retention, 90'000);
    EXPECT_EQ(plan.after.segment_interval, 60'000);
    ASSERT_EQ(plan.notices.size(), 1u);
    EXPECT_NE(plan.notices[0].find("retention raised to 90000 ms"), std::string::npos);
}

TEST(AlterPlan, GraceLoweredKeepsRetention) {
    const auto p = params(WindowSpec::hopping(60'000, 10'000, 30'000));
    const AlterPlan plan = plan_alter(p, {0, std::nullopt, std::nullopt});
    EXPECT_TRUE(plan.changes);
    EXPECT_EQ(plan.after.spec.grace, 0);
    EXPECT_EQ(plan.after.retention, 90'000);
    EXPECT_TRUE(plan.notices.empty());
}

TEST(AlterPlan, RefusesWhatCannotBeHonoured) {
    const auto p = params(WindowSpec::tumbling(60'000, 10'000));  // retention 70 s
    EXPECT_EQ(sqlstate_of(p, {-1, std::nullopt, std::nullopt}), "22023");
    EXPECT_EQ(sqlstate_of(p, {kMaxWindowMillis + 1, std::nullopt, std::nullopt}), "22023");
    // below the minimum of size + grace
    EXPECT_EQ(sqlstate_of(p, {std::nullopt, std::nullopt, 69'999}), "22023");
    // a grace with an explicit retention that does not cover it
    EXPECT_EQ(sqlstate_of(p, {20'000, std::nullopt, 70'000}), "22023");
}

TEST(AlterPlan, RetentionWithinTheStoredSegmentInterval) {
    const auto p = params(WindowSpec::tumbling(60'000));  // segments of 60 s
    EXPECT_EQ(max_retention_for(60'000, 60'000), 120'001);
    const AlterPlan ok = plan_alter(p, {std::nullopt, std::nullopt, 120'000});
    EXPECT_TRUE(ok.changes);
    EXPECT_EQ(ok.after.retention, 120'000);
    EXPECT_EQ(ok.after.segment_interval, 60'000);
    try {
        plan_alter(p, {std::nullopt, std::nullopt, 3'600'000});
        FAIL() << "a retention needing longer segments was taken";
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), std::string("22023"));
        EXPECT_NE(std::string(e.what()).find("segments of 1800000 ms"), std::string::npos);
        EXPECT_NE(e.hint().find("at most 120001 ms"), std::string::npos);
    }
    // a long retention laid out in long segments may shrink: the interval stays
    const auto day = params(WindowSpec::tumbling(60'000), 86'400'000);
    const AlterPlan down = plan_alter(day, {std::nullopt, std::nullopt, 3'600'000});
    EXPECT_EQ(down.after.retention, 3'600'000);
    EXPECT_EQ(down.after.segment_interval, 43'200'000);
}

TEST(AlterPlan, EmitChange) {
    const auto p = params(WindowSpec::session(30'000));
    const AlterPlan plan = plan_alter(p, {std::nullopt, EmitStrategy::OnWindowClose, std::nullopt});
    EXPECT_TRUE(plan.changes);
    EXPECT_EQ(plan.after.emit, EmitStrategy::OnWindowClose);
    EXPECT_EQ(plan.after.spec, p.spec);
}

TEST(ClosedFrontier, PerKind) {
    EXPECT_EQ(WindowSpec::tumbling(10, 3).closed_frontier(100), 97);
    EXPECT_EQ(WindowSpec::sliding(10, 3).closed_frontier(100), 97);
    EXPECT_EQ(WindowSpec::session(10, 3).closed_frontier(100), 87);
    EXPECT_EQ(WindowSpec::tumbling(10).closed_frontier(kNoTime), kNoTime);
    WindowSpec s = WindowSpec::tumbling(10, 50);
    s.closed_through = 90;
    EXPECT_EQ(s.closed_frontier(100), 90);
    EXPECT_EQ(s.closed_frontier(kNoTime), 90);
    EXPECT_EQ(s.closed_frontier(200), 150);
    EXPECT_TRUE(s.is_closed(90, kNoTime));
    EXPECT_FALSE(s.is_closed(91, 100));
}

// The engine after alter_aggregation: what the worker does (the catalog's new definition, the
// committed closed frontier and emit, then restore from the state rows).
std::unique_ptr<Harness> altered(const Harness& h, WindowSpec before, EmitStrategy before_emit,
                                 WindowSpec after, EmitStrategy after_emit) {
    after.closed_through = before.closed_frontier(h.wm.current());
    auto p = std::make_unique<Harness>(after, after_emit);
    p->wm.restore(h.wm.serialize());
    p->agg.restore_committed_under(before_emit);
    std::map<std::pair<std::string, Millis>, const WindowStateRow*> newest;
    for (const auto& s : h.state_log) newest[{s.key, s.start}] = &s;
    for (const auto& [id, row] : newest)
        if (!row->removed) p->agg.restore(*row, p->wm.current());
    p->sink = h.sink;
    p->state_log = h.state_log;
    return p;
}

TEST(AlterEngine, RaisedGraceNeverReopensAClosedWindow) {
    const WindowSpec before = WindowSpec::tumbling(10'000);
    Harness h(before);
    h.push({{"k", 1'000, 1}, {"k", 11'000, 1}});  // W = 11 s: [0, 10 s) closed with 1
    h.commit();
    auto a = altered(h, before, EmitStrategy::OnWindowUpdate, WindowSpec::tumbling(10'000, 5'000),
                     EmitStrategy::OnWindowUpdate);
    a->push({"k", 5'000, 1});  // on time under the new grace, but its window closed before
    a->commit();
    EXPECT_EQ(a->agg.stats().dropped_late_window, 1);
    EXPECT_EQ(a->sink.at({"k", 0}).values[0], "1");
    // [10 s, 20 s) is still open: the new grace keeps it open past W = 21 s
    a->push({{"k", 21'000, 1}, {"k", 12'000, 1}});
    a->commit();
    EXPECT_EQ(a->agg.stats().dropped_late_window, 1);
    EXPECT_EQ(a->sink.at({"k", 10'000}).values[0], "2");
    EXPECT_FALSE(a->sink.at({"k", 10'000}).final);
    // and a second restart keeps [0, 10 s) closed by the committed frontier
    WindowSpec again = WindowSpec::tumbling(10'000, 5'000);
    again.closed_through = 11'000;
    auto b = altered(*a, again, EmitStrategy::OnWindowUpdate, WindowSpec::tumbling(10'000, 9'000),
                     EmitStrategy::OnWindowUpdate);
    b->push({"k", 9'000, 1});
    b->commit();
    EXPECT_EQ(b->agg.stats().dropped_late_window, 1);
    EXPECT_EQ(b->sink.at({"k", 0}).values[0], "1");
}

TEST(AlterEngine, LoweredGraceClosesAtTheNextCommit) {
    const WindowSpec before = WindowSpec::tumbling(10'000, 10'000);
    Harness h(before, EmitStrategy::OnWindowClose);
    h.push({{"k", 1'000, 1}, {"k", 2'000, 1}, {"k", 15'000, 1}});  // W = 15 s: [0, 10 s) open
    h.commit();
    EXPECT_TRUE(h.sink.empty());
    auto a = altered(h, before, EmitStrategy::OnWindowClose, WindowSpec::tumbling(10'000),
                     EmitStrategy::OnWindowClose);
    const CommitOutput out = a->commit();
    ASSERT_EQ(out.upserts.size(), 1u);
    EXPECT_TRUE(out.upserts[0].final);
    EXPECT_EQ(a->sink.at({"k", 0}).values[0], "2");
    EXPECT_EQ(a->sink.count({"k", 10'000}), 0u);  // [10 s, 20 s) stays open
}

TEST(AlterEngine, UpdateToCloseKeepsRowsAndWritesOnceAtClose) {
    const WindowSpec spec = WindowSpec::tumbling(10'000);
    Harness h(spec, EmitStrategy::OnWindowUpdate);
    h.push({{"k", 1'000, 1}});
    h.commit();
    ASSERT_EQ(h.sink.size(), 1u);  // written while open
    auto a = altered(h, spec, EmitStrategy::OnWindowUpdate, spec, EmitStrategy::OnWindowClose);
    a->push({{"k", 2'000, 1}, {"k", 3'000, 1}});
    EXPECT_TRUE(a->commit().upserts.empty());  // open: nothing more written
    EXPECT_EQ(a->sink.at({"k", 0}).values[0], "1");
    a->push({"k", 10'500, 1});
    const CommitOutput out = a->commit();
    ASSERT_EQ(out.upserts.size(), 1u);
    EXPECT_TRUE(out.upserts[0].final);
    EXPECT_FALSE(out.upserts[0].fresh);  // the sink holds a row for it: overwritten
    EXPECT_EQ(a->sink.at({"k", 0}).values[0], "3");
}

TEST(AlterEngine, CloseToUpdateWritesOpenWindowsAtTheNextCommit) {
    const WindowSpec spec = WindowSpec::hopping(10'000, 5'000);
    Harness h(spec, EmitStrategy::OnWindowClose);
    h.push({{"k", 6'000, 1}});  // windows [0, 10 s) and [5 s, 15 s), both open
    h.commit();
    EXPECT_TRUE(h.sink.empty());
    auto a = altered(h, spec, EmitStrategy::OnWindowClose, spec, EmitStrategy::OnWindowUpdate);
    const CommitOutput out = a->commit();  // no new record
    ASSERT_EQ(out.upserts.size(), 2u);
    for (const auto& u : out.upserts) {
        EXPECT_FALSE(u.final);
        EXPECT_TRUE(u.fresh);
    }
    EXPECT_EQ(a->sink.at({"k", 0}).values[0], "1");
    EXPECT_EQ(a->sink.at({"k", 5'000}).values[0], "1");
    EXPECT_TRUE(a->commit().upserts.empty());  // written once, not at every commit
}

}  // namespace
}  // namespace stoatflow::test
