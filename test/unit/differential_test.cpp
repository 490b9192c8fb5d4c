// Randomized differential test of core::WindowedAggregation against the brute-force
// model in reference_model.hpp.
//
// Each stream is generated from its seed alone (seed = stream index; the index also
// picks window kind = seed % 4 and emit strategy = (seed / 4) % 2), so any failure is
// reproduced with
//     STOATFLOW_DIFF_SEED=<seed> ./stoatflow_unit_tests --gtest_filter='Differential*'
// which runs (and prints) just that stream.
//
// The harness plays one source partition: before each record W = max(W, max event
// time so far - max_out_of_orderness). After some records (p = 0.3) it commits:
// flush(W) and applies the output to a simulated sink table keyed (key, window_start)
// — deletes first, then upserts. After every commit the sink must equal the reference:
//   on_window_update: every window that exists, final = (closed at W);
//   on_window_close:  exactly the windows closed at W, all final.
// plus the sink invariants (a final row is never deleted or overwritten; under
// on_window_close every upsert is final, no window is written twice and nothing is
// deleted), the late-drop counters and open_windows() / keys_with_open_windows(). The stream ends
// with a commit at W = 1,000,000, after which every window is closed and final.
//
// Two streams in five come from 2-3 partitions instead: each record is fed through the
// real core::Watermark (assigned partitions with or without records waiting, caught_up
// and wall-clock ticks, idle_timeout in half of them), and the reference computes W on
// its own from README "Time and the watermark" (RefWatermark); the two must agree at every record,
// so the min over partitions, partitions pinning W and idle partitions meet random streams too.
//
// A quarter of the streams also crash right after some commits: the engine is replaced
// by a fresh one, restore()d from the state rows written so far (newest version per
// (segment, key, window_start), tombstones skipped) at the committed W; the sink and
// the reference carry on untouched, so the run must end exactly as without the crash.
//
// Environment:
//   STOATFLOW_DIFF_STREAMS  total number of streams (default 10,400 = 8 × 1,300)
//   STOATFLOW_DIFF_SEED     run and print only this seed
//   STOATFLOW_DIFF_REPORTS  detailed reports per test before only seeds are listed (3)
#include "reference_model.hpp"

#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/core/watermark.hpp"
#include "stoatflow/core/window_spec.hpp"
#include "stoatflow/core/windowed_aggregation.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

namespace core = stoatflow::core;
using core::Millis;
using stoatflow_test::RefAgg;
using stoatflow_test::RefCoverage;
using stoatflow_test::RefKind;
using stoatflow_test::RefModel;
using stoatflow_test::RefRows;
using stoatflow_test::RefSpec;
using stoatflow_test::RefValue;

constexpr Millis kFinalWatermark = 1'000'000;
constexpr int kClasses = 8;  // 4 kinds × 2 emit strategies
constexpr long kDefaultStreams = kClasses * 1300L;
constexpr std::size_t kAggs = 6;
const char* const kColumns[kAggs] = {"n", "cv", "s", "mn", "mx", "av"};
const char* const kKeys[3] = {"a", "b", "c"};

// ---------------------------------------------------------------------------------
// Deterministic random numbers (splitmix64; identical on every standard library,
// unlike std::uniform_int_distribution).
struct Rng {
    std::uint64_t state;
    explicit Rng(std::uint64_t seed) : state(seed) {}
    std::uint64_t next() {
        state += 0x9E3779B97F4A7C15ULL;
        std::uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    std::int64_t range(std::int64_t lo, std::int64_t hi) {  // inclusive
        return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
    }
    bool chance(double p) { return static_cast<double>(next() >> 11) / 9007199254740992.0 < p; }
};

// ---------------------------------------------------------------------------------
// A stream.
struct Rec {
    std::string key;
    Millis t = 0;
    RefValue v;
    bool star_gets_value = false;  // count(*) is handed v (else Value::missing())
    bool flush_after = false;      // commit after this record
    bool restart_after = false;    // ... then crash and restart from the persisted state
    // Several partitions (Case::partitions > 1): where the record comes from, the wall
    // clock at its delivery, and what the consumer saw just before it.
    int partition = 0;
    Millis now = 0;
    int caught_up_before = -1;  // this partition reached its end
    bool tick_before = false;   // the worker's wall clock tick
};

struct Case {
    std::uint64_t seed = 0;
    RefSpec spec;
    core::EmitStrategy emit = core::EmitStrategy::OnWindowUpdate;
    Millis ooo = 0;  // max_out_of_orderness
    std::vector<Rec> recs;
    // 1: the old single-partition harness (W computed here). More: records go through the
    // real core::Watermark, and RefWatermark computes W independently from README "Time and the
    // watermark".
    int partitions = 1;
    Millis idle_timeout = 0;
    std::vector<bool> pending;  // per partition: records waiting when consumption started
};

RefKind kind_of_seed(std::uint64_t seed) { return static_cast<RefKind>(seed % 4); }
core::EmitStrategy emit_of_seed(std::uint64_t seed) {
    return (seed / 4) % 2 == 0 ? core::EmitStrategy::OnWindowUpdate
                               : core::EmitStrategy::OnWindowClose;
}

Case generate(std::uint64_t seed) {
    Case c;
    c.seed = seed;
    c.spec.kind = kind_of_seed(seed);
    c.emit = emit_of_seed(seed);
    Rng r(seed);
    c.spec.size = r.range(1, 20);
    c.spec.advance = c.spec.kind == RefKind::Hopping    ? r.range(1, c.spec.size)
                     : c.spec.kind == RefKind::Tumbling ? c.spec.size
                                                        : 0;
    c.spec.grace = r.range(0, 10);
    c.ooo = r.range(0, 15);
    const int nkeys = static_cast<int>(r.range(1, 3));
    const int n = static_cast<int>(r.range(1, 40));
    const int mode = static_cast<int>(r.range(0, 3));
    const Millis jitter = r.range(0, 30);
    const Millis lo = r.range(0, 100);
    const Millis width = r.range(0, 20);
    for (int i = 0; i < n; ++i) {
        Rec rec;
        const Millis base = static_cast<Millis>(i) * 120 / n;
        switch (mode) {
        case 0: rec.t = r.range(0, 120); break;  // no order at all
        case 1:                                  // in order ± jitter
            rec.t = std::clamp<Millis>(base + r.range(-jitter, jitter), 0, 120);
            break;
        case 2: rec.t = std::min<Millis>(120, lo + r.range(0, width)); break;  // dense
        default: rec.t = r.chance(0.2) ? r.range(0, base) : base; break;       // few, very late
        }
        rec.key = kKeys[r.range(0, nkeys - 1)];
        const std::int64_t p = r.range(0, 99);
        if (p < 75) {  // integer
            rec.v.present = true;
            rec.v.twice = 2 * r.range(-50, 50);
        } else if (p < 85) {  // missing
            rec.v.present = false;
        } else if (p < 95) {  // x.5 double
            rec.v.present = true;
            rec.v.as_double = true;
            rec.v.twice = 2 * r.range(-50, 49) + 1;
        } else {  // integral double (e.g. 7.0)
            rec.v.present = true;
            rec.v.as_double = true;
            rec.v.twice = 2 * r.range(-50, 50);
        }
        rec.star_gets_value = r.chance(0.5);
        rec.flush_after = r.chance(0.3);
        c.recs.push_back(std::move(rec));
    }
    // A quarter of the streams also crash right after some commits and go on with a
    // fresh engine restored from the state rows written so far (README "Exactly once: the commit
    // cycle", recovery).
    if (r.chance(0.25))
        for (Rec& rec : c.recs) rec.restart_after = rec.flush_after && r.chance(0.3);
    // Two streams in five come from several partitions, drawn from a second generator so
    // the single-partition streams stay what they were.
    Rng q(seed * 0xD1B54A32D192ED03ULL + 7);
    if (q.chance(0.4)) {
        c.partitions = static_cast<int>(q.range(2, 3));
        c.idle_timeout = q.chance(0.5) ? q.range(5, 60) : 0;
        for (int p = 0; p < c.partitions; ++p) c.pending.push_back(q.chance(0.5));
        // Skewed: partition 0 gets most records, the others lag or fall silent.
        Millis now = 1000;
        for (Rec& rec : c.recs) {
            rec.partition = q.chance(0.6) ? 0 : static_cast<int>(q.range(1, c.partitions - 1));
            now += q.range(0, 15);
            rec.now = now;
            if (q.chance(0.3))
                rec.caught_up_before = static_cast<int>(q.range(0, c.partitions - 1));
            rec.tick_before = q.chance(0.5);
        }
    }
    return c;
}

// W at each record's arrival (including it), as the reference sees it: one partition, or
// RefWatermark over several (with the restarts the stream goes through).
// What several partitions did to W in one stream (coverage of the generator).
struct WatermarkCoverage {
    std::int64_t multi_records = 0;  // records from multi-partition streams
    std::int64_t held_back = 0;      // judged at a W below the newest record − ooo: a min
    std::int64_t pinned = 0;         // judged with no W yet (a partition still to deliver)
    std::int64_t idle = 0;           // judged while some partition was idle
};

std::vector<Millis> watermarks(const Case& c, WatermarkCoverage* cov = nullptr) {
    std::vector<Millis> ws;
    if (c.partitions > 1) {
        stoatflow_test::RefWatermark wm(c.ooo, c.idle_timeout, c.pending);
        Millis newest = core::kNoTime;
        for (const Rec& r : c.recs) {
            if (r.caught_up_before >= 0) wm.caught_up(static_cast<std::size_t>(r.caught_up_before));
            if (r.tick_before) wm.tick(r.now);
            ws.push_back(wm.record(static_cast<std::size_t>(r.partition), r.t, r.now));
            newest = std::max(newest, r.t);
            if (cov) {
                ++cov->multi_records;
                if (ws.back() == core::kNoTime)
                    ++cov->pinned;
                else if (ws.back() < newest - c.ooo)
                    ++cov->held_back;
                if (wm.idle_partitions() > 0) ++cov->idle;
            }
            if (r.flush_after && r.restart_after) wm.restart();
        }
        return ws;
    }
    Millis max_t = core::kNoTime;
    Millis w = core::kNoTime;
    for (const Rec& r : c.recs) {
        max_t = std::max(max_t, r.t);
        w = std::max(w, max_t - c.ooo);
        ws.push_back(w);
    }
    return ws;
}

core::WindowSpec engine_spec(const RefSpec& s) {
    switch (s.kind) {
    case RefKind::Tumbling: return core::WindowSpec::tumbling(s.size, s.grace);
    case RefKind::Hopping: return core::WindowSpec::hopping(s.size, s.advance, s.grace);
    case RefKind::Sliding: return core::WindowSpec::sliding(s.size, s.grace);
    case RefKind::Session: return core::WindowSpec::session(s.size, s.grace);
    }
    return {};
}

std::vector<core::AggSpec> engine_aggregates() {
    std::vector<core::AggSpec> a(kAggs);
    const core::AggFn fns[kAggs] = {core::AggFn::CountStar, core::AggFn::Count, core::AggFn::Sum,
                                    core::AggFn::Min,       core::AggFn::Max,   core::AggFn::Avg};
    for (std::size_t i = 0; i < kAggs; ++i) {
        a[i].fn = fns[i];
        a[i].field = fns[i] == core::AggFn::CountStar ? "" : "v";
        a[i].column = kColumns[i];
    }
    return a;
}

core::Value engine_value(const RefValue& v) {
    if (!v.present) return core::Value::missing();
    if (v.as_double) return core::Value::of_double(static_cast<double>(v.twice) / 2.0);
    return core::Value::of_int(v.twice / 2);
}

// ---------------------------------------------------------------------------------
// Rows in one comparable form (engine sink rows and reference rows alike), keyed by
// (key id, window_start): key ids 0..2 are "a".."c", others are interned per run.
using RowKey = std::pair<int, Millis>;

struct Row {
    Millis end = 0;
    Millis event_time = 0;
    bool final = false;
    std::optional<long double> col[kAggs];  // n, cv, s, mn, mx, av; nullopt = NULL
    bool has_cells = false;                 // engine rows: the raw cells, for reports
    core::AggCell cells[kAggs];
};
using Sink = std::map<RowKey, Row>;
using Rows = std::vector<std::pair<RowKey, Row>>;  // sorted by RowKey

struct KeyNames {
    std::vector<std::string> extra;  // unexpected keys the engine produced
    int id(const std::string& k) {
        if (k.size() == 1 && k[0] >= 'a' && k[0] <= 'c') return k[0] - 'a';
        for (std::size_t i = 0; i < extra.size(); ++i)
            if (extra[i] == k) return static_cast<int>(3 + i);
        extra.push_back(k);
        return static_cast<int>(2 + extra.size());
    }
    std::string name(int id) const {
        if (id >= 0 && id < 3) return kKeys[id];
        const std::size_t i = static_cast<std::size_t>(id - 3);
        return i < extra.size() ? "'" + extra[i] + "'" : "?";
    }
};

std::string fmt_num(const std::optional<long double>& v) {
    if (!v) return "NULL";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17Lg", *v);
    return buf;
}

std::string fmt_row(const RowKey& k, const Row& r, const KeyNames& names) {
    std::ostringstream o;
    o << "key=" << names.name(k.first) << " start=" << k.second << " end=" << r.end
      << " event_time=" << r.event_time << " final=" << (r.final ? "t" : "f");
    for (std::size_t i = 0; i < kAggs; ++i) o << ' ' << kColumns[i] << '=' << fmt_num(r.col[i]);
    if (r.has_cells) {
        o << "  cells(isum,d,n):";
        for (const core::AggCell& c : r.cells)
            o << " (" << core::wide_sum_to_string(c.ihi, c.isum) << ',' << c.d << ',' << c.n << ')';
    }
    return o.str();
}

Row row_from_ref(const stoatflow_test::RefRow& r) {
    Row x;
    x.end = r.end;
    x.event_time = r.event_time;
    x.final = r.closed;
    x.col[0] = static_cast<long double>(r.agg.n);
    x.col[1] = static_cast<long double>(r.agg.cv);
    x.col[2] = r.agg.sum();
    x.col[3] = r.agg.min();
    x.col[4] = r.agg.max();
    x.col[5] = r.agg.avg();
    return x;
}

// One aggregate value of an engine row, read through the accessor of its column type.
std::optional<long double> read_cell(const core::AggLayout& layout, std::size_t i,
                                     const core::AggCell& cell, std::string& problems) {
    switch (core::column_type(layout.specs()[i].fn)) {
    case core::ColumnType::BigInt: {
        auto v = layout.as_bigint(i, cell);
        if (!v) return std::nullopt;
        return static_cast<long double>(*v);
    }
    case core::ColumnType::Double: {
        auto v = layout.as_double(i, cell);
        if (!v) return std::nullopt;
        return static_cast<long double>(*v);
    }
    case core::ColumnType::Numeric: {
        auto v = layout.as_numeric_text(i, cell);
        if (!v) return std::nullopt;
        const char* begin = v->c_str();
        char* end = nullptr;
        long double x = std::strtold(begin, &end);
        if (v->empty() || end != begin + v->size())
            problems +=
                "column " + std::string(kColumns[i]) + ": unparsable numeric text '" + *v + "'; ";
        return x;
    }
    }
    return std::nullopt;
}

Row row_from_engine(const core::AggLayout& layout, const core::SinkRow& s, std::string& problems) {
    Row x;
    x.end = s.end;
    x.event_time = s.event_time;
    x.final = s.final;
    if (s.cells.size() != kAggs) {
        problems += "row has " + std::to_string(s.cells.size()) + " cells, expected 6; ";
        return x;
    }
    x.has_cells = true;
    for (std::size_t i = 0; i < kAggs; ++i) {
        x.cells[i] = s.cells[i];
        x.col[i] = read_cell(layout, i, s.cells[i], problems);
    }
    return x;
}

bool close_enough(long double a, long double b) {
    const long double scale = std::max({1.0L, std::fabs(a), std::fabs(b)});
    return std::fabs(a - b) <= 1e-9L * scale;
}

bool same_row(const Row& e, const Row& r) {
    if (e.end != r.end || e.event_time != r.event_time || e.final != r.final) return false;
    for (std::size_t i = 0; i < kAggs; ++i) {
        if (e.col[i].has_value() != r.col[i].has_value()) return false;
        if (!e.col[i]) continue;
        const bool exact = i <= 2;  // count(*), count(v), sum(v)
        if (exact ? *e.col[i] != *r.col[i] : !close_enough(*e.col[i], *r.col[i])) return false;
    }
    return true;
}

// Differences between the engine's sink and the expected rows; empty when equal.
// Both sides are sorted by key; the common case (equal) allocates nothing.
void sort_rows(Rows& rows) {
    auto by_key = [](const auto& a, const auto& b) { return a.first < b.first; };
    if (!std::is_sorted(rows.begin(), rows.end(), by_key))
        std::sort(rows.begin(), rows.end(), by_key);
}

template <class EngineRows>
std::string diff_rows(const EngineRows& engine, const Rows& expected, const KeyNames& names) {
    std::string out;
    auto e = engine.begin();
    auto x = expected.begin();
    while (e != engine.end() || x != expected.end()) {
        if (x == expected.end() || (e != engine.end() && e->first < x->first)) {
            out += "    unexpected in sink: " + fmt_row(e->first, e->second, names) + '\n';
            ++e;
        } else if (e == engine.end() || x->first < e->first) {
            out += "    missing from sink:  " + fmt_row(x->first, x->second, names) + '\n';
            ++x;
        } else {
            if (!same_row(e->second, x->second))
                out += "    differs:  expected " + fmt_row(x->first, x->second, names) +
                       "\n              engine   " + fmt_row(e->first, e->second, names) + '\n';
            ++e;
            ++x;
        }
    }
    return out;
}

// ---------------------------------------------------------------------------------
// Running one stream through the engine and the reference.
struct Outcome {
    std::string failure;  // empty: passed
    RefCoverage cov;
    std::int64_t upserts_nonfinal = 0;
    std::int64_t upserts_final = 0;
    std::int64_t deletes = 0;
    std::int64_t final_rows = 0;
    std::int64_t restarts = 0;
    WatermarkCoverage wm;
};

std::string value_text(const RefValue& v) {
    if (!v.present) return "missing";
    std::ostringstream o;
    if (v.twice % 2 == 0)
        o << v.twice / 2;
    else
        o << (v.twice < 0 ? "-" : "") << std::llabs(v.twice) / 2 << ".5";
    if (v.as_double && v.twice % 2 == 0) o << ".0";
    return o.str();
}

std::string describe_case(const Case& c) {
    std::ostringstream o;
    const RefSpec& s = c.spec;
    o << "  seed=" << c.seed << "  " << stoatflow_test::ref_kind_name(s.kind)
      << " size/D/gap=" << s.size;
    if (s.kind == RefKind::Hopping) o << " advance=" << s.advance;
    o << " grace=" << s.grace << "  emit=" << core::to_string(c.emit)
      << "  max_out_of_orderness=" << c.ooo << "  (" << c.recs.size() << " records)\n";
    if (c.partitions > 1) {
        o << "    partitions=" << c.partitions << " idle_timeout=" << c.idle_timeout << " pending:";
        for (bool p : c.pending) o << ' ' << p;
        o << '\n';
    }
    const std::vector<Millis> ws = watermarks(c);
    for (std::size_t i = 0; i < c.recs.size(); ++i) {
        const Rec& r = c.recs[i];
        o << "    #" << i << "  key=" << r.key << " t=" << r.t << " v=" << value_text(r.v)
          << (r.v.present && r.v.as_double ? " (double)" : "") << "  W=" << ws[i]
          << (r.star_gets_value ? "" : "  count(*)<-missing") << (r.flush_after ? "  [commit]" : "")
          << (r.flush_after && r.restart_after ? "[restart]" : "")
          << (c.partitions > 1
                  ? "  p=" + std::to_string(r.partition) + " now=" + std::to_string(r.now) +
                        (r.caught_up_before >= 0
                             ? " caught_up(" + std::to_string(r.caught_up_before) + ")"
                             : "") +
                        (r.tick_before ? " tick" : "")
                  : std::string())
          << '\n';
    }
    o << "    then commit at W=" << kFinalWatermark << '\n';
    return o.str();
}

Outcome run_case(const Case& c) {
    Outcome res;
    std::string err;
    const bool owc = c.emit == core::EmitStrategy::OnWindowClose;
    try {
        const core::WindowSpec ws = engine_spec(c.spec);
        auto make_engine = [&] {
            return std::make_unique<core::WindowedAggregation>(ws, engine_aggregates(), c.emit,
                                                               ws.min_retention());
        };
        std::unique_ptr<core::WindowedAggregation> engp = make_engine();
        // Stats of engines that crashed (a restarted engine counts from zero).
        core::AggregationStats base;
        // The state tables: newest version per (segment, key, start); kept only when
        // the stream restarts.
        const bool restarts = std::any_of(c.recs.begin(), c.recs.end(), [](const Rec& r) {
            return r.flush_after && r.restart_after;
        });
        // (segment, key, start) → (commit number, row)
        std::map<std::tuple<Millis, int, Millis>, std::pair<long, core::WindowStateRow>> persisted;
        long commits = 0;
        RefModel ref(c.spec);
        KeyNames names;
        Sink sink;
        std::set<RowKey> ever_upserted;
        std::map<RowKey, core::WindowStateRow> newest_state;  // state tables, newest version
        std::int64_t total_upserts = 0;
        core::CommitOutput out;
        RefRows ref_rows;  // buffers reused across commits
        Rows expected;

        // One commit at watermark w; false (and err filled in) on any mismatch.
        auto commit = [&](Millis w, long after_record) -> bool {
            out.clear();
            core::WindowedAggregation& eng = *engp;
            eng.flush(w, out);
            ++commits;
            if (restarts)
                for (const core::WindowStateRow& st : out.state)
                    persisted[std::make_tuple(st.segment, names.id(st.key), st.start)] = {commits,
                                                                                          st};
            for (const core::WindowStateRow& st : out.state) {
                const RowKey k{names.id(st.key), st.start};
                if (st.removed)
                    newest_state.erase(k);
                else
                    newest_state[k] = st;
            }
            std::string bad;
            // Every window written to the sink has its state row (this commit's or an
            // earlier one holding the same version): the sink can be rebuilt from state.
            for (const core::SinkRow& u : out.upserts) {
                auto it = newest_state.find(RowKey{names.id(u.key), u.start});
                if (it == newest_state.end() || it->second.end != u.end ||
                    it->second.event_time != u.event_time ||
                    !(it->second.cells == std::vector<core::AggCell>(u.cells)))
                    bad += "    upsert without its state row: key=" + u.key +
                           " start=" + std::to_string(u.start) + '\n';
            }
            for (const core::SinkDelete& d : out.deletes) {
                ++res.deletes;
                const RowKey k{names.id(d.key), d.start};
                if (owc)
                    bad += "    delete under on_window_close: key=" + d.key +
                           " start=" + std::to_string(d.start) + '\n';
                auto it = sink.find(k);
                if (it == sink.end()) continue;  // deleting an absent row is harmless
                if (it->second.final)
                    bad += "    deleted a final row: " + fmt_row(k, it->second, names) + '\n';
                sink.erase(it);
            }
            for (const core::SinkRow& u : out.upserts) {
                const RowKey k{names.id(u.key), u.start};
                std::string problems;
                Row row = row_from_engine(eng.layout(), u, problems);
                ++total_upserts;
                ++(u.final ? res.upserts_final : res.upserts_nonfinal);
                if (!problems.empty())
                    bad += "    bad row " + fmt_row(k, row, names) + ": " + problems + '\n';
                if (owc && !u.final)
                    bad += "    non-final upsert under on_window_close: " + fmt_row(k, row, names) +
                           '\n';
                if (owc && !ever_upserted.insert(k).second)
                    bad += "    window written twice under on_window_close: " +
                           fmt_row(k, row, names) + '\n';
                auto it = sink.find(k);
                if (it == sink.end()) {
                    sink.emplace(k, row);
                } else {
                    if (it->second.final)
                        bad += "    overwrote a final row:\n      was " +
                               fmt_row(k, it->second, names) + "\n      now " +
                               fmt_row(k, row, names) + '\n';
                    it->second = row;
                }
            }
            // The sink against the reference.
            ref.snapshot(w, ref_rows);
            expected.clear();
            std::size_t open = 0;
            std::vector<bool> key_open;
            for (const stoatflow_test::RefRow& r : ref_rows) {
                const int id = names.id(r.key);
                if (!owc || r.closed) expected.emplace_back(RowKey{id, r.start}, row_from_ref(r));
                if (!r.closed) {
                    ++open;
                    if (key_open.size() <= static_cast<std::size_t>(id)) key_open.resize(id + 1);
                    key_open[id] = true;
                }
            }
            const auto open_keys = std::count(key_open.begin(), key_open.end(), true);
            sort_rows(expected);
            // README "Views and tables": open windows and keys holding one, right after the commit
            // at w.
            if (eng.open_windows() != open ||
                eng.keys_with_open_windows() != static_cast<std::size_t>(open_keys))
                bad += "    open_windows()=" + std::to_string(eng.open_windows()) +
                       " keys_with_open_windows()=" + std::to_string(eng.keys_with_open_windows()) +
                       ", expected " + std::to_string(open) + " and " + std::to_string(open_keys) +
                       '\n';
            // The O(1) counters behind resident_windows() and memory_bytes() against a count.
            std::size_t resident = 0;
            eng.for_each_window([&](const std::string&, const auto&) { ++resident; });
            if (resident != eng.resident_windows() ||
                eng.memory_bytes() < sizeof(core::WindowedAggregation) +
                                         resident * sizeof(core::WindowedAggregation::WindowState))
                bad += "    resident_windows()=" + std::to_string(eng.resident_windows()) +
                       ", counted " + std::to_string(resident) +
                       "; memory_bytes()=" + std::to_string(eng.memory_bytes()) + '\n';
            const std::string diff = diff_rows(sink, expected, names);
            const std::int64_t late_window =
                base.dropped_late_window + eng.stats().dropped_late_window;
            const std::int64_t late_session =
                base.dropped_late_session + eng.stats().dropped_late_session;
            if (late_window != ref.late_window() || late_session != ref.late_session())
                bad += "    drop counters: engine late_window=" + std::to_string(late_window) +
                       " late_session=" + std::to_string(late_session) +
                       ", expected late_window=" + std::to_string(ref.late_window()) +
                       " late_session=" + std::to_string(ref.late_session()) + '\n';
            if (bad.empty() && diff.empty()) return true;
            err += "  at the commit " +
                   (after_record < 0 ? std::string("at the end")
                                     : "after record #" + std::to_string(after_record)) +
                   " (W=" + std::to_string(w) + "): " + std::to_string(out.deletes.size()) +
                   " deletes, " + std::to_string(out.upserts.size()) + " upserts\n" + bad;
            if (!diff.empty()) err += "  sink vs reference:\n" + diff;
            return false;
        };

        const std::vector<Millis> wms = watermarks(c, &res.wm);
        // Several partitions: the engine's W comes from the real core::Watermark, fed the
        // same events, and must agree with the reference's at every record.
        const bool multi = c.partitions > 1;
        auto make_watermark = [&](const std::string* restored) {
            auto wm = std::make_unique<core::Watermark>(c.ooo, c.idle_timeout);
            if (restored) wm->restore(*restored);
            for (int p = 0; p < c.partitions; ++p)
                wm->assign(p, c.pending[static_cast<std::size_t>(p)]);
            return wm;
        };
        std::unique_ptr<core::Watermark> wmp = multi ? make_watermark(nullptr) : nullptr;
        bool ok = true;
        for (std::size_t i = 0; ok && i < c.recs.size(); ++i) {
            const Rec& r = c.recs[i];
            if (multi) {
                if (r.caught_up_before >= 0) wmp->caught_up(r.caught_up_before, r.now);
                if (r.tick_before) wmp->tick(r.now);
                const Millis w = wmp->observe(r.partition, r.t, r.now);
                if (w != wms[i]) {
                    err += "  record #" + std::to_string(i) +
                           ": core::Watermark gives W=" + std::to_string(w) + ", the reference " +
                           std::to_string(wms[i]) + '\n';
                    ok = false;
                    break;
                }
            }
            core::Value vals[kAggs];
            const core::Value v = engine_value(r.v);
            for (std::size_t a = 0; a < kAggs; ++a) vals[a] = v;
            if (!r.star_gets_value) vals[0] = core::Value::missing();
            engp->process(r.key, r.t, vals, wms[i]);
            ref.add(r.key, r.t, r.v, wms[i]);
            if (r.flush_after) ok = commit(wms[i], static_cast<long>(i));
            if (ok && r.flush_after && r.restart_after) {
                base.dropped_late_window += engp->stats().dropped_late_window;
                base.dropped_late_session += engp->stats().dropped_late_session;
                base.windows_emitted += engp->stats().windows_emitted;
                base.windows_reemitted += engp->stats().windows_reemitted;
                engp = make_engine();
                // Recovery reads the newest version per window across segments (a session
                // moves as it grows); of one commit's, the earliest segment's.
                std::map<std::pair<int, Millis>, const std::pair<long, core::WindowStateRow>*>
                    newest;
                for (const auto& [id, v] : persisted) {
                    auto& n = newest[{std::get<1>(id), std::get<2>(id)}];
                    if (!n || n->first < v.first) n = &v;
                }
                for (const auto& [id, v] : newest)
                    if (!v->second.removed) engp->restore(v->second, wms[i]);
                if (multi) {
                    const std::string blob = wmp->serialize();
                    wmp = make_watermark(&blob);
                }
                ref.restart(wms[i]);
                ++res.restarts;
            }
        }
        const core::WindowedAggregation& eng = *engp;
        if (ok) ok = commit(kFinalWatermark, -1);
        if (ok) {
            for (const auto& [k, row] : sink)
                if (!row.final) {
                    err +=
                        "  non-final row after the last commit: " + fmt_row(k, row, names) + '\n';
                    ok = false;
                }
            res.final_rows = static_cast<std::int64_t>(sink.size());
            const std::int64_t emitted = base.windows_emitted + eng.stats().windows_emitted;
            const std::int64_t reemitted = base.windows_reemitted + eng.stats().windows_reemitted;
            if (owc && (emitted != total_upserts || reemitted != 0)) {
                err += "  stats under on_window_close: windows_emitted=" + std::to_string(emitted) +
                       " windows_reemitted=" + std::to_string(reemitted) + ", expected " +
                       std::to_string(total_upserts) + " and 0\n";
                ok = false;
            }
        }
        res.cov = ref.coverage();
    } catch (const std::exception& e) {
        err += std::string("  exception: ") + e.what() + '\n';
    } catch (...) {
        err += "  unknown exception\n";
    }
    res.failure = std::move(err);
    return res;
}

// Greedy minimization of a failing stream: drop records, commits, grace and disorder
// as long as it still fails. The failure may change on the way; the minimized
// stream is reported with its own failure.
Case minimize(Case c) {
    auto fails = [](const Case& x) { return !run_case(x).failure.empty(); };
    bool progress = true;
    while (progress) {
        progress = false;
        for (std::size_t i = 0; i < c.recs.size() && c.recs.size() > 1;) {
            Case d = c;
            d.recs.erase(d.recs.begin() + static_cast<std::ptrdiff_t>(i));
            if (fails(d)) {
                c = std::move(d);
                progress = true;
            } else {
                ++i;
            }
        }
        for (std::size_t i = 0; i < c.recs.size(); ++i) {
            if (!c.recs[i].flush_after) continue;
            Case d = c;
            d.recs[i].flush_after = false;
            d.recs[i].restart_after = false;
            if (fails(d)) {
                c = std::move(d);
                progress = true;
            }
        }
        for (int field = 0; field < 2; ++field) {
            Case d = c;
            Millis& x = field == 0 ? d.spec.grace : d.ooo;
            if (x == 0) continue;
            x = 0;
            if (fails(d)) {
                c = std::move(d);
                progress = true;
            }
        }
    }
    return c;
}

std::string failure_report(const Case& c, const Outcome& o) {
    std::ostringstream m;
    m << "Differential mismatch — reproduce with STOATFLOW_DIFF_SEED=" << c.seed << "\n"
      << describe_case(c) << o.failure;
    const Case small = minimize(c);
    if (small.recs.size() < c.recs.size() || small.ooo != c.ooo ||
        small.spec.grace != c.spec.grace) {
        m << "  minimized (" << small.recs.size() << " records):\n"
          << describe_case(small) << run_case(small).failure;
    }
    return m.str();
}

long env_long(const char* name, long fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const long x = std::strtol(v, &end, 10);
    return (end && *end == '\0' && x >= 0) ? x : fallback;
}

// Runs every stream of one (kind, emit) class: seeds cls, cls + 8, cls + 16, ...
void run_class(int cls) {
    const long total = env_long("STOATFLOW_DIFF_STREAMS", kDefaultStreams);
    const long only = env_long("STOATFLOW_DIFF_SEED", -1);
    const long max_reports = env_long("STOATFLOW_DIFF_REPORTS", 3);
    if (only >= 0) {
        if (only % kClasses != cls) return;
        const Case c = generate(static_cast<std::uint64_t>(only));
        const Outcome o = run_case(c);
        std::cout << describe_case(c);
        if (o.failure.empty())
            std::cout << "  passed\n";
        else
            ADD_FAILURE() << failure_report(c, o);
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    RefCoverage cov;
    Outcome sum;
    long streams = 0;
    std::vector<long> failed;
    for (long seed = cls; seed < total; seed += kClasses) {
        const Case c = generate(static_cast<std::uint64_t>(seed));
        const Outcome o = run_case(c);
        ++streams;
        cov.contributions += o.cov.contributions;
        cov.late_drops += o.cov.late_drops;
        cov.session_merges += o.cov.session_merges;
        cov.session_extends += o.cov.session_extends;
        cov.backward_drops += o.cov.backward_drops;
        cov.late_extends += o.cov.late_extends;
        cov.closed_in_reach += o.cov.closed_in_reach;
        sum.upserts_nonfinal += o.upserts_nonfinal;
        sum.upserts_final += o.upserts_final;
        sum.deletes += o.deletes;
        sum.final_rows += o.final_rows;
        sum.restarts += o.restarts;
        sum.wm.multi_records += o.wm.multi_records;
        sum.wm.held_back += o.wm.held_back;
        sum.wm.pinned += o.wm.pinned;
        sum.wm.idle += o.wm.idle;
        if (o.failure.empty()) continue;
        if (static_cast<long>(failed.size()) < max_reports) ADD_FAILURE() << failure_report(c, o);
        failed.push_back(seed);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "  " << streams << " streams in " << secs << " s; rows " << sum.final_rows
              << ", restarts " << sum.restarts << ", upserts " << sum.upserts_nonfinal
              << " non-final / " << sum.upserts_final << " final, deletes " << sum.deletes
              << "; reference: contributions " << cov.contributions << ", late drops "
              << cov.late_drops << ", session extends " << cov.session_extends << " merges "
              << cov.session_merges << " backward drops " << cov.backward_drops << " late extends "
              << cov.late_extends << " closed-in-reach " << cov.closed_in_reach << '\n';
    std::cout << "  several partitions: " << sum.wm.multi_records << " records, "
              << sum.wm.held_back << " held back by a min, " << sum.wm.pinned << " before any W, "
              << sum.wm.idle << " with a partition idle\n";
    if (!failed.empty()) {
        std::ostringstream seeds;
        for (std::size_t i = 0; i < failed.size() && i < 200; ++i) seeds << ' ' << failed[i];
        if (failed.size() > 200) seeds << " ...";
        ADD_FAILURE() << failed.size() << " of " << streams
                      << " streams failed; seeds:" << seeds.str();
    }
    // The generator must keep producing interesting streams.
    if (streams >= 400) {
        const RefKind kind = static_cast<RefKind>(cls % 4);
        const bool owu = cls / 4 == 0;
        EXPECT_GT(sum.final_rows, streams);
        EXPECT_GT(sum.restarts, streams / 20);
        EXPECT_GT(cov.late_drops, streams / 20);
        EXPECT_GT(sum.wm.multi_records, streams * 5);
        EXPECT_GT(sum.wm.held_back, streams / 2);
        EXPECT_GT(sum.wm.pinned, streams / 10);
        EXPECT_GT(sum.wm.idle, streams / 20);
        if (owu) {
            EXPECT_GT(sum.upserts_nonfinal, streams);
        }
        if (kind == RefKind::Session) {
            EXPECT_GT(cov.session_extends, streams);
            EXPECT_GT(cov.session_merges, streams / 20);
            EXPECT_GT(cov.backward_drops, 0);
            EXPECT_GT(cov.late_extends, streams / 50);
            EXPECT_GT(cov.closed_in_reach, 0);
            if (owu) {
                EXPECT_GT(sum.deletes, 0);
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Hand-checked streams: they pin the reference (and the harness) to answers worked
// out on paper, then run the engine on them under both strategies.
struct HandRec {
    const char* key;
    Millis t;
    std::optional<double> v;  // nullopt: missing; integral values are passed as ints
};

struct HandRow {
    const char* key;
    Millis start, end, event_time;
    std::int64_t n, cv;
    std::optional<long double> s, mn, mx, av;
};

Case hand_case(RefSpec spec, Millis ooo, const std::vector<HandRec>& recs) {
    Case c;
    c.seed = 0;
    c.spec = spec;
    c.ooo = ooo;
    for (const HandRec& h : recs) {
        Rec r;
        r.key = h.key;
        r.t = h.t;
        if (h.v) {
            r.v.present = true;
            r.v.twice = static_cast<std::int64_t>(std::llround(*h.v * 2));
            r.v.as_double = r.v.twice % 2 != 0;
        }
        r.star_gets_value = true;
        r.flush_after = true;
        c.recs.push_back(r);
    }
    return c;
}

// Reference at the end of the stream == rows worked out by hand.
void expect_reference(const Case& c, const std::vector<HandRow>& rows, std::int64_t late_window,
                      std::int64_t late_session) {
    RefModel ref(c.spec);
    const std::vector<Millis> ws = watermarks(c);
    for (std::size_t i = 0; i < c.recs.size(); ++i)
        ref.add(c.recs[i].key, c.recs[i].t, c.recs[i].v, ws[i]);
    KeyNames names;
    Sink got;
    for (const auto& r : ref.snapshot(kFinalWatermark))
        got.emplace(RowKey{names.id(r.key), r.start}, row_from_ref(r));
    Rows want;
    for (const HandRow& h : rows) {
        Row x;
        x.end = h.end;
        x.event_time = h.event_time;
        x.final = true;
        x.col[0] = h.n;
        x.col[1] = h.cv;
        x.col[2] = h.s;
        x.col[3] = h.mn;
        x.col[4] = h.mx;
        x.col[5] = h.av;
        want.emplace_back(RowKey{names.id(h.key), h.start}, x);
    }
    sort_rows(want);
    EXPECT_EQ(diff_rows(got, want, names), "") << "reference disagrees with the hand answer\n"
                                               << describe_case(c);
    EXPECT_EQ(ref.late_window(), late_window);
    EXPECT_EQ(ref.late_session(), late_session);
}

// The engine agrees with the reference on a hand case: every commit, both strategies,
// committing after every record and only at the end.
void expect_engine(Case c) {
    for (auto emit : {core::EmitStrategy::OnWindowUpdate, core::EmitStrategy::OnWindowClose}) {
        for (bool every : {true, false}) {
            c.emit = emit;
            for (Rec& r : c.recs) r.flush_after = every;
            const Outcome o = run_case(c);
            EXPECT_EQ(o.failure, "") << describe_case(c);
        }
    }
}

RefSpec ref_spec(RefKind kind, Millis size, Millis advance, Millis grace) {
    RefSpec s;
    s.kind = kind;
    s.size = size;
    s.advance = advance;
    s.grace = grace;
    return s;
}

constexpr std::nullopt_t NUL = std::nullopt;

}  // namespace

TEST(DifferentialSanity, TumblingByHand) {
    // size 10, grace 0, no disorder allowance: W = max t so far.
    const Case c = hand_case(ref_spec(RefKind::Tumbling, 10, 10, 0), 0,
                             {{"a", 1, 1},
                              {"a", 5, 2},
                              {"b", 15, std::nullopt},
                              {"a", 12, 3},
                              {"a", 3, 4},    // W=15 ≥ 10: [0,10) closed → late
                              {"b", 4, 7}});  // late too
    expect_reference(c,
                     {{"a", 0, 10, 5, 2, 2, 3.0L, 1.0L, 2.0L, 1.5L},
                      {"a", 10, 20, 12, 1, 1, 3.0L, 3.0L, 3.0L, 3.0L},
                      {"b", 10, 20, 15, 1, 0, NUL, NUL, NUL, NUL}},
                     2, 0);
    expect_engine(c);
}

TEST(DifferentialSanity, HoppingByHand) {
    // size 10, advance 5, grace 2, ooo 5.
    const Case c = hand_case(ref_spec(RefKind::Hopping, 10, 5, 2), 5,
                             {{"a", 7, 4},      // W=2: windows 5 and 0
                              {"a", 13, -2.5},  // W=8: windows 10 and 5
                              {"a", 1, 1}});    // W=8: window 0 open (12), window -5 closed (7)
    expect_reference(c,
                     {{"a", 0, 10, 7, 2, 2, 5.0L, 1.0L, 4.0L, 2.5L},
                      {"a", 5, 15, 13, 2, 2, 1.5L, -2.5L, 4.0L, 0.75L},
                      {"a", 10, 20, 13, 1, 1, -2.5L, -2.5L, -2.5L, -2.5L}},
                     1, 0);
    expect_engine(c);
}

TEST(DifferentialSanity, SlidingByHand) {
    // D = 5, grace 5, ooo 0.
    const Case c = hand_case(ref_spec(RefKind::Sliding, 5, 0, 5), 0,
                             {{"a", 10, 1},
                              {"a", 12, 2},
                              {"a", 3, 5},    // W=12 ≥ 3+1+5: late
                              {"a", 8, 3}});  // W=12 < 8+1+5: accepted
    // left windows 3, 5, 7; right windows of 8 (10, 12 in (8, 14]) and 10 (12 in (10, 16]).
    expect_reference(c,
                     {{"a", 3, 9, 8, 1, 1, 3.0L, 3.0L, 3.0L, 3.0L},
                      {"a", 5, 11, 10, 2, 2, 4.0L, 1.0L, 3.0L, 2.0L},
                      {"a", 7, 13, 12, 3, 3, 6.0L, 1.0L, 3.0L, 2.0L},
                      {"a", 9, 15, 12, 2, 2, 3.0L, 1.0L, 2.0L, 1.5L},
                      {"a", 11, 17, 12, 1, 1, 2.0L, 2.0L, 2.0L, 2.0L}},
                     1, 0);
    expect_engine(c);
}

TEST(DifferentialSanity, SessionByHand) {
    // gap 6, grace 0, ooo 10.
    const Case c =
        hand_case(ref_spec(RefKind::Session, 6, 0, 0), 10,
                  {{"a", 0, 1},   // W=-10: [0,0]
                   {"a", 12, 2},  // W=2:   [12,12]
                   {"a", 6, 3},   // W=2:   bridges both → [0,12]
                   {"a", 30, 4},  // W=20:  [0,12] closed (19); new [30,30]
                   {"a", 17, 5},  // W=20:  in reach of closed [0,12] only → new [17,17]
                   {"a", 19, 6},  // W=20:  extends [17,17] → [17,19]
                   {"a", 11, 7},  // W=20:  own [11] closed (18), within gap of open [17,19]:
                                  //        extends it backwards → [11,19]
                   {"a", 8, 8},   // W=20:  likewise, over closed [0,12] → [8,19]
                   {"a", 5, 9},   // W=20:  within gap of [8,19], but 5 + 1 + 6 + 6 ≤ W: too far
                                  //        back to know which closed sessions began there → late
                   {"b", 5, std::nullopt}});  // W=20: closed → late
    expect_reference(c,
                     {{"a", 0, 13, 12, 3, 3, 6.0L, 1.0L, 3.0L, 2.0L},
                      {"a", 8, 20, 19, 4, 4, 26.0L, 5.0L, 8.0L, 6.5L},
                      {"a", 30, 31, 30, 1, 1, 4.0L, 4.0L, 4.0L, 4.0L}},
                     0, 2);
    expect_engine(c);
}

TEST(DifferentialSanity, ComparatorCatchesDifferences) {
    Row base;
    base.end = 10;
    base.event_time = 5;
    base.final = true;
    base.col[0] = 2;
    base.col[1] = 1;
    base.col[2] = 3.5L;
    base.col[3] = 3.5L;
    base.col[4] = 3.5L;
    base.col[5] = 3.5L;
    const RowKey k{0, 0};
    const Rows expected{{k, base}};
    const KeyNames names;
    EXPECT_EQ(diff_rows(expected, expected, names), "");
    auto differs = [&](auto change) {
        Row r = base;
        change(r);
        return !diff_rows(Rows{{k, r}}, expected, names).empty();
    };
    EXPECT_FALSE(differs([](Row& r) { r.col[5] = 3.5L + 1e-12L; }));  // avg: tolerance
    EXPECT_TRUE(differs([](Row& r) { r.col[2] = 3.5L + 1e-12L; }));   // sum: exact
    EXPECT_TRUE(differs([](Row& r) { r.col[0] = 3; }));
    EXPECT_TRUE(differs([](Row& r) { r.col[3] = std::nullopt; }));
    EXPECT_TRUE(differs([](Row& r) { r.col[4] = 3.6L; }));
    EXPECT_TRUE(differs([](Row& r) { r.end = 11; }));
    EXPECT_TRUE(differs([](Row& r) { r.event_time = 4; }));
    EXPECT_TRUE(differs([](Row& r) { r.final = false; }));
    EXPECT_FALSE(diff_rows(Rows{}, expected, names).empty());
    EXPECT_FALSE(diff_rows(expected, Rows{}, names).empty());
    EXPECT_FALSE(diff_rows(Rows{{RowKey{1, 0}, base}}, expected, names).empty());  // other key
}

TEST(DifferentialSanity, GeneratorIsDeterministicAndWithinBounds) {
    for (std::uint64_t seed = 0; seed < 2000; ++seed) {
        const Case a = generate(seed), b = generate(seed);
        ASSERT_EQ(a.recs.size(), b.recs.size());
        for (std::size_t i = 0; i < a.recs.size(); ++i) {
            ASSERT_EQ(a.recs[i].t, b.recs[i].t);
            ASSERT_EQ(a.recs[i].key, b.recs[i].key);
            ASSERT_EQ(a.recs[i].v.twice, b.recs[i].v.twice);
            ASSERT_GE(a.recs[i].t, 0);
            ASSERT_LE(a.recs[i].t, 120);
        }
        ASSERT_EQ(a.spec.kind, kind_of_seed(seed));
        ASSERT_GE(a.spec.size, 1);
        ASSERT_LE(a.spec.size, 20);
        ASSERT_GE(a.spec.grace, 0);
        ASSERT_LE(a.spec.grace, 10);
        if (a.spec.kind == RefKind::Hopping) {
            ASSERT_GE(a.spec.advance, 1);
            ASSERT_LE(a.spec.advance, a.spec.size);
        }
        ASSERT_GE(a.recs.size(), 1u);
        ASSERT_LE(a.recs.size(), 40u);
        ASSERT_LE(a.ooo, 15);
        // watermarks never decrease
        const std::vector<Millis> ws = watermarks(a);
        for (std::size_t i = 1; i < ws.size(); ++i) ASSERT_GE(ws[i], ws[i - 1]);
    }
}

TEST(DifferentialRandom, TumblingOnWindowUpdate) { run_class(0); }
TEST(DifferentialRandom, HoppingOnWindowUpdate) { run_class(1); }
TEST(DifferentialRandom, SlidingOnWindowUpdate) { run_class(2); }
TEST(DifferentialRandom, SessionOnWindowUpdate) { run_class(3); }
TEST(DifferentialRandom, TumblingOnWindowClose) { run_class(4); }
TEST(DifferentialRandom, HoppingOnWindowClose) { run_class(5); }
TEST(DifferentialRandom, SlidingOnWindowClose) { run_class(6); }
TEST(DifferentialRandom, SessionOnWindowClose) { run_class(7); }
