// The JSON record decoder, table style: a Kafka message in (payload, key, timestamp), the
// decoded key, event time and values out, or the dead-letter reason. Then parse_iso8601.
#include "stoatflow/format/json_decoder.hpp"

#include "stoatflow/core/error.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace stoatflow::format;
using stoatflow::Error;
using stoatflow::core::kMaxEventTime;
using stoatflow::core::kMinEventTime;
using stoatflow::core::kNoTime;
using stoatflow::core::Millis;
using stoatflow::core::Value;

namespace {

// A value as text: "-" missing, "i:42" integer, "d:1.5" double.
std::string show(const Value& v) {
    switch (v.kind) {
    case Value::Kind::Missing: return "-";
    case Value::Kind::Int: return "i:" + std::to_string(v.i);
    case Value::Kind::Double: {
        char buf[40];
        std::snprintf(buf, sizeof buf, "d:%.17g", v.d);
        return buf;
    }
    case Value::Kind::BigInt: return "b:" + stoatflow::core::int128_to_string(v.big());
    }
    return "?";
}

// Tables below are laid out by hand, one record a line (clang-format off around them).
// One record in, one verdict out. With error None, key/time/values are checked.
struct Row {
    std::string payload;
    DecodeError error;
    std::string key = {};
    Millis time = 0;
    std::vector<std::string> values = {};
};

// The decoded record (or the reason) as one comparable line.
std::string verdict(JsonDecoder& dec, const std::string& payload, const char* key = nullptr,
                    size_t key_len = 0, Millis kafka_ts = kNoTime) {
    Decoded out;
    const DecodeError e = dec.decode(payload.data(), payload.size(), key, key_len, kafka_ts, out);
    if (e != DecodeError::None) return to_string(e);
    // A value an aggregate cannot use is the reading aggregations' dead letter: the first one
    // stands for the verdict here (ValuesAreJudgedOneByOne checks the rest).
    if (!out.bad.empty()) return to_string(out.bad.front().error);
    std::string s = "key=" + out.key + " time=" + std::to_string(out.time);
    for (const auto& v : out.values) s += " " + show(v);
    return s;
}

std::string expected(const Row& r) {
    if (r.error != DecodeError::None) return to_string(r.error);
    std::string s = "key=" + r.key + " time=" + std::to_string(r.time);
    for (const auto& v : r.values) s += " " + v;
    return s;
}

void run_table(JsonDecoder& dec, const std::vector<Row>& rows) {
    for (const auto& r : rows) {
        EXPECT_EQ(verdict(dec, r.payload), expected(r))
            << "payload: " << r.payload << "\ndetail: " << dec.detail();
    }
}

// key user.id, time ts, values count(*), amount, m.v
JsonDecoder nested_decoder() { return JsonDecoder({"user.id", "ts", {"", "amount", "m.v"}}); }

constexpr auto None = DecodeError::None;

}  // namespace

TEST(JsonDecoder, ReasonNames) {
    EXPECT_STREQ(to_string(DecodeError::InvalidJson), "invalid_json");
    EXPECT_STREQ(to_string(DecodeError::NotAnObject), "not_an_object");
    EXPECT_STREQ(to_string(DecodeError::MissingKey), "missing_key");
    EXPECT_STREQ(to_string(DecodeError::BadKey), "bad_key");
    EXPECT_STREQ(to_string(DecodeError::MissingTime), "missing_time");
    EXPECT_STREQ(to_string(DecodeError::BadTime), "bad_time");
    EXPECT_STREQ(to_string(DecodeError::TimeOutOfRange), "time_out_of_range");
    EXPECT_STREQ(to_string(DecodeError::NonNumericValue), "non_numeric_value");
    EXPECT_STREQ(to_string(DecodeError::InvalidText), "invalid_text");
}

TEST(JsonDecoder, FlatRecord) {
    JsonDecoder dec({"user_id", "ts", {"", "amount", "amount"}});
    // clang-format off
    run_table(dec, {
        {R"({"user_id":"u123","ts":1732960800000,"amount":42,"page":"/home"})", None,
         "u123", 1732960800000, {"-", "i:42", "i:42"}},
        {R"(  {"ts":1,"user_id":"u1"}  )", None, "u1", 1, {"-", "-", "-"}},
        {"{\"user_id\":\"u\",\n\t\"ts\":2,\r\n\"amount\":-3}\n", None, "u", 2,
         {"-", "i:-3", "i:-3"}},
    });
    // clang-format on
}

TEST(JsonDecoder, NestedPaths) {
    auto dec = nested_decoder();
    // clang-format off
    run_table(dec, {
        {R"({"user":{"id":"a","name":"x"},"ts":5,"amount":1,"m":{"v":2.5}})", None, "a", 5,
         {"-", "i:1", "d:2.5"}},
        {R"({"m":{"v":7},"amount":null,"ts":5,"user":{"id":"b"}})", None, "b", 5,
         {"-", "-", "i:7"}},
        // a missing or non-object intermediate is a missing field
        {R"({"user":{"id":"a"},"ts":5,"m":3})", None, "a", 5, {"-", "-", "-"}},
        {R"({"user":{"id":"a"},"ts":5,"m":{"w":{"v":1}}})", None, "a", 5, {"-", "-", "-"}},
        {R"({"user":"a","ts":5})", DecodeError::MissingKey},
        {R"({"user":["id"],"ts":5})", DecodeError::MissingKey},
        {R"({"ts":5})", DecodeError::MissingKey},
        {R"({"user.id":"dotted member names are not paths","ts":5})", DecodeError::MissingKey},
        // member names match after unescaping
        {R"({"us\u0065r":{"\u0069d":"esc"},"ts":5})", None, "esc", 5, {"-", "-", "-"}},
    });
    // clang-format on
}

TEST(JsonDecoder, KeyFromJson) {
    auto dec = nested_decoder();
    auto rec = [](const std::string& id) { return R"({"ts":1,"user":{"id":)" + id + "}}"; };
    // clang-format off
    run_table(dec, {
        {rec(R"("u-1")"), None, "u-1", 1, {"-", "-", "-"}},
        {rec(R"("")"), None, "", 1, {"-", "-", "-"}},
        // numbers keep their text as written
        {rec("42"), None, "42", 1, {"-", "-", "-"}},
        {rec("-7"), None, "-7", 1, {"-", "-", "-"}},
        {rec("-0"), None, "-0", 1, {"-", "-", "-"}},
        {rec("1.50"), None, "1.50", 1, {"-", "-", "-"}},
        {rec("1e3"), None, "1e3", 1, {"-", "-", "-"}},
        {rec("123456789012345678901234567890"), None, "123456789012345678901234567890", 1,
         {"-", "-", "-"}},
        {rec(" 42 "), None, "42", 1, {"-", "-", "-"}},
        {rec("true"), None, "true", 1, {"-", "-", "-"}},
        {rec("false"), None, "false", 1, {"-", "-", "-"}},
        {rec("null"), DecodeError::MissingKey},
        {rec("{}"), DecodeError::BadKey},
        {rec(R"({"a":1})"), DecodeError::BadKey},
        {rec("[]"), DecodeError::BadKey},
        {rec("[1,2]"), DecodeError::BadKey},
        // escapes are decoded
        {rec(R"("caf\u00e9")"), None, "caf\xc3\xa9", 1, {"-", "-", "-"}},
        {rec(R"("say \"hi\"\\")"), None, "say \"hi\"\\", 1, {"-", "-", "-"}},
        {rec(R"("tab\there\/")"), None, "tab\there/", 1, {"-", "-", "-"}},
        {rec(R"("\ud83d\ude00")"), None, "\xf0\x9f\x98\x80", 1, {"-", "-", "-"}},
        {rec("\"caf\xc3\xa9\""), None, "caf\xc3\xa9", 1, {"-", "-", "-"}},
        // text PostgreSQL cannot store
        {rec(R"("a\u0000b")"), DecodeError::InvalidText},
        {rec(R"("\u0000")"), DecodeError::InvalidText},
        // a lone surrogate has no UTF-8 form: simdjson (like jsonb) rejects the document
        {rec(R"("\udc00")"), DecodeError::InvalidJson},
        {rec(R"("\ud800x")"), DecodeError::InvalidJson},
    });
    // clang-format on
}

TEST(JsonDecoder, EventTimeFromJson) {
    auto dec = nested_decoder();
    auto rec = [](const std::string& ts) { return R"({"user":{"id":"k"},"ts":)" + ts + "}"; };
    const std::vector<std::string> none = {"-", "-", "-"};
    // clang-format off
    run_table(dec, {
        // numbers are epoch milliseconds; fractions floor to the millisecond
        {rec("1732960800000"), None, "k", 1732960800000, none},
        {rec("0"), None, "k", 0, none},
        {rec("-1"), None, "k", -1, none},
        {rec("-86400000"), None, "k", -86400000, none},
        {rec("1000.7"), None, "k", 1000, none},
        {rec("-1000.2"), None, "k", -1001, none},
        {rec("-0.5"), None, "k", -1, none},
        {rec("1.7329608e12"), None, "k", 1732960800000, none},
        {rec("-0.0"), None, "k", 0, none},
        {rec(std::to_string(kMaxEventTime)), None, "k", kMaxEventTime, none},
        {rec(std::to_string(kMinEventTime)), None, "k", kMinEventTime, none},
        {rec(std::to_string(kMaxEventTime + 1)), DecodeError::TimeOutOfRange},
        {rec(std::to_string(kMinEventTime - 1)), DecodeError::TimeOutOfRange},
        {rec(std::to_string(kMaxEventTime) + ".5"), None, "k", kMaxEventTime, none},
        {rec("-62135596799999.5"), None, "k", kMinEventTime, none},
        {rec("-62135596800000.5"), DecodeError::TimeOutOfRange},  // floors below the minimum
        {rec("-6213559680000.05e1"), DecodeError::TimeOutOfRange},
        {rec("9223372036854775807"), DecodeError::TimeOutOfRange},
        {rec("9223372036854775808"), DecodeError::TimeOutOfRange},
        {rec("-9223372036854775809"), DecodeError::TimeOutOfRange},
        {rec("1e300"), DecodeError::TimeOutOfRange},
        {rec("1e400"), DecodeError::TimeOutOfRange},
        {rec("-1e400"), DecodeError::TimeOutOfRange},
        {rec("1e-400"), None, "k", 0, none},
        // strings are ISO-8601 / RFC 3339
        {rec(R"("2026-11-30T10:01:00Z")"), None, "k", 1796032860000, none},
        {rec(R"("2026-11-30T10:01:00.123+02:00")"), None, "k", 1796025660123, none},
        {rec(R"("2026-11-30 10:01:00.5-0130")"), None, "k", 1796038260500, none},
        {rec(R"("2026-11-30T10:01:00")"), None, "k", 1796032860000, none},
        {rec(R"("2026-11-30T10:01:00\u005a")"), None, "k", 1796032860000, none},
        {rec(R"("0001-01-01T00:00:00Z")"), None, "k", kMinEventTime, none},
        {rec(R"("9999-12-31T23:59:59.999Z")"), None, "k", kMaxEventTime, none},
        {rec(R"("0000-12-31T23:59:59Z")"), DecodeError::TimeOutOfRange},
        {rec(R"("0001-01-01T00:00:00+00:01")"), DecodeError::TimeOutOfRange},
        {rec(R"("9999-12-31T23:59:59.999-00:01")"), DecodeError::TimeOutOfRange},
        {rec(R"("2026-02-29T00:00:00Z")"), DecodeError::BadTime},
        {rec(R"("1732960800000")"), DecodeError::BadTime},
        {rec(R"("")"), DecodeError::BadTime},
        {rec(R"("2026-11-30T10:01:00Z\u0000")"), DecodeError::BadTime},
        // anything else
        {rec("true"), DecodeError::BadTime},
        {rec("{}"), DecodeError::BadTime},
        {rec("[1]"), DecodeError::BadTime},
        {rec("null"), DecodeError::MissingTime},
        {R"({"user":{"id":"k"}})", DecodeError::MissingTime},
    });
    // clang-format on
}

TEST(JsonDecoder, Values) {
    auto dec = nested_decoder();
    auto rec = [](const std::string& v) {
        return R"({"user":{"id":"k"},"ts":1,"amount":)" + v + "}";
    };
    auto ok = [](const std::string& v) { return Row{"", None, "k", 1, {"-", v, "-"}}; };
    // clang-format off
    std::vector<std::pair<std::string, Row>> table = {
        {"42", ok("i:42")},
        {"-42", ok("i:-42")},
        {"0", ok("i:0")},
        {"-0", ok("i:0")},
        {"9223372036854775807", ok("i:9223372036854775807")},
        {"-9223372036854775808", ok("i:-9223372036854775808")},
        // integers beyond int64, up to 38 digits, stay exact (README "Security"); longer ones are
        // dead letters, as are numbers beyond the double range
        {"9223372036854775808", ok("b:9223372036854775808")},
        {"-9223372036854775809", ok("b:-9223372036854775809")},
        {"18446744073709551616", ok("b:18446744073709551616")},
        {"18446744073709551617", ok("b:18446744073709551617")},
        {"1180591620717411303424", ok("b:1180591620717411303424")},
        {"123456789012345678901234567890", ok("b:123456789012345678901234567890")},
        {"99999999999999999999999999999999999999", ok("b:99999999999999999999999999999999999999")},
        {"-99999999999999999999999999999999999999", ok("b:-99999999999999999999999999999999999999")},
        {"100000000000000000000000000000000000000", Row{"", DecodeError::ValueOutOfRange}},
        {"-100000000000000000000000000000000000000", Row{"", DecodeError::ValueOutOfRange}},
        {"1" + std::string(400, '0'), Row{"", DecodeError::ValueOutOfRange}},
        {"1e38", ok("d:9.9999999999999998e+37")},  // not an integer token: a double
        {"1.5", ok("d:1.5")},
        {"-0.25", ok("d:-0.25")},
        {"1e2", ok("d:100")},
        {"1E+2", ok("d:100")},
        {"2.5e-3", ok("d:0.0025000000000000001")},
        {"-0.0", ok("d:-0")},
        {"1e-400", ok("d:0")},
        // simdjson 3.0.1's On-Demand get_double() gets this one wrong (8.48e-09)
        {"0.577779223372036854775808777", ok("d:0.57777922337203691")},
        {"1.7976931348623157e308", ok("d:1.7976931348623157e+308")},
        {"null", ok("-")},
        {"1e400", Row{"", DecodeError::ValueOutOfRange}},
        {"-1e309", Row{"", DecodeError::ValueOutOfRange}},
        {R"("12")", Row{"", DecodeError::NonNumericValue}},
        {"true", Row{"", DecodeError::NonNumericValue}},
        {"false", Row{"", DecodeError::NonNumericValue}},
        {"{}", Row{"", DecodeError::NonNumericValue}},
        {"[1]", Row{"", DecodeError::NonNumericValue}},
    };
    // clang-format on
    for (auto& [v, row] : table) {
        row.payload = rec(v);
        run_table(dec, {row});
    }
    // a value in a nested object; absent is missing
    // clang-format off
    run_table(dec, {
        {R"({"user":{"id":"k"},"ts":1,"m":{"v":-1.25}})", None, "k", 1, {"-", "-", "d:-1.25"}},
        {R"({"user":{"id":"k"},"ts":1,"m":{"v":"x"}})", DecodeError::NonNumericValue},
        {R"({"user":{"id":"k"},"ts":1,"m":{}})", None, "k", 1, {"-", "-", "-"}},
    });
    // clang-format on
}

TEST(JsonDecoder, InvalidJsonAndNotAnObject) {
    auto dec = nested_decoder();
    const std::string ok = R"({"user":{"id":"k"},"ts":1})";
    // clang-format off
    run_table(dec, {
        {"", DecodeError::InvalidJson},
        {" \n", DecodeError::InvalidJson},
        {"{", DecodeError::InvalidJson},
        {"}", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1)", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"} "ts":1})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts" 1})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},ts:1})", DecodeError::InvalidJson},
        {R"({'user':1})", DecodeError::InvalidJson},
        {ok + "x", DecodeError::InvalidJson},
        {ok + " {}", DecodeError::InvalidJson},
        {ok + "}", DecodeError::InvalidJson},
        {ok + "]", DecodeError::InvalidJson},
        // errors in parts no path looks at count too
        {R"({"user":{"id":"k"},"ts":1,"x":[1,]})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":01})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":1.})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":.5})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":+1})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":1e})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":NaN})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":Infinity})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":tru})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":nulll})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":"\q"})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":"\u12"})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"x":"\udc00"})", DecodeError::InvalidJson},
        {R"({"user":{"id":"k"},"ts":1,"\x":1})", DecodeError::InvalidJson},
        {"{\"user\":{\"id\":\"k\"},\"ts\":1,\"x\":\"a\x01\"}", DecodeError::InvalidJson},
        // invalid UTF-8 anywhere: stray continuation, overlong, surrogate, truncated, 0xff
        {"{\"user\":{\"id\":\"k\"},\"ts\":1,\"x\":\"\x80\"}", DecodeError::InvalidJson},
        {"{\"user\":{\"id\":\"k\"},\"ts\":1,\"x\":\"\xc0\xaf\"}", DecodeError::InvalidJson},
        {"{\"user\":{\"id\":\"k\"},\"ts\":1,\"x\":\"\xed\xa0\x80\"}", DecodeError::InvalidJson},
        {"{\"user\":{\"id\":\"k\"},\"ts\":1,\"x\":\"\xe2\x82\"}", DecodeError::InvalidJson},
        {"{\"user\":{\"id\":\"k\xff\"},\"ts\":1}", DecodeError::InvalidJson},
        {"{\"user\":{\"id\":\"k\"},\"ts\":1,\"\xfe\":1}", DecodeError::InvalidJson},
        {ok + "\xff", DecodeError::InvalidJson},
        {ok + std::string(1, '\0'), DecodeError::InvalidJson},
        // valid JSON, but not an object
        {"[]", DecodeError::NotAnObject},
        {R"([{"user":{"id":"k"},"ts":1}])", DecodeError::NotAnObject},
        {"42", DecodeError::NotAnObject},
        {" -1.5e3 ", DecodeError::NotAnObject},
        {R"("text")", DecodeError::NotAnObject},
        {"true", DecodeError::NotAnObject},
        {"null", DecodeError::NotAnObject},
        // ... unless it is not valid JSON either
        {"[1,2", DecodeError::InvalidJson},
        {"42 43", DecodeError::InvalidJson},
        {R"("text" 1)", DecodeError::InvalidJson},
        {R"("te\qxt")", DecodeError::InvalidJson},
        {"01", DecodeError::InvalidJson},
        {"nul", DecodeError::InvalidJson},
        {"truex", DecodeError::InvalidJson},
    });
    // clang-format on
}

TEST(JsonDecoder, DeepNesting) {
    auto dec = nested_decoder();
    const std::string deep_ok =
        R"({"user":{"id":"k"},"ts":1,"x":)" + std::string(500, '[') + std::string(500, ']') + "}";
    EXPECT_EQ(verdict(dec, deep_ok), "key=k time=1 - - -");
    const std::string too_deep =
        R"({"user":{"id":"k"},"ts":1,"x":)" + std::string(5000, '[') + std::string(5000, ']') + "}";
    EXPECT_EQ(verdict(dec, too_deep), "invalid_json");
    EXPECT_EQ(verdict(dec, std::string(100000, '[')), "invalid_json");
}

TEST(JsonDecoder, DuplicateMembersLastWins) {
    // As in jsonb: of duplicate members only the last counts, nested objects included.
    auto dec = nested_decoder();
    // clang-format off
    run_table(dec, {
        {R"({"user":{"id":"a"},"user":{"id":"b"},"ts":1})", None, "b", 1, {"-", "-", "-"}},
        {R"({"user":{"id":"a","id":"c"},"ts":1})", None, "c", 1, {"-", "-", "-"}},
        {R"({"user":{"id":"a"},"user":{"name":"b"},"ts":1})", DecodeError::MissingKey},
        {R"({"user":{"id":"a"},"user":7,"ts":1})", DecodeError::MissingKey},
        {R"({"user":{"id":"a"},"ts":1,"ts":2,"amount":1,"amount":null})", None, "a", 2,
         {"-", "-", "-"}},
        {R"({"user":{"id":"a"},"ts":1,"m":{"v":1},"m":{"v":2}})", None, "a", 1,
         {"-", "-", "i:2"}},
    });
    // clang-format on
}

TEST(JsonDecoder, KafkaKeyAndTimestampFallbacks) {
    JsonDecoder dec({"", "", {"amount"}});
    const std::string rec = R"({"amount":3})";
    auto with = [&](const char* key, size_t key_len, Millis ts) {
        return verdict(dec, rec, key, key_len, ts);
    };
    EXPECT_EQ(with("u1", 2, 1000), "key=u1 time=1000 i:3");
    EXPECT_EQ(with("u1xyz", 2, -5), "key=u1 time=-5 i:3");
    EXPECT_EQ(with("", 0, 7), "key= time=7 i:3");  // an empty key is a key
    EXPECT_EQ(with("caf\xc3\xa9", 5, 7), "key=caf\xc3\xa9 time=7 i:3");
    EXPECT_EQ(with(nullptr, 0, 7), "missing_key");
    EXPECT_EQ(with("a\0b", 3, 7), "invalid_text");
    EXPECT_EQ(with("a\xff", 2, 7), "invalid_text");
    EXPECT_EQ(with("\xc3", 1, 7), "invalid_text");
    EXPECT_EQ(with("u1", 2, kNoTime), "missing_time");
    EXPECT_EQ(with("u1", 2, kMaxEventTime),
              "key=u1 time=" + std::to_string(kMaxEventTime) + " i:3");
    EXPECT_EQ(with("u1", 2, kMaxEventTime + 1), "time_out_of_range");
    EXPECT_EQ(with("u1", 2, kMinEventTime - 1), "time_out_of_range");
    // the payload must still be a JSON object
    EXPECT_EQ(verdict(dec, "[]", "u1", 2, 7), "not_an_object");
    EXPECT_EQ(verdict(dec, "{", "u1", 2, 7), "invalid_json");
    EXPECT_EQ(verdict(dec, "{}", "u1", 2, 7), "key=u1 time=7 -");

    // a JSON path, when configured, wins over the Kafka key and timestamp
    JsonDecoder json_first({"k", "t", {}});
    EXPECT_EQ(verdict(json_first, R"({"k":"j","t":5})", "kafka", 5, 99), "key=j time=5");
    EXPECT_EQ(verdict(json_first, R"({"t":5})", "kafka", 5, 99), "missing_key");
    EXPECT_EQ(verdict(json_first, R"({"k":"j"})", "kafka", 5, 99), "missing_time");
}

TEST(JsonDecoder, ErrorOrderKeyThenTimeThenValues) {
    auto dec = nested_decoder();
    // clang-format off
    run_table(dec, {
        {R"({"ts":true,"amount":"x"})", DecodeError::MissingKey},
        {R"({"user":{"id":{}},"ts":true,"amount":"x"})", DecodeError::BadKey},
        {R"({"user":{"id":"k"},"ts":true,"amount":"x"})", DecodeError::BadTime},
        {R"({"user":{"id":"k"},"ts":1,"amount":"x","m":{"v":[]}})",
         DecodeError::NonNumericValue},
    });
    // clang-format on
}

TEST(JsonDecoder, Details) {
    auto dec = nested_decoder();
    Decoded out;
    auto detail_of = [&](const std::string& payload) {
        if (dec.decode(payload.data(), payload.size(), nullptr, 0, kNoTime, out) ==
                DecodeError::None &&
            !out.bad.empty())
            return out.bad.front().detail;  // a value's, the record's detail stays empty
        return dec.detail();
    };
    EXPECT_EQ(detail_of(R"({"user":{"id":"k"},"ts":true})"), R"(field "ts" is a boolean)");
    EXPECT_EQ(detail_of(R"({"user":{"id":"k"}})"), R"(field "ts" is missing)");
    EXPECT_EQ(detail_of(R"({"user":{"id":null}})"), R"(field "user.id" is null)");
    EXPECT_EQ(detail_of(R"({"user":{"id":[]}})"), R"(field "user.id" is an array)");
    EXPECT_EQ(detail_of(R"({"user":{"id":"k"},"ts":1,"m":{"v":"7"}})"),
              R"(field "m.v" is a string)");
    EXPECT_EQ(detail_of("[]"), "the payload is an array, not a JSON object");
    EXPECT_EQ(detail_of(R"({"user":{"id":"k"},"ts":"2026-02-29T00:00:00Z"})"),
              R"(field "ts" is not an ISO-8601 time: "2026-02-29T00:00:00Z")");
    EXPECT_EQ(detail_of(R"({"user":{"id":"k"},"ts":1,"amount":1e999})"),
              R"(field "amount" is 1e999, beyond the double precision range)");
    EXPECT_EQ(detail_of(R"({"user":{"id":"k"},"ts":1,"amount":-)" + std::string(70, '9') + "}"),
              R"(field "amount" is -)" + std::string(63, '9') +
                  "..., an integer of 70 digits; at most 38 are summed exactly");
    EXPECT_STREQ(to_string(DecodeError::ValueOutOfRange), "value_out_of_range");
    EXPECT_EQ(detail_of(R"({"user":{"id":"a\u0000\""},"ts":1})"),
              R"(the key contains a NUL byte: "a\x00\"")");
    EXPECT_EQ(
        detail_of(R"({"user":{"id":"k"},"ts":1e20})"),
        R"(field "ts" = 1e20 is outside the event time range 0001-01-01 .. 9999-12-31 (UTC))");
    EXPECT_EQ(detail_of(R"({"user":{"id":"k"},"ts":"0000-01-01T00:00:00Z"})"),
              R"(field "ts" = "0000-01-01T00:00:00Z" is outside the event time range )"
              R"(0001-01-01 .. 9999-12-31 (UTC))");
    EXPECT_EQ(detail_of("{").rfind("invalid JSON: ", 0), 0u);
    EXPECT_EQ(detail_of(R"({"user":{"id":"k"},"ts":1})"), "");

    // At most 64 bytes of the payload, cut between characters, control bytes escaped.
    const std::string d =
        detail_of(R"({"user":{"id":"k"},"ts":")" + std::string(63, 'x') + "\\u00e9" + "\"}");
    EXPECT_EQ(d, R"(field "ts" is not an ISO-8601 time: ")" + std::string(63, 'x') + "\"...");
    const std::string fits =
        detail_of(R"({"user":{"id":"k"},"ts":")" + std::string(62, 'x') + "\\u00e9" + "\"}");
    EXPECT_EQ(fits,
              R"(field "ts" is not an ISO-8601 time: ")" + std::string(62, 'x') + "\xc3\xa9\"");
    const std::string esc = detail_of(R"({"user":{"id":"k"},"ts":"a\tb\u00e9"})");
    EXPECT_EQ(esc, "field \"ts\" is not an ISO-8601 time: \"a\\x09b\xc3\xa9\"");

    JsonDecoder kafka_key({"", "", {}});
    kafka_key.decode("{}", 2, "a\xff\x01", 3, 1, out);
    EXPECT_EQ(kafka_key.detail(), R"(the key is not valid UTF-8: "a\xff\x01")");
}

// README "Views and tables", dead_letters: a value an aggregate cannot use does not fail the
// record. The key, the time and every other value are decoded; each bad value is listed, in
// value_paths order, with its reason and detail; the next record starts with none.
TEST(JsonDecoder, ValuesAreJudgedOneByOne) {
    JsonDecoder dec({"user", "ts", {"", "page", "n", "big"}});
    Decoded out;
    const std::string p =
        R"({"user":"u","ts":5,"page":"home","n":3,"big":)" + std::string(39, '9') + "}";
    ASSERT_EQ(dec.decode(p.data(), p.size(), nullptr, 0, kNoTime, out), DecodeError::None);
    EXPECT_EQ(dec.detail(), "");
    EXPECT_EQ(out.key, "u");
    EXPECT_EQ(out.time, 5);
    ASSERT_EQ(out.values.size(), 4u);
    EXPECT_EQ(show(out.values[1]), "-");  // the bad value itself is not there
    EXPECT_EQ(show(out.values[2]), "i:3");
    EXPECT_EQ(show(out.values[3]), "-");
    ASSERT_EQ(out.bad.size(), 2u);
    EXPECT_EQ(out.bad[0].index, 1u);
    EXPECT_EQ(out.bad[0].error, DecodeError::NonNumericValue);
    EXPECT_EQ(out.bad[0].detail, R"(field "page" is a string)");
    EXPECT_EQ(out.bad[1].index, 3u);
    EXPECT_EQ(out.bad[1].error, DecodeError::ValueOutOfRange);
    EXPECT_EQ(out.bad[1].detail, R"(field "big" is )" + std::string(39, '9') +
                                     ", an integer of 39 digits; at most 38 are summed exactly");
    const std::string good = R"({"user":"u","ts":6,"page":2})";
    ASSERT_EQ(dec.decode(good.data(), good.size(), nullptr, 0, kNoTime, out), DecodeError::None);
    EXPECT_TRUE(out.bad.empty());
    EXPECT_EQ(show(out.values[1]), "i:2");
    // A record-level failure still wins (the key before any value).
    const std::string nokey = R"({"ts":6,"page":"x"})";
    EXPECT_EQ(dec.decode(nokey.data(), nokey.size(), nullptr, 0, kNoTime, out),
              DecodeError::MissingKey);
}

TEST(JsonDecoder, ReuseAcrossRecords) {
    // State from one record (fields seen, buffers) never leaks into the next.
    auto dec = nested_decoder();
    Decoded out;
    const std::string big =
        R"({"user":{"id":"big"},"ts":9,"pad":")" + std::string(100000, 'p') + R"(","amount":5})";
    ASSERT_EQ(dec.decode(big.data(), big.size(), nullptr, 0, kNoTime, out), None);
    EXPECT_EQ(out.key, "big");
    EXPECT_EQ(show(out.values[1]), "i:5");
    EXPECT_EQ(verdict(dec, R"({"ts":1})"), "missing_key");
    EXPECT_EQ(verdict(dec, R"({"user":{"id":"s"},"ts":2})"), "key=s time=2 - - -");
    EXPECT_EQ(verdict(dec, "{"), "invalid_json");
    EXPECT_EQ(verdict(dec, R"({"user":{"id":"t"},"ts":3,"amount":4})"), "key=t time=3 - i:4 -");
    // Decoded from another config is resized to this config's values.
    out.values.assign(7, Value::of_int(1));
    const std::string rec = R"({"user":{"id":"u"},"ts":4})";
    ASSERT_EQ(dec.decode(rec.data(), rec.size(), nullptr, 0, kNoTime, out), None);
    EXPECT_EQ(out.values.size(), 3u);
    EXPECT_EQ(show(out.values[1]), "-");
    // Same path twice, and a path that is a prefix of another.
    JsonDecoder shared({"user", "ts", {"user.id", "user.id", "ts"}});
    EXPECT_EQ(verdict(shared, R"({"user":{"id":3},"ts":4})"), "bad_key");
    JsonDecoder shared2({"user.id", "ts", {"user.id", "ts", "user"}});
    EXPECT_EQ(verdict(shared2, R"({"user":{"id":3},"ts":4})"), "non_numeric_value");
    JsonDecoder shared3({"user.id", "ts", {"user.id", "ts", ""}});
    EXPECT_EQ(verdict(shared3, R"({"user":{"id":3},"ts":4.5})"), "key=3 time=4 i:3 d:4.5 -");
}

TEST(JsonDecoder, BadPathsAreRejected) {
    for (const DecoderConfig& cfg : std::vector<DecoderConfig>{
             {"a..b", "", {}},
             {".a", "", {}},
             {"", "ts.", {}},
             {"", "", {"ok", "."}},
             {"", "", {"a\x01"}},
             {std::string(300, 'a'), "", {}},
         }) {
        try {
            JsonDecoder dec(cfg);
            ADD_FAILURE() << "accepted key_path '" << cfg.key_path << "' time_path '"
                          << cfg.time_path << "'";
        } catch (const Error& e) {
            EXPECT_EQ(e.sqlstate(), "22023");
        }
    }
    EXPECT_NO_THROW(JsonDecoder({"", "", {"", ""}}));
    EXPECT_NO_THROW(JsonDecoder({"a.b.c", "t", {"x_1", "$weird name"}}));
}

// ---- parse_iso8601 ----

TEST(Iso8601, ValidForms) {
    struct Case {
        const char* text;
        Millis ms;
    };
    const Millis base = 1796032860000;  // 2026-11-30T10:01:00Z
    // clang-format off
    const Case cases[] = {
        {"2026-11-30T10:01:00Z", base},
        {"2026-11-30T10:01:00z", base},
        {"2026-11-30t10:01:00Z", base},
        {"2026-11-30 10:01:00Z", base},
        {"2026-11-30T10:01:00", base},  // no offset: UTC
        {"2026-11-30T10:01:00+00:00", base},
        {"2026-11-30T10:01:00-00:00", base},
        {"2026-11-30T10:01:00+02:00", base - 2 * 3600000},
        {"2026-11-30T10:01:00+0200", base - 2 * 3600000},
        {"2026-11-30T10:01:00+02", base - 2 * 3600000},
        {"2026-11-30T10:01:00-0130", base + 90 * 60000},
        {"2026-11-30T10:01:00-01:30", base + 90 * 60000},
        {"2026-11-30T10:01:00+23:59", base - (23 * 60 + 59) * 60000},
        // fractions of 1 to 9 digits, truncated to the millisecond
        {"2026-11-30T10:01:00.1Z", base + 100},
        {"2026-11-30T10:01:00.12Z", base + 120},
        {"2026-11-30T10:01:00.123Z", base + 123},
        {"2026-11-30T10:01:00.1239Z", base + 123},
        {"2026-11-30T10:01:00.12345Z", base + 123},
        {"2026-11-30T10:01:00.999999Z", base + 999},
        {"2026-11-30T10:01:00.1234567Z", base + 123},
        {"2026-11-30T10:01:00.12345678Z", base + 123},
        {"2026-11-30T10:01:00.123456789Z", base + 123},
        {"2026-11-30T10:01:00.000000001+02:00", base - 2 * 3600000},
        {"2026-11-30 10:01:00.5-0130", base + 90 * 60000 + 500},
        // calendar edges
        {"1970-01-01T00:00:00Z", 0},
        {"1969-12-31T23:59:59.999Z", -1},
        {"1969-12-31T23:59:59Z", -1000},
        {"2024-02-29T00:00:00Z", 1709164800000},
        {"2024-02-29T23:59:59Z", 1709251199000},
        {"2000-02-29T00:00:00Z", 951782400000},
        {"2016-12-31T23:59:60Z", 1483228800000},  // leap second: the next minute's first
        {"0001-01-01T00:00:00Z", kMinEventTime},
        {"9999-12-31T23:59:59.999Z", kMaxEventTime},
        {"0000-01-01T00:00:00Z", -62167219200000},
    };
    // clang-format on
    for (const auto& c : cases) {
        Millis got = 42;
        EXPECT_TRUE(parse_iso8601(c.text, got)) << c.text;
        EXPECT_EQ(got, c.ms) << c.text;
    }
}

TEST(Iso8601, InvalidForms) {
    // clang-format off
    const char* const cases[] = {
        "",
        "2026",
        "2026-11-30",                       // a date alone is not an instant
        "2026-11-30T10:01Z",                // seconds are required
        "2026-11-30T10:01:00ZZ",            // trailing garbage
        "2026-11-30T10:01:00Z ",            //
        " 2026-11-30T10:01:00Z",            //
        "2026-11-30T10:01:00x",             //
        "2026-11-30T10:01:00.",             // a fraction needs a digit
        "2026-11-30T10:01:00.Z",            //
        "2026-11-30T10:01:00.1234567890Z",  // more than 9 digits
        "2026-11-30T10:01:00,5Z",           //
        "2026-02-29T00:00:00Z",             // 2026 is no leap year
        "1900-02-29T00:00:00Z",             // nor is 1900
        "2026-02-30T00:00:00Z",             //
        "2026-04-31T00:00:00Z",             //
        "2026-13-01T00:00:00Z",             // month
        "2026-00-10T00:00:00Z",             //
        "2026-11-00T00:00:00Z",             // day
        "2026-11-32T00:00:00Z",             //
        "2026-11-30T24:00:00Z",             // hour
        "2026-11-30T10:60:00Z",             // minute
        "2026-11-30T10:01:61Z",             // second
        "2026-11-30T10:01:00+24:00",        // offset hour
        "2026-11-30T10:01:00+02:60",        // offset minute
        "2026-11-30T10:01:00+2:00",         //
        "2026-11-30T10:01:00+02:",          //
        "2026-11-30T10:01:00+02:0",         //
        "2026-11-30T10:01:00+020",          //
        "2026-11-30T10:01:00+",             //
        "2026-11-30T10:01:00Z+02:00",       //
        "2026/11/30T10:01:00Z",             // separators
        "2026-11-30X10:01:00Z",             //
        "2026-11-30T10.01.00Z",             //
        "26-11-30T10:01:00Z",               // year digits
        "+2026-11-30T10:01:00Z",            //
        "-2026-11-30T10:01:00Z",            //
        "20261-11-30T10:01:00Z",            //
        "2026-1-30T10:01:00Z",              //
        "2026-11-30T1:01:00Z",              //
        "2026-11-3OT10:01:00Z",             // letter O, not zero
        "1732960800000",                    //
    };
    // clang-format on
    for (const char* c : cases) {
        Millis got = 42;
        EXPECT_FALSE(parse_iso8601(c, got)) << c;
    }
    // Embedded NUL and non-ASCII digits
    Millis got = 0;
    EXPECT_FALSE(parse_iso8601(std::string_view("2026-11-30T10:01:00Z\0", 21), got));
    EXPECT_FALSE(
        parse_iso8601("\xef\xbc\x92\xef\xbc\x90\xef\xbc\x92\xef\xbc\x96-11-30T10:01:00Z", got));
}

// The key's length and the future limit are the record judge's: record_judge_test.cpp.
