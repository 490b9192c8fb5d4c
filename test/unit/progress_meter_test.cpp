// README "Progress": the rate, lag, estimated time left and the catching-up rule a worker
// publishes, fed positions and high watermarks as the worker does, with the time passed in.
#include "stoatflow/flow/progress_meter.hpp"

#include <gtest/gtest.h>

using namespace stoatflow;
using namespace stoatflow::flow;

namespace {
const core::TopicPartition kP0{0, 0}, kP1{0, 1};
}

TEST(ProgressMeter, NoRateBeforeTheFirstIntervalThenRecordsPerSecond) {
    ProgressMeter m;
    m.start(10000);
    m.observe(kP0, 100, 10100);
    EXPECT_FALSE(m.due(10500));  // published at most once a second
    EXPECT_FALSE(m.rate());
    EXPECT_FALSE(ProgressMeter::eta(m.lag(), m.rate()));
    EXPECT_EQ(m.lag(), 10000);
    m.observe(kP0, 2100, 10100);  // 2,000 records in the first second
    ASSERT_TRUE(m.due(11000));
    ASSERT_TRUE(m.rate());
    EXPECT_DOUBLE_EQ(*m.rate(), 2000.0);
    EXPECT_EQ(m.lag(), 8000);
    const auto eta = ProgressMeter::eta(m.lag(), m.rate());
    ASSERT_TRUE(eta);
    EXPECT_EQ(*eta, 4000);  // 8,000 records at 2,000/s
    EXPECT_FALSE(m.due(11999));
}

TEST(ProgressMeter, RateIsSmoothedAndSummedOverPartitions) {
    ProgressMeter m;
    m.start(0);
    m.observe(kP0, 0, 1000000);
    m.observe(kP1, 0, 1000000);
    m.observe(kP0, 1000, 1000000);
    m.observe(kP1, 3000, 1000000);
    ASSERT_TRUE(m.due(1000));
    EXPECT_DOUBLE_EQ(*m.rate(), 4000.0);
    EXPECT_DOUBLE_EQ(*m.partition(kP1)->rate, 3000.0);
    // A second with nothing read: the rate falls, but smoothly (not to 0 at once).
    ASSERT_TRUE(m.due(2000));
    const double r = *m.rate();
    EXPECT_LT(r, 4000.0);
    EXPECT_GT(r, 2000.0);
    // It keeps falling while nothing is read, and rises again once records come.
    ASSERT_TRUE(m.due(3000));
    EXPECT_LT(*m.rate(), r);
    m.observe(kP0, 1000 + 100000, 1000000);
    ASSERT_TRUE(m.due(4000));
    EXPECT_GT(*m.rate(), r);
}

TEST(ProgressMeter, PositionMovingBackCountsNothingAndLagNeverNegative) {
    ProgressMeter m;
    m.start(0);
    m.observe(kP0, 500, 400);  // ahead of a high watermark not refreshed yet
    EXPECT_EQ(m.lag(), 0);
    ASSERT_TRUE(m.due(1000));
    EXPECT_DOUBLE_EQ(*m.rate(), 0.0);  // nothing to read, nothing read: 0, not NULL
    m.observe(kP0, 100, 400);          // moved back (a seek)
    ASSERT_TRUE(m.due(2000));
    EXPECT_DOUBLE_EQ(*m.rate(), 0.0);
    EXPECT_EQ(m.lag(), 300);
    EXPECT_FALSE(ProgressMeter::eta(m.lag(), m.rate()));  // nothing read: no estimate
    m.observe(kP0, 200, -1);                              // high unknown: the last one kept
    EXPECT_EQ(m.partition(kP0)->high, 400);
    m.observe(kP0, 200, 300);  // an older cached value: the higher one kept
    EXPECT_EQ(m.partition(kP0)->high, 400);
}

TEST(ProgressMeter, NoRateWhileTheFirstRecordsAreAwaited) {
    ProgressMeter m;
    m.start(0);
    m.observe(kP0, 0, 100000);
    ASSERT_TRUE(m.due(1000));  // connecting: nothing read yet, records waiting
    EXPECT_FALSE(m.rate());
    ASSERT_TRUE(m.due(2000));
    EXPECT_FALSE(m.rate());
    m.observe(kP0, 50000, 100000);  // then 50,000 in one second: that is the rate
    ASSERT_TRUE(m.due(3000));
    EXPECT_DOUBLE_EQ(*m.rate(), 50000.0);
    EXPECT_EQ(*ProgressMeter::eta(m.lag(), m.rate()), 1000);
}

TEST(ProgressMeter, StartMeasuresAfresh) {
    ProgressMeter m;
    m.start(0);
    m.observe(kP0, 0, 100);
    m.observe(kP0, 50, 100);
    ASSERT_TRUE(m.due(1000));
    ASSERT_TRUE(m.rate());
    m.start(5000);
    EXPECT_FALSE(m.rate());
    EXPECT_EQ(m.partition(kP0), nullptr);
    EXPECT_FALSE(m.due(5999));
}

TEST(ProgressMeter, BehindNeedsManyRecordsAndMoreThanTwoSecondsOfThem) {
    const std::int64_t many = core::CommitPolicy::kCatchupLagRecords;
    EXPECT_FALSE(ProgressMeter::behind(0, std::nullopt));
    EXPECT_FALSE(ProgressMeter::behind(many - 1, std::nullopt));
    EXPECT_TRUE(ProgressMeter::behind(many, std::nullopt));  // no rate yet: by the count
    EXPECT_TRUE(ProgressMeter::behind(5000000, 100000.0));   // 50 s of records
    EXPECT_FALSE(ProgressMeter::behind(150000, 100000.0));   // 1.5 s of records
    EXPECT_FALSE(ProgressMeter::eta(0, 100.0));              // not behind: no estimate
}

TEST(ProgressMeter, CaughtUpIsPublishedAtOnce) {
    ProgressMeter m;
    m.start(0);
    m.observe(kP0, 0, 100000);
    m.observe(kP0, 10000, 100000);
    ASSERT_TRUE(m.due(1000));  // 10,000/s, 90,000 behind: 9 s of records
    EXPECT_TRUE(m.shown_behind());
    m.observe(kP0, 20000, 100000);
    EXPECT_FALSE(m.due(1100));      // still behind: nothing new to say before the second is over
    m.observe(kP0, 90000, 100000);  // 10,000 left: under 2 s at this rate, under the threshold
    ASSERT_TRUE(m.due(1200));       // no longer behind: at once
    EXPECT_FALSE(m.shown_behind());
    EXPECT_FALSE(m.due(1300));
    m.observe(kP0, 100000, 100000);
    ASSERT_TRUE(m.due(1400));  // lag 0: at once
    EXPECT_EQ(m.lag(), 0);
    EXPECT_FALSE(m.due(1500));
    EXPECT_TRUE(m.due(2000));  // and the second goes on as before
}
