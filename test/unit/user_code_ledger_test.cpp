// The worker's ledger of owners' code gone wrong: rests double up to the maximum, a poisoned
// record is forgotten once committed past, never before.
#include "stoatflow/flow/user_code_ledger.hpp"

#include <gtest/gtest.h>

using stoatflow::core::TopicPartition;
using namespace stoatflow::flow;

TEST(UserCodeLedger, RestsDoubleUpToTheMaximum) {
    UserCodeLedger l;
    EXPECT_EQ(l.resting(7, 0), nullptr);
    l.timed_out(7, 1000, "loops");
    ASSERT_NE(l.resting(7, 1000), nullptr);
    EXPECT_EQ(l.resting(7, 1000)->rest, kUserCodeRestFirstMs);
    EXPECT_EQ(l.resting(7, 1000 + kUserCodeRestFirstMs - 1)->error, "loops");
    EXPECT_EQ(l.resting(7, 1000 + kUserCodeRestFirstMs), nullptr);  // rested enough
    EXPECT_EQ(l.resting(8, 1000), nullptr);                         // its siblings run
    std::int64_t rest = kUserCodeRestFirstMs;
    for (int i = 0; i < 10; ++i) {
        rest = std::min(rest * 2, kUserCodeRestMaxMs);
        l.timed_out(7, 0, "again");
        EXPECT_EQ(l.stalled[7].rest, rest);
    }
    EXPECT_EQ(l.stalled[7].rest, kUserCodeRestMaxMs);
    EXPECT_EQ(l.last_error[7], "again");
}

TEST(UserCodeLedger, PoisonsAreForgottenOnlyOnceCommittedPast) {
    UserCodeLedger l;
    const TopicPartition p0{0, 0}, p1{0, 1};
    l.poisoned[{1, p0, 10}] = {stoatflow::format::DeadReason::AggregateError, "d"};
    l.poisoned[{1, p1, 10}] = {stoatflow::format::DeadReason::AggregateError, "d"};
    l.committed({{p0, 10}});  // offset 10 is the next to read: not passed yet
    EXPECT_EQ(l.poisoned.size(), 2u);
    l.committed({{p0, 11}});
    EXPECT_EQ(l.poisoned.size(), 1u);
    EXPECT_EQ(std::get<1>(l.poisoned.begin()->first), p1);  // another partition's stays
}
