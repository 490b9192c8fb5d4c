// libFuzzer target for the protobuf reader (include/stoatflow/format/protobuf.hpp): any bytes as a
// message body of shop.Order or shop.Tree (test/unit/protobuf_reference/shop.proto, every field a
// column), as a Confluent frame, and as a descriptor set must give a verdict without a crash.
// Oracles: an accepted record's JSON columns are valid JSON (simdjson's validating DOM parser),
// its string columns valid UTF-8, and reading the same bytes twice gives the same row.
// The first input byte picks what the rest is read as.
#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/protobuf.hpp"

#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

#include "../unit/protobuf_fixtures.inc"

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "fuzz check failed at line %d: %s\n", __LINE__, #cond);           \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

using namespace stoatflow::format;

struct Target {
    std::shared_ptr<const ProtoSchema> schema = ProtoSchema::parse(kShopDescriptorSet);
    std::vector<std::vector<std::string>> paths(const char* message) {
        std::vector<std::vector<std::string>> p;
        for (const ProtoField& f : schema->message(message)->fields) p.push_back({f.name});
        if (std::string(message) == "shop.Order")
            for (const char* n : {"name", "address"}) p.push_back({"customer", n});
        return p;
    }
    ProtoRowExtractor order{schema, *schema->message("shop.Order"), paths("shop.Order")};
    ProtoRowExtractor tree{schema, *schema->message("shop.Tree"), paths("shop.Tree")};
    simdjson::dom::parser dom;
};

std::string snapshot(const RawRows& rows, std::size_t row) {
    std::string s;
    for (std::size_t c = 0; c < rows.width(); ++c) {
        const RawValue v = rows.get(row, c);
        s += static_cast<char>(v.kind);
        s += std::to_string(v.text.size()) + ":";
        s.append(v.text);
    }
    return s;
}

void check_body(Target& t, ProtoRowExtractor& x, const std::string& body) {
    RawRows rows(x.columns());
    const std::size_t a = rows.add_row();
    const DeadReason r = x.extract(body.data(), body.size(), rows, a);
    FUZZ_CHECK(r == DeadReason::None || r == DeadReason::BadProtobuf);
    FUZZ_CHECK((r == DeadReason::None) == x.detail().empty());
    if (r != DeadReason::None) return;
    for (std::size_t c = 0; c < rows.width(); ++c) {
        const RawValue v = rows.get(a, c);
        if (v.kind == RawKind::Object || v.kind == RawKind::Array) {
            simdjson::padded_string json(v.text);
            FUZZ_CHECK(t.dom.parse(json).error() == simdjson::SUCCESS);
        } else if (v.kind == RawKind::String) {
            FUZZ_CHECK(stoatflow::core::is_valid_utf8(v.text.data(), v.text.size()));
        }
    }
    const std::size_t b = rows.add_row();
    FUZZ_CHECK(x.extract(body.data(), body.size(), rows, b) == DeadReason::None);
    FUZZ_CHECK(snapshot(rows, a) == snapshot(rows, b));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Target t;
    if (size == 0) return 0;
    const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 4) {
    case 0: check_body(t, t.order, rest); break;
    case 1: check_body(t, t.tree, rest); break;
    case 2: {
        ConfluentProto f;
        std::string detail;
        if (split_confluent_proto(rest, f, detail)) {
            FUZZ_CHECK(!f.indexes.empty());
            (void)t.schema->message_at(f.indexes);
            check_body(t, t.order, std::string(f.body));
        } else {
            FUZZ_CHECK(!detail.empty());
        }
        break;
    }
    default:
        try {
            auto s = ProtoSchema::parse(rest);
            for (const std::string& name : s->message_names())
                FUZZ_CHECK(s->message(name) != nullptr);
        } catch (const ProtoSchemaError&) {
        }
        break;
    }
    return 0;
}
