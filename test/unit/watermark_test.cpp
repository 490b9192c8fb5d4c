// The watermark rules of README "Time and the watermark": min over partitions holding data, minus
// out-of-orderness; monotonic; empty and idle partitions; persistence.
#include "stoatflow/core/watermark.hpp"

#include "stoatflow/core/error.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

using namespace stoatflow::core;

TEST(Watermark, NoRecordsNoWatermark) {
    Watermark wm(10);
    EXPECT_EQ(wm.current(), kNoTime);
}

TEST(Watermark, MaxEventTimeMinusOutOfOrderness) {
    Watermark wm(10);
    EXPECT_EQ(wm.observe(0, 100), 90);
    EXPECT_EQ(wm.observe(0, 50), 90);  // an older record does not move it
    EXPECT_EQ(wm.observe(0, 130), 120);
}

TEST(Watermark, MinimumOverPartitionsThatHoldData) {
    Watermark wm(0);
    wm.assign(0, true);
    wm.assign(1, true);
    wm.assign(2, false);                     // empty when consumption started: never holds W back
    EXPECT_EQ(wm.observe(0, 100), kNoTime);  // partition 1 has data but delivered nothing yet
    EXPECT_EQ(wm.observe(1, 40), 40);
    EXPECT_EQ(wm.observe(1, 70), 70);
    EXPECT_EQ(wm.observe(0, 200), 70);
    EXPECT_EQ(wm.observe(1, 300), 200);
}

TEST(Watermark, NeverDecreases) {
    Watermark wm(0);
    wm.assign(0, false);
    wm.assign(1, false);
    EXPECT_EQ(wm.observe(0, 100), 100);
    // Partition 1 starts delivering far behind: the min drops, W does not.
    EXPECT_EQ(wm.observe(1, 10), 100);
    EXPECT_EQ(wm.observe(1, 150), 100);
    EXPECT_EQ(wm.observe(0, 160), 150);
}

TEST(Watermark, PartitionThatTurnsOutEmptyStopsHolding) {
    Watermark wm(0);
    wm.assign(0, true);
    wm.assign(1, true);
    wm.observe(0, 100);
    EXPECT_EQ(wm.current(), kNoTime);
    wm.caught_up(1, 0);
    EXPECT_EQ(wm.current(), 100);
}

TEST(Watermark, IdleTimeoutReleasesASilentPartition) {
    Watermark wm(0, /*idle_timeout=*/5000);
    wm.assign(0, true);
    wm.assign(1, true);
    wm.observe(0, 100, /*now=*/1000);
    wm.observe(1, 50, 1000);
    EXPECT_EQ(wm.current(), 50);
    wm.caught_up(1, 1000);
    wm.observe(0, 400, 2000);
    EXPECT_EQ(wm.tick(5999), 50);  // silent for 4999 ms: still holding
    EXPECT_FALSE(wm.is_idle(1));
    EXPECT_EQ(wm.tick(6000), 400);  // 5000 ms: idle, W follows partition 0
    EXPECT_TRUE(wm.is_idle(1));
    wm.observe(1, 60, 7000);  // its next record makes it count again; W stays
    EXPECT_FALSE(wm.is_idle(1));
    EXPECT_EQ(wm.current(), 400);
    EXPECT_EQ(wm.observe(0, 900, 7000), 400);  // held by partition 1 at 60 again
    EXPECT_EQ(wm.observe(1, 800, 7000), 800);
}

TEST(Watermark, WithoutIdleTimeoutASilentPartitionHoldsForever) {
    Watermark wm(0);
    wm.observe(1, 10, 0);
    wm.observe(0, 100, 0);
    wm.caught_up(1, 0);
    EXPECT_EQ(wm.tick(1'000'000'000), 10);
}

TEST(Watermark, SurvivesARestart) {
    Watermark wm(10);
    wm.observe(0, 100);
    wm.observe(1, 300);
    const std::string blob = wm.serialize();
    Watermark back(10);
    back.restore(blob);
    EXPECT_EQ(back.current(), 90);
    EXPECT_EQ(back.partition_max(0), 100);
    EXPECT_EQ(back.partition_max(1), 300);
    back.assign(0, true);  // restored partitions do not wait for a first record again
    back.assign(1, true);
    EXPECT_EQ(back.observe(0, 95), 90);  // and W never goes back
    EXPECT_EQ(back.observe(0, 200), 190);
}

TEST(Watermark, MalformedBlobIsRejected) {
    Watermark wm(0);
    EXPECT_THROW(wm.restore("garbage"), stoatflow::Error);
    EXPECT_THROW(wm.restore("w1 5 x:y"), stoatflow::Error);
}

TEST(Watermark, EmptyPartitionThatReceivesDataHoldsAgain) {
    Watermark wm(0);
    wm.assign(0, true);
    wm.assign(1, false);  // empty at start
    wm.observe(0, 100);
    EXPECT_EQ(wm.current(), 100);
    wm.data_pending(1);  // records arrived in partition 1, not read yet
    EXPECT_EQ(wm.observe(0, 200), 100);
    EXPECT_EQ(wm.observe(1, 150), 150);
    wm.data_pending(1);  // no effect once it has delivered
    EXPECT_EQ(wm.observe(0, 300), 150);
}

TEST(Watermark, WhenEveryPartitionIsIdleWFollowsTheNewestRecord) {
    Watermark wm(10, /*idle_timeout=*/1000);
    wm.assign(0, true);
    wm.assign(1, true);
    wm.observe(0, 100'000, 0);
    wm.observe(1, 5'000, 0);
    wm.caught_up(0, 0);
    wm.caught_up(1, 0);
    EXPECT_EQ(wm.current(), 4'990);
    EXPECT_EQ(wm.tick(999), 4'990);
    EXPECT_EQ(wm.tick(1000), 99'990);               // both idle: the newest record counts
    EXPECT_EQ(wm.observe(1, 6'000, 2000), 99'990);  // never back
}

// A restart assigns partitions one by one. While a partition with data waiting is not yet
// assigned, W must not move on the others: it would pass where it stood before the crash
// (a window closed early is never reopened).
TEST(Watermark, RestoreThenAssignNeverMovesWPastWhereItStood) {
    Watermark before(0);
    before.assign(0, false);
    before.assign(1, true);
    before.observe(0, 100);  // partition 1 pins W: nothing delivered yet
    ASSERT_EQ(before.current(), kNoTime);
    Watermark after(0);
    after.restore(before.serialize());
    after.assign(0, false);  // restored max 100
    EXPECT_EQ(after.current(), kNoTime);
    after.assign(1, true);  // still waiting for its first record
    EXPECT_EQ(after.tick(1), kNoTime);
    EXPECT_EQ(after.observe(1, 60), 60);
}

// README "Expressions and PostgreSQL aggregates": one watermark over every partition of every topic
// of a source. Partition 0 of the second topic is a partition of its own, and a window waits for
// the slow topic.
TEST(Watermark, SeveralTopicsShareOneWatermark) {
    using stoatflow::core::TopicPartition;
    const auto a0 = TopicPartition{0, 0}.id(), b0 = TopicPartition{1, 0}.id(),
               b1 = TopicPartition{1, 1}.id();
    EXPECT_EQ(a0, 0);  // the first topic's ids are its partition numbers (0.1's states)
    EXPECT_NE(b0, a0);
    EXPECT_EQ(TopicPartition::from_id(b1), (TopicPartition{1, 1}));
    Watermark wm(0);
    wm.assign(a0, true);
    wm.assign(b0, true);
    wm.assign(b1, true);
    EXPECT_EQ(wm.observe(a0, 10'000), kNoTime);  // both of topic 1's partitions still pin W
    EXPECT_EQ(wm.observe(b0, 9'000), kNoTime);
    EXPECT_EQ(wm.observe(b1, 2'000), 2'000);  // the slow topic's partition holds W
    EXPECT_EQ(wm.observe(a0, 20'000), 2'000);
    EXPECT_EQ(wm.observe(b1, 30'000), 9'000);
    EXPECT_EQ(wm.partition_max(a0), 20'000);
    EXPECT_EQ(wm.partition_max(b0), 9'000);
    // Serialized and restored with the topics apart.
    Watermark back(0);
    back.restore(wm.serialize());
    EXPECT_EQ(back.current(), 9'000);
    EXPECT_EQ(back.partition_max(b0), 9'000);
    EXPECT_EQ(back.partition_max(b1), 30'000);
    EXPECT_EQ(back.partition_max(a0), 20'000);
    EXPECT_EQ(back.serialize(), wm.serialize());
}

// A state committed by 0.1 (one topic: "w1 W partition:max ...") restores after the upgrade as
// the first topic's partitions, exactly.
TEST(Watermark, RestoresAStateWrittenBy01) {
    using stoatflow::core::TopicPartition;
    Watermark wm(10);
    wm.restore("w1 90 0:100 1:300");
    EXPECT_EQ(wm.current(), 90);
    EXPECT_EQ(wm.partition_max(TopicPartition{0, 0}.id()), 100);
    EXPECT_EQ(wm.partition_max(TopicPartition{0, 1}.id()), 300);
    EXPECT_EQ(wm.partition_max(TopicPartition{1, 0}.id()), kNoTime);
    EXPECT_EQ(wm.serialize(), "w1 90 0:100 1:300");
}

// observe() skips the walk over the partitions when the record's partition is above the slowest
// one: against a model that applies README's rule from scratch after every operation, over random
// sequences of records, assignments, revocations, data arriving, ends, idle ticks and restores.
TEST(Watermark, RandomOperationsMatchTheRuleFromScratch) {
    struct Part {
        Millis max = kNoTime;
        bool holds = false, caught_up = false, idle = false;
        Millis last = 0;
    };
    const Millis ooo = 5, idle_after = 50;
    std::uint64_t seed = 0x9e3779b97f4a7c15ULL;
    auto next = [&](std::uint64_t n) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        return static_cast<std::int64_t>(seed % n);
    };
    for (int run = 0; run < 200; ++run) {
        Watermark wm(ooo, idle_after);
        std::map<PartitionId, Part> model;
        Millis w = kNoTime, now = 0;
        auto rule = [&] {  // README "Time and the watermark", from scratch
            Millis lo = kNoTime, idle_hi = kNoTime;
            bool any = false;
            for (const auto& [id, p] : model) {
                if (p.holds) return;
                if (p.max == kNoTime) continue;
                if (p.idle) {
                    idle_hi = std::max(idle_hi, p.max);
                    continue;
                }
                lo = any ? std::min(lo, p.max) : p.max;
                any = true;
            }
            if (!any) lo = idle_hi;
            if (lo != kNoTime && (w == kNoTime || lo - ooo > w)) w = lo - ooo;
        };
        const int parts = 1 + static_cast<int>(next(6));
        for (int step = 0; step < 400; ++step) {
            now += next(20);
            const PartitionId id = next(parts);
            const std::int64_t op = next(100);
            if (op < 80) {  // a record, mostly in order per partition
                Part& p = model[id];
                const Millis t = (p.max == kNoTime ? 0 : p.max) + next(30) - 5;
                p.max = std::max(p.max, t);
                p.holds = p.caught_up = p.idle = false;
                p.last = now;
                rule();
                ASSERT_EQ(wm.observe(id, t, now), w) << "run " << run << " step " << step;
                continue;
            }
            if (op < 84) {
                const bool holds = next(2) == 0;
                Part& p = model[id];
                p.holds = holds && p.max == kNoTime;
                p.caught_up = p.idle = false;
                wm.assign(id, holds);
            } else if (op < 86) {
                model.erase(id);
                rule();
                wm.revoke(id);
            } else if (op < 89) {
                Part& p = model[id];
                if (p.max == kNoTime && !p.holds) p.holds = true, p.caught_up = false;
                wm.data_pending(id);
            } else if (op < 94) {
                Part& p = model[id];
                p.caught_up = true;
                if (p.max == kNoTime) p.holds = false, p.last = now;
                rule();
                wm.caught_up(id, now);
            } else if (op < 99) {
                for (auto& [pid, p] : model)
                    if (p.caught_up && !p.idle && p.max != kNoTime && now - p.last >= idle_after)
                        p.idle = true;
                rule();
                ASSERT_EQ(wm.tick(now), w) << "run " << run << " step " << step;
            } else {  // a restart: W and every partition's max come back, nothing else
                const std::string blob = wm.serialize();
                wm = Watermark(ooo, idle_after);
                wm.restore(blob);
                for (auto it = model.begin(); it != model.end();) {
                    if (it->second.max == kNoTime) {
                        it = model.erase(it);
                        continue;
                    }
                    it->second = Part{it->second.max};
                    ++it;
                }
            }
            ASSERT_EQ(wm.current(), w) << "run " << run << " step " << step;
        }
    }
}
