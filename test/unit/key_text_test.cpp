// A window's key as text (pg/key_text.hpp): several columns' texts survive the JSON array
// round trip whatever they hold, and anything encode_key does not write is refused.
#include "stoatflow/flow/key_text.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using namespace stoatflow::flow;

namespace {
std::string encode(const std::vector<std::string>& parts) {
    std::vector<const char*> c;
    for (const auto& p : parts) c.push_back(p.c_str());
    std::string key = "stale";
    encode_key(c.data(), c.size(), key);
    return key;
}
}  // namespace

TEST(KeyText, OneColumnIsItsText) {
    EXPECT_EQ(encode({"us"}), "us");
    EXPECT_EQ(encode({"[\"a\"]"}), "[\"a\"]");
    EXPECT_EQ(encode({""}), "");
}

TEST(KeyText, SeveralColumnsAreAJsonArray) {
    EXPECT_EQ(encode({"us", "mobile"}), "[\"us\",\"mobile\"]");
    EXPECT_EQ(encode({"a\"b", "c\\d", std::string("\x01")}), "[\"a\\\"b\",\"c\\\\d\",\"\\u0001\"]");
    std::vector<std::string> out;
    ASSERT_TRUE(decode_key("[\"a\\\"b\",\"c\\\\d\",\"\\u0001\"]", out));
    EXPECT_EQ(out, (std::vector<std::string>{"a\"b", "c\\d", std::string("\x01")}));
}

TEST(KeyText, RandomRoundTrips) {
    std::mt19937 rng(12);
    // What output functions write: any character but NUL.
    const std::string alphabet = std::string("ab\"\\[],:\x01\x1f\x7f ") + "\xc3\xa9";
    for (int round = 0; round < 20000; ++round) {
        std::vector<std::string> parts(2 + rng() % 3);
        for (auto& p : parts) {
            const std::size_t len = rng() % 6;
            for (std::size_t i = 0; i < len; ++i) p += alphabet[rng() % alphabet.size()];
        }
        std::vector<std::string> out;
        ASSERT_TRUE(decode_key(encode(parts), out)) << encode(parts);
        ASSERT_EQ(out, parts);
    }
}

TEST(KeyText, RefusesWhatItDoesNotWrite) {
    for (const char* bad :
         {"", "[", "]", "[\"a\"", "[\"a\",]", "[,\"a\"]", "[\"a\"]x", "[\"\\x\"]", "[\"\\u12\"]",
          "[\"\\u1234\"]", "[\"a\" ,\"b\"]", "[a]", "[\"a\"\"b\"]", "[\"\\", "[\"a\\\"]"}) {
        std::vector<std::string> out;
        EXPECT_FALSE(decode_key(bad, out)) << bad;
    }
}
