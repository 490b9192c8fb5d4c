// The record path with a row type: the fast lane stages what it can; a record it leaves to
// PostgreSQL blocks the path, the records behind it wait in order (not counted, offsets not
// moved), and resume() lets them through; NULL keys and bad values are dead letters.
#include "stoatflow/flow/record_path.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace stoatflow;
using flow::RecordPath;
using flow::RecordPathConfig;
using flow::SlowRecord;
using format::FastType;

RecordPathConfig config() {
    RecordPathConfig c;
    c.topics = {"t"};
    flow::RowPlan plan;
    plan.names = {"user",         "ts",
                  "amount",       "kafka_key",
                  "kafka_topic",  "kafka_partition",
                  "kafka_offset", "kafka_timestamp",
                  "kafka_headers"};
    plan.paths = {{"user"}, {"ts"}, {"amount"}};
    plan.fast = {FastType::Text, FastType::Timestamptz, FastType::Int8,
                 FastType::Text, FastType::Text,        FastType::Int4,
                 FastType::Int8, FastType::Timestamptz, FastType::Other};
    plan.key_col = 0;
    plan.time_col = 1;
    c.row = plan;
    RecordPathConfig::Aggregation a;
    a.name = "per_minute";
    a.spec = core::WindowSpec::tumbling(60'000, 0);
    a.aggregates = {{core::AggFn::CountStar, "", "count"}, {core::AggFn::Sum, "amount", "sum"}};
    a.retention = 3'600'000;
    c.aggregations.push_back(a);
    return c;
}

void feed(RecordPath& p, std::int64_t offset, const std::string& payload) {
    p.process(0, 0, offset, payload.data(), payload.size(), "k", 1, 1000, core::kNoTime);
}

}  // namespace

TEST(RecordPathRows, BlocksInOrderAndResumes) {
    RecordPath p(config());
    feed(p, 0, R"({"user": "a", "ts": "2026-11-30T10:00:01Z", "amount": 5})");
    EXPECT_FALSE(p.blocked());
    feed(p, 1, R"({"user": "a", "ts": "2026-11-30 10:00:02", "amount": 1})");  // no offset
    ASSERT_TRUE(p.blocked());
    feed(p, 2, R"({"user": "b", "ts": "2026-11-30T10:00:03Z", "amount": 2})");
    feed(p, 3, R"({"user": null, "ts": "2026-11-30T10:00:04Z"})");
    feed(p, 4, R"({"user": "c", "ts": "2026-11-30T10:00:05Z", "amount": "x"})");
    EXPECT_EQ(p.records_since_commit(), 1);
    EXPECT_EQ(p.next_offsets().at(core::TopicPartition{0, 0}), 1);
    EXPECT_FALSE(p.note_end_of_partition(core::TopicPartition{0, 0},
                                         5));  // the position waits with the records
    // The blocked record's raw row is what the main thread converts.
    EXPECT_EQ(std::string(p.blocked_row().get(0, 1).text), "2026-11-30 10:00:02");
    EXPECT_EQ(std::string(p.blocked_row().get(0, 3).text), "k");

    SlowRecord rec;
    rec.key = "a";
    rec.time = 1796032802000;
    rec.values.assign(9, core::Value::missing());
    rec.values[2] = core::Value::of_int(1);
    p.resume(rec);
    // Records 2 and 3 went through; 4's "x" into bigint blocks again.
    ASSERT_TRUE(p.blocked());
    EXPECT_EQ(p.records_since_commit(), 4);
    SlowRecord bad;
    bad.reason = stoatflow::flow::DeadReason::BadValue;
    bad.detail = "column \"amount\" (bigint): invalid input syntax for type bigint: \"x\"";
    p.resume(bad);
    EXPECT_FALSE(p.blocked());
    EXPECT_EQ(p.records_since_commit(), 5);
    EXPECT_EQ(p.next_offsets().at(core::TopicPartition{0, 0}), 5);

    const flow::CommitSnapshot snap = p.take_snapshot(0);
    ASSERT_EQ(snap.dead.size(), 2u);
    EXPECT_EQ(snap.dead[0].offset, 3);
    EXPECT_EQ(snap.dead[0].reason, "missing_key");
    EXPECT_EQ(snap.dead[0].detail, "column \"user\" is null");
    EXPECT_EQ(snap.dead[1].offset, 4);
    EXPECT_EQ(snap.dead[1].reason, "bad_value");
    EXPECT_EQ(snap.aggs[0].stats.records_in, 3);
}

TEST(RecordPathRows, MetadataAndInvalidRecords) {
    RecordPathConfig c = config();
    c.row->key_col = 3;  // kafka_key
    RecordPath p(c);
    feed(p, 0, R"({"ts": 1796032800000, "amount": 7})");
    feed(p, 1, "not json");
    const std::string bad_key = "\xff";
    const std::string payload = R"({"ts": 1796032800000})";
    p.process(0, 0, 2, payload.data(), payload.size(), bad_key.data(), 1, 1000, core::kNoTime);
    p.process(0, 0, 3, payload.data(), payload.size(), nullptr, 0, 1000, core::kNoTime);
    EXPECT_FALSE(p.blocked());
    const flow::CommitSnapshot snap = p.take_snapshot(0);
    ASSERT_EQ(snap.dead.size(), 3u);
    EXPECT_EQ(snap.dead[0].reason, "invalid_json");
    EXPECT_EQ(snap.dead[1].reason, "invalid_text");
    EXPECT_EQ(snap.dead[2].reason, "missing_key");
    EXPECT_EQ(snap.aggs[0].stats.records_in, 1);
    ASSERT_EQ(snap.aggs[0].out.upserts.size(), 1u);
    EXPECT_EQ(snap.aggs[0].out.upserts[0].key, "k");
}

// The lane fills the metadata columns only when it reads one or leaves the record to
// PostgreSQL; a key that is not UTF-8 text is the same dead letter when nothing reads kafka_key,
// and a record left to PostgreSQL still carries every metadata column.
TEST(RecordPathRows, MetadataUnreadStillJudgedAndFilledForPostgres) {
    RecordPath p(config());  // key user, time ts, sum(amount): no metadata column read
    const std::string bad_key = "\xff";
    const std::string ok = R"({"user": "a", "ts": 1796032800000, "amount": 7})";
    p.process(0, 0, 0, ok.data(), ok.size(), bad_key.data(), 1, 1000, core::kNoTime);
    p.process(0, 0, 1, ok.data(), ok.size(), "k1", 2, 1000, core::kNoTime);
    EXPECT_FALSE(p.blocked());
    const std::string slow = R"({"user": "a", "ts": "2026-11-30 10:00:02", "amount": 1})";
    const format::KafkaHeader h{"h", "v", 1};
    p.process(0, 0, 2, slow.data(), slow.size(), "k2", 2, 1234, core::kNoTime, &h, 1);
    ASSERT_TRUE(p.blocked());
    const format::RawRows& row = p.blocked_row();
    EXPECT_EQ(std::string(row.get(0, 3).text), "k2");
    EXPECT_EQ(std::string(row.get(0, 4).text), "t");
    EXPECT_EQ(std::string(row.get(0, 5).text), "0");
    EXPECT_EQ(std::string(row.get(0, 6).text), "2");
    EXPECT_EQ(std::string(row.get(0, 7).text), "1234");
    EXPECT_EQ(std::string(row.get(0, 8).text), R"({"h": "v"})");
    SlowRecord rec;
    rec.key = "a";
    rec.time = 1796032802000;
    rec.values.assign(9, core::Value::missing());
    rec.values[2] = core::Value::of_int(1);
    p.resume(rec);
    EXPECT_FALSE(p.blocked());
    const flow::CommitSnapshot snap = p.take_snapshot(0);
    ASSERT_EQ(snap.dead.size(), 1u);
    EXPECT_EQ(snap.dead[0].offset, 0);
    EXPECT_EQ(snap.dead[0].reason, "invalid_text");
    EXPECT_EQ(snap.aggs[0].stats.records_in, 2);
}

// README "Time and the watermark": the end of a partition seen while its records wait behind a
// blocked one does not release the partition before they are judged. Partition 0's record
// blocks (11:05, no offset); partition 1's (10:00:01) waits behind it; both ends come then.
// Before, the ends released both partitions at once, partition 0's 11:05 alone set W and
// partition 1's in-order record was late.
TEST(RecordPathRows, EndOfPartitionWaitsForBlockedRecords) {
    RecordPath p(config());
    const core::TopicPartition p0{0, 0}, p1{0, 1};
    p.watermark().assign(p0.id(), true);
    p.watermark().assign(p1.id(), true);
    auto put = [&](const core::TopicPartition& tp, const std::string& payload) {
        p.process(0, tp.partition, 0, payload.data(), payload.size(), "k", 1, 1000, core::kNoTime);
    };
    put(p0, R"({"user": "a", "ts": "2026-11-30 11:05:00", "amount": 1})");
    ASSERT_TRUE(p.blocked());
    EXPECT_FALSE(p.end_of_partition(p0, 1, 5));
    put(p1, R"({"user": "a", "ts": "2026-11-30T10:00:01Z", "amount": 2})");
    EXPECT_FALSE(p.end_of_partition(p1, 1, 5));

    SlowRecord rec;
    rec.key = "a";
    rec.time = 1796036700000;  // 2026-11-30 11:05:00 UTC
    rec.values.assign(9, core::Value::missing());
    rec.values[2] = core::Value::of_int(1);
    p.resume(rec);
    ASSERT_FALSE(p.blocked());
    EXPECT_EQ(p.next_offsets().at(p0), 1);
    EXPECT_EQ(p.next_offsets().at(p1), 1);
    const flow::CommitSnapshot snap = p.take_snapshot(0);
    EXPECT_EQ(snap.watermark, 1796032801000);  // partition 1's record, the minimum
    EXPECT_EQ(snap.aggs[0].stats.records_in, 2);
    EXPECT_EQ(snap.aggs[0].stats.dropped_late_window, 0);
}

// README "Views and tables", dead_letters: a value PostgreSQL converted but no aggregate can use
// (value_out_of_range) is a dead letter of the aggregations reading it only; the others fold the
// record. When every aggregation reads it, the record is a dead letter of the source.
TEST(RecordPathRows, BadValueIsADeadLetterOfTheAggregationsReadingIt) {
    RecordPathConfig c = config();
    RecordPathConfig::Aggregation counts = c.aggregations[0];
    counts.name = "counts";
    counts.aggregates = {{core::AggFn::CountStar, "", "count"}};
    c.aggregations.push_back(counts);
    RecordPath p(c);
    const std::string why = "column \"amount\" (numeric) = NaN: NaN and infinities are not "
                            "aggregated";
    auto resume_bad = [&] {
        SlowRecord rec;
        rec.key = "a";
        rec.time = 1796032802000;
        rec.values.assign(9, core::Value::missing());
        rec.bad.push_back({2, format::DecodeError::ValueOutOfRange, why});
        p.resume(rec);
    };
    feed(p, 0, R"({"user": "a", "ts": "2026-11-30 10:00:02", "amount": 1})");
    ASSERT_TRUE(p.blocked());
    resume_bad();
    feed(p, 1, R"({"user": "a", "ts": "2026-11-30T10:00:03Z", "amount": 4})");  // fast lane
    EXPECT_FALSE(p.blocked());
    EXPECT_EQ(p.records_since_commit(), 2);
    flow::CommitSnapshot snap = p.take_snapshot(0);
    ASSERT_EQ(snap.dead.size(), 1u);
    EXPECT_EQ(snap.dead[0].offset, 0);
    EXPECT_EQ(snap.dead[0].reason, "value_out_of_range");
    EXPECT_EQ(snap.dead[0].detail, "aggregation \"per_minute\": " + why);
    EXPECT_EQ(snap.aggs[0].stats.records_in, 1);  // per_minute: record 1 only
    EXPECT_EQ(snap.aggs[1].stats.records_in, 2);  // counts: both

    RecordPath only(config());  // its one aggregation reads amount
    const std::string payload = R"({"user": "a", "ts": "2026-11-30 10:00:02", "amount": 1})";
    only.process(0, 0, 0, payload.data(), payload.size(), "k", 1, 1000, core::kNoTime);
    ASSERT_TRUE(only.blocked());
    SlowRecord rec;
    rec.key = "a";
    rec.time = 1796032802000;
    rec.values.assign(9, core::Value::missing());
    rec.bad.push_back({2, format::DecodeError::ValueOutOfRange, why});
    only.resume(rec);
    snap = only.take_snapshot(0);
    ASSERT_EQ(snap.dead.size(), 1u);
    EXPECT_EQ(snap.dead[0].reason, "value_out_of_range");
    EXPECT_EQ(snap.dead[0].detail, why);
    EXPECT_EQ(snap.aggs[0].stats.records_in, 0);
    EXPECT_EQ(snap.records, 1);
}

// An aggregation adopted into a running path (README "Backfill and start_from") may read a
// metadata column none of the others reads: from then on the lane fills them. Before, the lane
// had decided once, at the first record, that nothing read them, and the adopted aggregation's
// values were never filled in.
TEST(RecordPathRows, AdoptedAggregationReadingMetadataGetsItFilled) {
    RecordPath p(config());  // key user, time ts, sum(amount): no metadata column read
    feed(p, 0, R"({"user": "a", "ts": "2026-11-30T10:00:01Z", "amount": 5})");
    (void)p.take_snapshot(0);  // an adoption follows a commit
    RecordPathConfig::Aggregation a;
    a.name = "offsets";
    a.spec = core::WindowSpec::tumbling(60'000, 0);
    a.aggregates = {{core::AggFn::Sum, "kafka_offset", "offsets"}};
    a.emit = core::EmitStrategy::OnWindowUpdate;
    a.retention = 3'600'000;
    ASSERT_TRUE(p.adopt_aggregation(a));
    feed(p, 7, R"({"user": "a", "ts": "2026-11-30T10:00:02Z", "amount": 1})");
    feed(p, 9, R"({"user": "a", "ts": "2026-11-30T10:00:03Z", "amount": 2})");
    EXPECT_FALSE(p.blocked());
    const flow::CommitSnapshot snap = p.take_snapshot(1);
    ASSERT_EQ(snap.aggs.size(), 2u);
    ASSERT_EQ(snap.aggs[1].out.upserts.size(), 1u);
    const auto& row = snap.aggs[1].out.upserts[0];
    EXPECT_EQ(row.key, "a");
    EXPECT_EQ(p.layout(1).as_text(0, row.cells[0]).value_or("NULL"), "16");
    EXPECT_EQ(snap.aggs[0].stats.records_in, 3);
}
