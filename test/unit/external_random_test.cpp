// Random streams through the engine with external aggregates (every window kind, both emit
// strategies, out-of-order and late records, restarts from the state bytes): every sink row's
// external state holds exactly what its built-in count(*) and sum saw, a run with restarts ends
// with exactly the sink of the run without, states alive always equal windows held, and every
// state made is destroyed exactly once, also when the implementation throws mid-way.
//   STOATFLOW_EXT_STREAMS  streams per window kind and emit strategy (default 300)
//   STOATFLOW_EXT_SEED     run only this seed
#include "external_test_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

using namespace stoatflow::test;

namespace {

struct Rng {  // splitmix64: the same streams on every standard library
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    std::int64_t range(std::int64_t lo, std::int64_t hi) {
        return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
    }
    bool chance(int percent) { return range(0, 99) < percent; }
};

struct Step {
    In rec;
    bool commit = false;
    bool restart = false;  // after the commit
};

struct Stream {
    WindowSpec spec;
    EmitStrategy emit = EmitStrategy::OnWindowUpdate;
    Millis max_ooo = 0;
    std::vector<Step> steps;
};

// seed % 4: the kind; (seed / 4) % 2: the emit strategy.
Stream generate(std::uint64_t seed) {
    Rng r{seed * 7919 + 1};
    Stream s;
    const Millis grace = r.range(0, 4);
    switch (seed % 4) {
    case 0: s.spec = WindowSpec::tumbling(r.range(3, 12), grace); break;
    case 1: {
        const Millis size = r.range(4, 12);
        s.spec = WindowSpec::hopping(size, r.range(1, size), grace);
        break;
    }
    case 2: s.spec = WindowSpec::sliding(r.range(2, 10), grace); break;
    default: s.spec = WindowSpec::session(r.range(1, 8), grace); break;
    }
    s.emit = (seed / 4) % 2 == 0 ? EmitStrategy::OnWindowUpdate : EmitStrategy::OnWindowClose;
    s.max_ooo = r.range(0, 6);
    Millis t = 0;
    const int n = static_cast<int>(r.range(20, 120));
    for (int i = 0; i < n; ++i) {
        Step st;
        t += r.range(0, 4);
        const Millis at = r.chance(20) ? t - r.range(0, 20) : t;  // out of order, some late
        static const char* const keys[] = {"a", "b", "c"};
        st.rec = In{keys[r.range(0, 2)], at,
                    r.chance(20) ? std::nullopt : std::optional<std::int64_t>(r.range(-5, 30))};
        st.commit = r.chance(30);
        st.restart = st.commit && r.chance(30);
        s.steps.push_back(st);
    }
    return s;
}

// Runs the stream with or without its restarts; returns the final sink. Checks the
// invariants along the way.
std::map<std::pair<std::string, Millis>, Row> run(const Stream& s, bool restarts,
                                                  const std::shared_ptr<SeqAggregates>& ext) {
    auto h = std::make_unique<Harness>(s.spec, s.emit, s.max_ooo, count_sum(), kNoTime, ext);
    for (const Step& st : s.steps) {
        h->push(st.rec);
        if (!st.commit) continue;
        h->commit();
        for (const auto& [id, row] : h->sink) expect_consistent(row);
        EXPECT_EQ(ext->live(), h->agg.resident_windows());
        if (restarts && st.restart) {
            through_bytes(*h);
            auto next = h->restarted();
            h = std::move(next);  // the crashed engine and its states go
            EXPECT_EQ(ext->live(), h->agg.resident_windows());
        }
    }
    h->commit(1'000'000);
    for (const auto& [id, row] : h->sink) {
        expect_consistent(row);
        EXPECT_TRUE(row.final) << row;
    }
    auto sink = h->sink;
    h.reset();
    EXPECT_EQ(ext->live(), 0u);
    EXPECT_EQ(ext->created(), ext->destroyed());
    EXPECT_EQ(ext->bad(), 0u);
    return sink;
}

long streams_per_class() {
    const char* v = std::getenv("STOATFLOW_EXT_STREAMS");
    return v ? std::atol(v) : 300;
}

void run_class(int cls) {
    const char* only = std::getenv("STOATFLOW_EXT_SEED");
    for (long i = 0; i < streams_per_class(); ++i) {
        const std::uint64_t seed =
            static_cast<std::uint64_t>(i) * 8 + static_cast<std::uint64_t>(cls);
        if (only && std::strtoull(only, nullptr, 10) != seed) continue;
        SCOPED_TRACE("STOATFLOW_EXT_SEED=" + std::to_string(seed));
        const Stream s = generate(seed);
        const auto plain = run(s, false, std::make_shared<SeqAggregates>());
        const auto restarted = run(s, true, std::make_shared<SeqAggregates>());
        EXPECT_EQ(plain, restarted);
        if (::testing::Test::HasFailure()) return;  // one seed's report is enough
    }
}

// Throws from the implementation at every point a stream reaches: whatever was made is
// destroyed exactly once when the engine goes.
void run_failures(int cls) {
    for (long i = 0; i < 40; ++i) {
        const std::uint64_t seed =
            static_cast<std::uint64_t>(i) * 8 + static_cast<std::uint64_t>(cls);
        const Stream s = generate(seed);
        for (long fail = 1;; fail += 1 + fail / 8) {
            SCOPED_TRACE("seed " + std::to_string(seed) + " fail_after " + std::to_string(fail));
            auto ext = std::make_shared<SeqAggregates>();
            ext->fail_after = fail;
            bool threw = false;
            try {
                auto h =
                    std::make_unique<Harness>(s.spec, s.emit, s.max_ooo, count_sum(), kNoTime, ext);
                for (const Step& st : s.steps) {
                    h->push(st.rec);
                    if (!st.commit) continue;
                    h->commit();
                    if (st.restart) {
                        through_bytes(*h);
                        h = h->restarted();
                    }
                }
                h->commit(1'000'000);
            } catch (const std::runtime_error&) {
                threw = true;
            }
            EXPECT_EQ(ext->live(), 0u);
            EXPECT_EQ(ext->created(), ext->destroyed());
            EXPECT_EQ(ext->bad(), 0u);
            if (!threw || ::testing::Test::HasFailure()) break;  // past the stream's last call
        }
    }
}

}  // namespace

TEST(ExternalRandom, TumblingOnWindowUpdate) { run_class(0); }
TEST(ExternalRandom, HoppingOnWindowUpdate) { run_class(1); }
TEST(ExternalRandom, SlidingOnWindowUpdate) { run_class(2); }
TEST(ExternalRandom, SessionOnWindowUpdate) { run_class(3); }
TEST(ExternalRandom, TumblingOnWindowClose) { run_class(4); }
TEST(ExternalRandom, HoppingOnWindowClose) { run_class(5); }
TEST(ExternalRandom, SlidingOnWindowClose) { run_class(6); }
TEST(ExternalRandom, SessionOnWindowClose) { run_class(7); }

TEST(ExternalFailures, EveryKindDestroysEveryStateOnce) {
    for (int cls = 0; cls < 8; ++cls) run_failures(cls);
}
