// Format benchmark (part of stoatflow_engine_bench): the same events as JSON and as protobuf,
// read into the source's columns (raw rows: the consume thread's half of the row type), one
// core. decode_rows_json is the baseline the other formats are measured against (BENCHMARKS.md
// "Formats": ratio = rate / decode_rows_json's rate). With libprotobuf present,
// decode_rows_protobuf_libprotobuf reads the same bytes with its DynamicMessage and reflection,
// the alternative to our reader (src/README.md says why ours).
#include "stoatflow/format/protobuf.hpp"
#include "stoatflow/format/raw_row.hpp"
#include "stoatflow/format/row_extractor.hpp"

#include <benchmark/benchmark.h>

#ifdef STOATFLOW_HAVE_LIBPROTOBUF
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace stoatflow;

namespace {

constexpr long long kBase = 1796032800000;  // 2026-11-30T10:00:00Z
constexpr long long kHour = 3600000;
constexpr std::size_t kBatch = 1000;  // rows per RawRows batch, as the worker's batches

std::size_t events() {
    const char* s = std::getenv("BENCH_SCALE");
    const double scale = s ? std::atof(s) : 1.0;
    return static_cast<std::size_t>(1000000 * (scale > 0 ? scale : 1.0)) + 1;
}

struct Event {
    std::string user_id, page;
    long long ts;
    int amount;
};

const std::vector<Event>& the_events() {
    static std::vector<Event> ev;
    if (!ev.empty()) return ev;
    std::mt19937_64 rng(42);
    const std::size_t n = events();
    char buf[32];
    for (std::size_t i = 0; i < n; ++i) {
        Event e;
        std::snprintf(buf, sizeof buf, "user%06d", static_cast<int>(rng() % 100000));
        e.user_id = buf;
        e.ts = kBase + static_cast<long long>(i * static_cast<double>(kHour) / n);
        e.amount = static_cast<int>(rng() % 100) + 1;
        std::snprintf(buf, sizeof buf, "/products/%05d", static_cast<int>(rng() % 100000));
        e.page = buf;
        ev.push_back(std::move(e));
    }
    return ev;
}

// --- protobuf bytes, written by a few lines of encoder (the reader's correctness is checked
// against Google's encoder in test/unit/protobuf_test.cpp) ---------------------------------
void varint(std::string& out, unsigned long long v) {
    while (v >= 0x80) {
        out += static_cast<char>(v | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v);
}
void len_field(std::string& out, int number, const std::string& bytes) {
    varint(out, static_cast<unsigned long long>(number) << 3 | 2);
    varint(out, bytes.size());
    out += bytes;
}
void varint_field(std::string& out, int number, unsigned long long v) {
    varint(out, static_cast<unsigned long long>(number) << 3);
    varint(out, v);
}

// message Event { string user_id = 1; int64 ts = 2; int32 amount = 3; string page = 4; }
std::string event_descriptor_set() {
    std::string msg;
    len_field(msg, 1, "Event");
    const struct {
        const char* name;
        int number, type;
    } fields[] = {{"user_id", 1, 9}, {"ts", 2, 3}, {"amount", 3, 5}, {"page", 4, 9}};
    for (const auto& f : fields) {
        std::string fd;
        len_field(fd, 1, f.name);
        varint_field(fd, 3, static_cast<unsigned long long>(f.number));
        varint_field(fd, 4, 1);  // LABEL_OPTIONAL
        varint_field(fd, 5, static_cast<unsigned long long>(f.type));
        len_field(msg, 2, fd);
    }
    std::string file;
    len_field(file, 1, "bench.proto");
    len_field(file, 2, "bench");
    len_field(file, 4, msg);
    len_field(file, 12, "proto3");
    std::string set;
    len_field(set, 1, file);
    return set;
}

struct Messages {
    std::string data;
    std::vector<std::size_t> offsets;
    std::size_t count() const { return offsets.size() - 1; }
    const char* at(std::size_t i) const { return data.data() + offsets[i]; }
    std::size_t len(std::size_t i) const { return offsets[i + 1] - offsets[i]; }
};

const Messages& json_messages() {
    static Messages m;
    if (!m.offsets.empty()) return m;
    char buf[256];
    for (const Event& e : the_events()) {
        m.offsets.push_back(m.data.size());
        const int n = std::snprintf(
            buf, sizeof buf, "{\"user_id\":\"%s\",\"ts\":%lld,\"amount\":%d,\"page\":\"%s\"}",
            e.user_id.c_str(), e.ts, e.amount, e.page.c_str());
        m.data.append(buf, static_cast<std::size_t>(n));
    }
    m.offsets.push_back(m.data.size());
    return m;
}

const Messages& protobuf_messages() {
    static Messages m;
    if (!m.offsets.empty()) return m;
    for (const Event& e : the_events()) {
        m.offsets.push_back(m.data.size());
        len_field(m.data, 1, e.user_id);
        varint_field(m.data, 2, static_cast<unsigned long long>(e.ts));
        varint_field(m.data, 3, static_cast<unsigned long long>(e.amount));
        len_field(m.data, 4, e.page);
    }
    m.offsets.push_back(m.data.size());
    return m;
}

std::vector<std::vector<std::string>> columns() {
    return {{"user_id"}, {"ts"}, {"amount"}, {"page"}};
}

template <typename Extract>
void rows_loop(benchmark::State& state, const Messages& msgs, Extract&& extract) {
    format::RawRows rows(4);
    for (auto _ : state) {
        for (std::size_t i = 0; i < msgs.count(); ++i) {
            if (rows.size() == kBatch) rows.clear();
            const std::size_t row = rows.add_row();
            if (!extract(msgs.at(i), msgs.len(i), rows, row))
                state.SkipWithError("a record did not decode");
        }
        benchmark::DoNotOptimize(rows.size());
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * msgs.count()));
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * msgs.data.size()));
}

void decode_rows_json(benchmark::State& state) {
    format::JsonRowExtractor x(columns());
    rows_loop(state, json_messages(),
              [&](const char* p, std::size_t n, format::RawRows& rows, std::size_t row) {
                  return x.extract(p, n, rows, row) == format::DeadReason::None;
              });
}

void decode_rows_protobuf(benchmark::State& state) {
    auto schema = format::ProtoSchema::parse(event_descriptor_set());
    format::ProtoRowExtractor x(schema, *schema->message("bench.Event"), columns());
    rows_loop(state, protobuf_messages(),
              [&](const char* p, std::size_t n, format::RawRows& rows, std::size_t row) {
                  return x.extract(p, n, rows, row) == format::DeadReason::None;
              });
}

#ifdef STOATFLOW_HAVE_LIBPROTOBUF
// The same rows through libprotobuf: parse into a DynamicMessage, read each field by reflection,
// write the same raw text.
void decode_rows_protobuf_libprotobuf(benchmark::State& state) {
    namespace gp = google::protobuf;
    gp::FileDescriptorSet set;
    if (!set.ParseFromString(event_descriptor_set())) {
        state.SkipWithError("descriptor set");
        return;
    }
    gp::DescriptorPool pool;
    for (const auto& f : set.file()) pool.BuildFile(f);
    const gp::Descriptor* d = pool.FindMessageTypeByName("bench.Event");
    gp::DynamicMessageFactory factory(&pool);
    std::unique_ptr<gp::Message> msg(factory.GetPrototype(d)->New());
    const gp::Reflection* r = msg->GetReflection();
    const gp::FieldDescriptor* f[4] = {d->FindFieldByName("user_id"), d->FindFieldByName("ts"),
                                       d->FindFieldByName("amount"), d->FindFieldByName("page")};
    std::string scratch;
    char num[24];
    rows_loop(
        state, protobuf_messages(),
        [&](const char* p, std::size_t n, format::RawRows& rows, std::size_t row) {
            if (!msg->ParseFromArray(p, static_cast<int>(n))) return false;
            rows.set(row, 0, format::RawKind::String, r->GetStringReference(*msg, f[0], &scratch));
            int len = std::snprintf(num, sizeof num, "%lld",
                                    static_cast<long long>(r->GetInt64(*msg, f[1])));
            rows.set(row, 1, format::RawKind::Number,
                     std::string_view(num, static_cast<std::size_t>(len)));
            len = std::snprintf(num, sizeof num, "%d", r->GetInt32(*msg, f[2]));
            rows.set(row, 2, format::RawKind::Number,
                     std::string_view(num, static_cast<std::size_t>(len)));
            rows.set(row, 3, format::RawKind::String, r->GetStringReference(*msg, f[3], &scratch));
            return true;
        });
}
BENCHMARK(decode_rows_protobuf_libprotobuf)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(3);
#endif

}  // namespace

BENCHMARK(decode_rows_json)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
BENCHMARK(decode_rows_protobuf)->Unit(benchmark::kMillisecond)->Iterations(1)->Repetitions(3);
