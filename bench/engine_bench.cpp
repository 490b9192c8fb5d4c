// Engine benchmark: JSON decode + watermark + window assignment + aggregation (+ the
// commit-time flush every 100k records), one core, no Kafka and no PostgreSQL.
// Workloads (BENCHMARKS.md): ~100-byte events, 100k keys, event times over one hour.
#include "stoatflow/core/watermark.hpp"
#include "stoatflow/core/windowed_aggregation.hpp"
#include "stoatflow/format/csv_decoder.hpp"
#include "stoatflow/format/json_decoder.hpp"
#include "stoatflow/format/row_extractor.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace stoatflow;
using namespace stoatflow::core;

namespace {

constexpr Millis kBase = 1796032800000;  // 2026-11-30T10:00:00Z
constexpr Millis kHour = 3600000;

struct Messages {
    std::string data;
    std::vector<std::size_t> offsets;  // start of each message; offsets.back() == data.size()
    std::size_t count() const { return offsets.size() - 1; }
};

// n events over one hour, times increasing, keys drawn uniformly from `keys`; as JSON objects,
// or (csv) the same events as CSV records (user_id,ts,amount,page).
const Messages& messages(std::size_t n, int keys, bool csv = false) {
    static std::map<std::tuple<std::size_t, int, bool>, Messages> cache;
    auto& m = cache[{n, keys, csv}];
    if (!m.offsets.empty()) return m;
    std::mt19937_64 rng(42);
    char buf[256];
    m.data.reserve(n * 100);
    for (std::size_t i = 0; i < n; ++i) {
        m.offsets.push_back(m.data.size());
        const Millis t = kBase + static_cast<Millis>(i * static_cast<double>(kHour) / n);
        const int user = static_cast<int>(rng() % keys);
        const int amount = static_cast<int>(rng() % 100) + 1;
        const int page = static_cast<int>(rng() % 100000);
        const int len = csv ? std::snprintf(buf, sizeof buf, "user%06d,%lld,%d,/products/%05d",
                                            user, static_cast<long long>(t), amount, page)
                            : std::snprintf(buf, sizeof buf,
                                            "{\"user_id\":\"user%06d\",\"ts\":%lld,\"amount\":%d,"
                                            "\"page\":\"/products/%05d\"}",
                                            user, static_cast<long long>(t), amount, page);
        m.data.append(buf, len);
    }
    m.offsets.push_back(m.data.size());
    return m;
}

// flush_every: records between commit-time flushes (0: only at the end). A flush builds
// the state rows and sink rows of every window changed since the previous one.
void run(benchmark::State& state, WindowSpec spec, std::vector<AggSpec> aggs, std::size_t n,
         std::size_t flush_every) {
    const Messages& msgs = messages(n, 100000);
    std::vector<std::string> paths;
    for (auto& a : aggs) paths.push_back(a.field);
    std::size_t emitted = 0, state_rows = 0, resident = 0;
    for (auto _ : state) {
        format::JsonDecoder decoder({"user_id", "ts", paths});
        Watermark wm(10000);
        WindowedAggregation agg(spec, aggs, EmitStrategy::OnWindowUpdate, kNoTime);
        CommitOutput out;
        // As the worker does: decode a batch, then hand it to the engine in one call.
        constexpr std::size_t kBatch = 256;
        std::vector<format::Decoded> batch(kBatch);
        std::vector<WindowedAggregation::RecordRef> refs(kBatch);
        std::size_t filled = 0;
        for (std::size_t i = 0; i < msgs.count(); ++i) {
            const char* p = msgs.data.data() + msgs.offsets[i];
            const std::size_t len = msgs.offsets[i + 1] - msgs.offsets[i];
            format::Decoded& d = batch[filled];
            if (decoder.decode(p, len, nullptr, 0, kNoTime, d) != format::DecodeError::None)
                std::abort();
            refs[filled] = {d.key, d.time, d.values.data(), wm.observe(0, d.time)};
            if (++filled == kBatch || i + 1 == msgs.count()) {
                agg.process_batch(refs.data(), filled);
                filled = 0;
            }
            if (flush_every && i % flush_every == flush_every - 1) {
                agg.process_batch(refs.data(), filled);
                filled = 0;
                agg.flush(wm.current(), out);
                emitted += out.upserts.size();
                state_rows += out.state.size();
                out.clear();
            }
        }
        agg.flush(wm.current(), out);
        resident = agg.resident_windows();
        benchmark::DoNotOptimize(out);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * msgs.count()));
    state.counters["events"] = static_cast<double>(msgs.count());
    state.counters["upserts/iter"] = static_cast<double>(emitted) / state.iterations();
    state.counters["state_rows/iter"] = static_cast<double>(state_rows) / state.iterations();
    state.counters["resident_windows"] = static_cast<double>(resident);
}

std::size_t scaled(std::size_t n) {
    const char* s = std::getenv("BENCH_SCALE");
    return s ? static_cast<std::size_t>(n * std::atof(s)) : n;
}

// Records between the commit-time flushes of the _commit_1m variants: 1M of the 2M events
// at full size, scaled with them so that a small BENCH_SCALE (the smoke run) still flushes
// mid-stream; never 0 (0 would mean no flush at all).
std::size_t commit_every() { return std::max<std::size_t>(1, scaled(1000000)); }

std::vector<AggSpec> count_sum_max() {
    return {{AggFn::CountStar, "", "n"}, {AggFn::Sum, "amount", "s"}, {AggFn::Max, "amount", "m"}};
}
std::vector<AggSpec> count_sum() {
    return {{AggFn::CountStar, "", "n"}, {AggFn::Sum, "amount", "s"}};
}

void decode_only(benchmark::State& state) {
    const Messages& msgs = messages(scaled(2000000), 1000000);
    for (auto _ : state) {
        format::JsonDecoder decoder({"user_id", "ts", {"", "amount", "amount"}});
        format::Decoded d;
        for (std::size_t i = 0; i < msgs.count(); ++i) {
            const char* p = msgs.data.data() + msgs.offsets[i];
            decoder.decode(p, msgs.offsets[i + 1] - msgs.offsets[i], nullptr, 0, kNoTime, d);
            benchmark::DoNotOptimize(d.time);
        }
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * msgs.count()));
}

// format => 'csv' against JSON on the same events (README "Formats", CSV): the CSV decoder
// into raw rows (what a CSV source's lanes run), timed; beside it, untimed by the benchmark but
// measured the same way, the JSON row extractor into the same raw rows and the JSON decoder
// decode_only runs, all in the thread's CPU time. The counters give the rates and CSV/JSON
// (target: at least 1).
void decode_csv(benchmark::State& state) {
    const std::size_t n = scaled(2000000);
    const Messages& json = messages(n, 1000000);
    const Messages& csv = messages(n, 1000000, true);
    // Thread CPU time: the machine's other load does not skew the ratio.
    struct Clock {
        static double now() {
            timespec ts{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
            return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
        }
    };
    auto seconds = [](double a, double b) { return b - a; };
    double csv_s = 0, rows_s = 0, json_s = 0;
    for (auto _ : state) {
        format::CsvRowDecoder dec({}, {"user_id", "ts", "amount", "page"});
        format::RawRows rows(4);
        bool skip = false;
        const auto t0 = Clock::now();
        for (std::size_t i = 0; i < csv.count(); ++i) {
            rows.clear();
            const std::size_t r = rows.add_row();
            const char* p = csv.data.data() + csv.offsets[i];
            benchmark::DoNotOptimize(
                dec.decode(p, csv.offsets[i + 1] - csv.offsets[i], false, rows, r, skip));
        }
        const auto t1 = Clock::now();
        state.SetIterationTime(seconds(t0, t1));
        csv_s += seconds(t0, t1);

        format::JsonRowExtractor ex({{"user_id"}, {"ts"}, {"amount"}, {"page"}});
        const auto t2 = Clock::now();
        for (std::size_t i = 0; i < json.count(); ++i) {
            rows.clear();
            const std::size_t r = rows.add_row();
            const char* p = json.data.data() + json.offsets[i];
            benchmark::DoNotOptimize(ex.extract(p, json.offsets[i + 1] - json.offsets[i], rows, r));
        }
        const auto t3 = Clock::now();
        rows_s += seconds(t2, t3);

        format::JsonDecoder decoder({"user_id", "ts", {"", "amount", "amount"}});
        format::Decoded d;
        const auto t4 = Clock::now();
        for (std::size_t i = 0; i < json.count(); ++i) {
            const char* p = json.data.data() + json.offsets[i];
            decoder.decode(p, json.offsets[i + 1] - json.offsets[i], nullptr, 0, kNoTime, d);
            benchmark::DoNotOptimize(d.time);
        }
        json_s += seconds(t4, Clock::now());
    }
    const double records = static_cast<double>(state.iterations() * csv.count());
    state.SetItemsProcessed(static_cast<int64_t>(records));
    state.counters["csv_rec_per_s"] = records / csv_s;
    state.counters["json_rows_rec_per_s"] = records / rows_s;
    state.counters["json_decoder_rec_per_s"] = records / json_s;
    state.counters["csv_over_json_rows"] = rows_s / csv_s;
    state.counters["csv_over_json_decoder"] = json_s / csv_s;
    std::fprintf(stderr,
                 "CSV/JSON decode rate: %.2fx the JSON row extractor, %.2fx the JSON decoder\n",
                 rows_s / csv_s, json_s / csv_s);
}

long rss_bytes() {
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    return resident * 4096;
}

// Memory per open key-window: `keys` keys with one open 1-hour window each, fed
// `per_key` events each; RSS growth divided by the windows held.
void memory_per_window(benchmark::State& state) {
    const int keys = static_cast<int>(state.range(0));
    const int per_key = static_cast<int>(state.range(1));
    double bytes_per_window = 0, growth_after_first_round = 0;
    for (auto _ : state) {
        const long before = rss_bytes();
        WindowedAggregation agg(WindowSpec::tumbling(kHour), count_sum_max(),
                                EmitStrategy::OnWindowUpdate, kNoTime);
        CommitOutput out;
        Value values[3] = {Value::missing(), Value::of_int(7), Value::of_int(7)};
        char key[32];
        for (int round = 0; round < per_key; ++round) {
            for (int k = 0; k < keys; ++k) {
                const int len = std::snprintf(key, sizeof key, "user%07d", k);
                agg.process(std::string_view(key, len), kBase + round, values, kBase);
            }
            agg.flush(kBase, out);  // as commits do: the dirty list is drained
            out.clear();
            out.state.shrink_to_fit();
            out.upserts.shrink_to_fit();
            if (round == 0) {
                bytes_per_window =
                    static_cast<double>(rss_bytes() - before) / agg.resident_windows();
                growth_after_first_round = static_cast<double>(rss_bytes());
            }
        }
        growth_after_first_round = static_cast<double>(rss_bytes()) - growth_after_first_round;
        benchmark::DoNotOptimize(agg);
    }
    state.counters["bytes_per_window"] = bytes_per_window;
    state.counters["rss_growth_after_first_round"] = growth_after_first_round;
    state.counters["key_bytes"] = 11;
}

}  // namespace

BENCHMARK(memory_per_window)
    ->Args({100000, 10})
    ->Args({1000000, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(decode_only)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
BENCHMARK(decode_csv)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3)
    ->UseManualTime();
BENCHMARK_CAPTURE(run, tumbling_dense_1h, WindowSpec::tumbling(kHour), count_sum_max(),
                  scaled(2000000), 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
BENCHMARK_CAPTURE(run, tumbling_dense_1h_commit_1m, WindowSpec::tumbling(kHour), count_sum_max(),
                  scaled(2000000), commit_every())
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
BENCHMARK_CAPTURE(run, tumbling_sparse_1m, WindowSpec::tumbling(60000), count_sum(),
                  scaled(2000000), 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
BENCHMARK_CAPTURE(run, tumbling_sparse_1m_commit_1m, WindowSpec::tumbling(60000), count_sum(),
                  scaled(2000000), commit_every())
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
BENCHMARK_CAPTURE(run, hopping_10m_by_2m, WindowSpec::hopping(600000, 120000), count_sum(),
                  scaled(2000000), 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
BENCHMARK_CAPTURE(run, hopping_10m_by_2m_commit_1m, WindowSpec::hopping(600000, 120000),
                  count_sum(), scaled(2000000), commit_every())
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
BENCHMARK_CAPTURE(run, sliding_1m, WindowSpec::sliding(60000), count_sum(), scaled(2000000), 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
BENCHMARK_CAPTURE(run, sliding_1m_commit_1m, WindowSpec::sliding(60000), count_sum(),
                  scaled(2000000), commit_every())
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
BENCHMARK_CAPTURE(run, session_5m, WindowSpec::session(300000), count_sum(), scaled(2000000), 0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
BENCHMARK_CAPTURE(run, session_5m_commit_1m, WindowSpec::session(300000), count_sum(),
                  scaled(2000000), commit_every())
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);

BENCHMARK_MAIN();
