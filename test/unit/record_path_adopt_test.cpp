// RecordPath::adopt_aggregation (README "Backfill and start_from"): a joined backfill's
// aggregation taken into a running path right after a commit. The others run on exactly as in a
// path that adopted nothing; the adopted one folds every record after it; the commit sequence
// counts on past the backfill's; what the path cannot take is refused and changes nothing.
#include "stoatflow/flow/record_path.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace {

using stoatflow::core::AggFn;
using stoatflow::core::EmitStrategy;
using stoatflow::core::Millis;
using stoatflow::core::WindowSpec;
using stoatflow::flow::CommitSnapshot;
using stoatflow::flow::RecordPath;
using stoatflow::flow::RecordPathConfig;

constexpr Millis kBase = 1'700'000'000'000;  // a minute boundary

RecordPathConfig::Aggregation per_minute() {
    RecordPathConfig::Aggregation a;
    a.name = "per_minute";
    a.spec = WindowSpec::tumbling(60'000, 0);
    a.aggregates = {{AggFn::CountStar, "", "n"}, {AggFn::Sum, "amount", "total"}};
    a.emit = EmitStrategy::OnWindowUpdate;
    a.retention = 3'600'000;
    return a;
}

RecordPathConfig config() {
    RecordPathConfig c;
    c.topics = {"events"};
    c.decoder.key_path = "user";
    c.decoder.time_path = "ts";
    c.decoder.value_paths = {"amount"};
    c.aggregations.push_back(per_minute());
    return c;
}

// The backfill's aggregation: another window over a field the path already reads.
RecordPathConfig::Aggregation joined() {
    RecordPathConfig::Aggregation a = per_minute();
    a.name = "per_5m";
    a.spec = WindowSpec::tumbling(300'000, 0);
    a.aggregates = {{AggFn::CountStar, "", "n"}, {AggFn::Max, "amount", "max_amount"}};
    return a;
}

std::int64_t feed(RecordPath& path, int from, int to) {
    for (int i = from; i < to; ++i) {
        const std::string p = "{\"user\": \"u" + std::to_string(i % 5) +
                              "\", \"ts\": " + std::to_string(kBase + i * 1'000) +
                              ", \"amount\": " + std::to_string(i % 17) + "}";
        path.process(0, i % 2, i, p.data(), p.size(), nullptr, 0, stoatflow::core::kNoTime,
                     kBase + i * 1'000);
    }
    return to - from;
}

// An aggregation's upserts as text: (key, start) → end|cells.
std::map<std::pair<std::string, Millis>, std::string>
rows(const RecordPath& path, const CommitSnapshot& snap, std::size_t agg) {
    std::map<std::pair<std::string, Millis>, std::string> out;
    const auto& layout = path.layout(agg);
    for (const auto& r : snap.aggs[agg].out.upserts) {
        std::string v = std::to_string(r.end);
        for (std::size_t i = 0; i < layout.size(); ++i)
            v += "|" + layout.as_text(i, r.cells[i]).value_or("NULL");
        out[{r.key, r.start}] = v;
    }
    return out;
}

TEST(RecordPathAdopt, TheOthersRunOnAndTheAdoptedFoldsWhatFollows) {
    RecordPath adopting(config()), plain(config());
    feed(adopting, 0, 400);
    feed(plain, 0, 400);
    const CommitSnapshot a1 = adopting.take_snapshot(kBase + 400'000);
    const CommitSnapshot p1 = plain.take_snapshot(kBase + 400'000);
    EXPECT_EQ(rows(adopting, a1, 0), rows(plain, p1, 0));

    ASSERT_TRUE(adopting.adopt_aggregation(joined()));
    adopting.raise_commit_seq(41);  // the backfill's join committed seq 41
    const std::int64_t after = feed(adopting, 400, 1'000);
    feed(plain, 400, 1'000);
    const CommitSnapshot a2 = adopting.take_snapshot(kBase + 1'000'000);
    const CommitSnapshot p2 = plain.take_snapshot(kBase + 1'000'000);

    EXPECT_EQ(a2.seq, 42);
    EXPECT_EQ(p2.seq, 2);
    ASSERT_EQ(a2.aggs.size(), 2u);
    ASSERT_EQ(p2.aggs.size(), 1u);
    // The sibling: the same windows, records, positions and watermark as without the adoption.
    EXPECT_FALSE(rows(adopting, a2, 0).empty());
    EXPECT_EQ(rows(adopting, a2, 0), rows(plain, p2, 0));
    EXPECT_EQ(a2.aggs[0].stats.records_in, p2.aggs[0].stats.records_in);
    EXPECT_EQ(a2.next_offsets, p2.next_offsets);
    EXPECT_EQ(a2.watermark, p2.watermark);
    // The adopted aggregation folded exactly the records after it joined.
    EXPECT_EQ(a2.aggs[1].stats.records_in, after);
    std::int64_t counted = 0;
    for (const auto& [id, v] : rows(adopting, a2, 1)) {
        const auto bar = v.find('|');
        counted += std::stoll(v.substr(bar + 1, v.find('|', bar + 1) - bar - 1));
    }
    EXPECT_EQ(counted, after);
    // Its max over the field the path already read: 16 is the largest amount.
    bool saw_max = false;
    for (const auto& [id, v] : rows(adopting, a2, 1)) saw_max |= v.substr(v.rfind('|')) == "|16";
    EXPECT_TRUE(saw_max);
}

TEST(RecordPathAdopt, RefusesWhatThePathCannotTakeAndStaysAsItWas) {
    RecordPath path(config());
    feed(path, 0, 100);
    path.take_snapshot(kBase + 100'000);
    // A field the JSON lane does not read.
    RecordPathConfig::Aggregation other_field = joined();
    other_field.aggregates = {{AggFn::Sum, "price", "total_price"}};
    EXPECT_FALSE(path.adopt_aggregation(other_field));
    // A roll-up (its upstream's finals are fed at the snapshot: built with the path only).
    RecordPathConfig::Aggregation rollup = joined();
    rollup.upstream = 0;
    EXPECT_FALSE(path.adopt_aggregation(rollup));
    // The commit sequence never goes back.
    path.raise_commit_seq(0);
    feed(path, 100, 200);
    const CommitSnapshot snap = path.take_snapshot(kBase + 200'000);
    EXPECT_EQ(snap.seq, 2);
    ASSERT_EQ(snap.aggs.size(), 1u);
    EXPECT_EQ(snap.aggs[0].stats.records_in, 200);
}

}  // namespace
