// A FileDescriptorSet read into messages and enums with their type names resolved. The set is a
// protobuf message itself (descriptor.proto), read with the same wire reader as the records; only
// the parts a reader needs are kept: names, numbers, types, labels, proto3 `optional`, oneof
// membership, map entries.
#include "stoatflow/format/protobuf.hpp"

#include "protobuf_wire.hpp"
#include "stoatflow/format/limits.hpp"

#include <deque>
#include <unordered_map>

namespace stoatflow::format {

namespace w = proto_wire;

const ProtoField* ProtoMessage::field(std::int32_t number) const {
    for (const ProtoField& f : fields)
        if (f.number == number) return &f;
    return nullptr;
}

const ProtoField* ProtoMessage::field(std::string_view name) const {
    for (const ProtoField& f : fields)
        if (f.name == name) return &f;
    return nullptr;
}

struct ProtoSchema::Parsed {
    std::deque<ProtoMessage> messages;  // deque: the pointers fields hold stay valid
    std::deque<ProtoEnum> enums;
    std::unordered_map<std::string, ProtoMessage*> message_by_name;
    std::unordered_map<std::string, ProtoEnum*> enum_by_name;
    std::unordered_map<const ProtoMessage*, std::vector<const ProtoMessage*>> nested;
    std::vector<const ProtoMessage*> main_top_level;  // of the last file that declares messages
};

namespace {

constexpr const char* kTimestamp = "google.protobuf.Timestamp";

[[noreturn]] void bad_set(const std::string& what) {
    throw ProtoSchemaError("the descriptor is not a valid FileDescriptorSet: " + what);
}

// A name as protoc allows it: an identifier, or dotted identifiers for a package.
bool identifier(std::string_view s, bool dotted) {
    bool start = true;
    for (char c : s) {
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (c == '.' && dotted && !start) {
            start = true;
        } else if (letter || (!start && c >= '0' && c <= '9')) {
            start = false;
        } else {
            return false;
        }
    }
    return !start;
}

std::string checked(std::string_view name, const char* what, bool dotted = false) {
    if (!identifier(name, dotted))
        bad_set(std::string("a ") + what + " name that is not an identifier: \"" +
                std::string(name.substr(0, 64)) + "\"");
    return std::string(name);
}

std::string join(const std::string& scope, std::string_view name) {
    return scope.empty() ? std::string(name) : scope + "." + std::string(name);
}

// Calls fn(number, wire, reader) for every field of a message body; the callback reads the value.
template <typename Fn>
void each_field(std::string_view body, const char* what, Fn&& fn) {
    w::Reader r(body);
    while (!r.done()) {
        std::int32_t number = 0;
        std::uint32_t wire = 0;
        if (!r.tag(number, wire)) bad_set(std::string("a broken tag in ") + what);
        if (!fn(number, wire, r) && !r.skip(wire, number))
            bad_set(std::string("a broken field in ") + what);
    }
}

bool read_len(std::uint32_t wire, w::Reader& r, std::string_view& out, const char* what) {
    if (wire != w::kLen) return false;
    if (!r.bytes(out)) bad_set(std::string("a truncated ") + what);
    return true;
}

bool read_varint(std::uint32_t wire, w::Reader& r, std::uint64_t& out, const char* what) {
    if (wire != w::kVarint) return false;
    if (!r.varint(out)) bad_set(std::string("a truncated ") + what);
    return true;
}

struct Builder {
    ProtoSchema::Parsed& out;
    std::string syntax;

    void check_count() {
        if (out.messages.size() + out.enums.size() > kMaxProtoTypes)
            throw ProtoSchemaError("the descriptor declares more than " +
                                   std::to_string(kMaxProtoTypes) + " message and enum types");
    }

    void add_enum(std::string_view body, const std::string& scope) {
        ProtoEnum e;
        std::string_view s;
        each_field(body, "an enum", [&](std::int32_t n, std::uint32_t wire, w::Reader& r) {
            if (n == 1 && read_len(wire, r, s, "enum name")) {
                e.full_name = join(scope, checked(s, "enum"));
                return true;
            }
            if (n == 2 && read_len(wire, r, s, "enum value")) {
                std::string name;
                std::int32_t number = 0;
                std::string_view vs;
                std::uint64_t v = 0;
                each_field(s, "an enum value",
                           [&](std::int32_t m, std::uint32_t mw, w::Reader& vr) {
                               if (m == 1 && read_len(mw, vr, vs, "enum value name")) {
                                   name = checked(vs, "enum value");
                                   return true;
                               }
                               if (m == 2 && read_varint(mw, vr, v, "enum value number")) {
                                   number = static_cast<std::int32_t>(v);
                                   return true;
                               }
                               return false;
                           });
                if (e.first_name.empty() && e.names.empty()) e.first_name = name;
                e.names.emplace(number, name);  // an alias keeps the first name
                return true;
            }
            return false;
        });
        if (e.full_name.empty()) bad_set("an enum without a name");
        out.enums.push_back(std::move(e));
        check_count();
        if (!out.enum_by_name.emplace(out.enums.back().full_name, &out.enums.back()).second)
            throw ProtoSchemaError("the descriptor declares " + out.enums.back().full_name +
                                   " twice");
    }

    ProtoField read_field(std::string_view body) {
        ProtoField f;
        std::string_view s;
        std::uint64_t v = 0;
        bool oneof = false, proto3_optional = false, label_optional = false;
        each_field(body, "a field", [&](std::int32_t n, std::uint32_t wire, w::Reader& r) {
            switch (n) {
            case 1:
                if (!read_len(wire, r, s, "field name")) return false;
                f.name = checked(s, "field");
                return true;
            case 3:
                if (!read_varint(wire, r, v, "field number")) return false;
                f.number = static_cast<std::int32_t>(v);
                return true;
            case 4:
                if (!read_varint(wire, r, v, "field label")) return false;
                f.repeated = v == 3;
                label_optional = v == 1;
                return true;
            case 5:
                if (!read_varint(wire, r, v, "field type")) return false;
                if (v < 1 || v > 18) bad_set("a field of unknown type " + std::to_string(v));
                f.type = static_cast<ProtoType>(v);
                return true;
            case 6:
                if (!read_len(wire, r, s, "field type name")) return false;
                f.type_name = std::string(s);
                return true;
            case 9:
                if (!read_varint(wire, r, v, "oneof index")) return false;
                oneof = true;
                return true;
            case 17:
                if (!read_varint(wire, r, v, "proto3_optional")) return false;
                proto3_optional = v != 0;
                return true;
            default: return false;
            }
        });
        if (f.name.empty() || f.number <= 0) bad_set("a field without a name or number");
        const bool proto3 = syntax == "proto3";
        f.presence = !f.repeated && (oneof || proto3_optional || (!proto3 && label_optional));
        return f;
    }

    void add_message(std::string_view body, const std::string& scope, int depth,
                     std::vector<const ProtoMessage*>& siblings) {
        if (depth > kMaxProtoDepth)
            bad_set("messages nested deeper than " + std::to_string(kMaxProtoDepth));
        out.messages.emplace_back();
        ProtoMessage& m = out.messages.back();
        check_count();
        siblings.push_back(&m);
        std::vector<std::string_view> nested_bodies, enum_bodies;
        std::string_view s;
        each_field(body, "a message", [&](std::int32_t n, std::uint32_t wire, w::Reader& r) {
            switch (n) {
            case 1:
                if (!read_len(wire, r, s, "message name")) return false;
                m.full_name = join(scope, checked(s, "message"));
                return true;
            case 2:
                if (!read_len(wire, r, s, "field")) return false;
                m.fields.push_back(read_field(s));
                return true;
            case 3:
                if (!read_len(wire, r, s, "nested message")) return false;
                nested_bodies.push_back(s);
                return true;
            case 4:
                if (!read_len(wire, r, s, "nested enum")) return false;
                enum_bodies.push_back(s);
                return true;
            case 7: {  // MessageOptions: map_entry = 7
                if (!read_len(wire, r, s, "message options")) return false;
                std::uint64_t v = 0;
                each_field(s, "message options",
                           [&](std::int32_t o, std::uint32_t ow, w::Reader& orr) {
                               if (o == 7 && read_varint(ow, orr, v, "map_entry")) {
                                   m.map_entry = v != 0;
                                   return true;
                               }
                               return false;
                           });
                return true;
            }
            default: return false;
            }
        });
        if (m.full_name.empty()) bad_set("a message without a name");
        m.timestamp = m.full_name == kTimestamp;
        if (!out.message_by_name.emplace(m.full_name, &m).second)
            throw ProtoSchemaError("the descriptor declares " + m.full_name + " twice");
        auto& kids = out.nested[&m];
        const std::string name = m.full_name;  // m stays valid (deque), the copy reads clearer
        for (std::string_view e : enum_bodies) add_enum(e, name);
        for (std::string_view nb : nested_bodies) add_message(nb, name, depth + 1, kids);
    }

    void add_file(std::string_view body) {
        std::string package;
        std::vector<std::string_view> messages, enums;
        std::string_view s;
        syntax.clear();
        each_field(body, "a file", [&](std::int32_t n, std::uint32_t wire, w::Reader& r) {
            switch (n) {
            case 2:
                if (!read_len(wire, r, s, "package")) return false;
                package = s.empty() ? std::string() : checked(s, "package", true);
                return true;
            case 4:
                if (!read_len(wire, r, s, "message")) return false;
                messages.push_back(s);
                return true;
            case 5:
                if (!read_len(wire, r, s, "enum")) return false;
                enums.push_back(s);
                return true;
            case 12:
                if (!read_len(wire, r, s, "syntax")) return false;
                syntax = std::string(s);
                return true;
            default: return false;
            }
        });
        for (std::string_view e : enums) add_enum(e, package);
        std::vector<const ProtoMessage*> top;
        for (std::string_view m : messages) add_message(m, package, 0, top);
        if (!top.empty()) out.main_top_level = std::move(top);
    }

    // google.protobuf.Timestamp when a field names it and the set does not carry its file.
    ProtoMessage* timestamp_type() {
        auto it = out.message_by_name.find(kTimestamp);
        if (it != out.message_by_name.end()) return it->second;
        out.messages.emplace_back();
        ProtoMessage& m = out.messages.back();
        m.full_name = kTimestamp;
        m.timestamp = true;
        ProtoField seconds, nanos;
        seconds.name = "seconds";
        seconds.number = 1;
        seconds.type = ProtoType::Int64;
        nanos.name = "nanos";
        nanos.number = 2;
        nanos.type = ProtoType::Int32;
        m.fields = {seconds, nanos};
        out.message_by_name.emplace(m.full_name, &m);
        return &m;
    }

    // A type name as protoc writes it (".pkg.Type"), or relative to the field's message scope.
    template <typename T>
    T* resolve(std::unordered_map<std::string, T*>& by_name, const std::string& type_name,
               const std::string& scope) {
        if (!type_name.empty() && type_name[0] == '.') {
            auto it = by_name.find(type_name.substr(1));
            return it == by_name.end() ? nullptr : it->second;
        }
        std::string s = scope;
        for (;;) {
            auto it = by_name.find(join(s, type_name));
            if (it != by_name.end()) return it->second;
            if (s.empty()) return nullptr;
            const auto dot = s.rfind('.');
            s = dot == std::string::npos ? std::string() : s.substr(0, dot);
        }
    }

    void resolve_all() {
        const std::size_t n =
            out.messages.size();  // a synthesized Timestamp has nothing to resolve
        for (std::size_t i = 0; i < n; ++i) {
            ProtoMessage& m = out.messages[i];
            for (ProtoField& f : m.fields) {
                if (f.type == ProtoType::Message || f.type == ProtoType::Group) {
                    if (f.type_name == "." + std::string(kTimestamp) || f.type_name == kTimestamp)
                        f.message = timestamp_type();
                    else
                        f.message = resolve(out.message_by_name, f.type_name, m.full_name);
                    if (f.message == nullptr)
                        throw ProtoSchemaError("field " + m.full_name + "." + f.name +
                                               " names the message type " + f.type_name +
                                               ", which the descriptor set does not declare");
                } else if (f.type == ProtoType::Enum) {
                    f.enumeration = resolve(out.enum_by_name, f.type_name, m.full_name);
                    if (f.enumeration == nullptr)
                        throw ProtoSchemaError("field " + m.full_name + "." + f.name +
                                               " names the enum type " + f.type_name +
                                               ", which the descriptor set does not declare");
                }
            }
        }
    }
};

}  // namespace

std::shared_ptr<const ProtoSchema> ProtoSchema::parse(std::string_view descriptor_set) {
    auto parsed = std::make_shared<Parsed>();
    Builder b{*parsed, {}};
    std::size_t files = 0;
    each_field(descriptor_set, "the set", [&](std::int32_t n, std::uint32_t wire, w::Reader& r) {
        std::string_view file;
        if (n != 1 || !read_len(wire, r, file, "file")) return false;
        ++files;
        b.add_file(file);
        return true;
    });
    if (files == 0) bad_set("it holds no file");
    b.resolve_all();
    auto schema = std::shared_ptr<ProtoSchema>(new ProtoSchema());
    schema->parsed_ = std::move(parsed);
    return schema;
}

const ProtoMessage* ProtoSchema::message(std::string_view full_name) const {
    if (!full_name.empty() && full_name[0] == '.') full_name.remove_prefix(1);
    auto it = parsed_->message_by_name.find(std::string(full_name));
    return it == parsed_->message_by_name.end() ? nullptr : it->second;
}

const ProtoMessage* ProtoSchema::message_at(const std::vector<std::int32_t>& indexes) const {
    const std::vector<const ProtoMessage*>* level = &parsed_->main_top_level;
    const ProtoMessage* m = nullptr;
    const std::size_t n = indexes.empty() ? 1 : indexes.size();
    for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t at = indexes.empty() ? 0 : indexes[i];
        if (level == nullptr || at < 0 || static_cast<std::size_t>(at) >= level->size())
            return nullptr;
        m = (*level)[static_cast<std::size_t>(at)];
        auto it = parsed_->nested.find(m);
        level = it == parsed_->nested.end() ? nullptr : &it->second;
    }
    return m;
}

std::vector<std::string> ProtoSchema::message_names() const {
    std::vector<std::string> names;
    for (const ProtoMessage& m : parsed_->messages)
        if (!m.map_entry) names.push_back(m.full_name);
    return names;
}

}  // namespace stoatflow::format
