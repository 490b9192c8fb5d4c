// The JSON row extractor, table style: a document and column paths in, each column's raw field
// out (kind and text); then the metadata columns.
#include "stoatflow/format/row_extractor.hpp"

#include "stoatflow/core/time.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace stoatflow::format;

namespace {

std::string show(const RawValue& v) {
    switch (v.kind) {
    case RawKind::Absent: return "-";
    case RawKind::Null: return "null";
    case RawKind::String: return "s:" + std::string(v.text);
    case RawKind::Number: return "n:" + std::string(v.text);
    case RawKind::True: return "true";
    case RawKind::False: return "false";
    case RawKind::Object: return "o:" + std::string(v.text);
    case RawKind::Array: return "a:" + std::string(v.text);
    }
    return "?";
}

using Paths = std::vector<std::vector<std::string>>;

// Every column of the row, space separated, or the dead-letter reason.
std::string extract(const Paths& paths, const std::string& doc) {
    JsonRowExtractor ex(paths);
    RawRows rows(paths.size());
    const std::size_t r = rows.add_row();
    const DecodeError e = ex.extract(doc.data(), doc.size(), rows, r);
    if (e != DecodeError::None) return to_string(e);
    std::string s;
    for (std::size_t c = 0; c < paths.size(); ++c) s += (c ? " " : "") + show(rows.get(r, c));
    return s;
}

}  // namespace

TEST(RowExtractor, KindsAndPaths) {
    const Paths p = {{"s"}, {"n"}, {"t"}, {"f"}, {"z"}, {"o"}, {"a"}, {"o", "x"}, {"gone"}};
    // clang-format off
    EXPECT_EQ(extract(p, R"({"s": "h\u00e9\"\n", "n": -1.5e3 , "t": true, "f": false, "z": null, "o": {"x": [1, {"y": 2}]}, "a": [ 1 , "x" ] })"),
              "s:hé\"\n n:-1.5e3 true false null o:{\"x\": [1, {\"y\": 2}]} a:[ 1 , \"x\" ] a:[1, {\"y\": 2}] -");
    // clang-format on
    // A path through something that is not an object leaves its column absent.
    EXPECT_EQ(extract({{"a", "b"}}, R"({"a": 5})"), "-");
    EXPECT_EQ(extract({{"a", "b"}}, R"({"a": [{"b": 1}]})"), "-");
    // Escaped member names match their unescaped form.
    EXPECT_EQ(extract({{"a b"}, {"é"}}, R"({"a\u0020b": 1, "\u00e9": 2})"), "n:1 n:2");
    // Two columns on one path, and a column and its parent.
    EXPECT_EQ(extract({{"x"}, {"x"}, {"x", "y"}}, R"({"x": {"y": "v"}})"),
              "o:{\"y\": \"v\"} o:{\"y\": \"v\"} s:v");
    // Empty containers and the last member.
    EXPECT_EQ(extract({{"o"}, {"a"}}, R"({"a":[],"o":{}})"), "o:{} a:[]");
}

TEST(RowExtractor, LaterDuplicateWins) {
    EXPECT_EQ(extract({{"a"}}, R"({"a": 1, "a": 2})"), "n:2");
    // The later member replaces the earlier one's whole subtree.
    EXPECT_EQ(extract({{"a", "b"}, {"a", "c"}}, R"({"a": {"b": 1, "c": 2}, "a": {"c": 3}})"),
              "- n:3");
    EXPECT_EQ(extract({{"a", "b"}}, R"({"a": {"b": 1}, "a": 7})"), "-");
    EXPECT_EQ(extract({{"a"}}, R"({"a": {"b": 1}, "a": null})"), "null");
}

TEST(RowExtractor, InvalidDocuments) {
    const Paths p = {{"a"}};
    for (const char* bad :
         {"", "{", "{\"a\": }", "{\"a\": 01}", "{\"a\": 1} x", "{\"a\": tru}", "{\"a\": \"\\x\"}",
          "{\"a\": [1,]}", "{\"a\": 1,}", "[1,", "\"x", "{\"a\": \"\xff\"}", "nul"})
        EXPECT_EQ(extract(p, bad), "invalid_json") << bad;
    for (const char* other : {"[1, 2]", "\"x\"", "12", "null", "true"})
        EXPECT_EQ(extract(p, other), "not_an_object") << other;
}

TEST(RowExtractor, DeepAndLargeDocuments) {
    // Nesting at the limit is refused as invalid JSON, never a crash.
    std::string deep(5000, '[');
    deep += std::string(5000, ']');
    EXPECT_EQ(extract({{"a"}}, "{\"a\": " + deep + "}"), "invalid_json");
    std::string nested = "{\"a\": ";
    for (int i = 0; i < 500; ++i) nested += "{\"a\": ";
    nested += "1" + std::string(501, '}');
    EXPECT_EQ(extract({{"a", "a", "a"}}, nested).substr(0, 8), "o:{\"a\": ");
    std::string big = "{\"pad\": \"" + std::string(1 << 20, 'x') + "\", \"v\": 42}";
    EXPECT_EQ(extract({{"v"}}, big), "n:42");
}

TEST(RowExtractor, RowsShareOneArena) {
    JsonRowExtractor ex({{"k"}});
    RawRows rows(1);
    for (int i = 0; i < 100; ++i) {
        const std::string doc = "{\"k\": \"v" + std::to_string(i) + "\"}";
        ex.extract(doc.data(), doc.size(), rows, rows.add_row());
    }
    EXPECT_EQ(rows.size(), 100u);
    EXPECT_EQ(show(rows.get(0, 0)), "s:v0");
    EXPECT_EQ(show(rows.get(99, 0)), "s:v99");
    rows.drop_last();
    EXPECT_EQ(rows.size(), 99u);
}

TEST(RowExtractor, Metadata) {
    RawRows rows(6);
    const std::size_t r = rows.add_row();
    const KafkaHeader headers[] = {{"b", "1", 1},
                                   {"a", "x\"y", 3},
                                   {"b", "2", 1},
                                   {"bin", "\xff\x01", 2},
                                   {"none", nullptr, 0}};
    RecordMeta m;
    m.topic = "web";
    m.partition = 3;
    m.offset = 42;
    m.key = "k1";
    m.key_len = 2;
    m.timestamp_ms = 1700000000000;
    m.headers = headers;
    m.header_count = 5;
    std::string detail;
    ASSERT_TRUE(fill_metadata(rows, r, 0, m, detail));
    std::string s;
    for (std::size_t c = 0; c < 6; ++c) s += (c ? " " : "") + show(rows.get(r, c));
    EXPECT_EQ(
        s,
        R"(s:k1 s:web n:3 n:42 n:1700000000000 o:{"a": "x\"y", "b": "2", "bin": "\\xff01", "none": null})");

    m.key = nullptr;
    m.timestamp_ms = stoatflow::core::kNoTime;
    m.header_count = 0;
    const std::size_t r2 = rows.add_row();
    ASSERT_TRUE(fill_metadata(rows, r2, 0, m, detail));
    EXPECT_EQ(show(rows.get(r2, 0)), "null");
    EXPECT_EQ(show(rows.get(r2, 4)), "null");
    EXPECT_EQ(show(rows.get(r2, 5)), "o:{}");

    m.key = "a\xc3";
    m.key_len = 2;
    EXPECT_FALSE(fill_metadata(rows, rows.add_row(), 0, m, detail));
    EXPECT_EQ(detail, "the Kafka message key is not valid UTF-8 text: a\\xc3");
}
