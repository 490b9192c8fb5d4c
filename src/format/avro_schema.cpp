// Avro schemas from their JSON form (avro.hpp, src/format/README-avro.md): primitive types,
// records, enums, arrays, maps, unions, fixed, named types with namespaces and references, and
// the logical types the reader renders. simdjson's DOM reads the JSON; the schema is parsed once
// per writer schema, never per record.
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/avro.hpp"
#include "stoatflow/format/limits.hpp"

#include <simdjson.h>

#include <unordered_map>

namespace stoatflow::format::avro {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

[[noreturn]] void bad(const std::string& what) {
    throw Error(sqlstate::kInvalidParameterValue, "invalid Avro schema: " + what,
                "An Avro schema is JSON as the Avro specification defines it.");
}

bool primitive(std::string_view name, Type& t) {
    static const std::pair<std::string_view, Type> kPrimitives[] = {
        {"null", Type::Null},   {"boolean", Type::Boolean}, {"int", Type::Int},
        {"long", Type::Long},   {"float", Type::Float},     {"double", Type::Double},
        {"bytes", Type::Bytes}, {"string", Type::String},
    };
    for (const auto& [n, ty] : kPrimitives)
        if (n == name) {
            t = ty;
            return true;
        }
    return false;
}

std::string_view str_member(element obj, const char* key, bool required, const char* what) {
    auto m = obj[key];
    if (m.error()) {
        if (required) bad(std::string(what) + " without \"" + key + "\"");
        return {};
    }
    std::string_view v;
    if (m.get(v)) bad(std::string(what) + ": \"" + key + "\" is not a string");
    return v;
}

bool valid_name(std::string_view n) {
    if (n.empty()) return false;
    for (std::size_t i = 0; i < n.size(); ++i) {
        const char c = n[i];
        const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
}

bool valid_full_name(std::string_view n) {
    std::size_t start = 0;
    while (true) {
        const std::size_t dot = n.find('.', start);
        if (!valid_name(n.substr(start, dot == std::string_view::npos ? dot : dot - start)))
            return false;
        if (dot == std::string_view::npos) return true;
        start = dot + 1;
    }
}

}  // namespace

struct Schema::Builder {
    Schema& s;
    std::unordered_map<std::string, int> names;

    int add(Node n) {
        s.nodes_.push_back(std::move(n));
        return static_cast<int>(s.nodes_.size() - 1);
    }

    std::string full_name(std::string_view name, std::string_view ns_attr, bool has_ns_attr,
                          const std::string& enclosing) {
        std::string full;
        if (name.find('.') != std::string_view::npos) {
            full = std::string(name);
        } else {
            const std::string ns = has_ns_attr ? std::string(ns_attr) : enclosing;
            full = ns.empty() ? std::string(name) : ns + "." + std::string(name);
        }
        if (!valid_full_name(full)) bad("\"" + full + "\" is not a valid name");
        return full;
    }

    int define(const std::string& full, Node n) {
        if (names.count(full)) bad("the name \"" + full + "\" is defined twice");
        n.name = full;
        const int i = add(std::move(n));
        names[full] = i;
        return i;
    }

    static std::string namespace_of(const std::string& full) {
        const std::size_t dot = full.rfind('.');
        return dot == std::string::npos ? std::string() : full.substr(0, dot);
    }

    void logical(element obj, Node& n) {
        const std::string_view lt = str_member(obj, "logicalType", false, "a type");
        if (lt.empty()) return;
        if (lt == "decimal" && (n.type == Type::Bytes || n.type == Type::Fixed)) {
            int64_t precision = 0, scale = 0;
            if (obj["precision"].get(precision) || precision <= 0) return;  // ignored
            if (auto sc = obj["scale"]; !sc.error() && (sc.get(scale) || scale < 0)) return;
            if (scale > precision) return;
            if (n.type == Type::Fixed && n.size > kAvroMaxDecimalBytes) return;
            n.logical = Logical::Decimal;
            n.precision = static_cast<int>(precision);
            n.scale = static_cast<int>(scale);
        } else if (lt == "timestamp-millis" && n.type == Type::Long) {
            n.logical = Logical::TimestampMillis;
        } else if (lt == "timestamp-micros" && n.type == Type::Long) {
            n.logical = Logical::TimestampMicros;
        } else if (lt == "date" && n.type == Type::Int) {
            n.logical = Logical::Date;
        } else if (lt == "uuid" && n.type == Type::String) {
            n.logical = Logical::Uuid;
        }
    }

    int parse(element e, const std::string& ns, int depth) {
        if (depth > kMaxDepth) bad("nested deeper than " + std::to_string(kMaxDepth));
        switch (e.type()) {
        case element_type::STRING: {
            std::string_view name;
            name = e.get_string().value_unsafe();
            Type t;
            if (primitive(name, t)) {
                Node n;
                n.type = t;
                return add(std::move(n));
            }
            // A reference: a full name, or a name in the enclosing namespace, or a name in
            // the null namespace.
            if (name.find('.') == std::string_view::npos && !ns.empty()) {
                auto it = names.find(ns + "." + std::string(name));
                if (it != names.end()) return it->second;
            }
            auto it = names.find(std::string(name));
            if (it != names.end()) return it->second;
            bad("unknown type \"" + std::string(name) + "\"");
        }
        case element_type::ARRAY: {
            Node u;
            u.type = Type::Union;
            simdjson::dom::array arr;
            arr = e.get_array().value_unsafe();
            std::vector<int> branches;
            for (element b : arr) {
                if (b.type() == element_type::ARRAY) bad("a union inside a union");
                branches.push_back(parse(b, ns, depth + 1));
            }
            if (branches.empty()) bad("an empty union");
            for (std::size_t i = 0; i < branches.size(); ++i) {
                const Node& a = s.node(branches[i]);
                if (a.type == Type::Union) bad("a union inside a union");
                for (std::size_t j = 0; j < i; ++j) {
                    const Node& b = s.node(branches[j]);
                    const bool named =
                        a.type == Type::Record || a.type == Type::Enum || a.type == Type::Fixed;
                    if (a.type == b.type && (!named || a.name == b.name))
                        bad("a union with two branches of one type");
                }
            }
            u.branches = std::move(branches);
            return add(std::move(u));
        }
        case element_type::OBJECT: break;
        default: bad("a type must be a string, an array (a union) or an object");
        }
        auto te = e["type"];
        if (te.error()) bad("an object without \"type\"");
        element tval = te.value_unsafe();
        if (tval.type() != element_type::STRING) {
            // {"type": {...}} or {"type": [...]}: the inner schema.
            return parse(tval, ns, depth + 1);
        }
        std::string_view tname;
        tname = tval.get_string().value_unsafe();
        Type t;
        if (primitive(tname, t)) {
            Node n;
            n.type = t;
            logical(e, n);
            return add(std::move(n));
        }
        if (tname == "array" || tname == "map") {
            auto it = e[tname == "array" ? "items" : "values"];
            if (it.error())
                bad(std::string(tname) + " without \"" + (tname == "array" ? "items" : "values") +
                    "\"");
            const int items = parse(it.value_unsafe(), ns, depth + 1);
            Node n;
            n.type = tname == "array" ? Type::Array : Type::Map;
            n.items = items;
            return add(std::move(n));
        }
        if (tname != "record" && tname != "error" && tname != "enum" && tname != "fixed") {
            // A reference written as {"type": "Name"}.
            return parse(tval, ns, depth + 1);
        }
        const std::string_view name = str_member(e, "name", true, "a named type");
        auto nsm = e["namespace"];
        std::string_view ns_attr;
        const bool has_ns = !nsm.error() && nsm.get(ns_attr) == simdjson::SUCCESS;
        std::string full = full_name(name, ns_attr, has_ns, ns);
        Node n;
        if (tname == "fixed") {
            int64_t size = 0;
            if (e["size"].get(size) || size < 0) bad("fixed \"" + full + "\" without a size");
            n.type = Type::Fixed;
            n.size = static_cast<std::size_t>(size);
            logical(e, n);
            return define(full, std::move(n));
        }
        if (tname == "enum") {
            n.type = Type::Enum;
            simdjson::dom::array syms;
            if (e["symbols"].get(syms)) bad("enum \"" + full + "\" without symbols");
            for (element sym : syms) {
                std::string_view sv;
                if (sym.get(sv) || !valid_name(sv))
                    bad("enum \"" + full + "\" has a symbol that is not a name");
                for (const auto& prev : n.symbols)
                    if (prev == sv) bad("enum \"" + full + "\" has a symbol twice");
                n.symbols.emplace_back(sv);
            }
            n.enum_default = std::string(str_member(e, "default", false, "an enum"));
            return define(full, std::move(n));
        }
        // A record: defined before its fields, so a field may refer to it.
        n.type = Type::Record;
        const int idx = define(full, std::move(n));
        const std::string inner_ns = namespace_of(full);
        simdjson::dom::array fields;
        if (e["fields"].get(fields)) bad("record \"" + full + "\" without fields");
        for (element f : fields) {
            if (f.type() != element_type::OBJECT)
                bad("a field of \"" + full + "\" is not an object");
            Field fd;
            fd.name = std::string(str_member(f, "name", true, "a field"));
            if (!valid_name(fd.name)) bad("\"" + fd.name + "\" is not a valid field name");
            for (const Field& prev : s.node(idx).fields)
                if (prev.name == fd.name)
                    bad("record \"" + full + "\" has field \"" + fd.name + "\" twice");
            auto ft = f["type"];
            if (ft.error()) bad("field \"" + fd.name + "\" without a type");
            fd.type = parse(ft.value_unsafe(), inner_ns, depth + 1);
            if (auto d = f["default"]; !d.error()) {
                fd.has_default = true;
                fd.default_json = simdjson::minify(d.value_unsafe());
            }
            simdjson::dom::array aliases;
            if (!f["aliases"].get(aliases))
                for (element a : aliases) {
                    std::string_view av;
                    if (!a.get(av)) fd.aliases.emplace_back(av);
                }
            s.nodes_[static_cast<std::size_t>(idx)].fields.push_back(std::move(fd));
        }
        return idx;
    }
};

Schema Schema::parse(std::string_view json) {
    simdjson::dom::parser parser;
    simdjson::padded_string padded(json);
    element root;
    if (parser.parse(padded).get(root)) bad("not JSON");
    Schema s;
    Builder p{s, {}};
    s.root_ = p.parse(root, std::string(), 0);
    return s;
}

}  // namespace stoatflow::format::avro
