// The source worker's decisions without a server: sink retry backoff, the status a source shows,
// and when it commits, on a ManualClock.
#include "stoatflow/flow/clock.hpp"
#include "stoatflow/flow/worker_policy.hpp"

#include <gtest/gtest.h>

#include <vector>

using namespace stoatflow;
using namespace stoatflow::flow;

TEST(Backoff, DoublesFromFirstToMaxAndStartsOverAfterSuccess) {
    Backoff b(1000, 30000);
    std::vector<core::Millis> delays;
    for (int i = 0; i < 7; ++i) delays.push_back(b.failed());
    EXPECT_EQ(delays, (std::vector<core::Millis>{1000, 2000, 4000, 8000, 16000, 30000, 30000}));
    b.succeeded();
    EXPECT_EQ(b.failed(), 1000);
}

TEST(SinkRetry, FailingSinkWaitsOneSecondDoublingToThirtySeconds) {
    ManualClock clock(100000);
    SinkRetry s;
    EXPECT_FALSE(s.owed());
    EXPECT_FALSE(s.due(clock.now()));
    const std::vector<core::Millis> expected{1000, 2000, 4000, 8000, 16000, 30000, 30000};
    for (core::Millis delay : expected) {
        s.failed(clock.now(), "sink gone");
        EXPECT_TRUE(s.owed());
        EXPECT_EQ(s.error(), "sink gone");
        EXPECT_EQ(s.delay(), delay);
        clock.advance(delay - 1);
        EXPECT_TRUE(s.waiting(clock.now()));
        EXPECT_FALSE(s.due(clock.now()));
        clock.advance(1);
        EXPECT_TRUE(s.due(clock.now()));
        EXPECT_FALSE(s.waiting(clock.now()));
    }
    s.succeeded();
    EXPECT_FALSE(s.owed());
    EXPECT_EQ(s.error(), "");
    s.failed(clock.now(), "again");
    EXPECT_EQ(s.delay(), kSinkRetryFirstMs);
}

TEST(SinkRetry, OwedAfterRestoreIsDueAtOnce) {
    SinkRetry s;
    s.owe();
    EXPECT_TRUE(s.due(0));
    EXPECT_FALSE(s.waiting(0));
}

namespace {
StatusRule::Shown shown(const StatusRule& r, core::Millis now) {
    StatusRule::Shown s{"(unchanged)", ""};
    r.decide(now, &s);
    return s;
}
}  // namespace

TEST(StatusRule, BrokerErrorShowsUntilProgressOrUntilItIsOld) {
    ManualClock clock(1'000'000);
    StatusRule r;
    r.progress(clock.now());
    EXPECT_EQ(shown(r, clock.now()), (StatusRule::Shown{"running", ""}));
    clock.advance(10);
    r.broker_error(clock.now(), "broker down");
    EXPECT_EQ(shown(r, clock.now()), (StatusRule::Shown{"error", "broker down"}));
    clock.advance(kBrokerErrorShownMs - 1);
    EXPECT_EQ(shown(r, clock.now()).status, "error");
    clock.advance(1);  // nothing new for kBrokerErrorShownMs: running, the last error still told
    EXPECT_EQ(shown(r, clock.now()), (StatusRule::Shown{"running", "broker down"}));
    r.broker_error(clock.now(), "again");
    EXPECT_EQ(shown(r, clock.now()).status, "error");
    clock.advance(5);
    r.progress(clock.now());  // records flow: running at once
    EXPECT_EQ(shown(r, clock.now()), (StatusRule::Shown{"running", "again"}));
}

TEST(StatusRule, WorkerFailureStaysUntilACommitSucceeds) {
    ManualClock clock(1'000'000);
    StatusRule r;
    r.worker_failed("sink exploded");
    r.progress(clock.now());
    // Restarted and consuming, but nothing committed yet: leave 'error' shown (no flapping).
    StatusRule::Shown s{"error", "sink exploded"};
    EXPECT_FALSE(r.decide(clock.now(), &s));
    EXPECT_EQ(s.status, "error");
    EXPECT_TRUE(r.committed());
    EXPECT_FALSE(r.committed());
    EXPECT_EQ(shown(r, clock.now()).status, "running");
}

TEST(StatusBoard, WritesOnlyChanges) {
    StatusBoard b;
    EXPECT_TRUE(b.change("running", ""));
    EXPECT_FALSE(b.change("running", ""));
    EXPECT_TRUE(b.change("running", "slow broker"));
    EXPECT_TRUE(b.change("error", "slow broker"));
    EXPECT_FALSE(b.change("error", "slow broker"));
}

TEST(CommitTimer, CommitsEveryIntervalOrWhenTheCommitWouldGrowTooLarge) {
    ManualClock clock(5000);
    const core::CommitPolicy policy{1000, 10000};
    CommitTimer t;
    t.committed(clock.now());
    clock.advance(999);
    EXPECT_FALSE(t.due(policy, clock.now(), 10, 10, 0, 1));
    clock.advance(1);
    EXPECT_TRUE(t.due(policy, clock.now(), 10, 10, 0, 1));
    t.committed(clock.now());
    EXPECT_FALSE(t.due(policy, clock.now(), 0, 0, 0, 0));
    EXPECT_TRUE(t.due(policy, clock.now(), core::CommitPolicy::kMaxRecords, 0, 0, 0));
    EXPECT_TRUE(t.due(policy, clock.now(), 0, 0, 0, core::CommitPolicy::kMaxSegmentsPerCommit));
}

TEST(CommitTimer, FarBehindCommitsAtTheCatchupInterval) {
    ManualClock clock(0);
    const core::CommitPolicy policy{1000, 10000};
    CommitTimer t;
    t.committed(clock.now());
    clock.advance(5000);
    const std::int64_t backlog = core::CommitPolicy::kCatchupLagRecords;
    EXPECT_FALSE(t.due(policy, clock.now(), 100, 100, backlog, 1));
    EXPECT_TRUE(t.due(policy, clock.now(), 100, 100, backlog - 1, 1));
    clock.advance(5000);
    EXPECT_TRUE(t.due(policy, clock.now(), 100, 100, backlog, 1));
    // Turned off (not above commit_interval): the plain interval.
    const core::CommitPolicy off{1000, 0};
    t.committed(clock.now());
    clock.advance(1000);
    EXPECT_TRUE(t.due(off, clock.now(), 0, 0, backlog, 0));
}
