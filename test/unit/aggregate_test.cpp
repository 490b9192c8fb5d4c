// Aggregates: declaration checks and default names, exact integer sums, NULL on no
// values, merging (sessions), and the compact binary state round trip.
#include "stoatflow/core/aggregate.hpp"

#include "stoatflow/core/error.hpp"

#include <gtest/gtest.h>

#include <climits>

using namespace stoatflow::core;
using stoatflow::Error;

namespace {
AggLayout all_six() {
    return AggLayout(normalize_aggregates({{AggFn::CountStar, "", ""},
                                           {AggFn::Count, "v", ""},
                                           {AggFn::Sum, "v", ""},
                                           {AggFn::Min, "v", ""},
                                           {AggFn::Max, "v", ""},
                                           {AggFn::Avg, "v", ""}}));
}
std::vector<std::string> texts(const AggLayout& l, const std::vector<AggCell>& c) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < l.size(); ++i) out.push_back(l.as_text(i, c[i]).value_or("NULL"));
    return out;
}
void add(const AggLayout& l, std::vector<AggCell>& c, Value v) {
    std::vector<Value> vals(l.size(), v);
    l.add(c.data(), vals.data());
}
std::string error_of(std::vector<AggSpec> specs, std::string* state = nullptr) {
    try {
        normalize_aggregates(std::move(specs));
    } catch (const Error& e) {
        if (state) *state = e.sqlstate();
        return e.what();
    }
    return "";
}
}  // namespace

TEST(Aggregates, DefaultColumnNames) {
    auto l = all_six();
    std::vector<std::string> names;
    for (auto& s : l.specs()) names.push_back(s.column);
    EXPECT_EQ(names, (std::vector<std::string>{"count", "count_v", "sum_v", "min_v", "max_v", "avg_v"}));
    EXPECT_EQ(default_column_name(AggFn::Max, "user.latency_ms"), "max_user_latency_ms");
}

TEST(Aggregates, ColumnTypes) {
    EXPECT_EQ(column_type(AggFn::CountStar), ColumnType::BigInt);
    EXPECT_EQ(column_type(AggFn::Count), ColumnType::BigInt);
    EXPECT_EQ(column_type(AggFn::Sum), ColumnType::Numeric);
    EXPECT_EQ(column_type(AggFn::Avg), ColumnType::Double);
    EXPECT_EQ(column_type(AggFn::Min), ColumnType::Double);
}

TEST(Aggregates, DeclarationErrors) {
    std::string st;
    EXPECT_EQ(error_of({}), "at least one aggregate is required");
    EXPECT_EQ(error_of({{AggFn::CountStar, "", "n"}, {AggFn::Sum, "v", "n"}}, &st),
              "aggregate column name \"n\" is used twice");
    EXPECT_EQ(st, "42701");
    EXPECT_EQ(error_of({{AggFn::Sum, "v", ""}, {AggFn::Sum, "v", ""}}),
              "aggregate column name \"sum_v\" is used twice");
    EXPECT_EQ(error_of({{AggFn::CountStar, "", "key"}}, &st),
              "aggregate column name \"key\" is reserved");
    EXPECT_EQ(error_of({{AggFn::Sum, "", ""}}, &st), "invalid field path \"\": it is empty");
    EXPECT_EQ(st, "22023");
    EXPECT_EQ(error_of({{AggFn::Sum, "a..b", ""}}),
              "invalid field path \"a..b\": it has an empty member name");
    EXPECT_EQ(error_of({{AggFn::Sum, "a.", ""}}),
              "invalid field path \"a.\": it has an empty member name");
    EXPECT_EQ(error_of({{AggFn::CountStar, "", std::string(64, 'x')}}),
              "column name \"" + std::string(64, 'x') + "\" is longer than 63 characters");
    try {
        agg_fn_from_name("median");
        FAIL();
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), "42883");
        EXPECT_STREQ(e.what(), "unknown aggregate function \"median\"");
    }
    EXPECT_EQ(agg_fn_from_name("SUM"), AggFn::Sum);
}

TEST(Aggregates, NoValuesGiveNullExceptCounts) {
    auto l = all_six();
    auto c = l.empty_state();
    add(l, c, Value::missing());
    EXPECT_EQ(texts(l, c), (std::vector<std::string>{"1", "0", "NULL", "NULL", "NULL", "NULL"}));
}

TEST(Aggregates, IntegerSumsAreExactBeyond64Bits) {
    auto l = all_six();
    auto c = l.empty_state();
    for (int i = 0; i < 4; ++i) add(l, c, Value::of_int(LLONG_MAX));
    EXPECT_EQ(l.as_numeric_text(2, c[2]).value(), "36893488147419103228");
    add(l, c, Value::of_int(LLONG_MIN));
    add(l, c, Value::of_int(LLONG_MIN));
    EXPECT_EQ(l.as_numeric_text(2, c[2]).value(), "18446744073709551612");
}

TEST(Aggregates, SumAsInt64OnlyWhenExactAndInRange) {
    auto l = all_six();
    auto c = l.empty_state();
    EXPECT_FALSE(l.as_numeric_int64(2, c[2]));  // no values: NULL
    add(l, c, Value::of_int(LLONG_MAX));
    EXPECT_EQ(l.as_numeric_int64(2, c[2]).value(), LLONG_MAX);
    add(l, c, Value::of_int(1));
    EXPECT_FALSE(l.as_numeric_int64(2, c[2]));  // beyond int64: text path
    add(l, c, Value::of_int(-2));
    EXPECT_EQ(l.as_numeric_int64(2, c[2]).value(), LLONG_MAX - 1);
    add(l, c, Value::of_double(0.5));
    EXPECT_FALSE(l.as_numeric_int64(2, c[2]));  // a fraction: text path
    EXPECT_FALSE(l.as_numeric_int64(0, c[0]));  // not a sum
}

TEST(Aggregates, IntegralDoublesStayExactFractionsAdd) {
    auto l = all_six();
    auto c = l.empty_state();
    add(l, c, Value::of_double(2.0));
    add(l, c, Value::of_int(3));
    EXPECT_EQ(l.as_numeric_text(2, c[2]).value(), "5");
    add(l, c, Value::of_double(0.5));
    EXPECT_EQ(l.as_numeric_text(2, c[2]).value(), "5.5");
    EXPECT_EQ(texts(l, c), (std::vector<std::string>{"3", "3", "5.5", "0.5", "3",
                                                     "1.8333333333333333"}));
}

TEST(Aggregates, MergeCombinesLikeOneWindow) {
    auto l = all_six();
    auto a = l.empty_state(), b = l.empty_state(), both = l.empty_state();
    for (int v : {5, -2, 9}) {
        add(l, a, Value::of_int(v));
        add(l, both, Value::of_int(v));
    }
    for (int v : {100, -50}) {
        add(l, b, Value::of_int(v));
        add(l, both, Value::of_int(v));
    }
    add(l, b, Value::missing());
    add(l, both, Value::missing());
    l.merge(a.data(), b.data());
    EXPECT_EQ(a, both);
    EXPECT_EQ(texts(l, a), (std::vector<std::string>{"6", "5", "62", "-50", "100", "12.4"}));
    // merging an empty window changes nothing (min/max keep their value)
    auto e = l.empty_state();
    l.merge(a.data(), e.data());
    EXPECT_EQ(a, both);
}

TEST(Aggregates, BinaryStateRoundTripsAndIsCompact) {
    auto l = all_six();
    auto c = l.empty_state();
    add(l, c, Value::of_int(LLONG_MAX));
    add(l, c, Value::of_int(LLONG_MAX));
    add(l, c, Value::of_double(-1.25));
    std::string bytes;
    l.serialize(c.data(), bytes);
    // count 8 + count 8 + sum 32 + min 16 + max 16 + avg 32
    EXPECT_EQ(bytes.size(), 112u);
    EXPECT_EQ(l.deserialize(bytes.data(), bytes.size()), c);
    EXPECT_THROW(l.deserialize(bytes.data(), bytes.size() - 1), Error);
    bytes.push_back('x');
    EXPECT_THROW(l.deserialize(bytes.data(), bytes.size()), Error);
}

TEST(Aggregates, Int128Printing) {
    EXPECT_EQ(int128_to_string(0), "0");
    EXPECT_EQ(int128_to_string(-42), "-42");
    __int128 min = static_cast<__int128>(static_cast<unsigned __int128>(1) << 127);
    EXPECT_EQ(int128_to_string(min), "-170141183460469231731687303715884105728");
}
