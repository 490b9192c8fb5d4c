// Protocol Buffers records as raw rows (raw_row.hpp): the schema from a serialized
// FileDescriptorSet (what `protoc --include_imports --descriptor_set_out` writes), a reader that
// picks a source's columns out of one message body in one pass, and the Confluent framing
// (magic byte, schema id, message indexes). Pure C++; a reader of our own rather than
// libprotobuf's DynamicMessage (src/README.md says why). The type mapping: src/format/README.md.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/format/dead_reason.hpp"
#include "stoatflow/format/raw_row.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace stoatflow::format {

// A descriptor set that cannot be read, a message or a column path the schema does not have: the
// declaration is refused with this text.
class ProtoSchemaError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// FieldDescriptorProto.Type, numbered as descriptor.proto numbers them.
enum class ProtoType : std::uint8_t {
    Double = 1,
    Float = 2,
    Int64 = 3,
    Uint64 = 4,
    Int32 = 5,
    Fixed64 = 6,
    Fixed32 = 7,
    Bool = 8,
    String = 9,
    Group = 10,
    Message = 11,
    Bytes = 12,
    Uint32 = 13,
    Enum = 14,
    Sfixed32 = 15,
    Sfixed64 = 16,
    Sint32 = 17,
    Sint64 = 18,
};

struct ProtoEnum {
    std::string full_name;                      // "shop.Status" (no leading dot)
    std::map<std::int32_t, std::string> names;  // number -> the first name declared for it
    std::string first_name;                     // proto3's default: the value listed first
};

struct ProtoMessage;

struct ProtoField {
    std::string name;
    std::int32_t number = 0;
    ProtoType type = ProtoType::Int32;
    bool repeated = false;
    bool presence = false;  // proto2 optional, proto3 `optional`, oneof member: absent is NULL
    std::string type_name;  // message and enum fields: the full name (no leading dot)
    const ProtoMessage* message = nullptr;   // resolved type_name of a message field
    const ProtoEnum* enumeration = nullptr;  // resolved type_name of an enum field
};

struct ProtoMessage {
    std::string full_name;           // "shop.Order", "shop.Order.Line" (no leading dot)
    std::vector<ProtoField> fields;  // in declaration order
    bool map_entry = false;  // the generated entry of a map<K, V> field (key = 1, value = 2)
    bool timestamp = false;  // google.protobuf.Timestamp: a timestamptz, not an object
    const ProtoField* field(std::int32_t number) const;
    const ProtoField* field(std::string_view name) const;
};

// The messages and enums of every file of a FileDescriptorSet, type names resolved.
class ProtoSchema {
public:
    // Throws ProtoSchemaError: bytes that are not a FileDescriptorSet, a type name that does not
    // resolve, more than kMaxProtoTypes types. google.protobuf.Timestamp is known without its file.
    static std::shared_ptr<const ProtoSchema> parse(std::string_view descriptor_set);

    // "shop.Order" (a leading dot is allowed); nullptr if unknown.
    const ProtoMessage* message(std::string_view full_name) const;
    // The message Confluent's message indexes name in the first file that declares messages: the
    // i-th top-level message, then its nested types ({} and {0} both mean the first message).
    const ProtoMessage* message_at(const std::vector<std::int32_t>& indexes) const;
    // The full names of the messages, for a hint.
    std::vector<std::string> message_names() const;

    struct Parsed;  // the implementation's (protobuf_schema.cpp)

private:
    std::shared_ptr<const Parsed> parsed_;
};

// .proto source text (proto2 or proto3), as a schema registry keeps PROTOBUF schemas: one file
// (name, text). proto_text_descriptor_set reads the files (the main one last: Confluent's message
// indexes count its messages) into the FileDescriptorSet protoc --include_imports would write, as
// far as ProtoSchema::parse reads one. Imports resolve by name among the files;
// google/protobuf/timestamp.proto is known without its text. Throws ProtoSchemaError naming the
// file, line and column.
struct ProtoFile {
    std::string name;  // as imports name it: "shop/order.proto"
    std::string text;
};
std::string proto_text_descriptor_set(const std::vector<ProtoFile>& files);

// One reader per (message, columns): a plan compiled once from the column paths, so a record
// costs one pass over its bytes and no lookup by name.
class ProtoRowExtractor {
public:
    // One field path per column, from the message (core::parse_json_path's member names). A path
    // may end at a scalar, an enum, a message (its JSON object, or a timestamp), a repeated field
    // or a map (a JSON array or object); it may cross singular message fields only. Throws
    // ProtoSchemaError naming the path.
    ProtoRowExtractor(std::shared_ptr<const ProtoSchema> schema, const ProtoMessage& root,
                      std::vector<std::vector<std::string>> paths);
    ~ProtoRowExtractor();
    ProtoRowExtractor(ProtoRowExtractor&&) noexcept;
    ProtoRowExtractor& operator=(ProtoRowExtractor&&) noexcept;
    ProtoRowExtractor(const ProtoRowExtractor&) = delete;
    ProtoRowExtractor& operator=(const ProtoRowExtractor&) = delete;

    std::size_t columns() const;

    // Fills columns [0, columns()) of `row` from a message body: BadProtobuf with detail() when
    // the bytes are not a well-formed message of the schema (truncated, a wire type of 6 or 7, a
    // string that is not UTF-8, nesting deeper than kMaxProtoDepth, a timestamp out of range).
    // Any bytes are safe input; the only exception is std::bad_alloc.
    DeadReason extract(const char* body, std::size_t len, RawRows& rows, std::size_t row);
    const std::string& detail() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// A Confluent-framed protobuf message: magic byte 0, the schema id (4 bytes, big-endian), the
// message indexes (a zigzag varint count, then that many zigzag varints; a single 0 byte means
// {0}), then the body.
struct ConfluentProto {
    std::uint32_t schema_id = 0;
    std::vector<std::int32_t> indexes;
    std::string_view body;
};
// False with `detail` on a wrong magic byte or a frame cut short (a dead letter bad_protobuf).
bool split_confluent_proto(std::string_view message, ConfluentProto& out, std::string& detail);

// format 'protobuf' (README "Formats", Protobuf): the options of a source, checked once
// (parse_proto_options) and read by its decoder (make_proto_rows). Records are bare message
// bodies of `message`, described by the inline `descriptor`, or Confluent frames whose schemas
// a registry holds.
struct ProtoOptions {
    std::shared_ptr<const ProtoSchema> schema;  // "descriptor": a base64 FileDescriptorSet
    const ProtoMessage* message = nullptr;      // "message": in schema (inline)
    std::string message_name;                   // "message" as given ("": none)
    // "schema_registry_url" instead of a descriptor: records are Confluent-framed, their
    // schemas (.proto text) fetched by id; without "message" the frame's message indexes pick
    // the message. Basic auth: the user and the password (a secret).
    std::string registry_url, registry_user, registry_password;
    bool registry() const { return !registry_url.empty(); }
};

struct FormatOption;  // row_decoder.hpp
class RowDecoder;
class SchemaSource;  // schema_source.hpp

// Throws stoatflow::Error 22023 naming what is wrong: an unknown option, a descriptor that is
// not base64 or not a FileDescriptorSet, a message the set does not declare.
ProtoOptions parse_proto_options(const std::vector<FormatOption>& options);
// The columns a source without `columns` gets (README "Formats", the type mapping): one per
// field of the message, as a column list (core/column_list.hpp). Throws stoatflow::Error 22023
// for a field no column can hold (a proto2 group). A registry's source: proto_text_column_list
// over the subject's latest schema (.proto text; its "message", or its first one).
std::string proto_column_list(const ProtoOptions& proto);
std::string proto_text_column_list(const ProtoOptions& proto, const std::string& proto_text);
// The declared columns against the message: a path naming no field is 42703 naming the field
// and the message; one going through a repeated field or a scalar, or naming a group, 22023.
void check_proto_columns(const ProtoOptions& proto,
                         const std::vector<std::vector<std::string>>& paths,
                         const std::vector<std::string>& names);
// The decoder: an inline descriptor's (bare bodies), or a registry's (Confluent frames, their
// schemas by id from `schemas`: protobuf_registry.cpp).
std::unique_ptr<RowDecoder> make_proto_rows(const ProtoOptions& proto,
                                            std::shared_ptr<SchemaSource> schemas,
                                            const std::vector<std::vector<std::string>>& paths);
std::unique_ptr<RowDecoder>
make_proto_registry_rows(const ProtoOptions& proto, std::shared_ptr<SchemaSource> schemas,
                         const std::vector<std::vector<std::string>>& paths);

}  // namespace stoatflow::format
