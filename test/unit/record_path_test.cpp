// RecordPath driven the way the source worker drives it: a consume thread feeds records while
// the main thread writes the previous commit's snapshot (reading only plain values and the
// aggregations' fixed layouts), and the two meet only at take_snapshot(), after the consume
// step is joined. Under ThreadSanitizer (STOATFLOW_TSAN) a race on anything the two threads
// share fails the run; without it, the test still checks that the split changes no result.
#include "stoatflow/flow/record_path.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

using stoatflow::core::AggFn;
using stoatflow::core::AggSpec;
using stoatflow::core::EmitStrategy;
using stoatflow::core::Millis;
using stoatflow::core::WindowSpec;
using stoatflow::flow::CommitSnapshot;
using stoatflow::flow::RecordPath;
using stoatflow::flow::RecordPathConfig;

constexpr Millis kBase = 1'700'000'000'000;  // a minute boundary (epoch ms divisible by 60,000)
constexpr int kPartitions = 4;               // per topic
constexpr int kTopics =
    2;  // the source reads two topics (README "Expressions and PostgreSQL aggregates")
using stoatflow::core::TopicPartition;

RecordPathConfig config() {
    RecordPathConfig c;
    c.topics = {"web_activity", "purchases"};
    c.decoder.key_path = "user";
    c.decoder.time_path = "ts";
    c.decoder.value_paths = {"amount"};
    c.max_out_of_orderness = 5'000;
    RecordPathConfig::Aggregation tumbling;
    tumbling.name = "per_minute";
    tumbling.spec = WindowSpec::tumbling(60'000, 10'000);
    tumbling.aggregates = {{AggFn::CountStar, "", "count"}, {AggFn::Sum, "amount", "sum_amount"}};
    tumbling.emit = EmitStrategy::OnWindowUpdate;
    tumbling.retention = 3'600'000;
    c.aggregations.push_back(tumbling);
    RecordPathConfig::Aggregation session = tumbling;
    session.name = "sessions";
    session.spec = WindowSpec::session(30'000, 10'000);
    session.emit = EmitStrategy::OnWindowClose;
    c.aggregations.push_back(session);
    return c;
}

struct Record {
    TopicPartition from;
    std::int64_t offset;
    std::string payload;
};

// Deterministic records: 8 users, mostly in order, some late, some malformed.
std::vector<Record> records(int n) {
    std::vector<Record> out;
    std::map<TopicPartition, std::int64_t> next;
    std::uint64_t x = 12345;
    for (int i = 0; i < n; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const TopicPartition p{static_cast<std::int32_t>((x >> 60) % kTopics),
                               static_cast<std::int32_t>((x >> 33) % kPartitions)};
        // Up to 20 s out of order; every 50th record two minutes late.
        const Millis jitter = i % 50 == 7 ? 120'000 : static_cast<Millis>((x >> 40) % 20'000);
        const Millis ts = kBase + static_cast<Millis>(i) * 250 - jitter;
        std::string payload;
        if (i % 97 == 13)
            payload = "{\"user\": \"u" + std::to_string(i % 8) + "\", \"ts\": ";  // truncated
        else
            payload = "{\"user\": \"u" + std::to_string((x >> 20) % 8) +
                      "\", \"ts\": " + std::to_string(ts) +
                      ", \"amount\": " + std::to_string((x >> 50) % 100) + "}";
        out.push_back({p, next[p]++, payload});
    }
    return out;
}

// What a sink would hold: the newest row per (aggregation, key, start), deletes applied.
using Sink = std::map<std::tuple<std::size_t, std::string, Millis>, std::string>;

struct Written {
    Sink sink;
    std::int64_t records = 0;
    std::int64_t dead = 0;
    std::map<TopicPartition, std::int64_t> offsets;
    std::int64_t state_rows = 0;
    std::int64_t late = 0;  // the per-minute aggregation's late drops (the stats are cumulative)
};

// The main thread's side: everything the commit cycle reads from a snapshot.
void write(const RecordPath& path, const CommitSnapshot& snap, Written& w) {
    w.records += snap.records;
    w.dead += static_cast<std::int64_t>(snap.dead.size());
    for (const auto& [p, o] : snap.next_offsets) w.offsets[p] = o;
    if (!snap.aggs.empty()) w.late = snap.aggs[0].stats.dropped_late_window;
    for (std::size_t a = 0; a < snap.aggs.size(); ++a) {
        const auto& layout = path.layout(a);
        for (const auto& row : snap.aggs[a].out.state) {
            std::string blob;
            layout.serialize(row.cells.data(), blob, row.floor);
            w.state_rows += !blob.empty();
        }
        for (const auto& d : snap.aggs[a].out.deletes) w.sink.erase({a, d.key, d.start});
        for (const auto& r : snap.aggs[a].out.upserts) {
            std::string v = std::to_string(r.end);
            for (std::size_t i = 0; i < layout.size(); ++i)
                v += "|" + layout.as_text(i, r.cells[i]).value_or("NULL");
            w.sink[{a, r.key, r.start}] = v;
        }
    }
}

// Feeds `recs` in steps of `step` records; with `threaded`, each step runs on its own thread
// while the main thread writes the snapshot taken before it (as the worker's commit does).
Written run(const std::vector<Record>& recs, std::size_t step, bool threaded) {
    RecordPath path(config());
    Written w;
    Millis now = kBase;
    std::size_t next = 0;
    auto consume = [&](std::size_t until, Millis wall) {
        for (; next < until; ++next) {
            const Record& r = recs[next];
            path.process(r.from.topic, r.from.partition, r.offset, r.payload.data(),
                         r.payload.size(), nullptr, 0, stoatflow::core::kNoTime, wall);
        }
        path.tick(wall);
    };
    CommitSnapshot pending;
    bool have_pending = false;
    while (next < recs.size()) {
        const std::size_t until = std::min(recs.size(), next + step);
        now += 1'000;
        if (threaded) {
            std::thread consumer(consume, until, now);
            if (have_pending) write(path, pending, w);
            consumer.join();
        } else {
            if (have_pending) write(path, pending, w);
            consume(until, now);
        }
        pending = path.take_snapshot(now);
        have_pending = true;
    }
    if (have_pending) write(path, pending, w);
    // Far ahead on every partition of both topics: every window closes, the last commit
    // emits it.
    for (std::int32_t t = 0; t < kTopics; ++t)
        for (std::int32_t p = 0; p < kPartitions; ++p) {
            const std::string far =
                "{\"user\": \"end\", \"ts\": " + std::to_string(kBase + 86'400'000) +
                ", \"amount\": 0}";
            path.process(t, p, w.offsets[{t, p}], far.data(), far.size(), nullptr, 0,
                         stoatflow::core::kNoTime, now);
        }
    write(path, path.take_snapshot(now + 1'000), w);
    return w;
}

TEST(RecordPathThreads, ConsumeWhileWritingGivesTheSameResultsAsOneThread) {
    const auto recs = records(20'000);
    const Written one = run(recs, recs.size(), false);
    const Written split = run(recs, 700, true);
    EXPECT_EQ(one.records, static_cast<std::int64_t>(recs.size()) + kTopics * kPartitions);
    EXPECT_EQ(one.offsets.size(), static_cast<std::size_t>(kTopics * kPartitions));
    EXPECT_EQ(split.records, one.records);
    EXPECT_EQ(split.dead, one.dead);
    EXPECT_GT(one.dead, 0);
    EXPECT_EQ(split.offsets, one.offsets);
    EXPECT_EQ(split.sink.size(), one.sink.size());
    EXPECT_EQ(split.sink, one.sink);
    EXPECT_GT(split.state_rows, one.state_rows);  // more commits wrote more state versions
    // Every well-formed record is counted in the per-minute windows exactly once.
    std::int64_t counted = 0;
    for (const auto& [id, v] : split.sink)
        if (std::get<0>(id) == 0 && std::get<1>(id) != "end")
            counted += std::stoll(v.substr(v.find('|') + 1));
    EXPECT_EQ(split.late, one.late);
    EXPECT_GT(split.late, 0);
    EXPECT_EQ(counted + split.late + split.dead, static_cast<std::int64_t>(recs.size()));
}

}  // namespace

namespace {

// Offsets, dead letters and the watermark keep the topics apart: partition 0 of each topic is
// its own partition (README "Expressions and PostgreSQL aggregates"), and a dead letter names its
// topic.
TEST(RecordPathTopics, PartitionsOfDifferentTopicsAreDistinct) {
    RecordPathConfig c = config();
    c.max_out_of_orderness = 0;
    RecordPath path(c);
    const std::string a = "{\"user\": \"u\", \"ts\": 1000}";
    const std::string b = "{\"user\": \"u\", \"ts\": 5000}";
    path.process(0, 0, 0, a.data(), a.size(), nullptr, 0, stoatflow::core::kNoTime, 0);
    path.process(0, 0, 1, a.data(), a.size(), nullptr, 0, stoatflow::core::kNoTime, 0);
    path.process(1, 0, 7, b.data(), b.size(), nullptr, 0, stoatflow::core::kNoTime, 0);
    path.process(1, 0, 8, "bad", 3, nullptr, 0, stoatflow::core::kNoTime, 0);
    // One watermark over both topics: the minimum of their partitions' maxima.
    EXPECT_EQ(path.watermark().current(), 1000);
    EXPECT_EQ(path.watermark().partition_max(TopicPartition{0, 0}.id()), 1000);
    EXPECT_EQ(path.watermark().partition_max(TopicPartition{1, 0}.id()), 5000);
    const CommitSnapshot snap = path.take_snapshot(0);
    ASSERT_EQ(snap.next_offsets.size(), 2u);
    EXPECT_EQ(snap.next_offsets.at(TopicPartition{0, 0}), 2);
    EXPECT_EQ(snap.next_offsets.at(TopicPartition{1, 0}), 9);
    ASSERT_EQ(snap.dead.size(), 1u);
    EXPECT_EQ(snap.dead[0].from, (TopicPartition{1, 0}));
    EXPECT_EQ(path.topic_name(snap.dead[0].from.topic), "purchases");
    // The committed state restores into a new path exactly.
    RecordPath again(c);
    again.restore_progress(snap.watermark_state, snap.seq);
    for (const auto& [tp, o] : snap.next_offsets) again.restore_offset(tp, o);
    EXPECT_EQ(again.watermark().serialize(), snap.watermark_state);
    EXPECT_EQ(again.next_offsets(), snap.next_offsets);
    // A retention skip and an end of partition touch only their own topic's partition.
    again.skip_offsets({1, 0}, 9, 20);
    EXPECT_FALSE(again.note_end_of_partition({0, 0}, 2));
    EXPECT_TRUE(again.note_end_of_partition({0, 1}, 4));
    const CommitSnapshot snap2 = again.take_snapshot(0);
    EXPECT_EQ(snap2.next_offsets.at(TopicPartition{1, 0}), 20);
    EXPECT_EQ(snap2.next_offsets.at(TopicPartition{0, 0}), 2);
    EXPECT_EQ(snap2.next_offsets.at(TopicPartition{0, 1}), 4);
    EXPECT_EQ(snap2.skipped.size(), 1u);
    EXPECT_EQ(snap2.skipped.at(TopicPartition{1, 0}), 11);
}

}  // namespace

// README "Views and tables", dead_letters: a value only one aggregation cannot use is that
// aggregation's dead letter; the others fold the record, and it moves the watermark. Only when
// no aggregation can use it is the record a dead letter of the source (as before).
TEST(RecordPath, BadValueIsTheReadingAggregationsDeadLetter) {
    RecordPathConfig c;
    c.topics = {"t"};
    c.decoder.key_path = "user";
    c.decoder.time_path = "ts";
    c.decoder.value_paths = {"page"};
    RecordPathConfig::Aggregation counts;
    counts.name = "counts";
    counts.spec = WindowSpec::tumbling(60'000, 0);
    counts.aggregates = {{AggFn::CountStar, "", "n"}};
    counts.retention = 3'600'000;
    RecordPathConfig::Aggregation sums = counts;
    sums.name = "sums";
    sums.aggregates = {{AggFn::CountStar, "", "n"}, {AggFn::Sum, "page", "pages"}};
    c.aggregations = {counts, sums};
    RecordPath p(c);
    const std::vector<std::string> payloads = {
        R"({"user":"a","ts":1000,"page":2})", R"({"user":"a","ts":2000,"page":"home"})",
        R"({"user":"a","ts":3000,"page":3})", R"({"user":"a","ts":90000,"page":{}})"};
    for (std::size_t i = 0; i < payloads.size(); ++i)
        p.process(0, 0, static_cast<std::int64_t>(i), payloads[i].data(), payloads[i].size(),
                  nullptr, 0, 0, 0);
    const CommitSnapshot snap = p.take_snapshot(0);
    EXPECT_EQ(snap.records, 4);
    EXPECT_EQ(snap.watermark, 90000);  // the last record moved it, though "sums" skipped it
    ASSERT_EQ(snap.dead.size(), 2u);
    EXPECT_EQ(snap.dead[0].offset, 1);
    EXPECT_EQ(snap.dead[0].reason, "non_numeric_value");
    EXPECT_EQ(snap.dead[0].detail, R"(aggregation "sums": field "page" is a string)");
    EXPECT_EQ(snap.dead[1].offset, 3);
    EXPECT_EQ(snap.dead[1].detail, R"(aggregation "sums": field "page" is an object)");
    EXPECT_EQ(snap.aggs[0].stats.records_in, 4);
    // "sums" skipped both records as a whole: its count(*) did not take them either
    EXPECT_EQ(snap.aggs[1].stats.records_in, 2);

    // With only "sums", nobody can use the record: a dead letter of the source, 0.1's detail,
    // and the watermark does not move.
    c.aggregations = {sums};
    RecordPath only(c);
    only.process(0, 0, 0, payloads[1].data(), payloads[1].size(), nullptr, 0, 0, 0);
    const CommitSnapshot s2 = only.take_snapshot(0);
    ASSERT_EQ(s2.dead.size(), 1u);
    EXPECT_EQ(s2.dead[0].detail, R"(field "page" is a string)");
    EXPECT_EQ(s2.watermark, stoatflow::core::kNoTime);
    EXPECT_EQ(s2.aggs[0].stats.records_in, 0);
}
