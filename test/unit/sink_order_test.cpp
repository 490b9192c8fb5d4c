// sort_by_primary_key against the plain comparison of (key, start): keys sharing 8 and 16 bytes,
// shorter and longer than 16, bytes above 0x7f, equal keys with different starts.
#include "stoatflow/core/emit/sink_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

using stoatflow::core::SinkRow;

TEST(SinkOrder, SortsAsKeyThenStartCompare) {
    std::mt19937_64 rng(3);
    const std::string stems[] = {"",
                                 "user",
                                 "user0001",
                                 "user00012345678",
                                 "user000123456789",
                                 "user0001234567890",
                                 "\xc3\xa9t\xc3\xa9",
                                 "\xff\xfe"};
    for (int round = 0; round < 50; ++round) {
        std::vector<SinkRow> rows(1 + rng() % 3000);
        for (SinkRow& r : rows) {
            r.key = stems[rng() % 8];
            const int tail = static_cast<int>(rng() % 4);
            for (int i = 0; i < tail; ++i)
                r.key += static_cast<char>(rng() % 2 ? '0' + rng() % 3 : rng() % 256);
            r.start = static_cast<std::int64_t>(rng() % 5) - 2;
        }
        std::vector<const SinkRow*> got, want;
        for (const SinkRow& r : rows) got.push_back(&r);
        want = got;
        stoatflow::core::sort_by_primary_key(got);
        std::sort(want.begin(), want.end(), [](const SinkRow* a, const SinkRow* b) {
            return a->key != b->key ? a->key < b->key : a->start < b->start;
        });
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i]->key, want[i]->key) << "at " << i;
            ASSERT_EQ(got[i]->start, want[i]->start) << "at " << i;
        }
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        ASSERT_EQ(got, want);  // the same rows, each once
    }
}
