// WindowedAggregation::memory_bytes(): the engine's own estimate of the heap it holds, which
// worker_memory_limit (README "Security") checks. It must follow keys and windows up and down, and
// stay within a factor of two of what the allocator actually handed out.
#include "engine_harness.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STOATFLOW_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STOATFLOW_SANITIZED 1
#endif
#endif

using namespace stoatflow::test;

namespace {
std::string key_of(int i, std::size_t len) {
    std::string k = "key-" + std::to_string(i);
    if (k.size() < len) k.append(len - k.size(), 'x');
    return k;
}
}  // namespace

TEST(Memory, GrowsWithKeysAndWindowsAndShrinksWhenTheyAreEvicted) {
    WindowedAggregation agg(WindowSpec::tumbling(10), count_sum(), EmitStrategy::OnWindowUpdate,
                            kNoTime);
    const Value vals[2] = {Value::of_int(1), Value::of_int(1)};
    const std::size_t empty = agg.memory_bytes();
    EXPECT_GT(empty, sizeof(WindowedAggregation) - 1);
    for (int i = 0; i < 1000; ++i) agg.process(key_of(i, 8), 1, vals, 0);
    const std::size_t one_window = agg.memory_bytes();
    EXPECT_GT(one_window, empty + 1000 * sizeof(WindowedAggregation::WindowState));
    for (int i = 0; i < 1000; ++i) agg.process(key_of(i, 8), 15, vals, 0);  // a second window each
    const std::size_t two_windows = agg.memory_bytes();
    EXPECT_GT(two_windows, one_window + 500 * sizeof(WindowedAggregation::WindowState));
    // Long keys cost their bytes too.
    WindowedAggregation long_keys(WindowSpec::tumbling(10), count_sum(),
                                  EmitStrategy::OnWindowUpdate, kNoTime);
    for (int i = 0; i < 1000; ++i) long_keys.process(key_of(i, 200), 1, vals, 0);
    EXPECT_GT(long_keys.memory_bytes(), one_window + 1000 * 200);

    // The first windows close and leave; then the rest.
    CommitOutput out;
    agg.flush(10, out);
    const std::size_t after_first_close = agg.memory_bytes();
    EXPECT_LE(after_first_close, two_windows);  // a key's block keeps its capacity
    EXPECT_EQ(agg.resident_windows(), 1000u);
    out.clear();
    agg.flush(1000, out);
    EXPECT_EQ(agg.resident_windows(), 0u);
    const std::size_t all_gone = agg.memory_bytes();
    EXPECT_LT(all_gone, after_first_close);
    // What stays: the engine, the key table's slot array and the dirty list's capacity.
    EXPECT_LT(all_gone, empty + 64 * 1024);

    // Sliding windows stay until they leave retention, then go too.
    WindowedAggregation sliding(WindowSpec::sliding(10), count_sum(), EmitStrategy::OnWindowUpdate,
                                kNoTime);
    for (int t = 0; t < 200; t += 3) sliding.process("k", t, vals, t);
    const std::size_t held = sliding.memory_bytes();
    out.clear();
    sliding.flush(199, out);
    EXPECT_GT(sliding.memory_bytes(), sliding.memory_bytes() - 1);  // O(1), callable any time
    out.clear();
    sliding.flush(100000, out);
    EXPECT_LT(sliding.memory_bytes(), held);
    EXPECT_EQ(sliding.resident_windows(), 0u);
}

// The estimate against the allocator's own count (glibc's mallinfo2), for every kind, with
// short and long keys and more aggregates than fit inline.
TEST(Memory, EstimateIsWithinAFactorOfTwoOfTheHeapUsed) {
#if !defined(__GLIBC__) || !defined(__GLIBC_MINOR__) || __GLIBC__ < 2 ||                           \
    (__GLIBC__ == 2 && __GLIBC_MINOR__ < 33)
    GTEST_SKIP() << "needs glibc's mallinfo2";
#elif defined(STOATFLOW_SANITIZED)
    GTEST_SKIP() << "the sanitizer's allocator does not report through mallinfo2";
#else
    std::vector<AggSpec> many = {{AggFn::CountStar, "", "n"}, {AggFn::Sum, "v", "s"},
                                 {AggFn::Min, "v", "mn"},     {AggFn::Max, "v", "mx"},
                                 {AggFn::Avg, "v", "av"},     {AggFn::Count, "v", "c"}};
    struct Variant {
        WindowSpec spec;
        std::vector<AggSpec> aggs;
        std::size_t key_len;
    };
    const std::vector<Variant> variants = {
        {WindowSpec::tumbling(1000), count_sum(), 8},
        {WindowSpec::tumbling(1000), count_sum(), 100},
        {WindowSpec::hopping(1000, 100), count_sum(), 8},
        {WindowSpec::sliding(100), count_sum(), 8},
        {WindowSpec::session(50), many, 30},
    };
    const std::vector<Value> vals(many.size(), Value::of_int(3));
    for (const Variant& v : variants) {
        WindowedAggregation agg(v.spec, v.aggs, EmitStrategy::OnWindowUpdate, kNoTime);
        const std::size_t est0 = agg.memory_bytes();
        const std::size_t heap0 = mallinfo2().uordblks;
        for (int i = 0; i < 20000; ++i)
            agg.process(key_of(i % 5000, v.key_len), (i * 37) % 3000, vals.data(), 0);
        const std::size_t heap = mallinfo2().uordblks - heap0;
        const std::size_t est = agg.memory_bytes() - est0;
        std::cout << "  " << v.spec.describe() << ": estimate " << est << " B, heap " << heap
                  << " B\n";
        EXPECT_GT(est * 2, heap) << v.spec.describe() << " estimate " << est << " heap " << heap;
        EXPECT_LT(est, heap * 2) << v.spec.describe() << " estimate " << est << " heap " << heap;
    }
#endif
}
