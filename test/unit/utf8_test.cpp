// The one UTF-8 rule (core/utf8.hpp) and storable text: what dead letters keep and show.
#include "stoatflow/core/utf8.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace stoatflow::core;

namespace {
std::size_t seq(const std::string& s) {
    return utf8_sequence_length(reinterpret_cast<const unsigned char*>(s.data()), s.size());
}
std::string storable(const std::string& s, std::size_t max = 1024) {
    return storable_text(s.data(), s.size(), max);
}
}  // namespace

TEST(Utf8, SequencesRfc3629) {
    EXPECT_EQ(seq("a"), 1u);
    EXPECT_EQ(seq("\xc3\xa9"), 2u);          // é
    EXPECT_EQ(seq("\xe2\x82\xac"), 3u);      // €
    EXPECT_EQ(seq("\xf0\x9f\x98\x80"), 4u);  // U+1F600
    EXPECT_EQ(seq("\xc0\xaf"), 0u);          // overlong '/'
    EXPECT_EQ(seq("\xe0\x80\xaf"), 0u);      // overlong
    EXPECT_EQ(seq("\xed\xa0\x80"), 0u);      // surrogate U+D800
    EXPECT_EQ(seq("\xf4\x90\x80\x80"), 0u);  // beyond U+10FFFF
    EXPECT_EQ(seq("\xe2\x82"), 0u);          // cut short
    EXPECT_EQ(seq("\x80"), 0u);              // a continuation byte alone
    EXPECT_EQ(seq("\xff"), 0u);
}

TEST(Utf8, WholeStrings) {
    const std::string ok = "caf\xc3\xa9 \xe2\x82\xac";
    EXPECT_TRUE(is_valid_utf8(ok.data(), ok.size()));
    const std::string bad = "caf\xc3";
    EXPECT_FALSE(is_valid_utf8(bad.data(), bad.size()));
    EXPECT_TRUE(is_valid_utf8("", 0));
}

TEST(Utf8, StorableTextEscapesOnlyWhatPostgresCannotStore) {
    EXPECT_EQ(storable("tab\there\xc3\xa9"), "tab\there\xc3\xa9");  // valid text kept as is
    EXPECT_EQ(storable(std::string("a\0b", 3)), "a\\x00b");         // NUL
    EXPECT_EQ(storable("a\xff\xc3"), "a\\xff\\xc3");                // invalid, and cut short
    EXPECT_EQ(storable("\xed\xa0\x80"), "\\xed\\xa0\\x80");         // a surrogate, byte by byte
    EXPECT_EQ(storable("abcdef", 3), "abc");                        // bounded
}
