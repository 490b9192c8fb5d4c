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
    EXPECT_EQ(names,
              (std::vector<std::string>{"count", "count_v", "sum_v", "min_v", "max_v", "avg_v"}));
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
              "column name \"" + std::string(64, 'x') + "\" is longer than 63 bytes");
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
    EXPECT_EQ(texts(l, c),
              (std::vector<std::string>{"3", "3", "5.5", "0.5", "3", "1.8333333333333333"}));
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

// README "Security" exact integers: values up to 38 digits (beyond int64) sum exactly, and so do
// sums of many of them (two 38-digit values already overflow __int128).
namespace {
__int128 big_of(const std::string& digits) {
    const bool neg = digits[0] == '-';
    __int128 v = 0;
    for (std::size_t i = neg ? 1 : 0; i < digits.size(); ++i) v = v * 10 + (digits[i] - '0');
    return neg ? -v : v;
}
const std::string k38 = "99999999999999999999999999999999999999";
}  // namespace

TEST(Aggregates, ValueStaysSmall) {
    static_assert(sizeof(Value) == 24, "Value is copied per record and aggregate");
    static_assert(sizeof(AggCell) == 40, "four cells sit inline in every window");
    const Value v = Value::of_big(big_of("-" + k38));
    EXPECT_EQ(v.kind, Value::Kind::BigInt);
    EXPECT_EQ(int128_to_string(v.big()), "-" + k38);
    EXPECT_EQ(Value::of_big(42).kind, Value::Kind::Int);  // int64 stays on the common path
}

TEST(Aggregates, IntegerSumsAreExactTo38DigitsAndBeyond) {
    auto l = all_six();
    auto c = l.empty_state();
    add(l, c, Value::of_big(static_cast<__int128>(1) << 70));
    EXPECT_EQ(l.as_numeric_text(2, c[2]).value(), "1180591620717411303424");
    add(l, c, Value::of_big((static_cast<__int128>(1) << 64) + 1));
    EXPECT_EQ(l.as_numeric_text(2, c[2]).value(), "1199038364791120855041");
    add(l, c, Value::of_int(-1));
    EXPECT_EQ(l.as_numeric_text(2, c[2]).value(), "1199038364791120855040");
    EXPECT_FALSE(l.as_numeric_int64(2, c[2]));

    // Many 38-digit values: 10 × (10^38 − 1) = 999...990, 39 digits.
    auto w = l.empty_state();
    for (int i = 0; i < 10; ++i) add(l, w, Value::of_big(big_of(k38)));
    EXPECT_EQ(l.as_numeric_text(2, w[2]).value(), k38 + "0");
    EXPECT_EQ(l.as_text(5, w[5]).value(), "9.9999999999999998e+37");  // avg stays double
    EXPECT_EQ(l.as_text(4, w[4]).value(), "9.9999999999999998e+37");  // max too
    EXPECT_DOUBLE_EQ(l.as_double(2, w[2]).value(), 1e39);
    // ... 1,000 of them, and int64 values on the hot path in between
    for (int i = 0; i < 990; ++i) {
        add(l, w, Value::of_big(big_of(k38)));
        add(l, w, Value::of_int(1));
    }
    EXPECT_EQ(l.as_numeric_text(2, w[2]).value(),
              "99999999999999999999999999999999999999990");  // 1000·(10^38 − 1) + 990
    // negatives: take 1,001 of them away again, below zero
    for (int i = 0; i < 1001; ++i) add(l, w, Value::of_big(-big_of(k38)));
    EXPECT_EQ(l.as_numeric_text(2, w[2]).value(), "-99999999999999999999999999999999999009");
    EXPECT_EQ(l.as_numeric_int64(2, w[2]), std::nullopt);
    // a sum back inside int64 takes the int64 path again
    for (int i = 0; i < 1; ++i) add(l, w, Value::of_big(big_of(k38)));
    EXPECT_EQ(l.as_numeric_int64(2, w[2]).value(), 990);
    EXPECT_EQ(l.as_numeric_text(2, w[2]).value(), "990");
    EXPECT_DOUBLE_EQ(l.as_double(5, w[5]).value(), 990.0 / 2992);  // avg over 2,992 values

    // Merging two wide sums is exact too (sessions, sliding derivation).
    auto a = l.empty_state(), b = l.empty_state(), both = l.empty_state();
    for (int i = 0; i < 5; ++i) {
        add(l, a, Value::of_big(big_of(k38)));
        add(l, both, Value::of_big(big_of(k38)));
        add(l, b, Value::of_big(-big_of(k38) / 3));
        add(l, both, Value::of_big(-big_of(k38) / 3));
    }
    l.merge(a.data(), b.data());
    EXPECT_EQ(a, both);
    EXPECT_EQ(l.as_numeric_text(2, a[2]).value(), "333333333333333333333333333333333333330");
}

TEST(Aggregates, WideSumPrinting) {
    EXPECT_EQ(wide_sum_to_string(0, 0), "0");
    EXPECT_EQ(wide_sum_to_string(0, -5), "-5");
    EXPECT_EQ(wide_sum_to_string(-1, 0), "-85070591730234615865843651857942052864");  // −2^126
    EXPECT_EQ(wide_sum_to_string(4, 0), "340282366920938463463374607431768211456");   // 2^128
    EXPECT_EQ(wide_sum_to_string(-4, 1), "-340282366920938463463374607431768211455");  // −2^128 + 1
    EXPECT_EQ(wide_sum_to_string(INT64_MAX, 0),
              "784637716923335095394403086170723686146950778700062261248");
    EXPECT_EQ(wide_sum_to_string(INT64_MIN + 1, 0),
              "-784637716923335095394403086170723686146950778700062261248");
}

// The state row format: 0.1 rows (a fixed length computable from the specs) still read;
// sums within __int128 are written in exactly that format; wider ones add a tail.
TEST(Aggregates, StateRowsOfVersion01StillRead) {
    auto l = all_six();
    EXPECT_EQ(l.state_v01_size(), 112u);
    // A row as 0.1 wrote it: count(*) 3, count 2, sum −7 (+0.5), min −9, max 2, avg like sum.
    std::string row;
    auto put64 = [&](std::int64_t v) { row.append(reinterpret_cast<const char*>(&v), 8); };
    auto putd = [&](double v) { row.append(reinterpret_cast<const char*>(&v), 8); };
    put64(3);
    put64(2);
    put64(2), put64(-7), put64(-1), putd(0.5);  // n, isum low, isum high (two's complement), d
    put64(2), putd(-9);
    put64(2), putd(2);
    put64(2), put64(-7), put64(-1), putd(0.5);
    ASSERT_EQ(row.size(), 112u);
    const auto cells = l.deserialize(row.data(), row.size());
    EXPECT_EQ(texts(l, cells), (std::vector<std::string>{"3", "2", "-6.5", "-9", "2", "-3.25"}));
    // Written back unchanged: the common case keeps 0.1's exact bytes.
    std::string again;
    l.serialize(cells.data(), again);
    EXPECT_EQ(again, row);
    // A sum beyond __int128 takes the tail: version byte 2, then ihi per sum/avg cell.
    auto c = l.empty_state();
    for (int i = 0; i < 3; ++i) add(l, c, Value::of_big(big_of(k38)));
    std::string wide;
    l.serialize(c.data(), wide);
    EXPECT_EQ(wide.size(), 112u + 1 + 2 * 8);
    EXPECT_EQ(wide[112], 2);
    const auto back = l.deserialize(wide.data(), wide.size());
    EXPECT_EQ(back, c);
    EXPECT_EQ(l.as_numeric_text(2, back[2]).value(), "299999999999999999999999999999999999997");
    // Damaged rows are refused, never misread.
    EXPECT_THROW(l.deserialize(wide.data(), wide.size() - 1), Error);
    std::string bad = wide;
    bad[112] = 9;  // an unknown version
    EXPECT_THROW(l.deserialize(bad.data(), bad.size()), Error);
    EXPECT_THROW(l.deserialize(row.data(), 111), Error);
}

// A session's floor rides in a tail of its own (tag 3, int64), after the wide sums if any.
TEST(Aggregates, StateRowFloorTail) {
    auto l = all_six();
    auto c = l.empty_state();
    add(l, c, Value::of_int(5));
    std::optional<std::int64_t> floor;
    for (std::int64_t f : {std::int64_t{-70001}, INT64_MIN, std::int64_t{0}}) {
        std::string row;
        l.serialize(c.data(), row, f);
        EXPECT_EQ(row.size(), 112u + 1 + 8);
        EXPECT_EQ(l.deserialize(row.data(), row.size(), &floor), c);
        EXPECT_EQ(floor, f);
    }
    std::string plain;
    l.serialize(c.data(), plain);
    floor = 1;
    l.deserialize(plain.data(), plain.size(), &floor);
    EXPECT_FALSE(floor.has_value());  // not recorded (a 0.1 row, a time window)
    // With wide sums: that tail first.
    auto w = l.empty_state();
    for (int i = 0; i < 3; ++i) add(l, w, Value::of_big(big_of(k38)));
    std::string both;
    l.serialize(w.data(), both, 42);
    EXPECT_EQ(both.size(), 112u + 1 + 2 * 8 + 1 + 8);
    EXPECT_EQ(l.deserialize(both.data(), both.size(), &floor), w);
    EXPECT_EQ(floor, 42);
    // Damaged: truncated floor, a repeated or out-of-order tail.
    EXPECT_THROW(l.deserialize(both.data(), both.size() - 1), Error);
    std::string twice = both + both.substr(112 + 17);
    EXPECT_THROW(l.deserialize(twice.data(), twice.size()), Error);
    std::string swapped = plain + both.substr(112 + 17) + both.substr(112, 17);
    EXPECT_THROW(l.deserialize(swapped.data(), swapped.size()), Error);
}
