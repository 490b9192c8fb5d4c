// The Avro decoder (stoatflow/format/avro.hpp): schemas, every primitive and logical type,
// resolution between writer and reader schemas, nested paths, malformed bodies and the
// Confluent framing. The well-formed bodies were written by Apache Avro's Python implementation
// (test/unit/avro_reference.py), the malformed ones by hand from the Avro specification's
// binary encoding (zig-zag varints, length-prefixed bytes, union index first).
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/avro.hpp"
#include "stoatflow/format/fast_convert.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using namespace stoatflow;
using namespace stoatflow::format;
using avro::Program;
using avro::Schema;

namespace {

std::vector<std::uint8_t> hex(const std::string& h) {
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i + 1 < h.size(); i += 2)
        out.push_back(static_cast<std::uint8_t>(std::stoi(h.substr(i, 2), nullptr, 16)));
    return out;
}

avro::ColumnPaths cols(std::initializer_list<const char*> paths) {
    avro::ColumnPaths out;
    for (const char* p : paths) {
        std::vector<std::string> path;
        std::string s = p, part;
        for (char c : s) {
            if (c == '.') {
                path.push_back(part);
                part.clear();
            } else {
                part += c;
            }
        }
        path.push_back(part);
        out.push_back(path);
    }
    return out;
}

struct Got {
    DeadReason reason = DeadReason::None;
    std::string detail;
    std::vector<std::pair<RawKind, std::string>> values;
};

Got read(Program& prog, const std::vector<std::uint8_t>& body) {
    RawRows rows(prog.columns());
    const std::size_t row = rows.add_row();
    Got g;
    g.reason = prog.read(body.data(), body.size(), rows, row);
    g.detail = prog.detail();
    for (std::size_t c = 0; c < prog.columns(); ++c) {
        const RawValue v = rows.get(row, c);
        g.values.emplace_back(v.kind, std::string(v.text));
    }
    return g;
}

Got read(const std::string& writer, const avro::ColumnPaths& columns,
         const std::vector<std::uint8_t>& body, const std::string& reader = "") {
    const Schema w = Schema::parse(writer);
    Schema r;
    if (!reader.empty()) r = Schema::parse(reader);
    Program prog(w, reader.empty() ? nullptr : &r, columns);
    return read(prog, body);
}

std::pair<RawKind, std::string> num(const char* t) { return {RawKind::Number, t}; }
std::pair<RawKind, std::string> str(const std::string& t) { return {RawKind::String, t}; }
const std::pair<RawKind, std::string> kNull{RawKind::Null, ""};
const std::pair<RawKind, std::string> kAbsent{RawKind::Absent, ""};

const char* kPrimitives = R"({"type": "record", "name": "P", "fields": [
    {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
    {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
    {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
    {"name": "y", "type": "bytes"}, {"name": "n", "type": "null"}]})";
const char* kPrimitivesBody =
    "01ffffffff0ffeffffffffffffffff01cdcccc3d2f30b7b3a7c9ba810e68c3a9226c6c6f0600ff10";

const char* kLogical = R"({"type": "record", "name": "L", "fields": [
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "fix", "type": {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal",
                             "precision": 18, "scale": 3}},
    {"name": "tms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "tus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "old", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "id", "type": {"type": "string", "logicalType": "uuid"}}]})";
const char* kLogicalBody =
    "04cfc70000000000000005f695adbec56880a9f390efdeb00601e6c4024831323365343536372d653839622d31"
    "3264332d613435362d343236363134313734303030";

const char* kComplex = R"({"type": "record", "name": "C", "namespace": "shop", "fields": [
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "long"}},
    {"name": "user", "type": {"type": "record", "name": "User", "fields": [
        {"name": "id", "type": "string"},
        {"name": "geo", "type": ["null", {"type": "record", "name": "Geo", "fields": [
            {"name": "lat", "type": "double"}]}]}]}},
    {"name": "note", "type": ["null", "string"]},
    {"name": "again", "type": "Kind"}]})";
const char* kComplexBody = "0204026106622263000402780202790300047531020000000000404a400000";

const char* kV1 = R"({"type": "record", "name": "E", "fields": [
    {"name": "a", "type": "int"}, {"name": "b", "type": "bytes"},
    {"name": "gone", "type": {"type": "array", "items": "long"}},
    {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["X", "Y", "Z"]}},
    {"name": "s", "type": "string"}]})";
const char* kV1Body = "0e0468690602040600040ac3a974c3a9";

TEST(Avro, EveryPrimitiveType) {
    const Got g =
        read(kPrimitives, cols({"b", "i", "l", "f", "d", "s", "y", "n"}), hex(kPrimitivesBody));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    const std::vector<std::pair<RawKind, std::string>> want = {
        {RawKind::True, ""},
        num("-2147483648"),
        num("9223372036854775807"),
        num("0.1"),  // a float's shortest text
        num("-2.5e-300"),
        str("h\xc3\xa9\"llo"),
        str("\\x00ff10"),  // bytea's hex input
        kNull,
    };
    EXPECT_EQ(g.values, want);
}

TEST(Avro, LogicalTypes) {
    const Got g =
        read(kLogical, cols({"dec", "fix", "tms", "tus", "old", "day", "id"}), hex(kLogicalBody));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    const std::vector<std::pair<RawKind, std::string>> want = {
        num("-123.45"),
        num("0.005"),
        str("2026-11-30 10:00:00.123000+00"),
        str("2026-11-30 10:00:00.123456+00"),
        str("1969-12-31 23:59:59.999999+00"),
        str("2026-11-30"),
        str("123e4567-e89b-12d3-a456-426614174000"),
    };
    EXPECT_EQ(g.values, want);
    // The column conversion reads the timestamps exactly, microseconds included.
    std::int64_t micros = 0;
    ASSERT_TRUE(parse_iso_timestamptz(g.values[3].second, micros));
    EXPECT_EQ(micros, 1796032800123456);
    ASSERT_TRUE(parse_iso_timestamptz(g.values[4].second, micros));
    EXPECT_EQ(micros, -1);
}

TEST(Avro, DecimalsAndTimesAtTheirEdges) {
    const char* schema = R"({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 0}},
        {"name": "b", "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 5}},
        {"name": "c", "type": {"type": "bytes", "logicalType": "decimal", "precision": 3, "scale": 1}},
        {"name": "d", "type": {"type": "int", "logicalType": "date"}},
        {"name": "e", "type": {"type": "long", "logicalType": "timestamp-millis"}}]})";
    // a: 17 bytes 0x01 00..00 = 2^128; b: 0x80 = -128 at scale 5; c: empty = 0;
    // d: -719163 days = 0000-12-31 (the day before 0001-01-01, day -719162), i.e. 1 BC;
    // e: -1 ms (zig-zag 1: 01).
    const std::string body = "22"
                             "01" +
                             std::string(32, '0') +
                             "02"
                             "80"
                             "00"
                             "f5e457"
                             "01";
    const Got g = read(schema, cols({"a", "b", "c", "d", "e"}), hex(body));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    EXPECT_EQ(g.values[0], num("340282366920938463463374607431768211456"));
    EXPECT_EQ(g.values[1], num("-0.00128"));
    EXPECT_EQ(g.values[2], num("0.0"));  // the scale kept, as numeric keeps it
    EXPECT_EQ(g.values[3], str("0001-12-31 BC"));
    EXPECT_EQ(g.values[4], str("1969-12-31 23:59:59.999000+00"));
}

TEST(Avro, FloatsThatAreNoNumbers) {
    // double NaN, +inf; float -inf (IEEE 754 little-endian).
    const char* schema = R"({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "double"}, {"name": "b", "type": "double"}, {"name": "c", "type": "float"},
        {"name": "all", "type": {"type": "array", "items": "double"}}]})";
    const Got g = read(schema, cols({"a", "b", "c", "all"}),
                       hex("000000000000f87f"
                           "000000000000f07f"
                           "000080ff"
                           "02"
                           "000000000000f87f"
                           "00"));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    EXPECT_EQ(g.values[0], str("NaN"));
    EXPECT_EQ(g.values[1], str("Infinity"));
    EXPECT_EQ(g.values[2], str("-Infinity"));
    EXPECT_EQ(g.values[3], std::make_pair(RawKind::Array, std::string("[\"NaN\"]")));
}

TEST(Avro, LargeDoublesStayFloatingPointText) {
    // 2^69 * 1.640625 = 968454063869751459840 (0x444a400000000000): its shortest text has 21
    // digits and no point; it is written in exponent form, in a column and inside JSON.
    const char* schema = R"({"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "double"}, {"name": "all", "type": {"type": "array", "items": "double"}},
        {"name": "b", "type": "double"}]})";
    const Got g = read(schema, cols({"a", "all", "b"}),
                       hex("0000000000404a44"
                           "02"
                           "0000000000404a44"
                           "00"
                           "408cb5781daf1544"));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    EXPECT_EQ(g.values[0], num("9.684540638697515e+20"));
    EXPECT_EQ(g.values[1], std::make_pair(RawKind::Array, std::string("[9.684540638697515e+20]")));
    EXPECT_EQ(g.values[2], num("1e+20"));  // already short
}

TEST(Avro, EnumsArraysMapsUnionsAndNestedPaths) {
    const Got g = read(kComplex,
                       cols({"kind", "tags", "attrs", "user.id", "user.geo.lat", "user", "note",
                             "again", "user.nope", "kind.x", "nope", "user.id"}),
                       hex(kComplexBody));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    const std::vector<std::pair<RawKind, std::string>> want = {
        str("BUY"),
        {RawKind::Array, R"(["a","b\"c"])"},
        {RawKind::Object, R"({"x":1,"y":-2})"},
        str("u1"),
        num("52.5"),
        {RawKind::Object, R"({"id":"u1","geo":{"lat":52.5}})"},
        kNull,
        str("VIEW"),
        kAbsent,  // no such member
        kAbsent,  // a path across a value that is no record
        kAbsent,
        str("u1"),  // two columns of one path
    };
    EXPECT_EQ(g.values, want);
}

TEST(Avro, APathAcrossANullUnionBranchIsAbsent) {
    // user.geo = null (union index 0): geo is Null, geo.lat Absent.
    const Got g = read(kComplex, cols({"user.geo", "user.geo.lat"}),
                       hex("02"
                           "00"
                           "00"
                           "047531"
                           "00"
                           "00"
                           "00"));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    EXPECT_EQ(g.values[0], kNull);
    EXPECT_EQ(g.values[1], kAbsent);
}

TEST(Avro, NoColumnsStillValidatesTheBody) {
    const Schema w = Schema::parse(kComplex);
    Program prog(w, nullptr, {});
    EXPECT_EQ(read(prog, hex(kComplexBody)).reason, DeadReason::None);
    EXPECT_EQ(read(prog, hex(std::string(kComplexBody) + "00")).reason, DeadReason::BadAvro);
}

// ---- resolution ----------------------------------------------------------------------------

const char* kV2 = R"({"type": "record", "name": "E", "fields": [
    {"name": "a", "type": "double"},
    {"name": "b", "type": "string"},
    {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["X", "Y"], "default": "X"}},
    {"name": "s", "type": "bytes"},
    {"name": "c", "type": "int", "default": 42},
    {"name": "d", "type": ["null", "string"], "default": null},
    {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}, "default": 0},
    {"name": "e", "type": ["null", "long"]},
    {"name": "renamed", "aliases": ["a"], "type": "long"}]})";

TEST(AvroResolution, FieldsAddedRemovedPromotedAndAliased) {
    const Got g =
        read(kV1, cols({"a", "b", "k", "s", "c", "d", "t", "e", "renamed"}), hex(kV1Body), kV2);
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    const std::vector<std::pair<RawKind, std::string>> want = {
        num("7"),                       // int promoted to double
        str("hi"),                      // bytes read as string
        str("X"),                       // Z is no reader symbol: the reader enum's default
        str("\\xc3a974c3a9"),           // string read as bytes
        num("42"),                      // added with a default
        kNull,                          // added with default null
        str("1970-01-01 00:00:00+00"),  // a logical default
        kNull,                          // added, nullable, no default
        num("7"),                       // the writer's "a" through the reader's alias
    };
    EXPECT_EQ(g.values, want);
}

TEST(AvroResolution, WithoutAReaderSchemaTheWriterDecides) {
    const Got g = read(kV1, cols({"a", "b", "k", "s", "gone", "missing"}), hex(kV1Body));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    const std::vector<std::pair<RawKind, std::string>> want = {
        num("7"), str("\\x6869"), str("Z"), str("\xc3\xa9t\xc3\xa9"), {RawKind::Array, "[1,2,3]"},
        kAbsent,
    };
    EXPECT_EQ(g.values, want);
}

TEST(AvroResolution, AnEnumSymbolTheReaderLacksWithoutDefaultIsBadAvro) {
    const char* reader = R"({"type": "record", "name": "E", "fields": [
        {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["X", "Y"]}}]})";
    const Got g = read(kV1, cols({"k"}), hex(kV1Body), reader);
    EXPECT_EQ(g.reason, DeadReason::BadAvro);
    EXPECT_NE(g.detail.find("\"Z\""), std::string::npos) << g.detail;
    // Y is a reader symbol: index 1.
    EXPECT_EQ(read(kV1, cols({"k"}),
                   hex("0e0468690602040600"
                       "02"
                       "00"),
                   reader)
                  .values[0],
              str("Y"));
}

TEST(AvroResolution, UnionBranchesResolveOneByOne) {
    const char* writer = R"(["null", "int", "string"])";
    const char* reader = R"(["null", "long", "string"])";
    const Schema w = Schema::parse(writer), r = Schema::parse(reader);
    Program prog(w, &r, {{}});
    EXPECT_EQ(read(prog, hex("00")).values[0], kNull);
    EXPECT_EQ(read(prog, hex("020d")).values[0], num("-7"));
    EXPECT_EQ(read(prog, hex("04026f")).values[0], str("o"));
    // A writer union read into a reader that is no union.
    const Schema plain = Schema::parse(R"("double")");
    Program p2(Schema::parse(R"(["int", "float"])"), &plain, {{}});
    EXPECT_EQ(read(p2, hex("0004")).values[0], num("2"));
    EXPECT_EQ(read(p2, hex("020000c03f")).values[0], num("1.5"));
    // A writer value read into a reader union.
    Program p3(Schema::parse(R"("int")"), &r, {{}});
    EXPECT_EQ(read(p3, hex("06")).values[0], num("3"));
}

TEST(AvroResolution, WhatDoesNotResolveIsRefusedOnce) {
    const auto refuses = [](const char* reader, const avro::ColumnPaths& c) {
        const Schema w = Schema::parse(kV1), r = Schema::parse(reader);
        try {
            Program prog(w, &r, c);
        } catch (const Error& e) {
            EXPECT_EQ(e.sqlstate(), sqlstate::kDatatypeMismatch);
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    // A string cannot be read as an int; a long cannot become an int.
    EXPECT_NE(
        refuses(R"({"type": "record", "name": "E", "fields": [{"name": "s", "type": "int"}]})",
                cols({"s"}))
            .find("column \"s\""),
        std::string::npos);
    EXPECT_NE(
        refuses(R"({"type": "record", "name": "E", "fields": [{"name": "x", "type": "int"}]})",
                cols({"x"}))
            .find("no default"),
        std::string::npos);
    EXPECT_NE(refuses(R"({"type": "record", "name": "E", "fields": [
                          {"name": "k", "type": {"type": "enum", "name": "Other", "symbols": ["X"]}}]})",
                      cols({"k"})),
              "(accepted)");
}

// ---- malformed bodies ----------------------------------------------------------------------

DeadReason bad_body(const char* schema, const std::string& body_hex,
                    std::string* detail = nullptr) {
    const Got g = read(schema, cols({"v"}), hex(body_hex));
    if (detail) *detail = g.detail;
    return g.reason;
}

std::string rec(const char* type) {
    return std::string(R"({"type": "record", "name": "M", "fields": [{"name": "v", "type": )") +
           type + "}]}";
}

TEST(AvroMalformed, EveryWayABodyCannotDecode) {
    const std::string s = rec(R"("string")"), l = rec(R"("long")"), i = rec(R"("int")"),
                      u = rec(R"(["null", "int"])"), b = rec(R"("boolean")"),
                      e = rec(R"({"type": "enum", "name": "En", "symbols": ["A"]})"),
                      an = rec(R"({"type": "array", "items": "null"})"),
                      al = rec(R"({"type": "array", "items": "long"})"),
                      m = rec(R"({"type": "map", "values": "int"})"),
                      dec = rec(R"({"type": "bytes", "logicalType": "decimal", "precision": 400})"),
                      fx = rec(R"({"type": "fixed", "name": "F", "size": 4})"),
                      d = rec(R"("double")");
    std::string detail;
    EXPECT_EQ(bad_body(s.c_str(),
                       "14"
                       "6162",
                       &detail),
              DeadReason::BadAvro);  // length 10, 2 bytes
    EXPECT_NE(detail.find("length"), std::string::npos) << detail;
    EXPECT_EQ(bad_body(s.c_str(), ""), DeadReason::BadAvro);                        // empty body
    EXPECT_EQ(bad_body(l.c_str(), "ffffffffffffffffffff01"), DeadReason::BadAvro);  // 11 bytes
    EXPECT_EQ(bad_body(l.c_str(), "ffffffffffffffffff7f", &detail),
              DeadReason::BadAvro);  // > 64 bits
    EXPECT_NE(detail.find("64 bits"), std::string::npos) << detail;
    EXPECT_EQ(bad_body(l.c_str(), "ffffffffffffffffff01"), DeadReason::None);  // INT64_MIN fits
    EXPECT_EQ(bad_body(l.c_str(), "80"), DeadReason::BadAvro);                 // ends inside
    EXPECT_EQ(bad_body(i.c_str(), "8080808010"), DeadReason::BadAvro);         // 2^31 for an int
    EXPECT_EQ(bad_body(s.c_str(), "01", &detail), DeadReason::BadAvro);        // length -1
    EXPECT_NE(detail.find("negative"), std::string::npos) << detail;
    EXPECT_EQ(bad_body(s.c_str(), "80808080808080808001"
                                  "61"),
              DeadReason::BadAvro);                                      // 2^62 long
    EXPECT_EQ(bad_body(u.c_str(), "04", &detail), DeadReason::BadAvro);  // union index 2
    EXPECT_NE(detail.find("union index 2"), std::string::npos) << detail;
    EXPECT_EQ(bad_body(u.c_str(), "01"), DeadReason::BadAvro);             // union index -1
    EXPECT_EQ(bad_body(i.c_str(), "0200", &detail), DeadReason::BadAvro);  // trailing byte
    EXPECT_NE(detail.find("left over"), std::string::npos) << detail;
    EXPECT_EQ(bad_body(b.c_str(), "02"), DeadReason::BadAvro);  // boolean 2
    EXPECT_EQ(bad_body(e.c_str(), "02"), DeadReason::BadAvro);  // enum index 1
    // 2^62 nulls cost no bytes: the item limit, not a loop or an allocation.
    EXPECT_EQ(bad_body(an.c_str(),
                       "80808080808080808001"
                       "00",
                       &detail),
              DeadReason::BadAvro);
    EXPECT_NE(detail.find("items"), std::string::npos) << detail;
    EXPECT_EQ(bad_body(an.c_str(), "06"
                                   "00"),
              DeadReason::None);  // 3 nulls
    EXPECT_EQ(bad_body(al.c_str(), "d00f"
                                   "020406"),
              DeadReason::BadAvro);  // 1000 longs, 3 bytes
    EXPECT_EQ(bad_body(al.c_str(), "ffffffffffffffffff01"),
              DeadReason::BadAvro);  // count INT64_MIN
    EXPECT_EQ(bad_body(al.c_str(), "05"
                                   "06"
                                   "020406"
                                   "00"),
              DeadReason::None);  // count -3, 3 bytes
    EXPECT_EQ(bad_body(al.c_str(), "05"
                                   "7f"
                                   "020406"
                                   "00"),
              DeadReason::BadAvro);                                // size -64
    EXPECT_EQ(bad_body(al.c_str(), "0202"), DeadReason::BadAvro);  // no end block
    EXPECT_EQ(bad_body(m.c_str(), "02"
                                  "14"
                                  "02"
                                  "00"),
              DeadReason::BadAvro);                                         // key past the end
    EXPECT_EQ(bad_body(fx.c_str(), "010203"), DeadReason::BadAvro);         // fixed 4, 3 bytes
    EXPECT_EQ(bad_body(d.c_str(), "00000000000000"), DeadReason::BadAvro);  // double, 7 bytes
    // A decimal beyond 128 bytes is a dead letter.
    EXPECT_EQ(bad_body(dec.c_str(), "8202" + std::string(2 * 129, '1')), DeadReason::BadAvro);
    EXPECT_EQ(bad_body(dec.c_str(), "0a"
                                    "0102030405"),
              DeadReason::None);
}

TEST(AvroMalformed, StringsMustBeUtf8WithoutNul) {
    const std::string s = rec(R"("string")"), a = rec(R"({"type": "array", "items": "string"})"),
                      m = rec(R"({"type": "map", "values": "null"})");
    EXPECT_EQ(bad_body(s.c_str(), "04c328"), DeadReason::InvalidText);  // broken sequence
    EXPECT_EQ(bad_body(s.c_str(), "046100"), DeadReason::InvalidText);  // NUL
    EXPECT_EQ(bad_body(a.c_str(), "02"
                                  "02ff"
                                  "00"),
              DeadReason::InvalidText);
    EXPECT_EQ(bad_body(m.c_str(), "02"
                                  "02ff"
                                  "00"),
              DeadReason::InvalidText);  // a map key
    EXPECT_EQ(bad_body(s.c_str(), "04c3a9"), DeadReason::None);
}

TEST(AvroMalformed, EveryTruncationOfAGoodBodyIsBadAvro) {
    const Schema w = Schema::parse(kComplex);
    Program prog(w, nullptr, cols({"user.geo.lat", "tags", "attrs", "kind"}));
    const auto body = hex(kComplexBody);
    for (std::size_t n = 0; n < body.size(); ++n) {
        const std::vector<std::uint8_t> cut(body.begin(), body.begin() + static_cast<long>(n));
        EXPECT_EQ(read(prog, cut).reason, DeadReason::BadAvro) << n;
    }
    EXPECT_EQ(read(prog, body).reason, DeadReason::None);
}

TEST(AvroMalformed, DeepRecursionIsBoundedNotAStackOverflow) {
    const char* list = R"({"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]})";
    const Schema w = Schema::parse(list);
    Program prog(w, nullptr, cols({"next.next.v", "next"}));
    // v=1, next: Node(v=2, next: Node(v=3, next: null)).
    const Got g = read(prog, hex("02"
                                 "02"
                                 "04"
                                 "02"
                                 "06"
                                 "00"));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    EXPECT_EQ(g.values[0], num("3"));
    EXPECT_EQ(g.values[1], std::make_pair(RawKind::Object,
                                          std::string(R"({"v":2,"next":{"v":3,"next":null}})")));
    std::string deep;
    for (int i = 0; i < 5000; ++i) deep += "0202";  // v=1, next = branch 1, ...
    deep += "0200";
    EXPECT_EQ(read(prog, hex(deep)).reason, DeadReason::BadAvro);
    Program skipping(w, nullptr, {});
    EXPECT_EQ(read(skipping, hex(deep)).reason, DeadReason::BadAvro);
}

// ---- schemas -------------------------------------------------------------------------------

TEST(AvroSchema, NamesNamespacesAndReferences) {
    const Schema s = Schema::parse(R"({"type": "record", "name": "Outer", "namespace": "a.b",
        "fields": [
          {"name": "x", "type": {"type": "fixed", "name": "Id", "size": 2}},
          {"name": "y", "type": "Id"},
          {"name": "z", "type": "a.b.Id"},
          {"name": "w", "type": {"type": "enum", "name": "c.E", "symbols": ["P"]}},
          {"name": "q", "type": "c.E"}]})");
    const avro::Node& root = s.node(s.root());
    EXPECT_EQ(root.name, "a.b.Outer");
    EXPECT_EQ(root.fields[1].type, root.fields[0].type);
    EXPECT_EQ(root.fields[2].type, root.fields[0].type);
    EXPECT_EQ(s.node(root.fields[3].type).name, "c.E");
    EXPECT_EQ(root.fields[4].type, root.fields[3].type);
    Program prog(s, nullptr, cols({"x", "y", "q"}));
    const Got g = read(prog, hex("0102"
                                 "0304"
                                 "0506"
                                 "00"
                                 "00"));
    ASSERT_EQ(g.reason, DeadReason::None) << g.detail;
    EXPECT_EQ(g.values[0], str("\\x0102"));
    EXPECT_EQ(g.values[1], str("\\x0304"));
    EXPECT_EQ(g.values[2], str("P"));
}

TEST(AvroSchema, BadSchemasAreRefusedWithTheirReason) {
    const auto refusal = [](const char* json) {
        try {
            Schema::parse(json);
        } catch (const Error& e) {
            EXPECT_EQ(e.sqlstate(), sqlstate::kInvalidParameterValue);
            return std::string(e.what());
        }
        return std::string("(accepted)");
    };
    EXPECT_NE(refusal("{nope").find("not JSON"), std::string::npos);
    EXPECT_NE(refusal(R"("Unknown")").find("unknown type \"Unknown\""), std::string::npos);
    EXPECT_NE(refusal(R"({"type": "strin"})").find("unknown type"), std::string::npos);
    EXPECT_NE(refusal(R"(["int", ["null"]])").find("union inside a union"), std::string::npos);
    EXPECT_NE(refusal(R"(["int", "int"])").find("two branches"), std::string::npos);
    EXPECT_NE(refusal(R"([])").find("empty union"), std::string::npos);
    EXPECT_NE(refusal(R"({"type": "enum", "name": "E"})").find("without symbols"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"type": "enum", "name": "E", "symbols": ["A", "A"]})").find("twice"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"type": "fixed", "name": "F"})").find("without a size"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"type": "record", "name": "R", "fields": [
                           {"name": "a", "type": {"type": "fixed", "name": "R", "size": 1}}]})")
                  .find("defined twice"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"type": "record", "name": "R", "fields": [{"name": "a"}]})")
                  .find("without a type"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"type": "record", "name": "1R", "fields": []})").find("not a valid name"),
              std::string::npos);
    EXPECT_NE(refusal(R"({"type": "array"})").find("without \"items\""), std::string::npos);
    EXPECT_NE(refusal("42").find("must be"), std::string::npos);
    // Two different named types of one kind may share a union.
    EXPECT_EQ(
        refusal(
            R"([{"type": "fixed", "name": "A", "size": 1}, {"type": "fixed", "name": "B", "size": 1}])"),
        "(accepted)");
    // A logical type that does not fit is ignored: the underlying type stays.
    const Schema s = Schema::parse(R"({"type": "string", "logicalType": "date"})");
    EXPECT_EQ(s.node(s.root()).logical, avro::Logical::None);
}

// ---- framing and the cache -----------------------------------------------------------------

TEST(AvroFraming, ConfluentMagicByteAndSchemaId) {
    avro::Framed f;
    std::string detail;
    const std::vector<std::uint8_t> ok = {0, 0, 0, 1, 0x2c, 0x0e};
    ASSERT_EQ(avro::split_confluent(ok.data(), ok.size(), f, detail), DeadReason::None);
    EXPECT_EQ(f.schema_id, 300);
    EXPECT_EQ(f.body, ok.data() + 5);
    EXPECT_EQ(f.body_len, 1u);
    const std::vector<std::uint8_t> big = {0, 0x7f, 0xff, 0xff, 0xfe};
    ASSERT_EQ(avro::split_confluent(big.data(), big.size(), f, detail), DeadReason::None);
    EXPECT_EQ(f.schema_id, 0x7ffffffe);
    EXPECT_EQ(f.body_len, 0u);
    const std::vector<std::uint8_t> magic = {1, 0, 0, 0, 1, 2};
    EXPECT_EQ(avro::split_confluent(magic.data(), magic.size(), f, detail), DeadReason::BadAvro);
    EXPECT_NE(detail.find("magic byte 1"), std::string::npos) << detail;
    const std::vector<std::uint8_t> json = {'{', '"', 'a', '"', ':', '1', '}'};
    EXPECT_EQ(avro::split_confluent(json.data(), json.size(), f, detail), DeadReason::BadAvro);
    EXPECT_EQ(avro::split_confluent(ok.data(), 4, f, detail), DeadReason::BadAvro);
    EXPECT_EQ(avro::split_confluent(nullptr, 0, f, detail), DeadReason::BadAvro);
    EXPECT_STREQ(to_string(DeadReason::BadAvro), "bad_avro");
    EXPECT_STREQ(to_string(DeadReason::BadSchemaId), "bad_schema_id");
}

TEST(AvroFraming, ProgramsAreCachedBySchemaId) {
    avro::ProgramCache cache;
    EXPECT_EQ(cache.find(7), nullptr);
    Program& p = cache.put(7, Program(Schema::parse(kV1), nullptr, cols({"a"})));
    EXPECT_EQ(cache.find(7), &p);
    EXPECT_EQ(cache.find(8), nullptr);
    EXPECT_EQ(read(*cache.find(7), hex(kV1Body)).values[0], num("7"));
    EXPECT_EQ(cache.size(), 1u);
}

// ---- the fast lane takes what the decoder writes -------------------------------------------

TEST(Avro, TheColumnConversionTakesTheValues) {
    const Got g = read(kPrimitives, cols({"i", "l", "d", "b"}), hex(kPrimitivesBody));
    ASSERT_EQ(g.reason, DeadReason::None);
    RawValue v{g.values[0].first, g.values[0].second};
    EXPECT_EQ(fast_convert(FastType::Int4, v).i, INT32_MIN);
    v = {g.values[1].first, g.values[1].second};
    EXPECT_EQ(fast_convert(FastType::Int8, v).i, INT64_MAX);
    v = {g.values[2].first, g.values[2].second};
    EXPECT_EQ(fast_convert(FastType::Float8, v).d, -2.5e-300);
    v = {g.values[3].first, g.values[3].second};
    EXPECT_TRUE(fast_convert(FastType::Bool, v).b);
}

}  // namespace
