// format 'protobuf' behind the seam (row_decoder.hpp): its options (an inline descriptor set in
// base64 and the message's full name), the columns a source without `columns` gets, the check
// of declared columns against the message, and the decoder (README "Formats", Protobuf).
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/protobuf.hpp"
#include "stoatflow/format/row_decoder.hpp"

#include <utility>

namespace stoatflow::format {
namespace {

constexpr const char* kProtoOptions =
    "descriptor and message, or schema_registry_url with message, schema_registry_user and "
    "schema_registry_password";
constexpr const char* kDescriptorHint =
    "Give the descriptor set protoc writes, base64-encoded: protoc --include_imports "
    "--descriptor_set_out=FILE x.proto, then base64 -w0 FILE.";

[[noreturn]] void bad(const std::string& message, const std::string& hint) {
    throw Error(sqlstate::kInvalidParameterValue, message, hint);
}

// Standard base64 (RFC 4648, '+' and '/'), padding optional, line breaks and spaces ignored
// (base64 without -w0 wraps its lines).
std::string decode_base64(const std::string& text) {
    std::string out;
    out.reserve(text.size() / 4 * 3 + 3);
    unsigned acc = 0;
    int bits = 0;
    std::size_t pad = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        int v = -1;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '+')
            v = 62;
        else if (c == '/')
            v = 63;
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
        if (c == '=') {
            ++pad;
            continue;
        }
        if (v < 0 || pad > 0)
            bad("format option \"descriptor\" is not base64: " +
                    std::string(pad > 0 ? "text after the padding"
                                        : "a byte that is no base64 digit") +
                    " at position " + std::to_string(i + 1),
                kDescriptorHint);
        acc = (acc << 6) | static_cast<unsigned>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xff);
        }
    }
    if (bits >= 6 || pad > 2)
        bad("format option \"descriptor\" is not base64: it ends in the middle of a byte",
            kDescriptorHint);
    return out;
}

std::string string_option(const FormatOption& o, const char* example) {
    if (o.type != FormatOption::Type::String || !o.value || o.value->empty())
        bad("format option \"" + o.name + "\" must be a non-empty string",
            std::string("For example: ") + example + ".");
    return *o.value;
}

// "a, b, c" (at most 20 names, then how many more): a hint's list.
std::string name_list(const std::vector<std::string>& names) {
    std::string out;
    std::size_t n = 0;
    for (const std::string& name : names) {
        if (n == 20) {
            out += ", and " + std::to_string(names.size() - n) + " more";
            break;
        }
        out += (n++ ? ", " : "") + name;
    }
    return out;
}

std::vector<std::string> field_names(const ProtoMessage& m) {
    std::vector<std::string> names;
    for (const ProtoField& f : m.fields) names.push_back(f.name);
    return names;
}

// The SQL type a field's column gets when the columns come from the message (README "Formats",
// the protobuf type mapping); nullptr for a field no column holds.
const char* sql_type(const ProtoField& f) {
    if (f.repeated) return "jsonb";  // repeated fields and maps
    switch (f.type) {
    case ProtoType::Int32:
    case ProtoType::Sint32:
    case ProtoType::Sfixed32: return "integer";
    case ProtoType::Int64:
    case ProtoType::Sint64:
    case ProtoType::Sfixed64:
    case ProtoType::Uint32:
    case ProtoType::Fixed32: return "bigint";
    case ProtoType::Uint64:
    case ProtoType::Fixed64: return "numeric";
    case ProtoType::Float: return "real";
    case ProtoType::Double: return "double precision";
    case ProtoType::Bool: return "boolean";
    case ProtoType::String:
    case ProtoType::Enum: return "text";
    case ProtoType::Bytes: return "bytea";
    case ProtoType::Message: return f.message->timestamp ? "timestamptz" : "jsonb";
    case ProtoType::Group: return nullptr;
    }
    return nullptr;
}

// The column list of a message's fields (proto_column_list).
std::string message_columns(const ProtoMessage& m) {
    if (m.fields.empty())
        bad("message " + m.full_name + " has no fields to make columns of",
            "Declare the source's columns.");
    std::string list;
    for (const ProtoField& f : m.fields) {
        const char* type = sql_type(f);
        if (type == nullptr)
            bad("field " + m.full_name + "." + f.name +
                    " is a proto2 group, which format 'protobuf' does not read",
                "Declare the source's columns without it.");
        // Field names are identifiers (the schema checks them): quoted, the column is the
        // field's name as written.
        list += (list.empty() ? "\"" : ", \"") + f.name + "\" " + type;
    }
    return list;
}

class ProtoRows final : public RowDecoder {
public:
    ProtoRows(const ProtoOptions& o, const std::vector<std::vector<std::string>>& paths)
        : ex_(o.schema, *o.message, paths) {}
    DeadReason decode(const char* payload, std::size_t len, bool /*first*/, RawRows& rows,
                      std::size_t row, bool& skip) override {
        skip = false;
        return ex_.extract(payload, len, rows, row);
    }
    const std::string& detail() const override { return ex_.detail(); }

private:
    ProtoRowExtractor ex_;
};

}  // namespace

ProtoOptions parse_proto_options(const std::vector<FormatOption>& options) {
    std::optional<std::string> descriptor, message;
    ProtoOptions p;
    bool user = false, password = false;
    for (const FormatOption& o : options) {
        // A value is never quoted back: schema_registry_password is a secret.
        if (o.name == "descriptor") {
            descriptor = string_option(o, "'{\"descriptor\": \"CpoBCgxzaG9w...\"}'");
        } else if (o.name == "message") {
            message = string_option(o, "'{\"message\": \"shop.Order\"}'");
        } else if (o.name == "schema_registry_url") {
            p.registry_url =
                string_option(o, "'{\"schema_registry_url\": \"http://registry:8081\"}'");
        } else if (o.name == "schema_registry_user") {
            p.registry_user = string_option(o, "'{\"schema_registry_user\": \"svc\"}'");
            user = true;
        } else if (o.name == "schema_registry_password") {
            p.registry_password = string_option(o, "'{\"schema_registry_password\": \"...\"}'");
            password = true;
        } else {
            bad("unknown format option \"" + o.name + "\" for format protobuf",
                std::string("The options of format 'protobuf' are ") + kProtoOptions + ".");
        }
    }
    if (descriptor.has_value() == p.registry())
        bad("format 'protobuf' needs exactly one of the options \"descriptor\" and "
            "\"schema_registry_url\"",
            "Give the descriptor set inline (records are then bare message bodies), or a schema "
            "registry's URL (records are then framed with a schema id and message indexes).");
    if ((user || password) && !p.registry())
        bad("format options \"schema_registry_user\" and \"schema_registry_password\" need "
            "\"schema_registry_url\"",
            "They are the registry's basic auth credentials.");
    if (password && p.registry_user.empty())
        bad("format option \"schema_registry_password\" needs \"schema_registry_user\"",
            "Basic auth sends both; give the user name too.");
    if (message) p.message_name = *message;
    if (p.registry()) return p;  // the schemas come by id
    try {
        p.schema = ProtoSchema::parse(decode_base64(*descriptor));
    } catch (const ProtoSchemaError& e) {
        bad(std::string("format option \"descriptor\": ") + e.what(), kDescriptorHint);
    }
    const std::string names = name_list(p.schema->message_names());
    if (!message)
        bad("format 'protobuf' needs format option \"message\", the full name of the records' "
            "message type",
            "The descriptor set declares " + names + ".");
    p.message = p.schema->message(*message);
    if (p.message == nullptr)
        bad("format option \"message\": the descriptor set declares no message \"" + *message +
                "\"",
            "Name it in full, with its package: the descriptor set declares " + names + ".");
    return p;
}

std::string proto_column_list(const ProtoOptions& proto) {
    if (proto.message == nullptr)
        throw Error(sqlstate::kFeatureNotSupported,
                    "a protobuf source with a schema registry takes its columns from the "
                    "registry's latest schema (proto_text_column_list)");
    return message_columns(*proto.message);
}

std::string proto_text_column_list(const ProtoOptions& proto, const std::string& proto_text) {
    std::shared_ptr<const ProtoSchema> schema;
    try {
        schema = ProtoSchema::parse(proto_text_descriptor_set({{"latest.proto", proto_text}}));
    } catch (const ProtoSchemaError& e) {
        bad(std::string("the registry's schema cannot be read: ") + e.what(),
            "Declare the columns, or register a proto2 or proto3 schema.");
    }
    const ProtoMessage* m =
        proto.message_name.empty() ? schema->message_at({0}) : schema->message(proto.message_name);
    if (m == nullptr)
        bad(proto.message_name.empty()
                ? std::string("the registry's schema declares no message")
                : "format option \"message\": the registry's schema declares no message \"" +
                      proto.message_name + "\"",
            "It declares " + name_list(schema->message_names()) + ".");
    return message_columns(*m);
}

void check_proto_columns(const ProtoOptions& proto,
                         const std::vector<std::vector<std::string>>& paths,
                         const std::vector<std::string>& names) {
    if (proto.message == nullptr) return;  // a registry's: each writer schema's, when read
    for (std::size_t c = 0; c < paths.size(); ++c) {
        const ProtoMessage* m = proto.message;
        for (const std::string& member : paths[c]) {
            const ProtoField* f = m == nullptr ? nullptr : m->field(member);
            if (m != nullptr && f == nullptr)
                throw Error(sqlstate::kUndefinedColumn,
                            "column \"" + names[c] + "\": message " + m->full_name +
                                " has no field \"" + member + "\"",
                            "The fields of " + m->full_name + " are " + name_list(field_names(*m)) +
                                "; name another with PATH '$.field.field'.");
            m = f != nullptr && !f->repeated && f->type == ProtoType::Message &&
                        !f->message->timestamp
                    ? f->message
                    : nullptr;
        }
        // The other refusals (a path through a repeated field or a scalar, a group) are the
        // reader's, said in its words.
        try {
            ProtoRowExtractor one(proto.schema, *proto.message, {paths[c]});
        } catch (const ProtoSchemaError& e) {
            bad("column \"" + names[c] + "\": " + e.what(),
                "A PATH goes through single message fields only (a repeated field or a map is "
                "one jsonb column); proto2 groups are not read.");
        }
    }
}

std::unique_ptr<RowDecoder> make_proto_rows(const ProtoOptions& proto,
                                            std::shared_ptr<SchemaSource> schemas,
                                            const std::vector<std::vector<std::string>>& paths) {
    if (proto.registry()) return make_proto_registry_rows(proto, std::move(schemas), paths);
    return std::make_unique<ProtoRows>(proto, paths);
}

}  // namespace stoatflow::format
