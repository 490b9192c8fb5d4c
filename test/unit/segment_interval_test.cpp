// The engine lays out segments by the interval the catalog stored for the aggregation (given to
// its constructor), and computes SegmentLayout's formula only when none is given.
#include "engine_harness.hpp"

#include <gtest/gtest.h>

using namespace stoatflow::test;

TEST(SegmentInterval, StoredIntervalWinsOverTheFormula) {
    const Millis retention = 10 * 60'000;
    WindowedAggregation computed(WindowSpec::tumbling(60'000), count_sum(),
                                 EmitStrategy::OnWindowUpdate, retention);
    EXPECT_EQ(computed.segments().interval(), SegmentLayout(retention, 60'000).interval());

    WindowedAggregation stored(WindowSpec::tumbling(60'000), count_sum(),
                               EmitStrategy::OnWindowUpdate, retention, 7 * 60'000);
    EXPECT_EQ(stored.segments().interval(), 7 * 60'000);
    EXPECT_EQ(stored.segments().segment_of(7 * 60'000 + 5), 7 * 60'000);
}
