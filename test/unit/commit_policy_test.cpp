// When the worker commits (core::CommitPolicy): the interval, the bounds on one commit, and
// the longer interval while far behind the topic.
#include "stoatflow/core/commit_policy.hpp"

#include <gtest/gtest.h>

using stoatflow::core::CommitPolicy;

TEST(CommitPolicy, EveryIntervalWhenCaughtUp) {
    const CommitPolicy p{1000, 10000};
    EXPECT_FALSE(p.due(999, 10, 5, 0));
    EXPECT_TRUE(p.due(1000, 10, 5, 0));
    EXPECT_TRUE(p.due(1000, 0, 0, 0));  // nothing new: still due (W and idle flags may move)
    // A small backlog is not catching up.
    EXPECT_TRUE(p.due(1000, 10, 5, CommitPolicy::kCatchupLagRecords - 1));
}

TEST(CommitPolicy, CatchingUpWaitsForTheLongerInterval) {
    const CommitPolicy p{1000, 10000};
    const std::int64_t behind = CommitPolicy::kCatchupLagRecords;
    EXPECT_TRUE(p.catching_up(behind));
    EXPECT_FALSE(p.due(1000, 10, 5, behind));
    EXPECT_FALSE(p.due(9999, 10, 5, behind));
    EXPECT_TRUE(p.due(10000, 10, 5, behind));
    // Once the backlog is consumed the normal interval applies again at once.
    EXPECT_TRUE(p.due(1000, 10, 5, 0));
}

TEST(CommitPolicy, CatchupOffWhenNotLongerThanTheInterval) {
    for (const CommitPolicy p :
         {CommitPolicy{1000, 0}, CommitPolicy{1000, 1000}, CommitPolicy{5000, 2000}}) {
        EXPECT_FALSE(p.catching_up(10'000'000));
        EXPECT_TRUE(p.due(p.interval, 1, 1, 10'000'000));
        EXPECT_TRUE(p.due(1, CommitPolicy::kMaxRecords, 0, 10'000'000));
    }
}

TEST(CommitPolicy, BoundsOnOneCommit) {
    const CommitPolicy p{1000, 10000};
    EXPECT_FALSE(p.due(0, CommitPolicy::kMaxRecords - 1, CommitPolicy::kMaxChangedWindows - 1, 0));
    EXPECT_TRUE(p.due(0, CommitPolicy::kMaxRecords, 0, 0));
    EXPECT_TRUE(p.due(0, 0, CommitPolicy::kMaxChangedWindows, 0));
    // Catching up: larger commits (fewer rewrites of windows still open).
    const std::int64_t behind = 1'000'000;
    EXPECT_FALSE(p.due(0, CommitPolicy::kMaxRecords, CommitPolicy::kMaxChangedWindows, behind));
    EXPECT_TRUE(p.due(0, CommitPolicy::kMaxRecordsCatchingUp, 0, behind));
    EXPECT_TRUE(p.due(0, 0, CommitPolicy::kMaxChangedWindowsCatchingUp, behind));
}

// A backlog far ahead of the watermark spreads changed windows over many segment tables; each
// one a commit writes stays locked until it commits: a commit comes before there are too many.
TEST(CommitPolicy, BoundOnSegmentTablesPerCommit) {
    const CommitPolicy p{1000, 10000};
    EXPECT_FALSE(p.due(0, 1, 1, 0, CommitPolicy::kMaxSegmentsPerCommit - 1));
    EXPECT_TRUE(p.due(0, 1, 1, 0, CommitPolicy::kMaxSegmentsPerCommit));
    EXPECT_TRUE(p.due(0, 1, 1, 1'000'000, CommitPolicy::kMaxSegmentsPerCommit));  // catching up too
}
