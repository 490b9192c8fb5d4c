// Engine benchmark: JSON decode + watermark + window assignment + aggregation (+ the
// commit-time flush every 100k records), one core, no Kafka and no PostgreSQL.
// Workloads (BENCHMARKS.md): ~100-byte events, 100k keys, event times over one hour.
#include "stoatflow/core/watermark.hpp"
#include "stoatflow/core/windowed_aggregation.hpp"
#include "stoatflow/format/csv_decoder.hpp"
#include "stoatflow/format/avro.hpp"
#include "stoatflow/format/json_decoder.hpp"
#include "stoatflow/format/protobuf.hpp"
#include "stoatflow/format/row_extractor.hpp"

#include <benchmark/benchmark.h>
#ifdef STOATFLOW_BENCH_LIBAVRO
#include <avro.h>
#endif
#ifdef STOATFLOW_HAVE_LIBPROTOBUF
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#endif

#include <algorithm>
#include <charconv>
#include <malloc.h>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

// The binary encodings' few rules, to write the benchmark's events (the readers are checked
// against the formats' own encoders in the unit tests): Avro's zig-zag longs and
// length-prefixed strings; protobuf's varints, tags and length-delimited fields.
void put_long(std::string& out, long long v) {
    unsigned long long z =
        (static_cast<unsigned long long>(v) << 1) ^ static_cast<unsigned long long>(v >> 63);
    while (z >= 0x80) {
        out += static_cast<char>((z & 0x7f) | 0x80);
        z >>= 7;
    }
    out += static_cast<char>(z);
}

void pb_varint(std::string& out, unsigned long long v) {
    while (v >= 0x80) {
        out += static_cast<char>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v);
}
void pb_len(std::string& out, int number, std::string_view bytes) {
    pb_varint(out, static_cast<unsigned long long>(number) << 3 | 2);
    pb_varint(out, bytes.size());
    out.append(bytes.data(), bytes.size());
}
void pb_int(std::string& out, int number, long long v) {
    pb_varint(out, static_cast<unsigned long long>(number) << 3);
    pb_varint(out, static_cast<unsigned long long>(v));
}

// The same events in each format: JSON objects, CSV records (user_id,ts,amount,page), Avro
// bodies of {user_id: string, ts: long, amount: int, page: string}, protobuf bodies of
// message Event { string user_id = 1; int64 ts = 2; int32 amount = 3; string page = 4; }.
enum class Encoding { Json, Csv, Avro, Protobuf };

// n events over one hour, times increasing, keys drawn uniformly from `keys`.
const Messages& messages(std::size_t n, int keys, Encoding enc = Encoding::Json) {
    static std::map<std::tuple<std::size_t, int, Encoding>, Messages> cache;
    auto& m = cache[{n, keys, enc}];
    if (!m.offsets.empty()) return m;
    std::mt19937_64 rng(42);
    char buf[256], user_id[32], page_path[32];
    m.data.reserve(n * 100);
    for (std::size_t i = 0; i < n; ++i) {
        m.offsets.push_back(m.data.size());
        const Millis t = kBase + static_cast<Millis>(i * static_cast<double>(kHour) / n);
        const int user = static_cast<int>(rng() % keys);
        const int amount = static_cast<int>(rng() % 100) + 1;
        const int page = static_cast<int>(rng() % 100000);
        const std::string_view u(user_id, static_cast<std::size_t>(std::snprintf(
                                              user_id, sizeof user_id, "user%06d", user)));
        const std::string_view pg(
            page_path, static_cast<std::size_t>(
                           std::snprintf(page_path, sizeof page_path, "/products/%05d", page)));
        switch (enc) {
        case Encoding::Json:
        case Encoding::Csv: {
            const int len =
                enc == Encoding::Csv
                    ? std::snprintf(buf, sizeof buf, "%s,%lld,%d,%s", user_id,
                                    static_cast<long long>(t), amount, page_path)
                    : std::snprintf(
                          buf, sizeof buf,
                          "{\"user_id\":\"%s\",\"ts\":%lld,\"amount\":%d,\"page\":\"%s\"}", user_id,
                          static_cast<long long>(t), amount, page_path);
            m.data.append(buf, static_cast<std::size_t>(len));
            break;
        }
        case Encoding::Avro:
            put_long(m.data, static_cast<long long>(u.size()));
            m.data.append(u.data(), u.size());
            put_long(m.data, t);
            put_long(m.data, amount);
            put_long(m.data, static_cast<long long>(pg.size()));
            m.data.append(pg.data(), pg.size());
            break;
        case Encoding::Protobuf:
            pb_len(m.data, 1, u);
            pb_int(m.data, 2, t);
            pb_int(m.data, 3, amount);
            pb_len(m.data, 4, pg);
            break;
        }
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
    const Messages& csv = messages(n, 1000000, Encoding::Csv);
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

// ---- Avro vs JSON decode into raw rows (src/format/README-avro.md) -------------------------
// The same events as messages() writes them (Encoding::Avro), and their writer schema.
const char* kEventSchema = R"({"type": "record", "name": "Event", "fields": [
    {"name": "user_id", "type": "string"}, {"name": "ts", "type": "long"},
    {"name": "amount", "type": "int"}, {"name": "page", "type": "string"}]})";

const std::vector<std::vector<std::string>> kEventColumns = {
    {"user_id"}, {"ts"}, {"amount"}, {"page"}};

// Rows per batch, as the worker's consume thread fills them.
constexpr std::size_t kRowBatch = 256;

void decode_rows_json(benchmark::State& state) {
    const Messages& msgs = messages(scaled(2000000), 1000000);
    for (auto _ : state) {
        format::JsonRowExtractor ex(kEventColumns);
        format::RawRows rows(kEventColumns.size());
        for (std::size_t i = 0; i < msgs.count(); ++i) {
            if (rows.size() == kRowBatch) rows.clear();
            const std::size_t r = rows.add_row();
            if (ex.extract(msgs.data.data() + msgs.offsets[i],
                           msgs.offsets[i + 1] - msgs.offsets[i], rows,
                           r) != format::DeadReason::None)
                std::abort();
        }
        benchmark::DoNotOptimize(rows);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * msgs.count()));
}

void decode_rows_avro(benchmark::State& state) {
    const Messages& msgs = messages(scaled(2000000), 1000000, Encoding::Avro);
    const auto schema = format::avro::Schema::parse(kEventSchema);
    for (auto _ : state) {
        format::avro::Program prog(schema, nullptr, kEventColumns);
        format::RawRows rows(kEventColumns.size());
        const auto* base = reinterpret_cast<const std::uint8_t*>(msgs.data.data());
        for (std::size_t i = 0; i < msgs.count(); ++i) {
            if (rows.size() == kRowBatch) rows.clear();
            const std::size_t r = rows.add_row();
            if (prog.read(base + msgs.offsets[i], msgs.offsets[i + 1] - msgs.offsets[i], rows, r) !=
                format::DeadReason::None)
                std::abort();
        }
        benchmark::DoNotOptimize(rows);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * msgs.count()));
}

#ifdef STOATFLOW_BENCH_LIBAVRO
// The same rows through Avro C (Debian's libavro-dev): a generic value read per record, its
// fields fetched by index and written as the same raw text.
void decode_rows_libavro(benchmark::State& state) {
    const Messages& msgs = messages(scaled(2000000), 1000000, Encoding::Avro);
    avro_schema_t schema;
    if (avro_schema_from_json_length(kEventSchema, std::strlen(kEventSchema), &schema))
        std::abort();
    avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
    avro_value_t value;
    avro_generic_value_new(iface, &value);
    avro_reader_t reader = avro_reader_memory(msgs.data.data(), 0);
    char num[24];
    for (auto _ : state) {
        format::RawRows rows(kEventColumns.size());
        for (std::size_t i = 0; i < msgs.count(); ++i) {
            if (rows.size() == kRowBatch) rows.clear();
            const std::size_t r = rows.add_row();
            avro_reader_memory_set_source(
                reader, msgs.data.data() + msgs.offsets[i],
                static_cast<int64_t>(msgs.offsets[i + 1] - msgs.offsets[i]));
            if (avro_value_read(reader, &value)) std::abort();
            avro_value_t f;
            const char* sv;
            size_t sl;
            int64_t lv;
            int32_t iv;
            avro_value_get_by_index(&value, 0, &f, nullptr);
            avro_value_get_string(&f, &sv, &sl);
            rows.set(r, 0, format::RawKind::String, std::string_view(sv, sl - 1));
            avro_value_get_by_index(&value, 1, &f, nullptr);
            avro_value_get_long(&f, &lv);
            rows.set(r, 1, format::RawKind::Number,
                     std::string_view(num, std::to_chars(num, num + sizeof num, lv).ptr - num));
            avro_value_get_by_index(&value, 2, &f, nullptr);
            avro_value_get_int(&f, &iv);
            rows.set(r, 2, format::RawKind::Number,
                     std::string_view(num, std::to_chars(num, num + sizeof num, iv).ptr - num));
            avro_value_get_by_index(&value, 3, &f, nullptr);
            avro_value_get_string(&f, &sv, &sl);
            rows.set(r, 3, format::RawKind::String, std::string_view(sv, sl - 1));
        }
        benchmark::DoNotOptimize(rows);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * msgs.count()));
    avro_reader_free(reader);
    avro_value_decref(&value);
    avro_value_iface_decref(iface);
    avro_schema_decref(schema);
}
#endif

// ---- Protocol Buffers vs JSON decode into raw rows (src/format/README.md) -----------------
// The same events as messages() writes them (Encoding::Protobuf), and their descriptor set (the
// message Event, proto3). With libprotobuf present, decode_rows_protobuf_libprotobuf reads the
// same bytes with its DynamicMessage and reflection, the alternative to our reader.
std::string event_descriptor_set() {
    std::string msg;
    pb_len(msg, 1, "Event");
    const struct {
        const char* name;
        int number, type;  // FieldDescriptorProto.Type: 9 string, 3 int64, 5 int32
    } fields[] = {{"user_id", 1, 9}, {"ts", 2, 3}, {"amount", 3, 5}, {"page", 4, 9}};
    for (const auto& f : fields) {
        std::string fd;
        pb_len(fd, 1, f.name);
        pb_int(fd, 3, f.number);
        pb_int(fd, 4, 1);  // LABEL_OPTIONAL
        pb_int(fd, 5, f.type);
        pb_len(msg, 2, fd);
    }
    std::string file, set;
    pb_len(file, 1, "bench.proto");
    pb_len(file, 2, "bench");
    pb_len(file, 4, msg);
    pb_len(file, 12, "proto3");
    pb_len(set, 1, file);
    return set;
}

void decode_rows_protobuf(benchmark::State& state) {
    const Messages& msgs = messages(scaled(2000000), 1000000, Encoding::Protobuf);
    const auto schema = format::ProtoSchema::parse(event_descriptor_set());
    for (auto _ : state) {
        format::ProtoRowExtractor x(schema, *schema->message("bench.Event"), kEventColumns);
        format::RawRows rows(kEventColumns.size());
        for (std::size_t i = 0; i < msgs.count(); ++i) {
            if (rows.size() == kRowBatch) rows.clear();
            const std::size_t r = rows.add_row();
            if (x.extract(msgs.data.data() + msgs.offsets[i], msgs.offsets[i + 1] - msgs.offsets[i],
                          rows, r) != format::DeadReason::None)
                std::abort();
        }
        benchmark::DoNotOptimize(rows);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * msgs.count()));
}

#ifdef STOATFLOW_HAVE_LIBPROTOBUF
void decode_rows_protobuf_libprotobuf(benchmark::State& state) {
    namespace gp = google::protobuf;
    const Messages& msgs = messages(scaled(2000000), 1000000, Encoding::Protobuf);
    gp::FileDescriptorSet set;
    if (!set.ParseFromString(event_descriptor_set())) std::abort();
    gp::DescriptorPool pool;
    for (const auto& f : set.file()) pool.BuildFile(f);
    const gp::Descriptor* d = pool.FindMessageTypeByName("bench.Event");
    gp::DynamicMessageFactory factory(&pool);
    std::unique_ptr<gp::Message> msg(factory.GetPrototype(d)->New());
    const gp::Reflection* refl = msg->GetReflection();
    const gp::FieldDescriptor* f[4] = {d->FindFieldByName("user_id"), d->FindFieldByName("ts"),
                                       d->FindFieldByName("amount"), d->FindFieldByName("page")};
    std::string scratch;
    char num[24];
    for (auto _ : state) {
        format::RawRows rows(kEventColumns.size());
        for (std::size_t i = 0; i < msgs.count(); ++i) {
            if (rows.size() == kRowBatch) rows.clear();
            const std::size_t r = rows.add_row();
            if (!msg->ParseFromArray(msgs.data.data() + msgs.offsets[i],
                                     static_cast<int>(msgs.offsets[i + 1] - msgs.offsets[i])))
                std::abort();
            rows.set(r, 0, format::RawKind::String, refl->GetStringReference(*msg, f[0], &scratch));
            auto e = std::to_chars(num, num + sizeof num, refl->GetInt64(*msg, f[1]));
            rows.set(r, 1, format::RawKind::Number,
                     std::string_view(num, static_cast<std::size_t>(e.ptr - num)));
            e = std::to_chars(num, num + sizeof num, refl->GetInt32(*msg, f[2]));
            rows.set(r, 2, format::RawKind::Number,
                     std::string_view(num, static_cast<std::size_t>(e.ptr - num)));
            rows.set(r, 3, format::RawKind::String, refl->GetStringReference(*msg, f[3], &scratch));
        }
        benchmark::DoNotOptimize(rows);
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * msgs.count()));
}
#endif

long rss_bytes() {
    long pages = 0, resident = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        std::fclose(f);
    }
    return resident * 4096;
}

// Bytes the heap has handed out and not taken back (glibc's own count: small chunks in
// use plus mmap'ed ones), to measure the engine's heap beside the resident set.
double heap_in_use() {
    const struct mallinfo2 mi = mallinfo2();
    return static_cast<double>(mi.uordblks + mi.hblkhd);
}

// Memory per open key-window: `keys` keys with one open 1-hour window each, fed
// `per_key` events each; RSS growth divided by the windows held. Beside it the heap's
// growth (mallinfo2) and the engine's own estimate (memory_bytes, what worker_memory_limit
// checks), both per window, after the first round.
void memory_per_window(benchmark::State& state) {
    const int keys = static_cast<int>(state.range(0));
    const int per_key = static_cast<int>(state.range(1));
    double bytes_per_window = 0, growth_after_first_round = 0, heap_per_window = 0,
           estimate_per_window = 0;
    for (auto _ : state) {
        const long before = rss_bytes();
        const double heap_before = heap_in_use();
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
                heap_per_window = (heap_in_use() - heap_before) / agg.resident_windows();
                estimate_per_window =
                    static_cast<double>(agg.memory_bytes()) / agg.resident_windows();
                growth_after_first_round = static_cast<double>(rss_bytes());
            }
        }
        growth_after_first_round = static_cast<double>(rss_bytes()) - growth_after_first_round;
        benchmark::DoNotOptimize(agg);
    }
    state.counters["bytes_per_window"] = bytes_per_window;
    state.counters["rss_growth_after_first_round"] = growth_after_first_round;
    state.counters["heap_bytes_per_window"] = heap_per_window;
    state.counters["estimate_bytes_per_window"] = estimate_per_window;
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
BENCHMARK(decode_rows_json)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
BENCHMARK(decode_rows_avro)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
#ifdef STOATFLOW_BENCH_LIBAVRO
BENCHMARK(decode_rows_libavro)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
#endif
BENCHMARK(decode_rows_protobuf)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
#ifdef STOATFLOW_HAVE_LIBPROTOBUF
BENCHMARK(decode_rows_protobuf_libprotobuf)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
#endif
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
