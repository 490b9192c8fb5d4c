// .proto source text (proto2 and proto3), as a schema registry keeps PROTOBUF schemas, read into
// the FileDescriptorSet protoc --include_imports would write: only what ProtoSchema reads of it
// (names, packages, messages and nested ones, enums, fields with their numbers, labels, types
// and resolved type names, proto3 `optional`, oneofs, map entries, groups). Options, services,
// extensions and reserved ranges are read past. Named types resolve as protoc resolves them
// (from the innermost scope outwards) among the given files; google.protobuf.Timestamp is known
// without its file.
#include "stoatflow/format/limits.hpp"
#include "stoatflow/format/protobuf.hpp"

#include <cstdint>
#include <map>
#include <set>

namespace stoatflow::format {
namespace {

constexpr const char* kTimestampFile = "google/protobuf/timestamp.proto";
constexpr const char* kTimestamp = "google.protobuf.Timestamp";

// --- the model, before it is written out -------------------------------------------------

struct PField {
    std::string name;
    std::int64_t number = 0;
    int label = 1;  // 1 optional (or proto3 singular), 2 required, 3 repeated
    int type = 0;   // FieldDescriptorProto.Type; 0: a named type, resolved later
    std::string type_name;
    bool proto3_optional = false;
    int oneof = -1;
    int line = 0, col = 0;
};
struct PEnum {
    std::string name;
    std::vector<std::pair<std::string, std::int64_t>> values;
};
struct PMessage {
    std::string name;
    std::vector<PField> fields;
    std::vector<PMessage> nested;
    std::vector<PEnum> enums;
    std::vector<std::string> oneofs;
    bool map_entry = false;
};
struct PFile {
    std::string name, package, syntax = "proto2";
    std::vector<std::string> imports;
    std::vector<PMessage> messages;
    std::vector<PEnum> enums;
};

// --- tokens --------------------------------------------------------------------------------

struct Tok {
    enum Kind { Ident, Int, Float, Str, Sym, End } kind = End;
    std::string text;  // a string's value (unescaped), an identifier (dotted), a symbol
    int line = 1, col = 1;
};

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool digit(char c) { return c >= '0' && c <= '9'; }

class Parser {
public:
    Parser(const ProtoFile& f) : file_(f.name), s_(f.text) { out_.name = f.name; }

    PFile parse() {
        advance();
        while (tok_.kind != Tok::End) top_statement();
        return std::move(out_);
    }

private:
    std::string file_;
    const std::string& s_;
    std::size_t p_ = 0;
    int line_ = 1, col_ = 1;
    Tok tok_;
    PFile out_;

    [[noreturn]] void fail(const std::string& what, const Tok& at) const {
        throw ProtoSchemaError(file_ + ":" + std::to_string(at.line) + ":" +
                               std::to_string(at.col) + ": " + what);
    }
    [[noreturn]] void fail(const std::string& what) const { fail(what, tok_); }
    std::string shown() const {
        if (tok_.kind == Tok::End) return "the end of the file";
        if (tok_.kind == Tok::Str) return "a string";
        return "\"" + tok_.text.substr(0, 40) + "\"";
    }

    char at(std::size_t i) const { return i < s_.size() ? s_[i] : '\0'; }
    void step() {
        if (s_[p_] == '\n') {
            ++line_;
            col_ = 1;
        } else {
            ++col_;
        }
        ++p_;
    }

    void skip_space() {
        for (;;) {
            while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\n' ||
                                      s_[p_] == '\r' || s_[p_] == '\f' || s_[p_] == '\v'))
                step();
            if (at(p_) == '/' && at(p_ + 1) == '/') {
                while (p_ < s_.size() && s_[p_] != '\n') step();
            } else if (at(p_) == '/' && at(p_ + 1) == '*') {
                Tok start;
                start.line = line_;
                start.col = col_;
                step();
                step();
                while (p_ < s_.size() && !(s_[p_] == '*' && at(p_ + 1) == '/')) step();
                if (p_ >= s_.size()) fail("a comment that does not end", start);
                step();
                step();
            } else {
                return;
            }
        }
    }

    void advance() {
        skip_space();
        tok_ = Tok();
        tok_.line = line_;
        tok_.col = col_;
        if (p_ >= s_.size()) return;
        const char c = s_[p_];
        if (ident_start(c)) {
            tok_.kind = Tok::Ident;
            while (p_ < s_.size() && (ident_start(s_[p_]) || digit(s_[p_]))) {
                tok_.text += s_[p_];
                step();
            }
        } else if (digit(c) || (c == '.' && digit(at(p_ + 1)))) {
            tok_.kind = Tok::Int;
            while (p_ < s_.size() && (ident_start(s_[p_]) || digit(s_[p_]) || s_[p_] == '.' ||
                                      ((s_[p_] == '-' || s_[p_] == '+') &&
                                       (tok_.text.back() == 'e' || tok_.text.back() == 'E') &&
                                       tok_.text.compare(0, 2, "0x") != 0))) {
                if (s_[p_] == '.') tok_.kind = Tok::Float;
                tok_.text += s_[p_];
                step();
            }
        } else if (c == '"' || c == '\'') {
            tok_.kind = Tok::Str;
            step();
            while (p_ < s_.size() && s_[p_] != c && s_[p_] != '\n') {
                if (s_[p_] == '\\') {
                    step();
                    if (p_ >= s_.size()) break;
                }
                tok_.text += s_[p_];
                step();
            }
            if (p_ >= s_.size() || s_[p_] != c) fail("a string that does not end", tok_);
            step();
        } else {
            tok_.kind = Tok::Sym;
            tok_.text = std::string(1, c);
            step();
        }
    }

    bool is(const char* text) const {
        return (tok_.kind == Tok::Sym || tok_.kind == Tok::Ident) && tok_.text == text;
    }
    void expect(const char* sym, const char* after) {
        if (!is(sym)) fail(std::string("expected \"") + sym + "\" " + after + ", found " + shown());
        advance();
    }
    std::string ident(const char* what) {
        if (tok_.kind != Tok::Ident) fail(std::string("expected ") + what + ", found " + shown());
        std::string name = tok_.text;
        advance();
        return name;
    }
    // A type or package name: dotted identifiers, a leading dot for a full name.
    std::string dotted(const char* what) {
        std::string name;
        if (is(".")) {
            name = ".";
            advance();
        }
        name += ident(what);
        while (is(".")) {
            advance();
            name += "." + ident(what);
        }
        return name;
    }
    std::string string_literal(const char* what) {
        if (tok_.kind != Tok::Str) fail(std::string("expected ") + what + ", found " + shown());
        std::string v;
        while (tok_.kind == Tok::Str) {  // adjacent strings are one
            v += tok_.text;
            advance();
        }
        return v;
    }
    std::int64_t integer(const char* what) {
        bool negative = false;
        if (is("-")) {
            negative = true;
            advance();
        }
        if (tok_.kind != Tok::Int) fail(std::string("expected ") + what + ", found " + shown());
        const std::string& t = tok_.text;
        std::uint64_t v = 0;
        int base = 10;
        std::size_t i = 0;
        if (t.size() > 1 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
            base = 16;
            i = 2;
        } else if (t.size() > 1 && t[0] == '0') {
            base = 8;
            i = 1;
        }
        if (i == t.size()) fail(std::string("a malformed ") + what);
        for (; i < t.size(); ++i) {
            const char c = t[i];
            int d = digit(c)                 ? c - '0'
                    : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                             : 99;
            if (d >= base)
                fail(std::string("a malformed ") + what + " \"" + t.substr(0, 40) + "\"");
            v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
            if (v > 0xffffffffu) fail(std::string("a ") + what + " out of range");
        }
        advance();
        return negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
    }

    // Reads past a statement up to its ';', or a block in braces (an option's aggregate value,
    // a service, an extend).
    void skip_statement() {
        int depth = 0;
        for (;;) {
            if (tok_.kind == Tok::End) fail("a statement that does not end");
            if (is("{")) ++depth;
            if (is("}")) {
                if (depth == 0) fail("an unexpected \"}\"");
                if (--depth == 0) {
                    advance();
                    if (is(";")) advance();
                    return;
                }
            }
            if (depth == 0 && is(";")) {
                advance();
                return;
            }
            advance();
        }
    }
    // Field options: [ ... ] with brackets and braces balanced.
    void skip_options() {
        if (!is("[")) return;
        int depth = 0;
        for (;;) {
            if (tok_.kind == Tok::End) fail("field options that do not end");
            if (is("[") || is("{")) ++depth;
            if (is("]") || is("}")) --depth;
            advance();
            if (depth == 0) return;
        }
    }

    void top_statement() {
        if (is(";")) {
            advance();
        } else if (is("syntax") || is("edition")) {
            const bool edition = is("edition");
            advance();
            expect("=", "after syntax");
            const Tok at = tok_;
            out_.syntax = string_literal("\"proto2\" or \"proto3\"");
            if (edition || (out_.syntax != "proto2" && out_.syntax != "proto3"))
                fail("syntax \"" + out_.syntax.substr(0, 40) +
                         "\" (stoatflow reads proto2 and proto3)",
                     at);
            expect(";", "after the syntax");
        } else if (is("package")) {
            advance();
            out_.package = dotted("a package name");
            if (out_.package[0] == '.') fail("a package name with a leading dot");
            expect(";", "after the package");
        } else if (is("import")) {
            advance();
            if (is("public") || is("weak")) advance();
            out_.imports.push_back(string_literal("the imported file's name"));
            expect(";", "after the import");
        } else if (is("option") || is("service") || is("extend")) {
            skip_statement();
        } else if (is("message")) {
            advance();
            out_.messages.push_back(message_body(ident("a message name"), 0));
        } else if (is("enum")) {
            advance();
            out_.enums.push_back(enum_body(ident("an enum name")));
        } else {
            fail("expected a message, an enum or a file statement, found " + shown());
        }
    }

    PEnum enum_body(std::string name) {
        PEnum e;
        e.name = std::move(name);
        expect("{", "after the enum name");
        while (!is("}")) {
            if (tok_.kind == Tok::End) fail("enum " + e.name + " does not end");
            if (is(";")) {
                advance();
            } else if (is("option") || is("reserved")) {
                skip_statement();
            } else {
                std::string value = ident("an enum value name");
                expect("=", "after the enum value name");
                const std::int64_t n = integer("enum value number");
                if (n < INT32_MIN || n > INT32_MAX) fail("an enum value number out of range");
                skip_options();
                expect(";", "after the enum value");
                e.values.emplace_back(std::move(value), n);
            }
        }
        if (e.values.empty()) fail("enum " + e.name + " has no values");
        advance();
        return e;
    }

    static int scalar_type(const std::string& t) {
        static const std::map<std::string, int> kTypes{
            {"double", 1},  {"float", 2},     {"int64", 3},     {"uint64", 4},  {"int32", 5},
            {"fixed64", 6}, {"fixed32", 7},   {"bool", 8},      {"string", 9},  {"bytes", 12},
            {"uint32", 13}, {"sfixed32", 15}, {"sfixed64", 16}, {"sint32", 17}, {"sint64", 18}};
        auto it = kTypes.find(t);
        return it == kTypes.end() ? 0 : it->second;
    }

    static std::string entry_name(const std::string& field) {
        std::string out;
        bool up = true;
        for (char c : field) {
            if (c == '_') {
                up = true;
                continue;
            }
            out += up && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
            up = false;
        }
        return out + "Entry";
    }

    void field_number(PField& f) {
        expect("=", "after the field name");
        f.number = integer("field number");
        if (f.number < 1 || f.number > 536870911) fail("a field number out of range (1 to 2^29-1)");
    }

    // One field (after its label, if any) into m; a group or a map adds its message too.
    void field(PMessage& m, int label, bool proto3_optional, int oneof, int depth) {
        PField f;
        f.line = tok_.line;
        f.col = tok_.col;
        f.label = label;
        f.proto3_optional = proto3_optional;
        f.oneof = oneof;
        if (is("map") && label == 1 && !proto3_optional) {
            advance();
            expect("<", "after map");
            PMessage entry;
            PField k, v;
            k.name = "key";
            k.number = 1;
            const Tok key_at = tok_;
            k.type = scalar_type(ident("a map key type"));
            if (k.type == 0 || k.type == 1 || k.type == 2 || k.type == 12)
                fail("a map key that is not an integer, bool or string type", key_at);
            expect(",", "after the map key type");
            v.line = tok_.line;
            v.col = tok_.col;
            v.name = "value";
            v.number = 2;
            v.type_name = dotted("a map value type");
            v.type = scalar_type(v.type_name);
            if (v.type != 0) v.type_name.clear();
            expect(">", "after the map value type");
            f.name = ident("a field name");
            field_number(f);
            skip_options();
            expect(";", "after the field");
            entry.name = entry_name(f.name);
            entry.map_entry = true;
            entry.fields = {k, v};
            f.label = 3;
            f.type = 11;
            f.type_name = entry.name;
            m.nested.push_back(std::move(entry));
            m.fields.push_back(std::move(f));
            return;
        }
        if (is("group")) {  // proto2: a field and its message in one
            advance();
            const std::string name = ident("a group name");
            f.name.clear();
            for (char c : name)
                f.name += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
            field_number(f);
            skip_options();
            f.type = 10;
            f.type_name = name;
            m.nested.push_back(message_body(name, depth + 1));
            m.fields.push_back(std::move(f));
            return;
        }
        f.type_name = dotted("a field type");
        f.type = scalar_type(f.type_name);
        if (f.type != 0) f.type_name.clear();
        f.name = ident("a field name");
        field_number(f);
        skip_options();
        expect(";", "after the field");
        m.fields.push_back(std::move(f));
    }

    PMessage message_body(std::string name, int depth) {
        if (depth > kMaxProtoDepth)
            fail("messages nested deeper than " + std::to_string(kMaxProtoDepth));
        PMessage m;
        m.name = std::move(name);
        expect("{", "after the message name");
        const bool proto3 = out_.syntax == "proto3";
        while (!is("}")) {
            if (tok_.kind == Tok::End) fail("message " + m.name + " does not end");
            if (is(";")) {
                advance();
            } else if (is("option") || is("reserved") || is("extensions") || is("extend")) {
                skip_statement();
            } else if (is("message")) {
                advance();
                m.nested.push_back(message_body(ident("a message name"), depth + 1));
            } else if (is("enum")) {
                advance();
                m.enums.push_back(enum_body(ident("an enum name")));
            } else if (is("oneof")) {
                advance();
                const int index = static_cast<int>(m.oneofs.size());
                m.oneofs.push_back(ident("a oneof name"));
                expect("{", "after the oneof name");
                while (!is("}")) {
                    if (tok_.kind == Tok::End) fail("oneof " + m.oneofs.back() + " does not end");
                    if (is(";")) {
                        advance();
                    } else if (is("option")) {
                        skip_statement();
                    } else {
                        field(m, 1, false, index, depth);
                    }
                }
                advance();
            } else if (is("repeated")) {
                advance();
                field(m, 3, false, -1, depth);
            } else if (is("required")) {
                advance();
                field(m, 2, false, -1, depth);
            } else if (is("optional")) {
                advance();
                field(m, 1, proto3, -1, depth);
            } else {
                field(m, 1, false, -1, depth);
            }
        }
        advance();
        return m;
    }
};

// --- resolving named types -----------------------------------------------------------------

struct Names {
    std::map<std::string, bool> is_enum;  // every declared type's full name
    std::set<std::string> packages;       // and every package ("a.b": "a" and "a.b")
    void add_package(const std::string& package) {
        for (std::size_t dot = 0; dot != std::string::npos && !package.empty();) {
            dot = package.find('.', dot + 1);
            packages.insert(package.substr(0, dot));
        }
    }
};

std::string join(const std::string& scope, const std::string& name) {
    return scope.empty() ? name : scope + "." + name;
}

void collect(const PMessage& m, const std::string& scope, Names& n, const std::string& file) {
    const std::string full = join(scope, m.name);
    if (!n.is_enum.emplace(full, false).second)
        throw ProtoSchemaError(file + ": " + full + " is declared twice");
    for (const PEnum& e : m.enums)
        if (!n.is_enum.emplace(join(full, e.name), true).second)
            throw ProtoSchemaError(file + ": " + join(full, e.name) + " is declared twice");
    for (const PMessage& k : m.nested) collect(k, full, n, file);
}

// protoc's rule: the first part of the name is looked up from the innermost scope outwards;
// the rest must be inside what it found.
void resolve(PField& f, const std::string& scope, const Names& n, const std::string& file) {
    if (f.type != 0) return;
    std::string found;
    if (f.type_name[0] == '.') {
        found = f.type_name.substr(1);
        if (!n.is_enum.count(found) && found != kTimestamp) found.clear();
    } else {
        const std::string first = f.type_name.substr(0, f.type_name.find('.'));
        std::string s = scope;
        for (;;) {
            const std::string candidate = join(s, first);
            const bool declared =
                n.is_enum.count(candidate) > 0 || n.packages.count(candidate) > 0 ||
                std::string(kTimestamp).compare(0, candidate.size() + 1, candidate + ".") == 0;
            if (declared) {
                found = join(s, f.type_name);
                if (!n.is_enum.count(found) && found != kTimestamp) found.clear();
                break;
            }
            if (s.empty()) break;
            const auto dot = s.rfind('.');
            s = dot == std::string::npos ? std::string() : s.substr(0, dot);
        }
    }
    if (found.empty())
        throw ProtoSchemaError(file + ":" + std::to_string(f.line) + ":" + std::to_string(f.col) +
                               ": field " + f.name + " names the type " + f.type_name +
                               ", which is not declared");
    auto it = n.is_enum.find(found);
    const bool is_enum = it != n.is_enum.end() && it->second;
    if (f.type == 10 && is_enum) throw ProtoSchemaError(file + ": group " + f.name + " is an enum");
    if (f.type != 10) f.type = is_enum ? 14 : 11;
    f.type_name = "." + found;
}

void resolve_message(PMessage& m, const std::string& scope, const Names& n,
                     const std::string& file) {
    const std::string full = join(scope, m.name);
    for (PField& f : m.fields) {
        if (f.type == 10 || f.type == 11) {
            if (!f.type_name.empty() && f.type_name[0] != '.') {
                // groups and map entries name their nested message
                f.type_name = "." + join(full, f.type_name);
                for (PMessage& k : m.nested)
                    if (k.map_entry && "." + join(full, k.name) == f.type_name)
                        for (PField& kf : k.fields) resolve(kf, full, n, file);
            }
            continue;
        }
        resolve(f, full, n, file);
    }
    for (PMessage& k : m.nested)
        if (!k.map_entry) resolve_message(k, full, n, file);
}

// --- writing the descriptors ---------------------------------------------------------------

void varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out += static_cast<char>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    out += static_cast<char>(v);
}
void put_int(std::string& out, int number, std::int64_t v) {
    varint(out, static_cast<std::uint64_t>(number) << 3);
    varint(out, static_cast<std::uint64_t>(v));  // negative: ten bytes, as int32 fields are
}
void put_bytes(std::string& out, int number, const std::string& v) {
    varint(out, static_cast<std::uint64_t>(number) << 3 | 2);
    varint(out, v.size());
    out += v;
}

std::string write_enum(const PEnum& e) {
    std::string out;
    put_bytes(out, 1, e.name);
    for (const auto& [name, number] : e.values) {
        std::string v;
        put_bytes(v, 1, name);
        put_int(v, 2, number);
        put_bytes(out, 2, v);
    }
    return out;
}

std::string write_message(const PMessage& m) {
    std::string out;
    put_bytes(out, 1, m.name);
    for (const PField& f : m.fields) {
        std::string d;
        put_bytes(d, 1, f.name);
        put_int(d, 3, f.number);
        put_int(d, 4, f.label);
        put_int(d, 5, f.type);
        if (!f.type_name.empty()) put_bytes(d, 6, f.type_name);
        if (f.oneof >= 0) put_int(d, 9, f.oneof);
        if (f.proto3_optional) put_int(d, 17, 1);
        put_bytes(out, 2, d);
    }
    for (const PMessage& k : m.nested) put_bytes(out, 3, write_message(k));
    for (const PEnum& e : m.enums) put_bytes(out, 4, write_enum(e));
    if (m.map_entry) {
        std::string o;
        put_int(o, 7, 1);
        put_bytes(out, 7, o);
    }
    for (const std::string& o : m.oneofs) {
        std::string d;
        put_bytes(d, 1, o);
        put_bytes(out, 8, d);
    }
    return out;
}

}  // namespace

std::string proto_text_descriptor_set(const std::vector<ProtoFile>& files) {
    if (files.empty()) throw ProtoSchemaError("no .proto file given");
    std::vector<PFile> parsed;
    std::set<std::string> given;
    for (const ProtoFile& f : files) {
        if (!given.insert(f.name).second)
            throw ProtoSchemaError("the file " + f.name + " is given twice");
        parsed.push_back(Parser(f).parse());
    }
    Names names;
    for (const PFile& f : parsed) {
        for (const std::string& imp : f.imports)
            if (!given.count(imp) && imp != kTimestampFile)
                throw ProtoSchemaError(f.name + " imports " + imp + ", which is not given (only " +
                                       kTimestampFile + " is known without its text)");
        names.add_package(f.package);
        for (const PEnum& e : f.enums)
            if (!names.is_enum.emplace(join(f.package, e.name), true).second)
                throw ProtoSchemaError(f.name + ": " + join(f.package, e.name) +
                                       " is declared twice");
        for (const PMessage& m : f.messages) collect(m, f.package, names, f.name);
    }
    std::string set;
    for (PFile& f : parsed) {
        for (PMessage& m : f.messages) resolve_message(m, f.package, names, f.name);
        std::string d;
        put_bytes(d, 1, f.name);
        if (!f.package.empty()) put_bytes(d, 2, f.package);
        for (const std::string& imp : f.imports) put_bytes(d, 3, imp);
        for (const PMessage& m : f.messages) put_bytes(d, 4, write_message(m));
        for (const PEnum& e : f.enums) put_bytes(d, 5, write_enum(e));
        put_bytes(d, 12, f.syntax);
        put_bytes(set, 1, d);
    }
    return set;
}

}  // namespace stoatflow::format
