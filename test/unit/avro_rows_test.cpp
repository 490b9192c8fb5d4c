// format 'avro' through the one seam (format::parse_record_format, format::make_row_decoder):
// the options and their refusals, an inline schema, Confluent-framed records whose writer
// schemas come by id from a SchemaSource (Pending: not ready, no dead letter; NotFound:
// bad_schema_id; not Avro or not readable into the columns: bad_avro), a reader schema's
// defaults, and the record path's ready() that the worker asks before it hands records on.
#include "stoatflow/core/error.hpp"
#include "stoatflow/flow/record_path.hpp"
#include "stoatflow/format/avro_rows.hpp"
#include "stoatflow/format/row_decoder.hpp"
#include "stoatflow/format/schema_source.hpp"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace stoatflow;
using format::DeadReason;
using format::FormatOption;
using format::SchemaSource;

namespace {

// Avro's binary encoding, enough for the tests: zig-zag varints and length-prefixed strings.
struct Body {
    std::string bytes;
    Body& l(std::int64_t v) {
        auto u = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
        while (u >= 0x80) {
            bytes += static_cast<char>((u & 0x7f) | 0x80);
            u >>= 7;
        }
        bytes += static_cast<char>(u);
        return *this;
    }
    Body& s(const std::string& t) {
        l(static_cast<std::int64_t>(t.size()));
        bytes += t;
        return *this;
    }
    Body& raw(const std::string& t) {
        bytes += t;
        return *this;
    }
};

std::string framed(std::uint32_t id, const Body& b) {
    std::string out(1, '\0');
    for (int shift : {24, 16, 8, 0}) out += static_cast<char>((id >> shift) & 0xff);
    return out + b.bytes;
}

const char* kV1 = R"({"type": "record", "name": "E", "fields": [
    {"name": "user", "type": "string"}, {"name": "amount", "type": "long"}]})";
// v2 drops amount and adds region with a default.
const char* kV2 = R"({"type": "record", "name": "E", "fields": [
    {"name": "user", "type": "string"},
    {"name": "region", "type": "string", "default": "eu"}]})";
const char* kReader = R"({"type": "record", "name": "E", "fields": [
    {"name": "user", "type": "string"},
    {"name": "amount", "type": ["null", "long"], "default": null},
    {"name": "region", "type": "string", "default": "eu"}]})";

FormatOption opt(const std::string& name, const std::string& value) {
    return {name, value, FormatOption::Type::String};
}

class MapSchemas final : public SchemaSource {
public:
    std::map<std::uint32_t, std::pair<State, std::string>> answers;  // absent: Pending
    std::string type = "AVRO";
    int lookups = 0;
    Answer lookup(std::uint32_t id) override {
        ++lookups;
        Answer a;
        auto it = answers.find(id);
        if (it == answers.end()) return a;
        a.state = it->second.first;
        if (a.state == State::Ready)
            a.text = std::make_shared<const std::string>(it->second.second);
        else
            a.detail = it->second.second;
        a.type = type;
        return a;
    }
    std::string unavailable() const override { return ""; }
};

struct Read {
    DeadReason reason = DeadReason::None;
    std::string detail;
    std::vector<std::string> values;  // "<absent>", "<null>" or the text
};

Read decode(format::RowDecoder& d, const std::string& msg, std::size_t columns) {
    format::RawRows rows(columns);
    const std::size_t r = rows.add_row();
    bool skip = true;
    Read out;
    out.reason = d.decode(msg.data(), msg.size(), false, rows, r, skip);
    EXPECT_FALSE(skip);
    out.detail = d.detail();
    if (out.reason == DeadReason::None)
        for (std::size_t c = 0; c < columns; ++c) {
            const format::RawValue v = rows.get(r, c);
            out.values.push_back(v.kind == format::RawKind::Absent ? "<absent>"
                                 : v.kind == format::RawKind::Null ? "<null>"
                                                                   : std::string(v.text));
        }
    return out;
}

std::string refusal(const std::vector<FormatOption>& options) {
    try {
        format::parse_record_format("avro", options);
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), sqlstate::kInvalidParameterValue);
        return e.what();
    }
    return "";
}

}  // namespace

TEST(AvroRows, OptionsAndTheirRefusals) {
    const format::RecordFormat inl = format::parse_record_format("avro", {opt("schema", kV1)});
    EXPECT_EQ(inl.kind, format::FormatKind::Avro);
    EXPECT_FALSE(inl.uses_registry());
    EXPECT_STREQ(format::format_name(inl.kind), "avro");
    // The schema as a JSON object (format_options' value as JSON text).
    EXPECT_NO_THROW(format::parse_record_format(
        "avro", {{"schema", std::string(kV1), FormatOption::Type::Other}}));
    const format::RecordFormat reg = format::parse_record_format(
        "avro", {opt("schema_registry_url", "http://r:8081"), opt("schema_registry_user", "u"),
                 opt("schema_registry_password", "s3cret-pw")});
    EXPECT_TRUE(reg.uses_registry());
    EXPECT_EQ(reg.avro.registry_password, "s3cret-pw");

    EXPECT_NE(refusal({}).find("exactly one"), std::string::npos);
    EXPECT_NE(
        refusal({opt("schema", kV1), opt("schema_registry_url", "http://r")}).find("exactly one"),
        std::string::npos);
    EXPECT_NE(refusal({opt("schema", "{\"type\": \"recrod\"}")}).find("invalid Avro schema"),
              std::string::npos);
    EXPECT_NE(refusal({opt("schema", "not json")}).find("invalid Avro schema"), std::string::npos);
    EXPECT_NE(refusal({opt("schema", kV1), opt("delimiter", ",")})
                  .find("unknown format option \"delimiter\" for format avro"),
              std::string::npos);
    EXPECT_NE(refusal({opt("schema", kV1), opt("schema_registry_user", "u")}).find("need"),
              std::string::npos);
    EXPECT_NE(refusal({opt("schema_registry_url", "http://r"), opt("reader_schema", "x")})
                  .find("invalid Avro schema"),
              std::string::npos);
    EXPECT_NE(
        refusal({opt("schema", kV1), opt("reader_schema", kV1)}).find("\"reader_schema\" needs"),
        std::string::npos);
    // A password without a user, or a password of the wrong type: never quoted back.
    const std::string m = refusal(
        {opt("schema_registry_url", "http://r"), opt("schema_registry_password", "s3cret-pw")});
    EXPECT_NE(m.find("needs \"schema_registry_user\""), std::string::npos);
    EXPECT_EQ(m.find("s3cret"), std::string::npos);
    const std::string t =
        refusal({opt("schema_registry_url", "http://r"),
                 opt("schema_registry_user", "u"),
                 {"schema_registry_password", "12345", FormatOption::Type::Other}});
    EXPECT_NE(t.find("must be a string"), std::string::npos);
    EXPECT_EQ(t.find("12345"), std::string::npos);
}

TEST(AvroRows, InlineSchemaBareBodies) {
    const format::RecordFormat f = format::parse_record_format("avro", {opt("schema", kV1)});
    auto d = format::make_row_decoder(f, {"amount", "user"}, {{"amount"}, {"user"}});
    EXPECT_TRUE(d->ready("\x00\x00\x00\x00\x07", 5, nullptr, 0));
    Read r = decode(*d, Body().s("alice").l(-42).bytes, 2);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    EXPECT_EQ(r.values, (std::vector<std::string>{"-42", "alice"}));
    // Truncated, bytes left over, a length far beyond the body (nothing allocated from it).
    EXPECT_EQ(decode(*d, Body().s("alice").bytes, 2).reason, DeadReason::BadAvro);
    EXPECT_EQ(decode(*d, Body().s("a").l(1).raw("xx").bytes, 2).reason, DeadReason::BadAvro);
    const Read huge = decode(*d, Body().l(std::int64_t{1} << 60).bytes, 2);
    EXPECT_EQ(huge.reason, DeadReason::BadAvro);
    EXPECT_FALSE(huge.detail.empty());
    EXPECT_EQ(decode(*d, "", 2).reason, DeadReason::BadAvro);
}

TEST(AvroRows, RegistryIdsPendingReadyNotFound) {
    auto schemas = std::make_shared<MapSchemas>();
    format::RecordFormat f = format::parse_record_format(
        "avro", {opt("schema_registry_url", "http://r:8081"), opt("reader_schema", kReader)});
    f.schemas = schemas;
    auto d = format::make_row_decoder(f, {"user", "amount", "region"},
                                      {{"user"}, {"amount"}, {"region"}});
    const std::string m1 = framed(1, Body().s("bo").l(7));
    const std::string m2 = framed(2, Body().s("cy").s("us"));
    EXPECT_FALSE(
        d->ready(m1.data(), m1.size(), nullptr, 0));  // id 1 not fetched yet: the record waits
    EXPECT_FALSE(d->ready(m1.data(), m1.size(), nullptr, 0));
    schemas->answers[1] = {SchemaSource::State::Ready, kV1};
    schemas->answers[2] = {SchemaSource::State::Ready, kV2};
    EXPECT_TRUE(d->ready(m1.data(), m1.size(), nullptr, 0));
    EXPECT_TRUE(d->ready(m2.data(), m2.size(), nullptr, 0));
    const int asked = schemas->lookups;
    Read r = decode(*d, m1, 3);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    // v1 lacks region: the reader schema's default.
    EXPECT_EQ(r.values, (std::vector<std::string>{"bo", "7", "eu"}));
    r = decode(*d, m2, 3);
    ASSERT_EQ(r.reason, DeadReason::None) << r.detail;
    // v2 lacks amount: the reader's default, null.
    EXPECT_EQ(r.values, (std::vector<std::string>{"cy", "<null>", "us"}));
    EXPECT_EQ(schemas->lookups, asked);  // compiled once per id: no lookup per record

    // A message that is no frame is ready (a dead letter, not a wait).
    EXPECT_TRUE(d->ready("\x01", 1, nullptr, 0));
    r = decode(*d, std::string("\x05\x00\x00\x00\x01\x02", 6), 3);
    EXPECT_EQ(r.reason, DeadReason::BadAvro);
    EXPECT_NE(r.detail.find("magic byte 5"), std::string::npos);
    EXPECT_EQ(decode(*d, std::string("\x00\x00", 2), 3).reason, DeadReason::BadAvro);
    // A known id whose body does not decode: a union index out of range.
    r = decode(*d, framed(1, Body().s("x").l(1).l(3)), 3);
    EXPECT_EQ(r.reason, DeadReason::BadAvro);

    // An id the registry does not know: bad_schema_id with its answer.
    schemas->answers[9] = {SchemaSource::State::NotFound,
                           "registry http://r:8081: 404 Schema not found"};
    const std::string m9 = framed(9, Body().s("z"));
    EXPECT_TRUE(d->ready(m9.data(), m9.size(), nullptr, 0));
    r = decode(*d, m9, 3);
    EXPECT_EQ(r.reason, DeadReason::BadSchemaId);
    EXPECT_NE(r.detail.find("schema id 9"), std::string::npos);
    EXPECT_NE(r.detail.find("404 Schema not found"), std::string::npos);

    // A writer schema that cannot be read into the columns (amount a string): bad_avro, named.
    schemas->answers[3] = {SchemaSource::State::Ready,
                           R"({"type": "record", "name": "E", "fields": [
                                {"name": "user", "type": "string"},
                                {"name": "amount", "type": "string"}]})"};
    r = decode(*d, framed(3, Body().s("a").s("b")), 3);
    EXPECT_EQ(r.reason, DeadReason::BadAvro);
    EXPECT_NE(r.detail.find("schema id 3 cannot be read into the columns"), std::string::npos);
    // Garbage where a schema should be.
    schemas->answers[4] = {SchemaSource::State::Ready, "{\"type\": 17}"};
    r = decode(*d, framed(4, Body().s("a")), 3);
    EXPECT_EQ(r.reason, DeadReason::BadAvro);
    EXPECT_NE(r.detail.find("schema id 4"), std::string::npos);
}

TEST(AvroRows, AProtobufSchemaIsNotAvro) {
    auto schemas = std::make_shared<MapSchemas>();
    schemas->type = "PROTOBUF";
    schemas->answers[5] = {SchemaSource::State::Ready, "syntax = \"proto3\";"};
    format::RecordFormat f =
        format::parse_record_format("avro", {opt("schema_registry_url", "http://r")});
    f.schemas = schemas;
    auto d = format::make_row_decoder(f, {"user"}, {{"user"}});
    const Read r = decode(*d, framed(5, Body().s("a")), 1);
    EXPECT_EQ(r.reason, DeadReason::BadAvro);
    EXPECT_NE(r.detail.find("PROTOBUF"), std::string::npos);
}

TEST(AvroRows, WithoutASchemaSourceFramedRecordsAreBadSchemaId) {
    const format::RecordFormat f =
        format::parse_record_format("avro", {opt("schema_registry_url", "http://r")});
    auto d = format::make_row_decoder(f, {"user"}, {{"user"}});
    const Read r = decode(*d, framed(1, Body().s("a")), 1);
    EXPECT_EQ(r.reason, DeadReason::BadSchemaId);
}

TEST(AvroRows, TheRecordPathAsksReady) {
    auto schemas = std::make_shared<MapSchemas>();
    flow::RecordPathConfig c;
    c.topics = {"t"};
    flow::RowPlan plan;
    plan.names = {
        "user",         "amount",          "kafka_key",    "kafka_topic", "kafka_partition",
        "kafka_offset", "kafka_timestamp", "kafka_headers"};
    plan.paths = {{"user"}, {"amount"}};
    using format::FastType;
    plan.fast = {FastType::Text, FastType::Int8, FastType::Text,        FastType::Text,
                 FastType::Int4, FastType::Int8, FastType::Timestamptz, FastType::Other};
    plan.key_col = 0;
    plan.time_col = 6;
    plan.format = format::parse_record_format("avro", {opt("schema_registry_url", "http://r")});
    plan.format.schemas = schemas;
    c.row = plan;
    flow::RecordPathConfig::Aggregation a;
    a.name = "per_minute";
    a.spec = core::WindowSpec::tumbling(60'000, 0);
    a.aggregates = {{core::AggFn::CountStar, "", "count"}, {core::AggFn::Sum, "amount", "sum"}};
    a.retention = 3'600'000;
    c.aggregations.push_back(a);
    flow::RecordPath p(c);
    ASSERT_NE(p.row_format(), nullptr);
    EXPECT_TRUE(p.row_format()->schemas);
    const std::string m = framed(1, Body().s("u").l(5));
    EXPECT_FALSE(p.ready(m.data(), m.size(), nullptr, 0));
    schemas->answers[1] = {SchemaSource::State::Ready, kV1};
    EXPECT_TRUE(p.ready(m.data(), m.size(), nullptr, 0));
    p.process(0, 0, 0, m.data(), m.size(), "k", 1, 1000, 2000);
    const flow::CommitSnapshot s = p.take_snapshot(3000);
    EXPECT_TRUE(s.dead.empty());
    EXPECT_EQ(s.records, 1);
}

TEST(AvroRows, ColumnsFromTheWriterSchema) {
    const auto s = format::avro::Schema::parse(R"({"type": "record", "name": "E", "fields": [
        {"name": "userId", "type": "string"}, {"name": "n", "type": "int"},
        {"name": "amount", "type": ["null", "long"]}, {"name": "f", "type": "float"},
        {"name": "d", "type": "double"}, {"name": "ok", "type": "boolean"},
        {"name": "raw", "type": "bytes"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                   "scale": 2}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": "long"}}]})");
    EXPECT_EQ(format::avro_column_list(s),
              "\"userId\" text, \"n\" integer, \"amount\" bigint, \"f\" real, \"d\" double "
              "precision, \"ok\" boolean, \"raw\" bytea, \"price\" numeric, \"ts\" timestamptz, "
              "\"day\" date, \"id\" uuid, \"kind\" text, \"tags\" jsonb, \"attrs\" jsonb");
    try {
        format::avro_column_list(format::avro::Schema::parse(
            R"({"type": "record", "name": "E", "fields": [{"name": "user", "type":
                {"type": "record", "name": "U", "fields": [{"name": "id", "type": "long"}]}}]})"));
        ADD_FAILURE() << "a nested record was mapped";
    } catch (const Error& e) {
        EXPECT_EQ(e.sqlstate(), sqlstate::kFeatureNotSupported);
        EXPECT_NE(std::string(e.what()).find("\"user\""), std::string::npos);
        EXPECT_NE(e.hint().find("PATH ''$.user.id''"), std::string::npos);
    }
    EXPECT_THROW(format::avro_column_list(format::avro::Schema::parse(
                     R"({"type": "record", "name": "E", "fields": [
                         {"name": "u", "type": ["null", "long", "string"]}]})")),
                 Error);
    EXPECT_THROW(format::avro_column_list(format::avro::Schema::parse("\"long\"")), Error);
}

TEST(AvroRows, RegistryFramedKeys) {
    auto schemas = std::make_shared<MapSchemas>();
    format::RecordFormat f =
        format::parse_record_format("avro", {opt("schema_registry_url", "http://r")});
    f.schemas = schemas;
    auto d = format::make_row_decoder(f, {"user"}, {{"user"}});
    const std::string value = framed(1, Body().s("u").l(5));
    const std::string skey = framed(7, Body().s("k-1"));  // a string key
    const std::string rkey = framed(8, Body().s("ab").l(-3));
    schemas->answers[1] = {SchemaSource::State::Ready, kV1};
    // The key's schema is pending: the record waits for it too.
    EXPECT_FALSE(d->ready(value.data(), value.size(), skey.data(), skey.size()));
    schemas->answers[7] = {SchemaSource::State::Ready, "\"string\""};
    schemas->answers[8] = {SchemaSource::State::Ready,
                           R"({"type": "record", "name": "K", "fields": [
                                {"name": "id", "type": "string"}, {"name": "n", "type": "long"}]})"};
    schemas->answers[9] = {SchemaSource::State::Ready, "[\"null\", \"long\"]"};
    EXPECT_TRUE(d->ready(value.data(), value.size(), skey.data(), skey.size()));
    std::string text;
    bool null = true;
    ASSERT_TRUE(d->key_text(skey.data(), skey.size(), text, null));
    EXPECT_EQ(text, "k-1");
    EXPECT_FALSE(null);
    ASSERT_TRUE(d->key_text(rkey.data(), rkey.size(), text, null));
    EXPECT_EQ(text, R"({"id":"ab","n":-3})");
    const std::string nkey = framed(9, Body().l(0));  // union branch null
    ASSERT_TRUE(d->key_text(nkey.data(), nkey.size(), text, null));
    EXPECT_TRUE(null);
    // Not framed, an unknown id, a body that does not decode: the key as it is.
    EXPECT_FALSE(d->key_text("plain", 5, text, null));
    schemas->answers[10] = {SchemaSource::State::NotFound, "404"};
    const std::string ukey = framed(10, Body().s("x"));
    EXPECT_FALSE(d->key_text(ukey.data(), ukey.size(), text, null));
    const std::string bad = framed(7, Body().l(100));
    EXPECT_FALSE(d->key_text(bad.data(), bad.size(), text, null));
    // An inline schema reads no keys.
    auto i = format::make_row_decoder(format::parse_record_format("avro", {opt("schema", kV1)}),
                                      {"user"}, {{"user"}});
    EXPECT_FALSE(i->key_text(skey.data(), skey.size(), text, null));
}
