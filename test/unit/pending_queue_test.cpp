// PendingQueue (the closes and evictions of sliding windows and sessions): every due entry
// drained once, nothing early, each key's entries in order, whether a drain pops them one at a
// time or takes many in one pass; and the engine ends with the same sink whether its commits
// close a few windows each or tens of thousands at once.
#include "engine_harness.hpp"

#include "stoatflow/core/window/pending_queue.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

using namespace stoatflow::test;

namespace {

struct Entry {
    Millis at;
    const int* key;
    Millis start;
    int id;  // unique, to tell entries apart
};

// The queue against a plain list: random pushes (some from inside a drain) and drains at rising
// and repeated watermarks, small and large, so that both ways of draining run.
TEST(PendingQueue, DrainsEveryDueEntryOnceAndInOrderPerKey) {
    std::mt19937_64 rng(7);
    int keys[50];
    for (int round = 0; round < 40; ++round) {
        PendingQueue<Entry> q;
        std::map<int, Entry> model;  // id → entry, not drained yet
        int next_id = 0;
        auto push = [&](Millis at) {
            const Entry e{at, &keys[rng() % 50], static_cast<Millis>(rng() % 1000), next_id++};
            q.push(e);
            model[e.id] = e;
        };
        // round 0..19: a few hundred entries (one at a time); 20..39: tens of thousands.
        const int n = round < 20 ? 300 : 20000 + static_cast<int>(rng() % 20000);
        for (int i = 0; i < n; ++i) push(static_cast<Millis>(rng() % 10000));
        Millis w = -1;
        while (!model.empty()) {
            w += static_cast<Millis>(rng() % (round < 20 ? 500 : 4000));
            std::map<const int*, std::pair<Millis, Millis>> last;  // key → (at, start) drained last
            std::set<int> seen;
            std::set<int> inside;  // ids pushed from inside this drain
            q.drain(w, [&](const Entry& e) {
                ASSERT_LE(e.at, w) << "drained before it was due";
                ASSERT_TRUE(model.count(e.id)) << "drained twice, or never pushed";
                ASSERT_TRUE(seen.insert(e.id).second);
                // The order holds among the entries queued before the drain (one pushed from
                // inside it may be due earlier than what was drained already).
                if (!inside.count(e.id)) {
                    auto it = last.find(e.key);
                    if (it != last.end()) {
                        ASSERT_GE(e.at, it->second.first) << "out of order";
                    }
                    last[e.key] = {e.at, e.start};
                }
                model.erase(e.id);
                // As a close schedules an eviction: some due at once, some later.
                if (inside.size() < 50 && rng() % 8 == 0) {
                    inside.insert(next_id);
                    push(rng() % 2 ? w - static_cast<Millis>(rng() % 10) : w + 1 + rng() % 3000);
                }
            });
            for (const auto& [id, e] : model) ASSERT_GT(e.at, w) << "due and left in the queue";
            ASSERT_EQ(q.size(), model.size());
        }
        EXPECT_TRUE(q.empty());
    }
}

// Records of many keys, in time order give or take a few seconds; values and keys from a seed.
std::vector<In> stream(std::uint64_t seed, int keys, int n) {
    std::mt19937_64 rng(seed);
    std::vector<In> v;
    for (int i = 0; i < n; ++i) {
        const Millis t = static_cast<Millis>(i) * 30 + static_cast<Millis>(rng() % 5000);
        v.push_back(
            {"k" + std::to_string(rng() % keys), t, static_cast<std::int64_t>(rng() % 100)});
    }
    return v;
}

void expect_same_sink_whatever_the_commits(WindowSpec spec, EmitStrategy emit) {
    const auto recs = stream(11, 4000, 40000);
    Harness often(spec, emit, 3000);
    Harness rarely(spec, emit, 3000);
    std::size_t big_commit_rows = 0;
    for (std::size_t i = 0; i < recs.size(); ++i) {
        often.push(recs[i]);
        rarely.push(recs[i]);
        if (i % 50 == 49) often.commit();
        if (i == recs.size() / 2) {
            const CommitOutput out = rarely.commit();
            for (const SinkRow& u : out.upserts) big_commit_rows += u.final;
        }
    }
    often.commit(kMaxEventTime);
    // The rare side crashes after its large commit's records were all processed, and a restored
    // engine finishes: restore and the drains after it go through the large path too.
    rarely.commit();
    std::unique_ptr<Harness> restored = rarely.restarted();
    restored->commit(kMaxEventTime);
    EXPECT_GT(big_commit_rows, 4 * PendingQueue<Entry>::kOneByOne)
        << "the large commit must close enough windows at once to take them in one pass";
    EXPECT_EQ(often.rows(), restored->rows());
    const AggregationStats& a = often.agg.stats();
    const AggregationStats& b = rarely.agg.stats();
    EXPECT_EQ(a.records_in, b.records_in);
    EXPECT_EQ(a.dropped_late_window, b.dropped_late_window);
    EXPECT_EQ(a.dropped_late_session, b.dropped_late_session);
    EXPECT_EQ(a.sessions_merged, b.sessions_merged);
}

TEST(PendingQueue, SlidingSinkIsTheSameWithLargeCommits) {
    expect_same_sink_whatever_the_commits(WindowSpec::sliding(2000), EmitStrategy::OnWindowUpdate);
    expect_same_sink_whatever_the_commits(WindowSpec::sliding(2000), EmitStrategy::OnWindowClose);
}

TEST(PendingQueue, SessionSinkIsTheSameWithLargeCommits) {
    expect_same_sink_whatever_the_commits(WindowSpec::session(1500), EmitStrategy::OnWindowUpdate);
    expect_same_sink_whatever_the_commits(WindowSpec::session(1500), EmitStrategy::OnWindowClose);
}

}  // namespace
