// The record path reading format => 'csv' through the one seam (format::make_row_decoder): the
// same lanes as JSON, positional fields, a header at offset 0 skipped (consumed, no dead
// letter), bad_csv dead letters; the executor lane skips the header the same way.
#include "stoatflow/flow/record_path.hpp"

#include "stoatflow/core/error.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace stoatflow;
using flow::RecordPath;
using flow::RecordPathConfig;
using format::FastType;

RecordPathConfig config(bool executor) {
    RecordPathConfig c;
    c.executor = executor;
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
    plan.format = format::parse_record_format(
        "csv", {{"header", "true", format::FormatOption::Type::Boolean}});
    c.row = plan;
    RecordPathConfig::Aggregation a;
    a.name = "per_minute";
    a.spec = core::WindowSpec::tumbling(60'000, 0);
    a.aggregates = {{core::AggFn::CountStar, "", "count"}, {core::AggFn::Sum, "amount", "sum"}};
    a.retention = 3'600'000;
    c.aggregations.push_back(a);
    return c;
}

void put(RecordPath& p, int partition, std::int64_t offset, const std::string& payload) {
    p.process(0, partition, offset, payload.data(), payload.size(), "k", 1, 1000, core::kNoTime);
}

}  // namespace

TEST(RecordPathCsv, FastLaneHeaderPerPartitionAndBadCsv) {
    RecordPath p(config(false));
    put(p, 0, 0, "user,ts,amount\r\n");  // partition 0's header: skipped
    put(p, 0, 1, "a,2026-11-30T10:00:01Z,5\n");
    put(p, 0, 2, "user,ts,amount");  // not the first: bad_value (ts)
    ASSERT_TRUE(p.blocked());        // (PostgreSQL judges "ts")
    flow::SlowRecord bad;
    bad.reason = flow::DeadReason::BadValue;
    bad.detail = "column \"ts\"";
    p.resume(bad);
    put(p, 1, 0, "\"b\",2026-11-30T10:00:02Z,\"7\"");  // partition 1: no header, data
    put(p, 1, 1, "user,ts,amount");                    // not at offset 0: no header
    ASSERT_TRUE(p.blocked());
    p.resume(bad);
    put(p, 0, 3, "a,2026-11-30T10:00:03Z");      // a field short
    put(p, 0, 4, "a,\"2026-11-30T10:00:04Z,1");  // unterminated
    put(p, 0, 5, "a,2026-11-30T10:00:05Z,");     // amount NULL: counted, not summed
    EXPECT_FALSE(p.blocked());
    EXPECT_EQ(p.next_offsets().at(core::TopicPartition{0, 0}), 6);
    EXPECT_EQ(p.next_offsets().at(core::TopicPartition{0, 1}), 2);
    const flow::CommitSnapshot snap = p.take_snapshot(0);
    EXPECT_EQ(snap.records, 8);  // the header consumed like any record
    ASSERT_EQ(snap.dead.size(), 4u);
    EXPECT_EQ(snap.dead[0].reason, "bad_value");
    EXPECT_EQ(snap.dead[1].reason, "bad_value");
    EXPECT_EQ(snap.dead[2].reason, "bad_csv");
    EXPECT_EQ(snap.dead[2].offset, 3);
    EXPECT_EQ(snap.dead[2].detail, "the record has 2 fields, the source 3 columns");
    EXPECT_EQ(snap.dead[2].payload, "a,2026-11-30T10:00:03Z");
    EXPECT_EQ(snap.dead[3].reason, "bad_csv");
    EXPECT_EQ(snap.dead[3].detail, "field 2: the quote is not closed");
    EXPECT_EQ(snap.aggs[0].stats.records_in, 3);
    ASSERT_EQ(snap.aggs[0].out.upserts.size(), 2u);  // keys a and b, one window
}

TEST(RecordPathCsv, ExecutorLaneSkipsTheHeader) {
    RecordPath p(config(true));
    put(p, 0, 0, "user,ts,amount");
    put(p, 0, 1, "a,2026-11-30T10:00:01Z,5");
    put(p, 0, 2, "a,b");
    EXPECT_EQ(p.exec_waiting(), 2u);  // the header is not handed to the main thread
    EXPECT_EQ(p.records_since_commit(), 1);
    const flow::ExecBatch& b = p.take_exec_batch();
    ASSERT_EQ(b.records.size(), 2u);
    EXPECT_EQ(b.records[0].offset, 1);
    EXPECT_EQ(b.records[0].reason, flow::DeadReason::None);
    EXPECT_EQ(std::string(b.rows.get(b.records[0].row, 2).text), "5");
    EXPECT_EQ(std::string(b.rows.get(b.records[0].row, 3).text), "k");  // kafka_key after
    EXPECT_EQ(b.records[1].reason, flow::DeadReason::BadCsv);
}

TEST(RecordFormat, Options) {
    using T = format::FormatOption::Type;
    auto csv = [](std::vector<format::FormatOption> o) {
        return format::parse_record_format("csv", o).csv;
    };
    EXPECT_EQ(csv({}).delimiter, ',');
    EXPECT_EQ(csv({{"delimiter", "\t", T::String}}).delimiter, '\t');
    EXPECT_EQ(csv({{"quote", "'", T::String}}).quote, '\'');
    EXPECT_EQ(*csv({{"null", "\\N", T::String}}).null_marker, "\\N");
    EXPECT_TRUE(csv({{"header", "true", T::Boolean}}).header);
    EXPECT_FALSE(csv({{"header", "false", T::String}}).header);
    auto refused = [](const std::string& f, std::vector<format::FormatOption> o) {
        try {
            format::parse_record_format(f, o);
        } catch (const stoatflow::Error& e) {
            EXPECT_EQ(e.sqlstate(), "22023");
            return std::string(e.what()) + " / " + e.hint();
        }
        return std::string("accepted");
    };
    EXPECT_EQ(refused("csv", {{"sep", ";", T::String}}),
              "unknown format option \"sep\" for format csv / The options of format 'csv' are "
              "delimiter, quote, null, header.");
    EXPECT_NE(refused("csv", {{"delimiter", ";;", T::String}}), "accepted");
    EXPECT_NE(refused("csv", {{"delimiter", "\n", T::String}}), "accepted");
    EXPECT_NE(refused("csv", {{"delimiter", "1", T::Other}}), "accepted");
    EXPECT_NE(refused("csv", {{"quote", ",", T::String}}), "accepted");
    EXPECT_NE(refused("csv", {{"header", "yes", T::String}}), "accepted");
    EXPECT_NE(refused("csv", {{"null", "a,b", T::String}}), "accepted");
    EXPECT_NE(refused("csv", {{"null", std::nullopt, T::Other}}), "accepted");
    EXPECT_NE(refused("json", {{"delimiter", ",", T::String}}), "accepted");
    EXPECT_NE(refused("avro", {}), "accepted");
    EXPECT_EQ(refused("json", {}), "accepted");
}

// A path built after a restart starts at the committed offsets: the first record it reads of a
// partition is no header unless it is the partition's first (offset 0), so a replay reads every
// record as the first run did.
TEST(RecordPathCsv, OnlyOffsetZeroIsAHeader) {
    RecordPath p(config(false));
    p.restore_offset(core::TopicPartition{0, 0}, 5);
    put(p, 0, 5, "user,ts,amount");
    ASSERT_TRUE(p.blocked());  // a record: PostgreSQL judges "ts" (bad_value)
    EXPECT_EQ(std::string(p.blocked_row().get(0, 0).text), "user");
}
