// The fast lane of column conversion: what it claims and what it leaves to PostgreSQL. The
// proof that its claims equal PostgreSQL's input functions is the corpus in sql/row_type.sql;
// these pin the lane's own rules.
#include "stoatflow/format/fast_convert.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace stoatflow::format;

namespace {

std::string fast(FastType t, RawKind k, const std::string& text = "") {
    const FastValue v = fast_convert(t, RawValue{k, text});
    switch (v.kind) {
    case FastValue::Kind::Ask: return "ask";
    case FastValue::Kind::Null: return "null";
    case FastValue::Kind::Int: return "i:" + std::to_string(v.i);
    case FastValue::Kind::Big: return "big";
    case FastValue::Kind::Double: return "d:" + std::to_string(v.d);
    case FastValue::Kind::Bool: return v.b ? "t" : "f";
    case FastValue::Kind::Text: return "s:" + std::string(v.text);
    case FastValue::Kind::Micros: return "us:" + std::to_string(v.i);
    }
    return "?";
}

}  // namespace

TEST(FastConvert, Integers) {
    EXPECT_EQ(fast(FastType::Int4, RawKind::Number, "12"), "i:12");
    EXPECT_EQ(fast(FastType::Int4, RawKind::String, " +12\n"), "i:12");
    EXPECT_EQ(fast(FastType::Int4, RawKind::String, "00012"), "i:12");
    EXPECT_EQ(fast(FastType::Int2, RawKind::String, "-32768"), "i:-32768");
    EXPECT_EQ(fast(FastType::Int2, RawKind::String, "32768"), "ask");
    EXPECT_EQ(fast(FastType::Int8, RawKind::String, "-9223372036854775808"),
              "i:-9223372036854775808");
    EXPECT_EQ(fast(FastType::Int8, RawKind::String, "9223372036854775808"), "ask");
    for (const char* t : {"1.5", "1e5", "1_000", "", " ", "+", "0x10", "1 2", "١"})
        EXPECT_EQ(fast(FastType::Int4, RawKind::String, t), "ask") << t;
    EXPECT_EQ(fast(FastType::Int4, RawKind::True), "ask");
    EXPECT_EQ(fast(FastType::Int4, RawKind::Absent), "null");
    EXPECT_EQ(fast(FastType::Int4, RawKind::Null), "null");
}

TEST(FastConvert, NumericFloatBool) {
    EXPECT_EQ(fast(FastType::Numeric, RawKind::Number, "-0"), "i:0");
    EXPECT_EQ(fast(FastType::Numeric, RawKind::Number, "123456789012345678901234567890"), "big");
    EXPECT_EQ(fast(FastType::Numeric, RawKind::Number, "1.5"), "ask");
    EXPECT_EQ(fast(FastType::Numeric, RawKind::String, "NaN"), "ask");
    EXPECT_EQ(fast(FastType::Float8, RawKind::Number, "1.5"), "d:1.500000");
    EXPECT_EQ(fast(FastType::Float8, RawKind::Number, "1e-320"), "ask");  // subnormal
    EXPECT_EQ(fast(FastType::Float8, RawKind::Number, "1e400"), "ask");
    EXPECT_EQ(fast(FastType::Float8, RawKind::String, " 1.5"), "ask");
    EXPECT_EQ(fast(FastType::Float8, RawKind::String, "Infinity"), "ask");
    EXPECT_EQ(fast(FastType::Float4, RawKind::Number, "1e39"), "ask");
    EXPECT_EQ(fast(FastType::Bool, RawKind::True), "t");
    EXPECT_EQ(fast(FastType::Bool, RawKind::String, "YES"), "t");
    EXPECT_EQ(fast(FastType::Bool, RawKind::String, "off"), "f");
    EXPECT_EQ(fast(FastType::Bool, RawKind::String, " true"), "ask");
    EXPECT_EQ(fast(FastType::Bool, RawKind::Number, "1"), "ask");
    EXPECT_EQ(fast(FastType::Text, RawKind::Number, "1.50"), "s:1.50");
    EXPECT_EQ(fast(FastType::Text, RawKind::False), "s:false");
    EXPECT_EQ(fast(FastType::Text, RawKind::String, std::string("a\0b", 3)), "ask");
    EXPECT_EQ(fast(FastType::Other, RawKind::String, "x"), "ask");
    // a type the lane does not know decides about NULL itself (a domain may refuse it)
    EXPECT_EQ(fast(FastType::Other, RawKind::Null), "ask");
    EXPECT_EQ(fast(FastType::Other, RawKind::Absent), "ask");
    EXPECT_FALSE(fast_valid(FastType::Other, RawValue{RawKind::Null, {}}));
    EXPECT_EQ(fast(FastType::Text, RawKind::Null), "null");
}

TEST(FastConvert, Timestamptz) {
    EXPECT_EQ(fast(FastType::Timestamptz, RawKind::Number, "1000"), "us:1000000");
    EXPECT_EQ(fast(FastType::Timestamptz, RawKind::Number, "1.5"), "ask");
    EXPECT_EQ(fast(FastType::Timestamptz, RawKind::String, "1970-01-01T00:00:01.5Z"), "us:1500000");
    EXPECT_EQ(fast(FastType::Timestamptz, RawKind::String, "1970-01-01 02:00:00+02:00"), "us:0");
    EXPECT_EQ(fast(FastType::Timestamptz, RawKind::String, "1970-01-01T00:00:00-01"),
              "us:3600000000");
    // No offset (the session's time zone), leap seconds, 7 fraction digits, odd forms: PostgreSQL.
    for (const char* t :
         {"1970-01-01T00:00:00", "2016-12-31T23:59:60Z", "2026-01-01T00:00:00.1234567Z",
          "2026-02-29T00:00:00Z", "0000-01-01T00:00:00Z", "2026-01-01T00:00:00+16",
          "2026-01-01t00:00:00Z", "2026-01-01T00:00:00z", "2026-01-01T00:00:00+0100",
          "2026-01-01T00:00Z", "tomorrow"})
        EXPECT_EQ(fast(FastType::Timestamptz, RawKind::String, t), "ask") << t;
    std::int64_t us = 0;
    ASSERT_TRUE(parse_iso_timestamptz("2024-02-29T12:34:56.789012+05:30", us));
    EXPECT_EQ(us, 1709190296789012);
}

TEST(FastConvert, ValidWithoutConverting) {
    // json/jsonb columns are only checked: JSON that jsonb_in certainly takes.
    EXPECT_TRUE(
        fast_valid(FastType::Json, RawValue{RawKind::Object, R"({"a": [1, 2.5e10, "x\n"]})"}));
    EXPECT_TRUE(fast_valid(FastType::Json, RawValue{RawKind::String, "plain"}));
    EXPECT_TRUE(fast_valid(FastType::Json, RawValue{RawKind::Absent, ""}));
    EXPECT_FALSE(fast_valid(FastType::Json, RawValue{RawKind::Object, R"({"a": "x\u0000"})"}));
    EXPECT_FALSE(fast_valid(FastType::Json, RawValue{RawKind::String, std::string("a\0b", 3)}));
    EXPECT_FALSE(fast_valid(FastType::Json, RawValue{RawKind::Array, "[1e1000000]"}));
    EXPECT_TRUE(fast_valid(FastType::Json, RawValue{RawKind::Array, "[1e999, \"e1000000\"]"}));
    EXPECT_FALSE(fast_valid(FastType::Json, RawValue{RawKind::Number, std::string(200, '9')}));
    // Other columns: valid when the lane converts them.
    EXPECT_TRUE(fast_valid(FastType::Int4, RawValue{RawKind::String, "12"}));
    EXPECT_FALSE(fast_valid(FastType::Int4, RawValue{RawKind::String, "1.5"}));
    EXPECT_FALSE(fast_valid(FastType::Other, RawValue{RawKind::String, "x"}));
}

// README "Columns", Conversion: the words PostgreSQL's date/time input reads from the clock,
// in any case and anywhere in the text; fixed special values and ordinary times are not.
TEST(FastConvert, ClockDependentTimes) {
    using stoatflow::format::clock_dependent_time;
    using stoatflow::format::is_infinity_text;
    for (const char* t : {"now", "NOW", " Now ", "today", "today 10:00", "10:00 TODAY", "tomorrow",
                          "yesterday", "yesterday 23:59:59+02", "now UTC"})
        EXPECT_NE(clock_dependent_time(t), nullptr) << t;
    EXPECT_STREQ(clock_dependent_time(" Tomorrow"), "tomorrow");
    for (const char* t : {"epoch", "allballs", "infinity", "-infinity", "2026-12-01 10:00:00+00",
                          "Tue Dec 01 10:00:00 2026 UTC", "nowhere", "todays", "knows", ""})
        EXPECT_EQ(clock_dependent_time(t), nullptr) << t;
    for (const char* t : {"infinity", "-Infinity", " +INFINITY ", "Infinity"})
        EXPECT_TRUE(is_infinity_text(t)) << t;
    for (const char* t : {"inf", "infinityx", "--infinity", "1e400", ""})
        EXPECT_FALSE(is_infinity_text(t)) << t;
}
