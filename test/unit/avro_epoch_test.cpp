// Avro timestamps into timestamptz columns (avro::Program's epoch_ms, format::make_row_decoder):
// a timestamp-millis or -micros value that is a whole millisecond in the event time range goes
// to a timestamptz column as epoch milliseconds (RawKind::Number), the same instant the ISO-8601
// text gave before; any other value, and any other column (text, jsonb), gets the text as
// before.
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/format/avro.hpp"
#include "stoatflow/format/fast_convert.hpp"
#include "stoatflow/format/row_decoder.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

using namespace stoatflow;
using namespace stoatflow::format;

namespace {

// Avro's binary long: a zig-zag varint.
void put_long(std::string& out, std::int64_t v) {
    auto u = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
    while (u >= 0x80) {
        out += static_cast<char>((u & 0x7f) | 0x80);
        u >>= 7;
    }
    out += static_cast<char>(u);
}

const char* kSchema = R"({"type": "record", "name": "T", "fields": [
    {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "opt", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
    {"name": "sub", "type": {"type": "record", "name": "S", "fields": [
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}}]})";

std::string body(std::int64_t ms, std::int64_t us, std::int64_t opt, std::int64_t at) {
    std::string b;
    put_long(b, ms);
    put_long(b, us);
    put_long(b, 1);  // union branch 1: the timestamp
    put_long(b, opt);
    put_long(b, at);
    return b;
}

using Values = std::vector<std::pair<RawKind, std::string>>;

Values read(const avro::ColumnPaths& columns, const std::vector<bool>& epoch_ms,
            const std::string& b) {
    const avro::Schema w = avro::Schema::parse(kSchema);
    avro::Program prog(w, nullptr, columns, epoch_ms);
    RawRows rows(prog.columns());
    const std::size_t row = rows.add_row();
    EXPECT_EQ(prog.read(reinterpret_cast<const std::uint8_t*>(b.data()), b.size(), rows, row),
              DeadReason::None)
        << prog.detail();
    Values out;
    for (std::size_t c = 0; c < prog.columns(); ++c) {
        const RawValue v = rows.get(row, c);
        out.emplace_back(v.kind, std::string(v.text));
    }
    return out;
}

// The timestamptz a value converts to in the fast lane (microseconds since 1970).
std::int64_t instant(const std::pair<RawKind, std::string>& v) {
    const FastValue f = fast_convert(FastType::Timestamptz, RawValue{v.first, v.second});
    EXPECT_EQ(f.kind, FastValue::Kind::Micros) << v.second;
    return f.i;
}

const avro::ColumnPaths kCols = {{"ms"}, {"us"}, {"opt"}, {"sub", "at"}};

// Typed and untyped give the same instants; typed gets numbers where `numbers` says.
void same_instants(const std::string& b, const std::vector<bool>& numbers) {
    const Values text = read(kCols, {}, b);
    const Values typed = read(kCols, {true, true, true, true}, b);
    ASSERT_EQ(typed.size(), text.size());
    for (std::size_t c = 0; c < text.size(); ++c) {
        EXPECT_EQ(text[c].first, RawKind::String) << c;
        EXPECT_EQ(typed[c].first, numbers[c] ? RawKind::Number : RawKind::String) << c;
        EXPECT_EQ(instant(typed[c]), instant(text[c])) << c << ": " << typed[c].second;
    }
}

}  // namespace

TEST(AvroEpoch, MillisAndWholeMicrosBecomeEpochMilliseconds) {
    const std::string b = body(1796032800123, 1796032800123000, 1796032800124, 1796032800125);
    const Values typed = read(kCols, {true, true, true, true}, b);
    const Values want = {{RawKind::Number, "1796032800123"},
                         {RawKind::Number, "1796032800123"},
                         {RawKind::Number, "1796032800124"},
                         {RawKind::Number, "1796032800125"}};
    EXPECT_EQ(typed, want);
    same_instants(b, {true, true, true, true});
}

TEST(AvroEpoch, SubMillisecondMicrosKeepTheirText) {
    // 123456 µs is no whole millisecond: the text keeps the microseconds.
    const std::string b = body(0, 1796032800123456, 0, 0);
    const Values typed = read(kCols, {true, true, true, true}, b);
    EXPECT_EQ(typed[1],
              (std::pair<RawKind, std::string>{RawKind::String, "2026-11-30 10:00:00.123456+00"}));
    EXPECT_EQ(instant(typed[1]), 1796032800123456);
    same_instants(b, {true, false, true, true});
    // Before 1970 too: -1 µs.
    EXPECT_EQ(read(kCols, {true, true, true, true}, body(0, -1, 0, 0))[1].first, RawKind::String);
}

TEST(AvroEpoch, NegativeEpoch) {
    const std::string b = body(-1, -1000, -86400000, -62135596800000);  // 0001-01-01
    const Values typed = read(kCols, {true, true, true, true}, b);
    EXPECT_EQ(typed[0], (std::pair<RawKind, std::string>{RawKind::Number, "-1"}));
    EXPECT_EQ(typed[1], (std::pair<RawKind, std::string>{RawKind::Number, "-1"}));
    EXPECT_EQ(instant(typed[0]), -1000);
    same_instants(b, {true, true, true, true});
}

TEST(AvroEpoch, OutsideTheEventTimeRangeKeepsText) {
    const std::int64_t beyond = core::kMaxEventTime + 1;
    const std::string b = body(beyond, beyond * 1000, core::kMinEventTime - 1,
                               std::numeric_limits<std::int64_t>::min());
    const Values text = read(kCols, {}, b);
    EXPECT_EQ(read(kCols, {true, true, true, true}, b), text);
}

TEST(AvroEpoch, OtherColumnsKeepTheText) {
    const std::string b = body(1796032800123, 1796032800123000, 5, 6);
    // Text columns (epoch_ms false or shorter than the columns): ISO-8601 text as before.
    const Values text = read(kCols, {}, b);
    EXPECT_EQ(text[0],
              (std::pair<RawKind, std::string>{RawKind::String, "2026-11-30 10:00:00.123000+00"}));
    EXPECT_EQ(read(kCols, {false, false, false, false}, b), text);
    const Values mixed = read(kCols, {false, true}, b);
    EXPECT_EQ(mixed[0], text[0]);
    EXPECT_EQ(mixed[1].first, RawKind::Number);
    EXPECT_EQ(mixed[2], text[2]);
    EXPECT_EQ(mixed[3], text[3]);
    // One value into two columns: the timestamptz one gets the number, the text one the text.
    const Values two = read({{"ms"}, {"ms"}}, {true, false}, b);
    EXPECT_EQ(two[0], (std::pair<RawKind, std::string>{RawKind::Number, "1796032800123"}));
    EXPECT_EQ(two[1], text[0]);
    // A jsonb column taking a record whole: the same JSON as before, whatever epoch_ms says.
    const Values whole = read({{"sub"}, {"sub", "at"}}, {true, true}, b);
    EXPECT_EQ(whole[0], read({{"sub"}, {"sub", "at"}}, {}, b)[0]);
    EXPECT_EQ(whole[0].first, RawKind::Object);
    EXPECT_EQ(whole[1], (std::pair<RawKind, std::string>{RawKind::Number, "6"}));
}

TEST(AvroEpoch, ThroughTheRowDecoderSeam) {
    const RecordFormat f = parse_record_format("avro", {{"schema", kSchema}});
    auto typed = make_row_decoder(f, {"ms", "us"}, {{"ms"}, {"us"}}, {true, false});
    auto plain = make_row_decoder(f, {"ms", "us"}, {{"ms"}, {"us"}});
    const std::string b = body(1796032800123, 1796032800123000, 0, 0);
    RawRows rows(2);
    bool skip = false;
    const std::size_t r1 = rows.add_row();
    ASSERT_EQ(typed->decode(b.data(), b.size(), false, rows, r1, skip), DeadReason::None);
    const std::size_t r2 = rows.add_row();
    ASSERT_EQ(plain->decode(b.data(), b.size(), false, rows, r2, skip), DeadReason::None);
    EXPECT_EQ(rows.get(r1, 0).kind, RawKind::Number);
    EXPECT_EQ(rows.get(r1, 0).text, "1796032800123");
    EXPECT_EQ(rows.get(r2, 0).kind, RawKind::String);
    EXPECT_EQ(rows.get(r1, 1).kind, RawKind::String);  // not a timestamptz column
    EXPECT_EQ(rows.get(r1, 1).text, rows.get(r2, 1).text);
}
