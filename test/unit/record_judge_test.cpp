// The record judge (flow/record_judge.hpp): every rule that makes a read record a dead letter,
// its reason and its detail, applied alike by every lane of the record path. The JSON lane's
// cases were the decoder's own tests when the decoder applied the limits itself; they now run
// through RecordPath, the way the source worker judges a record.
#include "stoatflow/flow/record_judge.hpp"

#include <gtest/gtest.h>

#include <string>

#include "stoatflow/core/error.hpp"
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/flow/record_path.hpp"

namespace {

using stoatflow::Error;
using stoatflow::core::AggFn;
using stoatflow::core::kNoTime;
using stoatflow::core::Millis;
using stoatflow::core::WindowSpec;
using stoatflow::flow::DeadReason;
using stoatflow::flow::RecordJudge;
using stoatflow::flow::RecordPath;
using stoatflow::flow::RecordPathConfig;

// One record through the JSON lane of a fresh RecordPath: its dead letter's reason (and detail),
// or "key=K time=T" of the window it was folded into.
struct JsonLane {
    RecordPathConfig config;
    std::string detail;
    JsonLane(const std::string& key_path, const std::string& time_path, std::size_t max_key_bytes,
             Millis future_limit) {
        config.topics = {"t"};
        config.decoder.key_path = key_path;
        config.decoder.time_path = time_path;
        config.max_key_bytes = max_key_bytes;
        config.future_limit = future_limit;
        RecordPathConfig::Aggregation a;
        a.name = "counts";
        a.spec = WindowSpec::tumbling(1000, 0);
        a.aggregates = {{AggFn::CountStar, "", "count"}};
        a.retention = 3'600'000;
        config.aggregations.push_back(a);
        RecordPath check(config);  // the judge's limits are checked on construction
    }
    std::string verdict(const std::string& payload, const char* key = nullptr,
                        std::size_t key_len = 0, Millis kafka_ts = kNoTime, Millis now = kNoTime) {
        RecordPath path(config);
        path.process(0, 0, 0, payload.data(), payload.size(), key, key_len, kafka_ts, now);
        auto snap = path.take_snapshot(now == kNoTime ? 0 : now);
        detail.clear();
        if (!snap.dead.empty()) {
            detail = snap.dead[0].detail;
            return snap.dead[0].reason;
        }
        const auto& rows = snap.aggs.at(0).out.upserts;
        if (rows.size() != 1) return "no fold";
        return "key=" + rows[0].key + " time=" + std::to_string(rows[0].event_time);
    }
};

// README "Views and tables", dead_letters: a key the sink could never store is a dead letter.
TEST(RecordJudge, KeyLongerThanMaxKeyBytesIsADeadLetter) {
    JsonLane dec("user.id", "ts", 8, kNoTime);
    EXPECT_EQ(dec.verdict(R"({"user":{"id":"12345678"},"ts":1})"), "key=12345678 time=1");
    EXPECT_EQ(dec.verdict(R"({"user":{"id":"123456789"},"ts":1})"), "key_too_long");
    EXPECT_EQ(dec.verdict(R"({"user":{"id":123456789},"ts":1})"), "key_too_long");
    // Bytes, not characters: four é are 8 bytes, five are 10.
    EXPECT_EQ(dec.verdict(R"({"user":{"id":"\u00e9\u00e9\u00e9\u00e9"},"ts":1})"),
              "key=\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9 time=1");
    EXPECT_EQ(dec.verdict(R"({"user":{"id":"\u00e9\u00e9\u00e9\u00e9\u00e9"},"ts":1})"),
              "key_too_long");
    // The key's length is judged as soon as the key was read: before its text and the time.
    EXPECT_EQ(dec.verdict(R"({"user":{"id":"123456789"}})"), "key_too_long");
    EXPECT_EQ(dec.verdict(R"({"user":{"id":"123456789"},"ts":true})"), "key_too_long");
    EXPECT_EQ(dec.verdict(R"({"user":{"id":"1234\u00005678"},"ts":1})"), "key_too_long");
    EXPECT_EQ(dec.verdict(R"({"user":{"id":"1234\u00005"},"ts":1})"), "invalid_text");
    EXPECT_EQ(dec.verdict(R"({"user":{"id":"1"}})"), "missing_time");
    // The detail names the limit and the size, and quotes at most 64 bytes of the key.
    JsonLane dec2("k", "ts", 100, kNoTime);
    const std::string payload = R"({"k":")" + std::string(5000, 'x') + R"(","ts":1})";
    EXPECT_EQ(dec2.verdict(payload), "key_too_long");
    EXPECT_EQ(dec2.detail, "the key is 5000 bytes, longer than max_key_bytes 100: \"" +
                               std::string(64, 'x') + "\"...");
    EXPECT_STREQ(to_string(DeadReason::KeyTooLong), "key_too_long");
    // The Kafka message key is held to the same limit; 0 means unlimited.
    JsonLane dec3("", "", 3, kNoTime);
    EXPECT_EQ(dec3.verdict("{}", "abc", 3, 5), "key=abc time=5");
    EXPECT_EQ(dec3.verdict("{}", "abcd", 4, 5), "key_too_long");
    JsonLane unlimited("", "", 0, kNoTime);
    EXPECT_EQ(unlimited.verdict("{}", payload.data(), payload.size(), 5).substr(0, 9),
              "key={\"k\":");
}

// README "Time and the watermark": beyond now + future_limit is a dead letter.
TEST(RecordJudge, TimeBeyondFutureLimitIsADeadLetter) {
    JsonLane dec("k", "ts", 0, 1000);
    const Millis now = 1700000000000;
    EXPECT_EQ(dec.verdict(R"({"k":"a","ts":1700000001000})", nullptr, 0, kNoTime, now),
              "key=a time=1700000001000");
    EXPECT_EQ(dec.verdict(R"({"k":"a","ts":1700000001001})", nullptr, 0, kNoTime, now),
              "time_in_future");
    EXPECT_EQ(dec.verdict(R"({"k":"a","ts":"9999-12-31T00:00:00Z"})", nullptr, 0, kNoTime, now),
              "time_in_future");
    EXPECT_EQ(dec.verdict(R"({"k":"a","ts":5})", nullptr, 0, kNoTime, now), "key=a time=5");
    // no wall clock given: no check
    EXPECT_EQ(dec.verdict(R"({"k":"a","ts":1700000001001})"), "key=a time=1700000001001");
    EXPECT_EQ(dec.verdict(R"({"k":"a","ts":1700000005000})", nullptr, 0, kNoTime, now),
              "time_in_future");
    EXPECT_EQ(dec.detail, "event time 1700000005000 ms is 5000 ms ahead of the server clock "
                          "(1700000000000 ms), more than future_limit 1000 ms");
    EXPECT_STREQ(to_string(DeadReason::TimeInFuture), "time_in_future");
    // The Kafka timestamp too; kNoTime turns the check off; a negative limit is refused.
    JsonLane dec2("", "", 0, 0);
    EXPECT_EQ(dec2.verdict("{}", "k", 1, now, now), "key=k time=1700000000000");
    EXPECT_EQ(dec2.verdict("{}", "k", 1, now + 1, now), "time_in_future");
    JsonLane off("", "", 0, kNoTime);
    EXPECT_EQ(off.verdict("{}", "k", 1, now + 86400000, now), "key=k time=1700086400000");
    EXPECT_THROW(RecordJudge(0, -1), Error);
    EXPECT_THROW(JsonLane("", "", 0, -1), Error);
}

// The rules in their order, as the columns' and the executor's lanes ask them.
TEST(RecordJudge, JudgesKeyThenRangeThenFuture) {
    const RecordJudge judge(4, 0);
    std::string detail;
    EXPECT_EQ(judge.judge("abcd", 1000, 1000, "column \"ts\"", detail), DeadReason::None);
    EXPECT_EQ(judge.judge("abcde", stoatflow::core::kMaxEventTime + 1, 0, "event_time", detail),
              DeadReason::KeyTooLong);
    EXPECT_EQ(detail, "the key is 5 bytes, longer than max_key_bytes 4: \"abcde\"");
    EXPECT_EQ(judge.key("abcde", detail, /*quote=*/false), DeadReason::KeyTooLong);
    EXPECT_EQ(detail, "the key is 5 bytes, longer than max_key_bytes 4");
    EXPECT_EQ(judge.judge("a", stoatflow::core::kMaxEventTime + 1, 0, "column \"ts\"", detail),
              DeadReason::TimeOutOfRange);
    EXPECT_EQ(detail, "column \"ts\" = 253402300800000 ms is outside the event time range "
                      "0001-01-01 .. 9999-12-31 (UTC)");
    EXPECT_EQ(judge.judge("a", stoatflow::core::kMinEventTime - 1, 0, "event_time", detail),
              DeadReason::TimeOutOfRange);
    EXPECT_EQ(judge.judge("a", 1001, 1000, "event_time", detail), DeadReason::TimeInFuture);
    EXPECT_EQ(judge.judge("a", 1001, kNoTime, "event_time", detail), DeadReason::None);
    // A wall clock far outside the range cannot overflow the comparison.
    EXPECT_EQ(judge.judge("a", stoatflow::core::kMaxEventTime, INT64_MIN + 1, "t", detail),
              DeadReason::TimeInFuture);
    EXPECT_EQ(RecordJudge(0, kNoTime).judge(std::string(1 << 20, 'k'), 0, 0, "t", detail),
              DeadReason::None);
}

TEST(RecordJudge, DetailsAndPayloads) {
    EXPECT_EQ(RecordJudge::column_is_null("user"), "column \"user\" is null");
    EXPECT_EQ(RecordJudge::expression_is_null(true), "event_time is null");
    EXPECT_EQ(RecordJudge::expression_is_null(false), "key is null");
    EXPECT_EQ(RecordJudge::not_finite("column \"ts\" is infinity"),
              "column \"ts\" is infinity: an event time must be finite");
    EXPECT_EQ(RecordJudge::of_aggregation("a", "key is null"), "aggregation \"a\": key is null");
    EXPECT_EQ(RecordJudge::offsets_skipped(10, 15),
              "offsets 10 to 14 (5) were deleted by the topic's retention before the source "
              "read them");
    const std::string big(5000, 'p');
    const auto d =
        RecordJudge::dead_letter({0, 1}, 7, DeadReason::BadValue, "x", big.data(), big.size());
    EXPECT_EQ(d.reason, "bad_value");
    EXPECT_EQ(d.payload.size(), stoatflow::flow::kDeadLetterPayloadBytes);
    EXPECT_EQ(RecordJudge::dead_letter({0, 1}, 7, DeadReason::None, "", "a\0b", 3).payload,
              "a\\x00b");
    EXPECT_EQ(
        RecordJudge::dead_letter({0, 1}, 7, DeadReason::OffsetsSkipped, "", nullptr, 0).payload,
        "");
    // Every reason has its one name.
    for (int r = 1; r <= static_cast<int>(DeadReason::OffsetsSkipped); ++r)
        EXPECT_STRNE(to_string(static_cast<DeadReason>(r)), "unknown") << r;
}

}  // namespace
