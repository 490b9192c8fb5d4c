// Event time's one owner (core/event_time.hpp): PostgreSQL's epoch shift, microseconds ↔
// milliseconds (floored before 1970 too), the event time range and interval → ms.
#include "stoatflow/core/event_time.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace {

using namespace stoatflow::core;

TEST(EventTime, PostgresEpochIs2000) {
    // 2000-01-01 00:00:00 UTC is 10957 days after 1970-01-01.
    EXPECT_EQ(kPgEpochMs, 10957LL * 86400 * 1000);
    EXPECT_EQ(pg_timestamp_to_ms(0), kPgEpochMs);
    EXPECT_EQ(ms_to_pg_timestamp(0), -kPgEpochMicros);
    EXPECT_EQ(ms_to_pg_timestamp(kPgEpochMs), 0);
    EXPECT_EQ(unix_micros_to_pg_timestamp(kPgEpochMicros), 0);
}

TEST(EventTime, MicrosecondsFloorToMilliseconds) {
    EXPECT_EQ(unix_micros_to_ms(1999), 1);
    EXPECT_EQ(unix_micros_to_ms(-1), -1);  // 1969-12-31 23:59:59.999999 is in ms -1
    EXPECT_EQ(unix_micros_to_ms(-1000), -1);
    EXPECT_EQ(unix_micros_to_ms(-1001), -2);
    EXPECT_EQ(pg_timestamp_to_ms(-1), kPgEpochMs - 1);
    EXPECT_EQ(pg_timestamp_to_ms(1), kPgEpochMs);
    EXPECT_EQ(ms_to_unix_micros(-3), -3000);
}

TEST(EventTime, RoundTripsEveryTimeInTheRange) {
    for (Millis t : {kMinEventTime, kMinEventTime + 1, Millis{-1}, Millis{0}, Millis{1}, kPgEpochMs,
                     kMaxEventTime}) {
        EXPECT_EQ(pg_timestamp_to_ms(ms_to_pg_timestamp(t)), t) << t;
        EXPECT_EQ(unix_micros_to_ms(ms_to_unix_micros(t)), t) << t;
    }
}

TEST(EventTime, Range) {
    EXPECT_TRUE(in_event_time_range(kMinEventTime));
    EXPECT_TRUE(in_event_time_range(kMaxEventTime));
    EXPECT_FALSE(in_event_time_range(kMinEventTime - 1));
    EXPECT_FALSE(in_event_time_range(kMaxEventTime + 1));
    EXPECT_FALSE(in_event_time_range(kNoTime));
    EXPECT_EQ(outside_event_time_range("event_time = 1 ms"),
              "event_time = 1 ms is outside the event time range 0001-01-01 .. 9999-12-31 (UTC)");
}

TEST(EventTime, IntervalsFloorToMilliseconds) {
    EXPECT_EQ(interval_to_ms(0, 0), 0);
    EXPECT_EQ(interval_to_ms(1, 0), 86400000);
    EXPECT_EQ(interval_to_ms(0, 1500), 1);
    EXPECT_EQ(interval_to_ms(0, 999), 0);
    EXPECT_EQ(interval_to_ms(0, -1), -1);  // floor, not truncation
    EXPECT_EQ(interval_to_ms(1, -1), 86399999);
    EXPECT_EQ(interval_to_ms(-1, 1), -86400000);
    // The extremes fit.
    EXPECT_EQ(interval_to_ms(std::numeric_limits<std::int32_t>::max(),
                             std::numeric_limits<std::int64_t>::max()),
              2147483647LL * 86400000 + 9223372036854775LL);
}

}  // namespace
