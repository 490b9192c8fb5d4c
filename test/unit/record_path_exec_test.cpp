// The record path in executor mode (README "Expressions and PostgreSQL aggregates"): the consume
// side only extracts records into raw rows, in order, unreadable ones marked; the main thread takes
// the batch and feeds each record (or makes it a dead letter) in order. Nothing is counted,
// positioned or windowed before the main thread fed it; filtered records count for the watermark,
// not for the window; a dead letter of one aggregation leaves the others their record.
#include "stoatflow/flow/record_path.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using namespace stoatflow;
using flow::ExecFold;
using flow::RecordPath;
using flow::RecordPathConfig;
using format::FastType;

// An external aggregate that counts the rows handed to add: a state is an int.
class Counting final : public core::ExternalAggregates {
public:
    core::ExternalHandle create() override { return new int(0); }
    void add(core::ExternalHandle h, const void* row) override {
        *static_cast<int*>(h) += *static_cast<const int*>(row);
    }
    void merge(core::ExternalHandle into, core::ExternalHandle from) override {
        *static_cast<int*>(into) += *static_cast<int*>(from);
    }
    core::ExternalHandle copy(core::ExternalHandle h) override {
        return new int(*static_cast<int*>(h));
    }
    void destroy(core::ExternalHandle h) noexcept override { delete static_cast<int*>(h); }
    void serialize(core::ExternalHandle h, std::string& out) override {
        out += std::to_string(*static_cast<int*>(h));
    }
    core::ExternalHandle deserialize(const char* data, std::size_t len) override {
        return new int(std::stoi(std::string(data, len)));
    }
    bool can_merge() const override { return true; }
    std::size_t memory_bytes() const override { return 0; }
};

RecordPathConfig config(std::shared_ptr<core::ExternalAggregates> ext) {
    RecordPathConfig c;
    c.executor = true;
    c.topics = {"t"};
    flow::RowPlan plan;
    plan.names = {"user",         "ts",
                  "amount",       "kafka_key",
                  "kafka_topic",  "kafka_partition",
                  "kafka_offset", "kafka_timestamp",
                  "kafka_headers"};
    plan.paths = {{"user"}, {"ts"}, {"amount"}};
    plan.fast = {FastType::Text, FastType::Int8, FastType::Int8, FastType::Text, FastType::Text,
                 FastType::Int4, FastType::Int8, FastType::Int8, FastType::Other};
    plan.key_col = 0;
    plan.time_col = 1;
    c.row = plan;
    RecordPathConfig::Aggregation a;
    a.name = "ext";
    a.spec = core::WindowSpec::tumbling(60'000, 0);
    a.retention = 3'600'000;
    a.external = ext;
    c.aggregations.push_back(a);
    RecordPathConfig::Aggregation b = a;
    b.name = "ext2";
    c.aggregations.push_back(b);
    return c;
}

void feed(RecordPath& p, std::int64_t offset, const std::string& payload) {
    p.process(0, 0, offset, payload.data(), payload.size(), "k", 1, 1000, 0);
}

}  // namespace

TEST(RecordPathExec, ExtractsThenFeedsInOrder) {
    auto ext = std::make_shared<Counting>();
    RecordPath p(config(ext));
    ASSERT_TRUE(p.executor());
    feed(p, 0, R"({"user": "a", "ts": 1000, "amount": 5})");
    feed(p, 1, R"({"user": "a", "ts": 2000)");  // not JSON: marked, still in order
    feed(p, 2, R"({"user": "b", "ts": 70000, "amount": 1})");
    feed(p, 3, R"({"user": "c", "ts": 3000, "amount": 2})");
    EXPECT_EQ(p.exec_waiting(), 4u);
    EXPECT_TRUE(p.waiting_for_main());
    // nothing counted, nothing positioned, the end of the partition cannot pass them
    EXPECT_EQ(p.records_since_commit(), 0);
    EXPECT_TRUE(p.next_offsets().empty());
    EXPECT_FALSE(p.note_end_of_partition(core::TopicPartition{0, 0}, 4));

    const flow::ExecBatch& b = p.take_exec_batch();
    EXPECT_EQ(p.exec_waiting(), 0u);
    ASSERT_EQ(b.records.size(), 4u);
    EXPECT_EQ(b.records[0].reason, flow::DeadReason::None);
    EXPECT_STREQ(format::to_string(b.records[1].reason), "invalid_json");
    EXPECT_EQ(std::string(b.rows.get(b.records[2].row, 0).text), "b");
    EXPECT_EQ(std::string(b.rows.get(b.records[3].row, 3).text), "k");  // kafka_key
    EXPECT_EQ(b.records[3].offset, 3);

    const int one = 1;
    std::vector<ExecFold> folds(2);
    folds[0] = {true, false, "a", &one};
    folds[1] = {true, false, "a", &one};
    p.exec_feed(b.records[0], 1000, nullptr, nullptr, folds.data());
    p.exec_dead(b.records[1], b.records[1].reason, b.records[1].detail);
    // aggregation 0 filters record 2 out (it still moves the watermark to 70 s, closing the
    // first minute); aggregation 1 takes it
    folds[0] = {false, true, "b", nullptr};
    folds[1] = {true, false, "b", &one};
    p.exec_feed(b.records[2], 70000, nullptr, nullptr, folds.data());
    // record 3 is late for both; aggregation 1 has a dead letter for it (noted), 0 folds it
    p.exec_note(b.records[3], flow::DeadReason::MissingKey, "aggregation \"ext2\": key is null");
    folds[0] = {true, false, "c", &one};
    folds[1] = {false, false, "c", nullptr};
    p.exec_feed(b.records[3], 3000, nullptr, nullptr, folds.data());

    EXPECT_EQ(p.records_since_commit(), 4);
    EXPECT_EQ(p.next_offsets().at(core::TopicPartition{0, 0}), 4);
    const flow::CommitSnapshot snap = p.take_snapshot(0);
    EXPECT_EQ(snap.watermark, 70000);
    ASSERT_EQ(snap.dead.size(), 2u);
    EXPECT_EQ(snap.dead[0].offset, 1);
    EXPECT_EQ(snap.dead[1].reason, "missing_key");
    ASSERT_EQ(snap.aggs.size(), 2u);
    EXPECT_EQ(snap.aggs[0].stats.filtered, 1);
    EXPECT_EQ(snap.aggs[1].stats.filtered, 0);  // a dead letter is not a filter's skip
    EXPECT_EQ(snap.aggs[0].stats.dropped_late_window, 1);
    EXPECT_EQ(snap.aggs[1].stats.dropped_late_window, 0);
    // the first minute of "a" holds one record in each aggregation; "b" only in aggregation 1
    for (std::size_t i = 0; i < 2; ++i) {
        int a_rows = 0, b_rows = 0;
        for (const auto& u : snap.aggs[i].out.upserts) {
            if (u.key == "a") a_rows += std::stoi(u.external);
            if (u.key == "b") b_rows += std::stoi(u.external);
        }
        EXPECT_EQ(a_rows, 1) << i;
        EXPECT_EQ(b_rows, i == 1 ? 1 : 0) << i;
    }
}

TEST(RecordPathExec, TimeChecksMakeDeadLetters) {
    auto ext = std::make_shared<Counting>();
    RecordPath p(config(ext));
    feed(p, 0, R"({"user": "a", "ts": 1000})");
    const flow::ExecBatch& b = p.take_exec_batch();
    const int one = 1;
    std::vector<ExecFold> folds(2, ExecFold{true, false, "a", &one});
    p.exec_feed(b.records[0], core::kMaxEventTime + 1, nullptr, nullptr, folds.data());
    const flow::CommitSnapshot snap = p.take_snapshot(0);
    ASSERT_EQ(snap.dead.size(), 1u);
    EXPECT_EQ(snap.dead[0].reason, "time_out_of_range");
    EXPECT_EQ(snap.records, 1);
    EXPECT_EQ(snap.watermark, core::kNoTime);
}

// README "Time and the watermark": a partition that held data when the source started holds W
// back until its records were observed, whichever thread decodes them. Here the ends of both
// partitions are seen while their records still wait for the main thread; the ends take effect
// only once those records were fed, so each partition's in-order records are its own, not late
// (before, the first end released partition 0, the second partition 1, and feeding partition
// 0's records moved W past partition 1's first minute).
TEST(RecordPathExec, EndOfPartitionWaitsForItsQueuedRecords) {
    auto ext = std::make_shared<Counting>();
    RecordPath p(config(ext));
    p.watermark().assign(core::TopicPartition{0, 0}.id(), true);
    p.watermark().assign(core::TopicPartition{0, 1}.id(), true);
    auto put = [&](std::int32_t part, std::int64_t offset, core::Millis ts) {
        const std::string payload =
            R"({"user": "a", "ts": )" + std::to_string(ts) + R"(, "amount": 1})";
        p.process(0, part, offset, payload.data(), payload.size(), "k", 1, 1000, 0);
    };
    put(0, 0, 10'000);
    put(0, 1, 70'000);
    EXPECT_FALSE(p.end_of_partition(core::TopicPartition{0, 0}, 2, 5));
    put(1, 0, 10'000);
    put(1, 1, 70'000);
    EXPECT_FALSE(p.end_of_partition(core::TopicPartition{0, 1}, 2, 5));
    EXPECT_EQ(p.watermark().current(), core::kNoTime);

    const flow::ExecBatch& b = p.take_exec_batch();
    ASSERT_EQ(b.records.size(), 4u);
    const int one = 1;
    std::vector<ExecFold> folds(2, ExecFold{true, false, "a", &one});
    const core::Millis times[] = {10'000, 70'000, 10'000, 70'000};
    for (std::size_t i = 0; i < 4; ++i) {
        p.exec_feed(b.records[i], times[i], nullptr, nullptr, folds.data());
        // partition 1 holds W until its first record came
        if (i < 2) {
            EXPECT_EQ(p.watermark().current(), core::kNoTime) << i;
        }
    }
    // Both ends took effect: positions at the ends, W the minimum over the partitions.
    EXPECT_EQ(p.next_offsets().at(core::TopicPartition{0, 0}), 2);
    EXPECT_EQ(p.next_offsets().at(core::TopicPartition{0, 1}), 2);
    const flow::CommitSnapshot snap = p.take_snapshot(0);
    EXPECT_EQ(snap.watermark, 70'000);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(snap.aggs[i].stats.dropped_late_window, 0) << i;
        EXPECT_EQ(snap.aggs[i].stats.records_in, 4) << i;
    }
    // An end with nothing of its partition waiting takes effect at once.
    EXPECT_FALSE(p.end_of_partition(core::TopicPartition{0, 0}, 2, 6));
}

// Executor mode: a fast-path aggregation reading a value no aggregate can use gets the dead
// letter (README "Views and tables", dead_letters); the executor's aggregations and the other
// fast-path ones fold the record; none left: a dead letter of the source.
TEST(RecordPathExec, BadValueIsADeadLetterOfTheFastAggregationReadingIt) {
    auto ext = std::make_shared<Counting>();
    RecordPathConfig c = config(ext);
    c.aggregations.pop_back();
    RecordPathConfig::Aggregation sum = c.aggregations[0];
    sum.name = "sum";
    sum.external = nullptr;
    sum.aggregates = {{core::AggFn::Sum, "amount", "sum"}};
    c.aggregations.push_back(sum);
    RecordPathConfig::Aggregation counts = sum;
    counts.name = "counts";
    counts.aggregates = {{core::AggFn::CountStar, "", "count"}};
    c.aggregations.push_back(counts);
    RecordPath p(c);
    feed(p, 0, R"({"user": "a", "ts": 1000, "amount": 5})");
    feed(p, 1, R"({"user": "a", "ts": 2000, "amount": 6})");
    const flow::ExecBatch& b = p.take_exec_batch();
    ASSERT_EQ(b.records.size(), 2u);
    const int one = 1;
    const std::string key = "a";
    std::vector<core::Value> values(9, core::Value::missing());
    const std::vector<format::BadValue> bad = {
        {2, format::DecodeError::ValueOutOfRange, "column \"amount\" (numeric) = NaN"}};
    EXPECT_TRUE(p.exec_fast_usable(bad));  // counts does not read amount
    std::vector<ExecFold> folds(3);
    folds[0] = {true, false, "a", &one};
    p.exec_feed(b.records[0], 1000, &key, values.data(), folds.data(), &bad);
    values[2] = core::Value::of_int(6);
    folds[0] = {true, false, "a", &one};
    p.exec_feed(b.records[1], 2000, &key, values.data(), folds.data());
    const flow::CommitSnapshot snap = p.take_snapshot(0);
    ASSERT_EQ(snap.dead.size(), 1u);
    EXPECT_EQ(snap.dead[0].offset, 0);
    EXPECT_EQ(snap.dead[0].reason, "value_out_of_range");
    EXPECT_EQ(snap.dead[0].detail, "aggregation \"sum\": column \"amount\" (numeric) = NaN");
    EXPECT_EQ(snap.records, 2);
    EXPECT_EQ(snap.aggs[0].stats.records_in, 2);  // ext
    EXPECT_EQ(snap.aggs[1].stats.records_in, 1);  // sum
    EXPECT_EQ(snap.aggs[2].stats.records_in, 2);  // counts

    // Only the sum on the fast path, the executor's aggregation dead: the source's dead letter.
    RecordPathConfig c2 = c;
    c2.aggregations.pop_back();
    RecordPath q(c2);
    feed(q, 0, R"({"user": "a", "ts": 1000, "amount": 5})");
    const flow::ExecBatch& b2 = q.take_exec_batch();
    EXPECT_FALSE(q.exec_fast_usable(bad));
    q.exec_bad_values(b2.records[0], bad, true);
    const flow::CommitSnapshot snap2 = q.take_snapshot(0);
    ASSERT_EQ(snap2.dead.size(), 1u);
    EXPECT_EQ(snap2.dead[0].detail, "column \"amount\" (numeric) = NaN");
    EXPECT_EQ(snap2.records, 1);
}
