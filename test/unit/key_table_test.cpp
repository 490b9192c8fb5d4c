// The key table against std::unordered_map under random inserts, lookups and erases:
// backward-shift deletion must keep every remaining key findable.
#include "stoatflow/core/key_table.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <unordered_map>

using stoatflow::core::KeyTable;

TEST(KeyTable, BehavesLikeAMapUnderChurn) {
    KeyTable<int> table;
    std::unordered_map<std::string, int> model;
    std::mt19937 rng(7);
    for (int step = 0; step < 200000; ++step) {
        const std::string key = "k" + std::to_string(rng() % 5000);
        switch (rng() % 3) {
        case 0: {
            auto* e = table.find_or_insert(key);
            e->second += 1;
            model[key] += 1;
            break;
        }
        case 1: {
            auto* e = table.find(key);
            auto it = model.find(key);
            ASSERT_EQ(e != nullptr, it != model.end()) << key;
            if (e) {
                ASSERT_EQ(e->second, it->second);
            }
            break;
        }
        default:
            if (auto* e = table.find(key)) {
                table.erase(e);
                model.erase(key);
            }
        }
        ASSERT_EQ(table.size(), model.size());
    }
    std::size_t seen = 0;
    table.for_each([&](const auto& e) {
        ++seen;
        EXPECT_EQ(model.at(e.first), e.second);
    });
    EXPECT_EQ(seen, model.size());
}

TEST(KeyTable, EntriesDoNotMoveWhenTheTableGrows) {
    KeyTable<int> table;
    auto* first = table.find_or_insert("first");
    first->second = 42;
    for (int i = 0; i < 10000; ++i) table.find_or_insert("key" + std::to_string(i));
    EXPECT_EQ(table.find("first"), first);
    EXPECT_EQ(first->second, 42);
    EXPECT_EQ(table.find_or_insert(std::string_view("first")), first);
}
