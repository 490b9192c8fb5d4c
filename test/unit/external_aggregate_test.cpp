// External aggregates (state the core does not understand) through the whole window engine:
// a test implementation that keeps every window's inputs in order, checked against the
// built-in count(*) and sum of the same windows, across every window kind, both emit
// strategies, late records, session merges, sliding derivation and restarts; and a count
// of every state made and destroyed (no leak, no double free, no use after free).
#include "external_test_support.hpp"

#include <gtest/gtest.h>

using namespace stoatflow::test;
using stoatflow::Error;

TEST(ExternalAggregates, TumblingFoldsInOrderAndDropsLateRecords) {
    auto ext = std::make_shared<SeqAggregates>();
    {
        Harness h(WindowSpec::tumbling(10), EmitStrategy::OnWindowUpdate, 0, count_sum(), kNoTime,
                  ext);
        h.push({{"a", 1, 5}, {"a", 3, std::nullopt}, {"b", 2, 7}, {"a", 12, 1}, {"a", 4, 9}});
        h.commit();
        EXPECT_EQ(seq_of(h, "a", 0), "5,N");  // 9 at t=4 came after W=12: late, dropped
        EXPECT_EQ(seq_of(h, "b", 0), "7");
        EXPECT_EQ(seq_of(h, "a", 10), "1");
        EXPECT_EQ(h.agg.stats().dropped_late_window, 1);
        for (const auto& r : h.rows()) expect_consistent(r);
        EXPECT_EQ(ext->live(), h.agg.resident_windows());
    }
    EXPECT_EQ(ext->live(), 0u);
    EXPECT_EQ(ext->created(), ext->destroyed());
    EXPECT_EQ(ext->bad(), 0u);
}

TEST(ExternalAggregates, HoppingFoldsEachWindowOnItsOwn) {
    auto ext = std::make_shared<SeqAggregates>(false);  // hopping needs no combine
    Harness h(WindowSpec::hopping(10, 5), EmitStrategy::OnWindowClose, 0, count_sum(), kNoTime,
              ext);
    h.push({{"a", 1, 1}, {"a", 6, 2}, {"a", 11, 3}});
    h.commit(100);
    EXPECT_EQ(seq_of(h, "a", -5), "1");
    EXPECT_EQ(seq_of(h, "a", 0), "1,2");
    EXPECT_EQ(seq_of(h, "a", 5), "2,3");
    EXPECT_EQ(seq_of(h, "a", 10), "3");
}

TEST(ExternalAggregates, SessionMergeCombinesInTheEngineOrder) {
    auto ext = std::make_shared<SeqAggregates>();
    {
        Harness h(WindowSpec::session(5), EmitStrategy::OnWindowUpdate, 100, count_sum(), kNoTime,
                  ext);
        h.push({{"a", 1, 1}, {"a", 12, 2}});
        h.commit();
        EXPECT_EQ(seq_of(h, "a", 1), "1");
        EXPECT_EQ(seq_of(h, "a", 12), "2");
        h.push({{"a", 6, 3}, {"a", 9, 4}});  // 6 joins [1]; 9 bridges [1..6] and [12]
        h.commit();
        EXPECT_EQ(h.sink.count({"a", 12}), 0u);  // merged away: retracted
        EXPECT_EQ(seq_of(h, "a", 1), "1,3,2,4");
        EXPECT_EQ(h.agg.stats().sessions_merged, 1);
        for (const auto& r : h.rows()) expect_consistent(r);
        EXPECT_EQ(ext->live(), h.agg.resident_windows());
    }
    EXPECT_EQ(ext->live(), 0u);
    EXPECT_EQ(ext->bad(), 0u);
}

TEST(ExternalAggregates, SessionsRefuseAnAggregateWithoutCombine) {
    try {
        WindowedAggregation agg(WindowSpec::session(5), count_sum(), EmitStrategy::OnWindowClose,
                                kNoTime, 0, std::make_shared<SeqAggregates>(false));
        FAIL() << "accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), stoatflow::sqlstate::kFeatureNotSupported);
    }
}

TEST(ExternalAggregates, SlidingWindowsDeriveFromCopies) {
    auto ext = std::make_shared<SeqAggregates>(false);  // derivation copies, never merges
    {
        Harness h(WindowSpec::sliding(10), EmitStrategy::OnWindowClose, 100, count_sum(), kNoTime,
                  ext);
        h.push({{"a", 5, 1}, {"a", 12, 2}, {"a", 3, 3}});
        h.commit(1000);
        // KIP-450: left windows [t-10, t] and right windows from t+1.
        // 5: [-5,5]. 12: left [2,12] copied from [-5,5], right of 5 [6,16] fresh. 3: joins
        // [-5,5] and [2,12]; left [-7,3] fresh; right [4,14] copied from [2,12] before 3.
        EXPECT_EQ(seq_of(h, "a", -5), "1,3");
        EXPECT_EQ(seq_of(h, "a", 2), "1,2,3");
        EXPECT_EQ(seq_of(h, "a", 6), "2");
        EXPECT_EQ(seq_of(h, "a", -7), "3");
        EXPECT_EQ(seq_of(h, "a", 4), "1,2");
        EXPECT_EQ(h.sink.size(), 5u);
        for (const auto& r : h.rows()) expect_consistent(r);
    }
    EXPECT_EQ(ext->live(), 0u);
    EXPECT_EQ(ext->created(), ext->destroyed());
    EXPECT_EQ(ext->bad(), 0u);
}

TEST(ExternalAggregates, OnlyExternalAggregatesNeedNoBuiltInOnes) {
    auto ext = std::make_shared<SeqAggregates>();
    WindowedAggregation agg(WindowSpec::tumbling(10), {}, EmitStrategy::OnWindowUpdate, kNoTime, 0,
                            ext);
    In r{"k", 1, 4};
    agg.process("k", 1, nullptr, 0, &r);
    CommitOutput out;
    agg.flush(0, out);
    ASSERT_EQ(out.upserts.size(), 1u);
    EXPECT_EQ(out.upserts[0].external, "seq:4");
    ASSERT_EQ(out.state.size(), 1u);
    EXPECT_EQ(out.state[0].external, "seq:4");
    EXPECT_THROW(
        WindowedAggregation(WindowSpec::tumbling(10), {}, EmitStrategy::OnWindowUpdate, kNoTime),
        Error);  // no aggregates at all
}

TEST(ExternalAggregates, StateBytesCarryTheExternalTail) {
    auto ext = std::make_shared<SeqAggregates>();
    const AggLayout l(count_sum(), ext);
    std::vector<AggCell> c(2);
    c[0].n = 2;
    c[1].n = 1;
    c[1].isum = 7;
    const std::string state = "seq:7,N";
    for (std::optional<std::int64_t> f :
         {std::optional<std::int64_t>(), std::optional<std::int64_t>(42)}) {
        std::string bytes;
        l.serialize(c.data(), bytes, f, &state);
        EXPECT_EQ(bytes.size(), l.state_v01_size() + (f ? 9 : 0) + 1 + 4 + state.size());
        std::optional<std::int64_t> floor;
        std::string back;
        EXPECT_EQ(l.deserialize(bytes.data(), bytes.size(), &floor, &back), c);
        EXPECT_EQ(floor, f);
        EXPECT_EQ(back, state);
        EXPECT_THROW(l.deserialize(bytes.data(), bytes.size() - 1, &floor, &back), Error);
        std::string longer = bytes + "x";
        EXPECT_THROW(l.deserialize(longer.data(), longer.size(), &floor, &back), Error);
    }
    std::string bare;  // the built-in part alone: the external state is missing
    const AggLayout builtin(count_sum());
    builtin.serialize(c.data(), bare);
    EXPECT_THROW(l.deserialize(bare.data(), bare.size()), Error);
    EXPECT_THROW(l.serialize(c.data(), bare), Error);  // a layout with ext needs its bytes
    std::string with;
    l.serialize(c.data(), with, std::nullopt, &state);
    EXPECT_THROW(builtin.deserialize(with.data(), with.size()), Error);  // unexpected tail
    EXPECT_THROW(builtin.serialize(c.data(), with, std::nullopt, &state), Error);
    // A restore of bytes the implementation cannot read throws, and leaves nothing behind.
    WindowedAggregation agg(WindowSpec::tumbling(10), count_sum(), EmitStrategy::OnWindowUpdate,
                            kNoTime, 0, ext);
    WindowStateRow row{"k", 0, 10, 1, c, false, 0, std::nullopt, "garbage"};
    EXPECT_THROW(agg.restore(row, 0), Error);
    EXPECT_EQ(agg.resident_windows(), 0u);
    WindowedAggregation plain(WindowSpec::tumbling(10), count_sum(), EmitStrategy::OnWindowUpdate,
                              kNoTime);
    row.external = state;
    EXPECT_THROW(plain.restore(row, 0), Error);
}
