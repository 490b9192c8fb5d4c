// One Avro fuzz input, checked (avro_decoder_fuzz.cpp runs it under libFuzzer,
// test/unit/avro_fuzz_corpus_test.cpp replays test/fuzz/avro_corpus in every ctest run).
//
// Input: a selector byte, then the rest. Selectors 0-4 pick a built-in writer schema (with a
// reader schema for 4) and the rest is the Avro body; selector 5 reads the rest as a schema in
// JSON, a NUL byte, then the body, with the schema's top-level fields as the columns. Every input
// also goes through the Confluent framing.
//
// Oracles: a verdict is None, bad_avro or invalid_text; a body that decodes fills every String
// with UTF-8 without NUL, every Object and Array with JSON that simdjson's DOM parser accepts and
// every Number with a JSON number; and a writer schema resolved against itself as the reader
// gives the same verdict and the same values as without a reader.
#pragma once
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/avro.hpp"
#include "stoatflow/format/json_text.hpp"

#include <simdjson.h>

#include <cstring>
#include <string>
#include <vector>

namespace stoatflow::avro_fuzz {

using format::DeadReason;
using format::RawKind;
namespace avro = format::avro;

inline const char* const kSchemas[] = {
    // 0: nested records, unions, enums, arrays, maps
    R"({"type": "record", "name": "C", "namespace": "shop", "fields": [
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attrs", "type": {"type": "map", "values": ["null", "long", "bytes"]}},
        {"name": "user", "type": {"type": "record", "name": "User", "fields": [
            {"name": "id", "type": "string"},
            {"name": "geo", "type": ["null", {"type": "record", "name": "Geo", "fields": [
                {"name": "lat", "type": "double"}, {"name": "f", "type": "float"}]}]}]}},
        {"name": "note", "type": ["null", "string"]}]})",
    // 1: every primitive
    R"({"type": "record", "name": "P", "fields": [
        {"name": "b", "type": "boolean"}, {"name": "i", "type": "int"},
        {"name": "l", "type": "long"}, {"name": "f", "type": "float"},
        {"name": "d", "type": "double"}, {"name": "s", "type": "string"},
        {"name": "y", "type": "bytes"}, {"name": "n", "type": "null"}]})",
    // 2: logical types
    R"({"type": "record", "name": "L", "fields": [
        {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 300, "scale": 7}},
        {"name": "fix", "type": {"type": "fixed", "name": "F8", "size": 8, "logicalType": "decimal",
                                 "precision": 18, "scale": 3}},
        {"name": "tms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "tus", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "all", "type": {"type": "array", "items": {"type": "long", "logicalType": "timestamp-micros"}}}]})",
    // 3: a recursive list
    R"({"type": "record", "name": "Node", "fields": [
        {"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}]})",
    // 4: a writer read through another reader schema (see kReader4)
    R"({"type": "record", "name": "E", "fields": [
        {"name": "a", "type": "int"}, {"name": "b", "type": "bytes"},
        {"name": "gone", "type": {"type": "array", "items": "long"}},
        {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["X", "Y", "Z"]}},
        {"name": "s", "type": "string"}]})",
};
inline const char* const kReader4 = R"({"type": "record", "name": "E", "fields": [
    {"name": "a", "type": "double"}, {"name": "b", "type": "string"},
    {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["X", "Y"], "default": "X"}},
    {"name": "s", "type": "bytes"}, {"name": "c", "type": "int", "default": 42}]})";

inline avro::ColumnPaths columns_of(int which, const avro::Schema& s) {
    switch (which) {
    case 0:
        return {{"kind"},        {"tags"}, {"attrs"}, {"user", "id"}, {"user", "geo", "lat"},
                {"user", "geo"}, {"user"}, {"note"}};
    case 3: return {{"v"}, {"next", "v"}, {"next", "next", "next", "v"}, {"next"}};
    case 4: return {{"a"}, {"b"}, {"k"}, {"s"}, {"c"}};
    default: break;
    }
    avro::ColumnPaths out;
    const avro::Node& root = s.node(s.root());
    if (root.type != avro::Type::Record) return {{}};
    for (const avro::Field& f : root.fields) out.push_back({f.name});
    return out;
}

struct Result {
    DeadReason reason;
    std::vector<std::pair<RawKind, std::string>> values;
};

inline std::string check_values(const Result& r) {
    if (r.reason != DeadReason::None && r.reason != DeadReason::BadAvro &&
        r.reason != DeadReason::InvalidText)
        return std::string("unexpected verdict ") + format::to_string(r.reason);
    if (r.reason != DeadReason::None) return {};
    simdjson::dom::parser dom;
    for (const auto& [kind, text] : r.values) {
        switch (kind) {
        case RawKind::String:
            if (std::memchr(text.data(), 0, text.size()) ||
                !simdjson::validate_utf8(text.data(), text.size()))
                return "a String that is not clean text";
            break;
        case RawKind::Object:
        case RawKind::Array: {
            simdjson::dom::element e;
            if (dom.parse(text).get(e)) return "JSON text the DOM parser refuses: " + text;
            if ((e.type() == simdjson::dom::element_type::OBJECT) != (kind == RawKind::Object))
                return "JSON text of the wrong kind: " + text;
            break;
        }
        case RawKind::Number: {
            bool integer = false;
            if (!format::json_number(text, integer)) return "a Number that is no number: " + text;
            break;
        }
        default: break;
        }
    }
    return {};
}

inline Result run(avro::Program& prog, const std::uint8_t* body, std::size_t len) {
    format::RawRows rows(prog.columns());
    const std::size_t row = rows.add_row();
    Result r{prog.read(body, len, rows, row), {}};
    for (std::size_t c = 0; c < prog.columns(); ++c) {
        const format::RawValue v = rows.get(row, c);
        r.values.emplace_back(v.kind, std::string(v.text));
    }
    return r;
}

// "" when every oracle holds, else what failed.
inline std::string check_one(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return {};
    avro::Framed framed;
    std::string detail;
    const DeadReason fr = avro::split_confluent(data, size, framed, detail);
    if (fr == DeadReason::None && (data[0] != 0 || size < 5 || framed.body_len != size - 5))
        return "framing accepted a bad frame";
    if (fr != DeadReason::None && fr != DeadReason::BadAvro) return "framing verdict";

    const int which = data[0] % 6;
    const std::uint8_t* body = data + 1;
    std::size_t len = size - 1;
    avro::Schema writer;
    try {
        if (which < 5) {
            writer = avro::Schema::parse(kSchemas[which]);
        } else {
            const auto* nul = static_cast<const std::uint8_t*>(std::memchr(body, 0, len));
            if (!nul) return {};
            writer = avro::Schema::parse(
                std::string_view(reinterpret_cast<const char*>(body), nul - body));
            len -= static_cast<std::size_t>(nul + 1 - body);
            body = nul + 1;
        }
    } catch (const Error&) {
        if (which < 5) return "a built-in schema refused";
        return {};  // a schema that is not one: refused with a reason, fine
    }
    const avro::ColumnPaths columns = columns_of(which, writer);
    if (which == 4) {
        const avro::Schema reader = avro::Schema::parse(kReader4);
        avro::Program prog(writer, &reader, columns);
        return check_values(run(prog, body, len));
    }
    avro::Program plain(writer, nullptr, columns);
    const Result a = run(plain, body, len);
    if (std::string e = check_values(a); !e.empty()) return e;
    try {
        avro::Program self(writer, &writer, columns);
        const Result b = run(self, body, len);
        if (b.reason != a.reason) return "resolved against itself: another verdict";
        if (a.reason == DeadReason::None && b.values != a.values)
            return "resolved against itself: other values";
    } catch (const Error& e) {
        return std::string("a schema does not resolve against itself: ") + e.what();
    }
    return {};
}

}  // namespace stoatflow::avro_fuzz
