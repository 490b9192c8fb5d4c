// Consumption aligned by event time (README "Aligned consumption"): which partitions pause.
#include "stoatflow/flow/alignment.hpp"

#include <gtest/gtest.h>

using namespace stoatflow;
using core::TopicPartition;
using flow::align;
using flow::PartitionTime;

namespace {
PartitionTime part(std::int32_t p, core::Millis max, bool unread = true, bool idle = false) {
    return PartitionTime{TopicPartition{0, p}, max, unread, idle};
}
const std::set<TopicPartition> kNone;
}  // namespace

TEST(Alignment, SpanIsOutOfOrdernessWithAFloor) {
    EXPECT_EQ(flow::alignment_span(3'600'000), 3'600'000);
    EXPECT_EQ(flow::alignment_span(0), flow::kMinAlignmentSpan);
}

TEST(Alignment, PartitionsAheadOfTheSlowestBeyondTheSpanPause) {
    const auto a = align({part(0, 1000), part(1, 1100), part(2, 5000), part(3, 1000 + 200)}, kNone,
                         200, false);
    EXPECT_EQ(a.floor, 1000);
    EXPECT_EQ(a.paused, (std::set<TopicPartition>{{0, 2}}));  // exactly the span ahead still reads
}

TEST(Alignment, TheSlowestIsNeverPausedEvenInDrain) {
    const auto a = align({part(0, 7000), part(1, 1000), part(2, 1000)}, kNone, 200, true);
    EXPECT_EQ(a.paused, (std::set<TopicPartition>{{0, 0}}));
    const auto one = align({part(5, 42)}, kNone, 0, true);
    EXPECT_TRUE(one.paused.empty());
}

TEST(Alignment, ResumesOnlyHalfASpanAhead) {
    const std::set<TopicPartition> was{{0, 1}};
    EXPECT_EQ(align({part(0, 1000), part(1, 1150)}, was, 200, false).paused, was);
    EXPECT_TRUE(align({part(0, 1000), part(1, 1100)}, was, 200, false).paused.empty());
    // Not paused before: 150 ahead is within the span.
    EXPECT_TRUE(align({part(0, 1000), part(1, 1150)}, kNone, 200, false).paused.empty());
}

TEST(Alignment, IdleOrCaughtUpPartitionsHoldNothingBack) {
    // Partition 0 is far behind but idle, partition 1 far behind but read to its end: neither sets
    // the floor, so the others are not paused for them (they could wait forever).
    const auto a =
        align({part(0, 10, true, true), part(1, 20, false), part(2, 9000), part(3, 9100)}, kNone,
              200, false);
    EXPECT_EQ(a.floor, 9000);
    EXPECT_TRUE(a.paused.empty());
}

TEST(Alignment, PartitionsWithoutARecordYetAreReadAndHoldNothing) {
    const auto a = align({part(0, core::kNoTime), part(1, 1000), part(2, 9000)}, kNone, 200, true);
    EXPECT_EQ(a.floor, 1000);
    EXPECT_EQ(a.paused, (std::set<TopicPartition>{{0, 2}}));
    EXPECT_TRUE(
        align({part(0, core::kNoTime), part(1, core::kNoTime)}, kNone, 0, true).paused.empty());
}

TEST(Alignment, APausedPartitionStaysPausedWhileTheFloorMovesTowardsIt) {
    std::set<TopicPartition> paused = kNone;
    core::Millis slow = 0;
    for (int step = 0; step < 60; ++step, slow += 100) {
        paused = align({part(0, slow), part(1, 6000)}, paused, 1000, false).paused;
        const bool ahead = 6000 - slow > 500;
        EXPECT_EQ(paused.count({0, 1}) == 1, ahead) << "at " << slow;
        EXPECT_EQ(paused.count({0, 0}), 0u);
    }
}

TEST(Alignment, HostileEventTimesNeitherOverflowNorPauseForever) {
    // A record from the far future on partition 1, one from the far past on partition 0.
    const core::Millis past = INT64_MIN + 1, future = INT64_MAX;
    auto a = align({part(0, past), part(1, future), part(2, 1000)}, kNone, 200, false);
    EXPECT_EQ(a.floor, past);
    EXPECT_EQ(a.paused, (std::set<TopicPartition>{{0, 1}, {0, 2}}));
    // Once the others are read to their end, the one far ahead is read too.
    a = align({part(0, past, false), part(1, future), part(2, 1000, false)}, a.paused, 200, false);
    EXPECT_TRUE(a.paused.empty());
}

// The window state against stoatflow.worker_memory_limit: drain before the limit, stop past it.
TEST(MemoryAction, NoLimitOrLowStateReads) {
    using flow::MemoryAction;
    EXPECT_EQ(flow::memory_action(1'000'000'000, 0, false, true), MemoryAction::read);
    EXPECT_EQ(flow::memory_action(750, 1000, false, true), MemoryAction::read);  // exactly 3/4
    EXPECT_EQ(flow::memory_action(751, 1000, false, true), MemoryAction::drain);
}

TEST(MemoryAction, DrainsOnlyWhenAPartitionIsAheadAndKeepsDrainingToHalf) {
    using flow::MemoryAction;
    EXPECT_EQ(flow::memory_action(900, 1000, false, false), MemoryAction::read);
    EXPECT_EQ(flow::memory_action(600, 1000, true, true), MemoryAction::drain);  // hysteresis
    EXPECT_EQ(flow::memory_action(500, 1000, true, true), MemoryAction::read);
    EXPECT_EQ(flow::memory_action(600, 1000, false, true), MemoryAction::read);
    // draining, but the partitions came level: nothing would wait, read as usual
    EXPECT_EQ(flow::memory_action(900, 1000, true, false), MemoryAction::read);
}

TEST(MemoryAction, PastTheLimitStopsWhateverThePartitions) {
    using flow::MemoryAction;
    EXPECT_EQ(flow::memory_action(1001, 1000, true, true), MemoryAction::stop);
    EXPECT_EQ(flow::memory_action(1001, 1000, false, false), MemoryAction::stop);
    EXPECT_EQ(flow::memory_action(1000, 1000, false, false),
              MemoryAction::read);  // at it: not past
    EXPECT_EQ(flow::memory_action(INT64_MAX, INT64_MAX - 1, false, true), MemoryAction::stop);
}
