// format 'protobuf' with a schema registry (protobuf_registry.cpp) through the seam: Confluent
// frames (schema id, message indexes) whose schemas, .proto text, come from a SchemaSource (a
// map here; the worker's is the registry's cache), read once per id; the message the indexes or
// the "message" option name; a Pending id holds the record back (ready), a 404 is
// bad_schema_id, everything else that cannot be read bad_protobuf.
#include "stoatflow/format/row_decoder.hpp"
#include "stoatflow/format/schema_source.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace {

#include "protobuf_fixtures.inc"

using stoatflow::format::DeadReason;
using stoatflow::format::FormatOption;
using stoatflow::format::RawKind;
using stoatflow::format::RawRows;
using stoatflow::format::RecordFormat;
using stoatflow::format::SchemaSource;

class MapSchemas final : public SchemaSource {
public:
    std::map<std::uint32_t, Answer> answers;
    int lookups = 0;
    Answer lookup(std::uint32_t id) override {
        ++lookups;
        auto it = answers.find(id);
        return it == answers.end() ? Answer{} : it->second;  // unknown: Pending
    }
    std::string unavailable() const override { return ""; }
    void ready(std::uint32_t id, const std::string& text, const std::string& type = "PROTOBUF") {
        Answer a;
        a.state = State::Ready;
        a.text = std::make_shared<const std::string>(text);
        a.type = type;
        answers[id] = a;
    }
};

// Magic byte 0, the id big-endian, the indexes (zigzag count, zigzag values; {} as one 0).
std::string frame(std::uint32_t id, const std::vector<int>& indexes, const std::string& body) {
    std::string f(1, '\0');
    for (int shift = 24; shift >= 0; shift -= 8) f += static_cast<char>(id >> shift & 0xff);
    f += static_cast<char>(indexes.size() * 2);
    for (int i : indexes) f += static_cast<char>(i * 2);
    return f + body;
}

RecordFormat registry_format(std::shared_ptr<SchemaSource> schemas, const std::string& message) {
    std::vector<FormatOption> options{{"schema_registry_url", "http://r:8081"}};
    if (!message.empty()) options.push_back({"message", message});
    RecordFormat f = stoatflow::format::parse_record_format("protobuf", options);
    f.schemas = std::move(schemas);
    return f;
}

struct Decoded {
    DeadReason reason;
    std::string detail;
    std::vector<std::string> cols;
};

Decoded decode(stoatflow::format::RowDecoder& d, const std::string& payload, std::size_t width) {
    RawRows rows(width);
    const std::size_t row = rows.add_row();
    bool skip = false;
    Decoded out{d.decode(payload.data(), payload.size(), false, rows, row, skip), d.detail(), {}};
    if (out.reason == DeadReason::None)
        for (std::size_t c = 0; c < width; ++c)
            out.cols.push_back(rows.get(row, c).kind == RawKind::Absent
                                   ? "<absent>"
                                   : std::string(rows.get(row, c).text));
    return out;
}

TEST(ProtobufRegistry, TheFramesIdAndIndexesPickSchemaAndMessage) {
    auto schemas = std::make_shared<MapSchemas>();
    schemas->ready(7, kShopProtoText);
    const std::vector<std::string> names{"id", "status", "city"};
    auto dec = stoatflow::format::make_row_decoder(
        registry_format(schemas, ""), names, {{"id"}, {"status"}, {"customer", "address", "city"}});
    const std::string full = frame(7, {1}, kCase_full);  // shop.proto's second message: Order
    EXPECT_TRUE(dec->ready(full.data(), full.size(), nullptr, 0));
    const Decoded d = decode(*dec, full, 3);
    ASSERT_EQ(d.reason, DeadReason::None) << d.detail;
    EXPECT_EQ(d.cols, (std::vector<std::string>{"o-1", "SHIPPED", "Z\u00fcrich"}));
    // The schema was read once: the same id again asks no more.
    const int asked = schemas->lookups;
    EXPECT_EQ(decode(*dec, full, 3).reason, DeadReason::None);
    EXPECT_EQ(schemas->lookups, asked);
    // Index {0} (one 0 byte) is shop.Line, which has no field "id".
    const Decoded line = decode(*dec, frame(7, {}, ""), 3);
    EXPECT_EQ(line.reason, DeadReason::BadProtobuf);
    EXPECT_NE(line.detail.find("schema id 7 cannot be read into the columns"), std::string::npos);
    // Indexes the schema does not have.
    const Decoded far = decode(*dec, frame(7, {9}, ""), 3);
    EXPECT_EQ(far.reason, DeadReason::BadProtobuf);
    EXPECT_EQ(far.detail, "schema id 7 has no message at the indexes [9]");
    // A wrong magic byte, a frame cut short.
    EXPECT_EQ(decode(*dec, "\x01" + full.substr(1), 3).reason, DeadReason::BadProtobuf);
    EXPECT_EQ(decode(*dec, full.substr(0, 3), 3).reason, DeadReason::BadProtobuf);
}

TEST(ProtobufRegistry, TheMessageOptionOverridesTheIndexes) {
    auto schemas = std::make_shared<MapSchemas>();
    schemas->ready(7, kShopProtoText);
    auto dec = stoatflow::format::make_row_decoder(registry_format(schemas, "shop.Order"), {"id"},
                                                   {{"id"}});
    const Decoded d = decode(*dec, frame(7, {}, kCase_full), 1);
    ASSERT_EQ(d.reason, DeadReason::None) << d.detail;
    EXPECT_EQ(d.cols, std::vector<std::string>{"o-1"});
}

TEST(ProtobufRegistry, PendingWaitsNotFoundIsBadSchemaIdTheRestBadProtobuf) {
    auto schemas = std::make_shared<MapSchemas>();
    auto dec = stoatflow::format::make_row_decoder(registry_format(schemas, "shop.Order"), {"id"},
                                                   {{"id"}});
    const std::string rec = frame(3, {1}, kCase_full);
    EXPECT_FALSE(
        dec->ready(rec.data(), rec.size(), nullptr, 0));  // Pending: held back, no dead letter
    schemas->ready(3, kShopProtoText);
    EXPECT_TRUE(dec->ready(rec.data(), rec.size(), nullptr, 0));
    EXPECT_EQ(decode(*dec, rec, 1).reason, DeadReason::None);
    // Not a frame: ready (it is a dead letter when decoded).
    EXPECT_TRUE(dec->ready("x", 1, nullptr, 0));

    SchemaSource::Answer missing;
    missing.state = SchemaSource::State::NotFound;
    missing.detail = "HTTP 404: Schema 4 not found";
    schemas->answers[4] = missing;
    const Decoded nf = decode(*dec, frame(4, {1}, kCase_full), 1);
    EXPECT_EQ(nf.reason, DeadReason::BadSchemaId);
    EXPECT_EQ(nf.detail, "schema id 4: HTTP 404: Schema 4 not found");
    schemas->ready(5, "{\"type\": \"record\"}", "AVRO");
    const Decoded avro = decode(*dec, frame(5, {1}, kCase_full), 1);
    EXPECT_EQ(avro.reason, DeadReason::BadProtobuf);
    EXPECT_EQ(avro.detail, "schema id 5 is a AVRO schema, not Protobuf");
    schemas->ready(6, "syntax = \"proto3\";\nmessage Order {\n  Nope n = 1;\n}");
    const Decoded bad = decode(*dec, frame(6, {0}, kCase_full), 1);
    EXPECT_EQ(bad.reason, DeadReason::BadProtobuf);
    EXPECT_NE(bad.detail.find("schema id 6: schema-6.proto:3:3: field n names the type Nope"),
              std::string::npos);
    // A schema importing another file (a registry reference) is not read yet.
    schemas->ready(8,
                   "syntax = \"proto3\"; import \"other.proto\"; message Order { string id = 1; }");
    EXPECT_EQ(decode(*dec, frame(8, {0}, kCase_full), 1).reason, DeadReason::BadProtobuf);
    // A body that does not decode.
    EXPECT_EQ(decode(*dec, frame(3, {1}, "\xff"), 1).reason, DeadReason::BadProtobuf);
}

}  // namespace
