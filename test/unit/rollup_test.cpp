// Roll-ups (README "Roll-ups", include/stoatflow/flow/rollup.hpp): a chain of roll-ups of a
// 1-minute aggregation equals, row for row, the direct aggregation of the same records at each
// size, with records out of order within grace and some late beyond every grace, across commits
// and a restart from the committed state; and the rules of a roll-up's input.
#include "stoatflow/flow/record_path.hpp"
#include "stoatflow/flow/rollup.hpp"

#include "stoatflow/core/error.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace {

using stoatflow::Error;
using stoatflow::core::AggFn;
using stoatflow::core::AggSpec;
using stoatflow::core::EmitStrategy;
using stoatflow::core::Millis;
using stoatflow::core::WindowSpec;
using stoatflow::core::WindowStateRow;
using stoatflow::flow::CommitSnapshot;
using stoatflow::flow::RecordPath;
using stoatflow::flow::RecordPathConfig;

constexpr Millis kBase = 1'700'002'800'000;  // an hour boundary
constexpr Millis kMinute = 60'000, kHour = 3'600'000;

RecordPathConfig::Aggregation agg(const std::string& name, WindowSpec spec,
                                  std::vector<AggSpec> aggs, int upstream = -1,
                                  EmitStrategy emit = EmitStrategy::OnWindowUpdate) {
    RecordPathConfig::Aggregation a;
    a.name = name;
    a.spec = spec;
    a.aggregates = std::move(aggs);
    a.emit = emit;
    a.retention = 2 * 86'400'000;
    a.upstream = upstream;
    return a;
}

const std::vector<AggSpec> kDirect = {{AggFn::CountStar, "", "count"},
                                      {AggFn::Sum, "amount", "sum_amount"},
                                      {AggFn::Min, "amount", "min_amount"},
                                      {AggFn::Max, "amount", "max_amount"}};
const std::vector<AggSpec> kRollup = {{AggFn::Sum, "count", "count"},
                                      {AggFn::Sum, "sum_amount", "sum_amount"},
                                      {AggFn::Min, "min_amount", "min_amount"},
                                      {AggFn::Max, "max_amount", "max_amount"}};
// Indexes in config(): the direct aggregations, then the roll-ups.
enum { kMin1, kHourDirect, kMin10Direct, kHourFromMin, kMin10FromMin, kHourFrom10 };

RecordPathConfig config() {
    RecordPathConfig c;
    c.topics = {"events"};
    c.decoder.key_path = "user";
    c.decoder.time_path = "ts";
    c.decoder.value_paths = {"amount"};
    c.max_out_of_orderness = 0;
    const Millis grace = 20'000;
    c.aggregations.push_back(
        agg("m1", WindowSpec::tumbling(kMinute, grace), kDirect, -1, EmitStrategy::OnWindowClose));
    c.aggregations.push_back(agg("h1", WindowSpec::tumbling(kHour, grace), kDirect));
    c.aggregations.push_back(agg("m10", WindowSpec::tumbling(10 * kMinute, grace), kDirect));
    c.aggregations.push_back(agg("h1_of_m1", WindowSpec::tumbling(kHour, 0), kRollup, kMin1));
    c.aggregations.push_back(agg("m10_of_m1", WindowSpec::tumbling(10 * kMinute, 5'000), kRollup,
                                 kMin1, EmitStrategy::OnWindowClose));
    c.aggregations.push_back(
        agg("h1_of_m10", WindowSpec::tumbling(kHour, 0), kRollup, kMin10FromMin));
    return c;
}

struct Record {
    std::int64_t offset;
    std::string payload;
};

// Mostly in order; every 7th record up to 15 s behind (within every grace); every 101st 3 hours
// behind (beyond every grace: late for the 1-minute and the 1-hour windows alike).
std::vector<Record> records(int n) {
    std::vector<Record> out;
    std::uint64_t x = 777;
    for (int i = 0; i < n; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        Millis ts = kBase + static_cast<Millis>(i) * 1'700;
        if (i % 7 == 3) ts -= static_cast<Millis>((x >> 40) % 15'000);
        if (i % 101 == 50) ts -= 3 * kHour;
        out.push_back({i, "{\"user\": \"u" + std::to_string((x >> 33) % 5) +
                              "\", \"ts\": " + std::to_string(ts) +
                              ", \"amount\": " + std::to_string((x >> 50) % 1000) + "}"});
    }
    return out;
}

// What the sinks hold (the newest row per aggregation, key, start) and the newest state row per
// window (what a restart reads back).
struct Committed {
    std::map<std::tuple<std::size_t, std::string, Millis>, std::vector<std::string>> sink;
    std::map<std::tuple<std::size_t, std::string, Millis>, WindowStateRow> state;
    std::string watermark_state;
    std::int64_t seq = 0, next_offset = 0;
};

void write(const RecordPath& path, const CommitSnapshot& snap, Committed& c) {
    for (std::size_t a = 0; a < snap.aggs.size(); ++a) {
        const auto& layout = path.layout(a);
        for (const auto& row : snap.aggs[a].out.state) c.state[{a, row.key, row.start}] = row;
        for (const auto& r : snap.aggs[a].out.upserts) {
            std::vector<std::string> v{std::to_string(r.end), r.final ? "final" : "open"};
            for (std::size_t i = 0; i < layout.size(); ++i)
                v.push_back(layout.as_text(i, r.cells[i]).value_or("NULL"));
            c.sink[{a, r.key, r.start}] = v;
        }
    }
    c.watermark_state = snap.watermark_state;
    c.seq = snap.seq;
    if (!snap.next_offsets.empty()) c.next_offset = snap.next_offsets.begin()->second;
}

void restore(RecordPath& path, const Committed& c) {
    path.restore_progress(c.watermark_state, c.seq);
    path.restore_offset({0, 0}, c.next_offset);
    for (const auto& [id, row] : c.state) path.restore_window(std::get<0>(id), row);
}

// Feeds the records in steps, a commit after each; with `crash_at`, the path is thrown away after
// that many records (what it consumed since its last commit is lost) and rebuilt from what was
// committed, reading on from the committed offset.
Committed run(const std::vector<Record>& recs, std::size_t step, std::size_t crash_at) {
    Committed c;
    auto path = std::make_unique<RecordPath>(config());
    Millis now = kBase;
    std::size_t next = 0;
    bool crashed = false;
    while (next < recs.size()) {
        const std::size_t until = std::min(recs.size(), next + step);
        for (; next < until; ++next) {
            if (!crashed && next == crash_at) {
                crashed = true;
                path = std::make_unique<RecordPath>(config());
                restore(*path, c);
                next = static_cast<std::size_t>(c.next_offset);
            }
            const Record& r = recs[next];
            path->process(0, 0, r.offset, r.payload.data(), r.payload.size(), nullptr, 0,
                          stoatflow::core::kNoTime, now);
        }
        now += 1'000;
        write(*path, path->take_snapshot(now), c);
    }
    const std::string far =
        "{\"user\": \"end\", \"ts\": " + std::to_string(kBase + 86'400'000) + ", \"amount\": 0}";
    path->process(0, 0, static_cast<std::int64_t>(recs.size()), far.data(), far.size(), nullptr, 0,
                  stoatflow::core::kNoTime, now);
    write(*path, path->take_snapshot(now + 1'000), c);
    return c;
}

// The final rows of one aggregation (without the far record's "end" key).
std::map<std::pair<std::string, Millis>, std::vector<std::string>> finals(const Committed& c,
                                                                          std::size_t a) {
    std::map<std::pair<std::string, Millis>, std::vector<std::string>> out;
    for (const auto& [id, v] : c.sink)
        if (std::get<0>(id) == a && std::get<1>(id) != "end") {
            EXPECT_EQ(v[1], "final") << std::get<1>(id) << " " << std::get<2>(id);
            out[{std::get<1>(id), std::get<2>(id)}] = v;
        }
    return out;
}

void expect_chain_equals_direct(const Committed& c) {
    const auto hour = finals(c, kHourDirect), min10 = finals(c, kMin10Direct);
    EXPECT_GT(hour.size(), 10u);
    EXPECT_EQ(finals(c, kHourFromMin), hour);
    EXPECT_EQ(finals(c, kHourFrom10), hour);
    EXPECT_EQ(finals(c, kMin10FromMin), min10);
}

TEST(Rollup, ChainOfThreeEqualsTheDirectAggregationRowForRow) {
    const auto recs = records(12'000);
    const Committed c = run(recs, 500, recs.size());
    expect_chain_equals_direct(c);
    // The late records were dropped (by the minute windows and the direct hour alike).
    std::int64_t counted = 0;
    for (const auto& [id, v] : finals(c, kHourDirect)) counted += std::stoll(v[2]);
    EXPECT_LT(counted, static_cast<std::int64_t>(recs.size()));
    EXPECT_GT(counted, static_cast<std::int64_t>(recs.size()) * 9 / 10);
}

TEST(Rollup, OneCommitForEverythingGivesTheSameRows) {
    const auto recs = records(6'000);
    const Committed one = run(recs, recs.size(), recs.size());
    expect_chain_equals_direct(one);
    const Committed many = run(recs, 37, recs.size());
    for (std::size_t a = 0; a < config().aggregations.size(); ++a)
        EXPECT_EQ(finals(many, a), finals(one, a)) << a;
}

TEST(Rollup, ARestartFromTheCommittedStateLosesAndRepeatsNothing) {
    const auto recs = records(12'000);
    const Committed clean = run(recs, 400, recs.size());
    for (std::size_t crash_at : {1'234u, 5'000u, 9'999u}) {
        const Committed crashed = run(recs, 400, crash_at);
        expect_chain_equals_direct(crashed);
        for (std::size_t a = 0; a < config().aggregations.size(); ++a)
            EXPECT_EQ(finals(crashed, a), finals(clean, a)) << a << " crash at " << crash_at;
    }
}

TEST(Rollup, TheRollupsWatermarkTrailsTheUpstreamBySizeAndGrace) {
    RecordPath path(config());
    const std::string r =
        "{\"user\": \"a\", \"ts\": " + std::to_string(kBase + kHour) + ", \"amount\": 1}";
    path.process(0, 0, 0, r.data(), r.size(), nullptr, 0, stoatflow::core::kNoTime, kBase);
    const CommitSnapshot snap = path.take_snapshot(kBase);
    EXPECT_EQ(snap.aggs[kMin1].watermark, kBase + kHour);
    EXPECT_EQ(snap.aggs[kHourFromMin].watermark, kBase + kHour - kMinute - 20'000);
    EXPECT_EQ(snap.aggs[kHourFrom10].watermark,
              kBase + kHour - kMinute - 20'000 - 10 * kMinute - 5'000);
}

std::string refusal(const WindowSpec& up, const std::vector<AggSpec>& up_aggs,
                    const WindowSpec& down, const std::vector<AggSpec>& down_aggs) {
    try {
        stoatflow::flow::rollup_input(0, "up", up, up_aggs, 0, down, down_aggs);
    } catch (const Error& e) {
        EXPECT_FALSE(e.hint().empty());
        return e.sqlstate() + " " + e.what();
    }
    return "accepted";
}

TEST(Rollup, RefusesWhatCannotBeRolledUp) {
    const WindowSpec minute = WindowSpec::tumbling(kMinute, 0), hour = WindowSpec::tumbling(kHour);
    EXPECT_EQ(refusal(minute, kDirect, hour, kRollup), "accepted");
    EXPECT_EQ(refusal(WindowSpec::session(kMinute), kDirect, hour, kRollup).substr(0, 5), "0A000");
    EXPECT_EQ(refusal(WindowSpec::sliding(kMinute), kDirect, hour, kRollup).substr(0, 5), "0A000");
    EXPECT_EQ(refusal(minute, kDirect, WindowSpec::session(kHour), kRollup).substr(0, 5), "0A000");
    // 7 minutes are no whole number of 2-minute windows; a 10-minute advance over 4-minute ones.
    EXPECT_EQ(refusal(WindowSpec::tumbling(2 * kMinute), kDirect, WindowSpec::tumbling(7 * kMinute),
                      kRollup)
                  .substr(0, 5),
              "22023");
    EXPECT_EQ(refusal(WindowSpec::tumbling(4 * kMinute), kDirect,
                      WindowSpec::hopping(kHour, 10 * kMinute), kRollup)
                  .substr(0, 5),
              "22023");
    // Hopping upstream: read by its tiles (starts at multiples of its size), when it has them.
    EXPECT_EQ(refusal(WindowSpec::hopping(5 * kMinute, kMinute), kDirect, hour, kRollup),
              "accepted");
    EXPECT_EQ(
        refusal(WindowSpec::hopping(5 * kMinute, 2 * kMinute), kDirect, hour, kRollup).substr(0, 5),
        "22023");
    // avg, count, and an average upstream column.
    EXPECT_EQ(refusal(minute, kDirect, hour, {{AggFn::Avg, "sum_amount", "a"}}).substr(0, 5),
              "0A000");
    EXPECT_EQ(refusal(minute, kDirect, hour, {{AggFn::CountStar, "", "count"}}).substr(0, 5),
              "0A000");
    EXPECT_EQ(refusal(minute, {{AggFn::Avg, "amount", "avg_amount"}}, hour,
                      {{AggFn::Max, "avg_amount", "m"}})
                  .substr(0, 5),
              "0A000");
    EXPECT_EQ(refusal(minute, kDirect, hour, {{AggFn::Sum, "amount", "s"}}),
              "42703 aggregation \"up\" has no column \"amount\"");
}

TEST(Rollup, AHoppingUpstreamIsReadByTheWindowsThatTileTime) {
    RecordPathConfig c = config();
    c.aggregations.resize(kMin10Direct + 1);
    c.aggregations[kMin1] =
        agg("m5_hop", WindowSpec::hopping(5 * kMinute, kMinute, 20'000), kDirect);
    c.aggregations.push_back(agg("h1_of_hop", WindowSpec::tumbling(kHour, 0), kRollup, kMin1));
    const auto recs = records(8'000);
    RecordPath path(c);
    Committed out;
    Millis now = kBase;
    for (std::size_t i = 0; i < recs.size(); ++i) {
        path.process(0, 0, recs[i].offset, recs[i].payload.data(), recs[i].payload.size(), nullptr,
                     0, stoatflow::core::kNoTime, now);
        if (i % 300 == 0) write(path, path.take_snapshot(now += 1'000), out);
    }
    const std::string far =
        "{\"user\": \"end\", \"ts\": " + std::to_string(kBase + 86'400'000) + ", \"amount\": 0}";
    path.process(0, 0, 99'999, far.data(), far.size(), nullptr, 0, stoatflow::core::kNoTime, now);
    write(path, path.take_snapshot(now + 1'000), out);
    const auto hour = finals(out, kHourDirect);
    EXPECT_GT(hour.size(), 5u);
    EXPECT_EQ(finals(out, kMin10Direct + 1), hour);
}

// A roll-up added to a running upstream (README "Roll-ups"): the path is rebuilt with it from
// the committed state, and the upstream's final windows of that state seed it; its windows then
// equal the direct aggregation's from the first one still open at the switch on (without the
// seed, that first hour would lack the minutes closed before the switch).
TEST(Rollup, ARollupAddedLaterStartsFromTheUpstreamsFinalWindows) {
    RecordPathConfig before = config();
    before.aggregations.resize(kHourDirect + 1);  // m1 and h1
    RecordPathConfig after = before;
    after.aggregations.push_back(agg("h1_later", WindowSpec::tumbling(kHour, 0), kRollup, kMin1));
    const auto recs = records(9'000);
    const std::size_t switch_at = 3'000;
    Committed c;
    std::vector<stoatflow::core::SinkRow> m1_finals;  // what the upstream's sink holds, final
    Millis now = kBase;
    {
        RecordPath a(before);
        for (std::size_t i = 0; i < switch_at; ++i) {
            a.process(0, 0, recs[i].offset, recs[i].payload.data(), recs[i].payload.size(), nullptr,
                      0, stoatflow::core::kNoTime, now);
            if (i % 250 == 249 || i + 1 == switch_at) {
                const CommitSnapshot snap = a.take_snapshot(now += 1'000);
                for (const auto& r : snap.aggs[kMin1].out.upserts)
                    if (r.final) m1_finals.push_back(r);
                write(a, snap, c);
            }
        }
    }
    RecordPath b(after);
    restore(b, c);
    const auto& up = b.layout(kMin1);
    std::size_t seeded = 0;
    for (const auto& r : m1_finals) {
        std::vector<stoatflow::core::Value> v;
        for (std::size_t k = 0; k < kRollup.size(); ++k)
            v.push_back(stoatflow::flow::rollup_value(up, k, r.cells[k]));
        seeded += b.seed_rollup(kHourDirect + 1, r.key, r.start, v);
    }
    EXPECT_GT(seeded, 0u);
    EXPECT_LT(seeded, m1_finals.size());  // minutes of hours closed before the switch: not seeded
    for (std::size_t i = switch_at; i < recs.size(); ++i) {
        b.process(0, 0, recs[i].offset, recs[i].payload.data(), recs[i].payload.size(), nullptr, 0,
                  stoatflow::core::kNoTime, now);
        if (i % 250 == 0) write(b, b.take_snapshot(now += 1'000), c);
    }
    const std::string far =
        "{\"user\": \"end\", \"ts\": " + std::to_string(kBase + 86'400'000) + ", \"amount\": 0}";
    b.process(0, 0, 99'999, far.data(), far.size(), nullptr, 0, stoatflow::core::kNoTime, now);
    write(b, b.take_snapshot(now + 1'000), c);
    const auto later = finals(c, kHourDirect + 1);
    ASSERT_FALSE(later.empty());
    const Millis first = later.begin()->first.second;
    for (const auto& [k, v] : later) EXPECT_LE(first, k.second);
    // The hour of the switch (1 h 25 min in) is the first one, and whole.
    EXPECT_EQ(first, kBase + kHour);
    auto direct = finals(c, kHourDirect);
    for (auto it = direct.begin(); it != direct.end();)
        it = it->first.second < first ? direct.erase(it) : std::next(it);
    EXPECT_EQ(later, direct);
}

}  // namespace
