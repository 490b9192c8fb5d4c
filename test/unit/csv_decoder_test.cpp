// The CSV decoder, table style: a message in, each column's raw field out (kind and text), or
// the dead-letter reason; then the header rule per partition and the options.
#include "stoatflow/format/csv_decoder.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#ifndef STOATFLOW_FUZZ_CORPUS
#error "STOATFLOW_FUZZ_CORPUS must name test/fuzz/corpus (set by CMakeLists.txt)"
#endif

using namespace stoatflow::format;

namespace {

std::string show(const RawValue& v) {
    switch (v.kind) {
    case RawKind::Absent: return "-";
    case RawKind::Null: return "null";
    case RawKind::String: return "s:" + std::string(v.text);
    default: return "?";
    }
}

// Every column of the row, space separated, "skip" for a header, or the dead-letter reason.
// first: the message is its partition's first (offset 0).
std::string decode(CsvRowDecoder& dec, const std::string& msg, bool first = false) {
    RawRows rows(dec.columns() + 2);  // (the metadata columns follow, untouched)
    const std::size_t r = rows.add_row();
    bool skip = false;
    const DeadReason e = dec.decode(msg.data(), msg.size(), first, rows, r, skip);
    if (e != DeadReason::None) {
        EXPECT_FALSE(dec.detail().empty());
        return to_string(e);
    }
    EXPECT_TRUE(dec.detail().empty());
    if (skip) return "skip";
    std::string s;
    for (std::size_t c = 0; c < dec.columns(); ++c) s += (c ? " " : "") + show(rows.get(r, c));
    return s;
}

std::string decode3(const std::string& msg, CsvOptions o = {}) {
    CsvRowDecoder dec(o, {"a", "b", "c"});
    return decode(dec, msg);
}

TEST(CsvDecoder, PlainFields) {
    EXPECT_EQ(decode3("1,two,3.5"), "s:1 s:two s:3.5");
    EXPECT_EQ(decode3(" x , y ,z"), "s: x  s: y  s:z");  // spaces are data
}

TEST(CsvDecoder, Quoting) {
    EXPECT_EQ(decode3("\"a,b\",\"say \"\"hi\"\"\",\"\"\"\""), "s:a,b s:say \"hi\" s:\"");
    EXPECT_EQ(decode3("\"line\nbreak\",\"cr\r\nlf\",x"), "s:line\nbreak s:cr\r\nlf s:x");
    EXPECT_EQ(decode3("\"\",,\"\""), "s: null s:");  // "" is the empty string, empty is NULL
    EXPECT_EQ(decode3(",,"), "null null null");
}

TEST(CsvDecoder, TrailingLineBreak) {
    EXPECT_EQ(decode3("1,2,3\n"), "s:1 s:2 s:3");
    EXPECT_EQ(decode3("1,2,3\r\n"), "s:1 s:2 s:3");
    EXPECT_EQ(decode3("1,2,3\r"), "s:1 s:2 s:3");
    EXPECT_EQ(decode3("1,2,\n"), "s:1 s:2 null");
    EXPECT_EQ(decode3("1,2,\"x\n\"\r\n"), "s:1 s:2 s:x\n");
    // Only one: a second one is a line break outside quotes.
    EXPECT_EQ(decode3("1,2,3\n\n"), "bad_csv");
    EXPECT_EQ(decode3("1,2,3\n4,5,6"), "bad_csv");
}

TEST(CsvDecoder, BadRecords) {
    EXPECT_EQ(decode3("1,2"), "bad_csv");
    EXPECT_EQ(decode3("1,2,3,4"), "bad_csv");
    EXPECT_EQ(decode3("1,2,\"3"), "bad_csv");      // unterminated
    EXPECT_EQ(decode3("1,2,\"3\"\""), "bad_csv");  // still unterminated
    EXPECT_EQ(decode3("1,\"2\"x,3"), "bad_csv");   // text after the closing quote
    EXPECT_EQ(decode3("1,2\"2,3"), "bad_csv");     // a quote inside an unquoted field
    EXPECT_EQ(decode3(""), "bad_csv");             // empty
    EXPECT_EQ(decode3("\r\n"), "bad_csv");
    EXPECT_EQ(decode3("\"\"\"\"\"\"\"\"\"\"\""), "bad_csv");  // only quotes
    CsvRowDecoder dec({}, {"a", "b", "c"});
    RawRows rows(3);
    bool skip = true;
    EXPECT_EQ(dec.decode(nullptr, 0, 0, rows, rows.add_row(), skip), DeadReason::BadCsv);
    EXPECT_FALSE(skip);
    EXPECT_EQ(decode(dec, "1,2"), "bad_csv");
    EXPECT_EQ(dec.detail(), "the record has 2 fields, the source 3 columns");
    EXPECT_EQ(decode(dec, "1,2,\"3"), "bad_csv");
    EXPECT_EQ(dec.detail(), "field 3: the quote is not closed");
}

TEST(CsvDecoder, InvalidUtf8AndNul) {
    // Bytes that are not UTF-8 anywhere: invalid_text, as a key that is not text (JSON refuses
    // the whole document for them too).
    EXPECT_EQ(decode3("1,\xff\xfe,3"), "invalid_text");
    EXPECT_EQ(decode3("1,\"\xc3\",3"), "invalid_text");
    // A NUL byte is UTF-8: it reaches the column conversion, which refuses it for text.
    EXPECT_EQ(decode3(std::string("1,a\0b,3", 7)), std::string("s:1 s:a\0b s:3", 13));
}

TEST(CsvDecoder, DelimiterQuoteAndNullMarker) {
    CsvOptions o;
    o.delimiter = ';';
    o.quote = '\'';
    EXPECT_EQ(decode3("1;'a;''b''';c,d", o), "s:1 s:a;'b' s:c,d");
    EXPECT_EQ(decode3("1,2,3", o), "bad_csv");
    o.delimiter = '\t';
    EXPECT_EQ(decode3("1\t\t3", o), "s:1 null s:3");
    CsvOptions n;
    n.null_marker = "\\N";
    // With a marker, only the unquoted marker is NULL; an empty field is the empty string.
    EXPECT_EQ(decode3("\\N,,\"\\N\"", n), "null s: s:\\N");
    n.null_marker = "";
    EXPECT_EQ(decode3(",\"\",x", n), "null s: s:x");
}

TEST(CsvDecoder, HeaderAtAPartitionsStart) {
    CsvOptions o;
    o.header = true;
    CsvRowDecoder dec(o, {"a", "b", "c"});
    EXPECT_EQ(decode(dec, "a,b,c\r\n", true), "skip");
    EXPECT_EQ(decode(dec, "a,b,c", false), "s:a s:b s:c");  // later in the stream: a record
    EXPECT_EQ(decode(dec, "\"a\",b,c", true), "skip");      // quoting does not matter
    EXPECT_EQ(decode(dec, "1,2,3", true), "s:1 s:2 s:3");   // a first record that is data
    EXPECT_EQ(decode(dec, "a,b", true), "bad_csv");         // one that is no record
    EXPECT_EQ(decode(dec, "A,b,c", true), "s:A s:b s:c");   // exact names only
    EXPECT_EQ(decode(dec, "a,b,c,d", true), "bad_csv");
    EXPECT_EQ(decode(dec, "a,b,", true), "s:a s:b null");
    CsvRowDecoder off({}, {"a", "b", "c"});
    EXPECT_EQ(decode(off, "a,b,c", true), "s:a s:b s:c");  // without header: a record
}

TEST(CsvDecoder, Hostile) {
    CsvRowDecoder one({}, {"a"});
    const std::string huge(4 << 20, 'x');
    EXPECT_EQ(decode(one, huge), "s:" + huge);
    EXPECT_EQ(decode(one, "\"" + huge + "\""), "s:" + huge);
    std::string many;
    for (int i = 0; i < 10000; ++i) many += i ? ",x" : "x";
    EXPECT_EQ(decode(one, many), "bad_csv");
    EXPECT_EQ(decode3(many), "bad_csv");
    EXPECT_EQ(decode(one, std::string(10001, '"')), "bad_csv");
    EXPECT_EQ(decode(one, std::string(10000, '"')), "s:" + std::string(4999, '"'));
    EXPECT_EQ(decode(one, std::string(1000, ',')), "bad_csv");
    EXPECT_EQ(decode(one, std::string(3, '\0')), "s:" + std::string(3, '\0'));
}

// The CSV fuzzer's seeds (test/fuzz/csv_corpus), decoded as the fuzzer reads them (the first
// three bytes choose delimiter, quote, columns, null marker and header), each with its verdict.
TEST(CsvDecoder, FuzzSeeds) {
    const std::map<std::string, std::string> want = {
        {"quoted.csv", "s:a s:b,c s:say \"hi\""},
        {"null_marker.csv", "null s: s:\\N"},
        {"unterminated.csv", "bad_csv"},
        {"empty.csv", "bad_csv"},
        {"embedded_newline.csv", "s:a s:line\nbreak"},
        {"header.csv", "skip"},
        {"invalid_utf8.csv", "invalid_text"},
        {"only_quotes.csv", "bad_csv"},
        {"tab.csv", "s:a s:b null s:c"},
    };
    static constexpr char kDelims[] = {',', ';', '\t', '|'};
    static constexpr char kQuotes[] = {'"', '\''};
    std::size_t seen = 0;
    for (const auto& entry : std::filesystem::directory_iterator(
             std::string(STOATFLOW_FUZZ_CORPUS) + "/../csv_corpus")) {
        std::ifstream in(entry.path(), std::ios::binary);
        const std::string data{std::istreambuf_iterator<char>(in),
                               std::istreambuf_iterator<char>()};
        const std::string name = entry.path().filename().string();
        ASSERT_GE(data.size(), 3u) << name;
        CsvOptions o;
        o.delimiter = kDelims[static_cast<unsigned char>(data[0]) % 4];
        o.quote = kQuotes[static_cast<unsigned char>(data[1]) % 2];
        const auto flags = static_cast<unsigned char>(data[2]);
        if (flags & 0x10) o.null_marker = "\\N";
        o.header = (flags & 0x20) != 0;
        std::vector<std::string> names;
        for (std::size_t c = 0; c < 1 + (flags & 7u); ++c) names.push_back("c" + std::to_string(c));
        CsvRowDecoder dec(o, names);
        const auto it = want.find(name);
        ASSERT_NE(it, want.end()) << "a seed without a verdict here: " << name;
        EXPECT_EQ(decode(dec, data.substr(3), true), it->second) << name;
        ++seen;
    }
    EXPECT_EQ(seen, want.size());
}

}  // namespace
