// Window definitions: every validation error, the close rule, minimum retention, and
// segment arithmetic (interval formula, expiry, live-segment bound).
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/limits.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <gtest/gtest.h>

using namespace stoatflow::core;
using stoatflow::Error;

namespace {
std::string error_of(const WindowSpec& s) {
    try {
        s.validate();
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), "22023");
        return e.what();
    }
    return "";
}
}  // namespace

TEST(Validation, EveryBadDefinitionIsRejectedWithAUsefulMessage) {
    EXPECT_EQ(error_of(WindowSpec::tumbling(0)), "tumbling window size must be positive");
    EXPECT_EQ(error_of(WindowSpec::tumbling(-5)), "tumbling window size must be positive");
    EXPECT_EQ(error_of(WindowSpec::tumbling(10, -1)), "tumbling window grace must not be negative");
    EXPECT_EQ(error_of(WindowSpec::hopping(10, 0)), "hopping window advance must be positive");
    EXPECT_EQ(error_of(WindowSpec::hopping(10, -3)), "hopping window advance must be positive");
    EXPECT_EQ(error_of(WindowSpec::hopping(10, 11)),
              "hopping window advance must not be larger than its size");
    EXPECT_EQ(error_of(WindowSpec::hopping(0, 1)), "hopping window size must be positive");
    EXPECT_EQ(error_of(WindowSpec::sliding(0)), "sliding window time_difference must be positive");
    EXPECT_EQ(error_of(WindowSpec::sliding(5, -1)), "sliding window grace must not be negative");
    EXPECT_EQ(error_of(WindowSpec::session(0)), "session window inactivity_gap must be positive");
    EXPECT_EQ(error_of(WindowSpec::session(5, -1)), "session window grace must not be negative");
    EXPECT_EQ(error_of(WindowSpec::tumbling(kMaxWindowMillis + 1)),
              "tumbling window size must be at most 10 years");
    EXPECT_EQ(error_of(WindowSpec::tumbling(10, kMaxWindowMillis + 1)),
              "tumbling window grace must be at most 10 years");
    // the good ones pass
    EXPECT_EQ(error_of(WindowSpec::hopping(10, 10)), "");
    EXPECT_EQ(error_of(WindowSpec::session(1, 0)), "");
}

// README "Security" Bounds: a record may fall into at most kMaxWindowsPerRecord hopping windows.
TEST(Validation, HoppingWithTooManyWindowsPerRecordIsRefused) {
    static_assert(kMaxWindowsPerRecord == 1000);
    EXPECT_EQ(error_of(WindowSpec::hopping(1000, 1)), "");
    EXPECT_EQ(error_of(WindowSpec::hopping(60000, 60)), "");
    EXPECT_EQ(error_of(WindowSpec::hopping(1001, 1)),
              "hopping window puts each record into 1001 windows (size / advance), more than "
              "the limit of 1000");
    // size / advance rounded up: 10001 / 10 → up to 1001 windows for some records
    EXPECT_NE(error_of(WindowSpec::hopping(10001, 10)), "");
    try {
        WindowSpec::hopping(86400000, 1000).validate();
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), "22023");
        EXPECT_NE(std::string(e.what()).find("86400 windows"), std::string::npos) << e.what();
        EXPECT_NE(e.hint().find("larger advance"), std::string::npos) << e.hint();
    }
}

TEST(Validation, RetentionBelowTheMinimumIsRejected) {
    EXPECT_EQ(resolve_retention(WindowSpec::tumbling(10, 5), kNoTime), 15);
    EXPECT_EQ(resolve_retention(WindowSpec::tumbling(10, 5), 100), 100);
    try {
        resolve_retention(WindowSpec::sliding(10, 5), 24);
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), "22023");
        EXPECT_NE(std::string(e.what()).find("below the minimum 25 ms"), std::string::npos);
    }
}

TEST(CloseRule, TimeWindowsCloseAtEndPlusGrace) {
    const auto s = WindowSpec::tumbling(10, 5);
    EXPECT_EQ(s.close_point(10), 15);
    EXPECT_FALSE(s.is_closed(10, 14));
    EXPECT_TRUE(s.is_closed(10, 15));
    EXPECT_FALSE(s.is_closed(10, kNoTime));
}

TEST(CloseRule, SessionsCloseAtLastPlusGapPlusGrace) {
    const auto s = WindowSpec::session(30, 5);
    // session with last record at 100 is reported [first, 101)
    EXPECT_EQ(s.close_point(101), 136);
    EXPECT_FALSE(s.is_closed(101, 135));
    EXPECT_TRUE(s.is_closed(101, 136));
}

TEST(Retention, MinimumPerKind) {
    EXPECT_EQ(WindowSpec::tumbling(10, 3).min_retention(), 13);
    EXPECT_EQ(WindowSpec::hopping(10, 2, 3).min_retention(), 13);
    EXPECT_EQ(WindowSpec::sliding(10, 3).min_retention(), 23);
    EXPECT_EQ(WindowSpec::session(10, 3).min_retention(), 13);
}

TEST(Segments, IntervalIsMaxOfHalfRetentionFloorAndWindowLength) {
    EXPECT_EQ(SegmentLayout(30'000, 10'000).interval(), 60'000);         // floor
    EXPECT_EQ(SegmentLayout(120'000, 90'000).interval(), 90'000);        // window length
    EXPECT_EQ(SegmentLayout(3'600'000, 300'000).interval(), 1'800'000);  // retention / 2
}

TEST(Segments, SegmentOfIsEpochAligned) {
    SegmentLayout l(30'000, 10'000);
    EXPECT_EQ(l.segment_of(0), 0);
    EXPECT_EQ(l.segment_of(59'999), 0);
    EXPECT_EQ(l.segment_of(60'000), 60'000);
    EXPECT_EQ(l.segment_of(-1), -60'000);
}

TEST(Segments, DroppedWholeOnlyOnceEntirelyBehindRetention) {
    SegmentLayout l(30'000, 10'000);  // interval 60 s
    // segment [0, 60s) may go once 60s ≤ F − 30s, i.e. F ≥ 90s
    EXPECT_FALSE(l.expired(0, 89'999));
    EXPECT_TRUE(l.expired(0, 90'000));
    EXPECT_FALSE(l.expired(0, kNoTime));
    // a segment recorded with another span keeps it
    EXPECT_FALSE(SegmentLayout::expired(0, 120'000, 149'999, 30'000));
    EXPECT_TRUE(SegmentLayout::expired(0, 120'000, 150'000, 30'000));
}

TEST(Segments, LiveSegmentBound) {
    EXPECT_EQ(SegmentLayout(30'000, 10'000).max_live_segments(), 2);   // ceil(0.5)+1
    EXPECT_EQ(SegmentLayout(120'000, 10'000).max_live_segments(), 3);  // 2 + 1
    EXPECT_EQ(SegmentLayout(150'000, 10'000).max_live_segments(), 3);  // ceil(150/75)+1
    EXPECT_EQ(SegmentLayout(3'600'000, 60'000).max_live_segments(), 3);
}

// Walk a watermark through time with a retention and check the live-segment bound
// holds in every phase.
TEST(Segments, LiveSegmentsNeverExceedTheBound) {
    for (Millis retention : {30'000LL, 45'000LL, 90'000LL, 200'000LL, 3'600'000LL}) {
        SegmentLayout l(retention, 10'000);
        for (Millis w = 0; w < 5 * retention + 500'000; w += 997) {
            // live segments hold windows whose start is within [w − retention, w]
            long live = 0;
            for (Millis a = l.segment_of(w - retention - l.interval()); a <= l.segment_of(w);
                 a += l.interval())
                live += !l.expired(a, w);
            ASSERT_LE(live, l.max_live_segments()) << "retention " << retention << " w " << w;
        }
    }
}
