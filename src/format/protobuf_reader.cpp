// A protobuf message body into a source's columns: one pass over the bytes, guided by a plan
// compiled from the column paths (which field numbers matter at each level, which column each
// one fills). Fields the plan does not name are skipped by their wire type; a field whose wire
// type does not match its declared type is skipped as an unknown one (as libprotobuf does).
// Values are written as the raw text the column conversion reads (raw_row.hpp); repeated fields,
// maps and whole messages as JSON text.
#include "stoatflow/format/protobuf.hpp"

#include "protobuf_wire.hpp"
#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/json_text.hpp"
#include "stoatflow/format/limits.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

namespace stoatflow::format {

namespace w = proto_wire;

namespace {

constexpr std::int64_t kMinTimestampSeconds = -62135596800;  // 0001-01-01T00:00:00Z
constexpr std::int64_t kMaxTimestampSeconds = 253402300799;  // 9999-12-31T23:59:59Z

// The wire type a field of this type has when not packed.
std::uint32_t wire_of(ProtoType t) {
    switch (t) {
    case ProtoType::Double:
    case ProtoType::Fixed64:
    case ProtoType::Sfixed64: return w::kFixed64;
    case ProtoType::Float:
    case ProtoType::Fixed32:
    case ProtoType::Sfixed32: return w::kFixed32;
    case ProtoType::String:
    case ProtoType::Bytes:
    case ProtoType::Message: return w::kLen;
    case ProtoType::Group: return w::kStartGroup;
    default: return w::kVarint;
    }
}

bool packable(ProtoType t) { return wire_of(t) != w::kLen && t != ProtoType::Group; }

// A scalar as read off the wire, before it is written out.
struct Scalar {
    std::uint64_t bits = 0;  // varints and fixed-width numbers
    std::string_view bytes;  // strings and bytes
};

bool read_scalar(w::Reader& r, std::uint32_t wire, Scalar& v) {
    switch (wire) {
    case w::kVarint: return r.varint(v.bits);
    case w::kFixed64: return r.fixed64(v.bits);
    case w::kFixed32: {
        std::uint32_t x = 0;
        if (!r.fixed32(x)) return false;
        v.bits = x;
        return true;
    }
    case w::kLen: return r.bytes(v.bytes);
    default: return false;
    }
}

// Days since 1970-01-01 to a civil date (proleptic Gregorian).
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2);
}

void append_2(std::string& out, unsigned v) {
    out += static_cast<char>('0' + v / 10);
    out += static_cast<char>('0' + v % 10);
}

// RFC 3339 in UTC with the nanoseconds that are there ("2026-11-30T10:00:00.5Z").
void append_timestamp(std::string& out, std::int64_t seconds, std::int32_t nanos) {
    const std::int64_t days = (seconds >= 0 ? seconds : seconds - 86399) / 86400;
    const auto secs = static_cast<unsigned>(seconds - days * 86400);
    std::int64_t y = 0;
    unsigned m = 0, d = 0;
    civil_from_days(days, y, m, d);
    char year[8];
    const auto yr = std::to_chars(year, year + sizeof year, y);
    out.append(4 - std::min<std::size_t>(4, static_cast<std::size_t>(yr.ptr - year)), '0');
    out.append(year, yr.ptr);
    out += '-';
    append_2(out, m);
    out += '-';
    append_2(out, d);
    out += 'T';
    append_2(out, secs / 3600);
    out += ':';
    append_2(out, secs / 60 % 60);
    out += ':';
    append_2(out, secs % 60);
    if (nanos != 0) {
        char frac[10];
        std::int32_t n = nanos;
        for (int i = 8; i >= 0; --i) {
            frac[i] = static_cast<char>('0' + n % 10);
            n /= 10;
        }
        int len = 9;
        while (frac[len - 1] == '0') --len;
        out += '.';
        out.append(frac, static_cast<std::size_t>(len));
    }
    out += 'Z';
}

void append_hex_bytea(std::string& out, std::string_view b) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    for (unsigned char c : b) {
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
}

void append_base64(std::string& out, std::string_view b) {
    static constexpr char kB64[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::size_t i = 0;
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(b[k]); };
    for (; i + 3 <= b.size(); i += 3) {
        const unsigned v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
        out += kB64[v >> 18];
        out += kB64[v >> 12 & 63];
        out += kB64[v >> 6 & 63];
        out += kB64[v & 63];
    }
    if (b.size() - i == 1) {
        const unsigned v = at(i) << 16;
        out += kB64[v >> 18];
        out += kB64[v >> 12 & 63];
        out += "==";
    } else if (b.size() - i == 2) {
        const unsigned v = at(i) << 16 | at(i + 1) << 8;
        out += kB64[v >> 18];
        out += kB64[v >> 12 & 63];
        out += kB64[v >> 6 & 63];
        out += '=';
    }
}

}  // namespace

struct ProtoRowExtractor::Impl {
    // One message on the columns' paths: per field number it names, the columns it fills and
    // the message below it (a path going deeper).
    struct Node;
    struct Entry {
        const ProtoField* field = nullptr;
        std::vector<std::size_t> columns;
        std::unique_ptr<Node> child;
    };
    struct Node {
        const ProtoMessage* message = nullptr;
        std::vector<Entry> entries;        // sorted by field number
        bool present = false;              // in the current record
        std::vector<std::int16_t> direct;  // field number -> entry index (-1: none), small numbers
        Entry* find(std::int32_t number) {
            if (number >= 0 && static_cast<std::size_t>(number) < direct.size())
                return direct[static_cast<std::size_t>(number)] < 0
                           ? nullptr
                           : &entries[direct[static_cast<std::size_t>(number)]];
            auto it = std::lower_bound(
                entries.begin(), entries.end(), number,
                [](const Entry& e, std::int32_t n) { return e.field->number < n; });
            return it != entries.end() && it->field->number == number ? &*it : nullptr;
        }
        // Field numbers below kDirect look their entry up in a table (most schemas number
        // their fields from 1 up).
        static constexpr std::int32_t kDirect = 256;
        void index() {
            direct.assign(kDirect, -1);
            for (std::size_t i = 0; i < entries.size(); ++i)
                if (entries[i].field->number < kDirect)
                    direct[static_cast<std::size_t>(entries[i].field->number)] =
                        static_cast<std::int16_t>(i);
        }
    };
    // Where each column's value comes from, to give absent fields their value after the pass.
    struct ColumnSource {
        Node* parent = nullptr;
        const ProtoField* field = nullptr;
    };

    std::shared_ptr<const ProtoSchema> schema;
    Node root;
    std::vector<Node*> nodes;  // every node, to reset `present`
    std::vector<ColumnSource> sources;
    // Per record: which columns got a value; the JSON of repeated fields and maps being built.
    std::vector<char> seen;
    std::vector<std::string> lists;
    std::vector<std::size_t> list_items;
    bool has_lists = false;  // a column is a repeated field or a map
    std::string text;        // scratch for one value
    std::string detail;

    bool fail(const std::string& what) {
        detail = what;
        return false;
    }

    // --- scalars -------------------------------------------------------------------------

    // The raw value of a scalar for a column: its kind, and its text in `out` (a view of the
    // record's bytes, of `num`, of the schema's enum names, or of `text`), valid until the next
    // call.
    char num[32];
    bool column_scalar(const ProtoField& f, const Scalar& v, RawKind& kind, std::string_view& out) {
        kind = RawKind::Number;
        const auto put = [&](auto x) {
            const auto r = std::to_chars(num, num + sizeof num, x);
            out = std::string_view(num, static_cast<std::size_t>(r.ptr - num));
        };
        switch (f.type) {
        case ProtoType::Int64:
        case ProtoType::Sfixed64: put(static_cast<std::int64_t>(v.bits)); return true;
        case ProtoType::Uint64:
        case ProtoType::Fixed64: put(v.bits); return true;
        case ProtoType::Int32:
        case ProtoType::Sfixed32:
            put(static_cast<std::int32_t>(static_cast<std::uint32_t>(v.bits)));
            return true;
        case ProtoType::Uint32:
        case ProtoType::Fixed32: put(static_cast<std::uint32_t>(v.bits)); return true;
        case ProtoType::Sint32: put(w::zigzag32(v.bits)); return true;
        case ProtoType::Sint64: put(w::zigzag64(v.bits)); return true;
        case ProtoType::Bool:
            kind = v.bits != 0 ? RawKind::True : RawKind::False;
            out = {};
            return true;
        case ProtoType::Float:
        case ProtoType::Double: {
            double d = 0;
            if (f.type == ProtoType::Float) {
                float x = 0;
                const auto u = static_cast<std::uint32_t>(v.bits);
                std::memcpy(&x, &u, sizeof x);
                if (std::isfinite(x)) {
                    put(x);  // the shortest text that reads back as this float
                    return true;
                }
                d = x;
            } else {
                std::memcpy(&d, &v.bits, sizeof d);
                if (std::isfinite(d)) {
                    put(d);
                    return true;
                }
            }
            kind = RawKind::String;  // what float8in and numeric_in read
            out = std::isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity";
            return true;
        }
        case ProtoType::String:
            if (!core::is_valid_utf8(v.bytes.data(), v.bytes.size()))
                return fail("field " + f.name + " is a string that is not valid UTF-8");
            kind = RawKind::String;
            out = v.bytes;
            return true;
        case ProtoType::Bytes:
            kind = RawKind::String;
            text.clear();
            append_hex_bytea(text, v.bytes);
            out = text;
            return true;
        case ProtoType::Enum: {
            const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(v.bits));
            auto it = f.enumeration->names.find(n);
            if (it == f.enumeration->names.end())
                put(n);  // a number this schema does not name (a newer writer's)
            else
                out = it->second;
            kind = RawKind::String;
            return true;
        }
        default: return fail("field " + f.name + " has a type a column cannot take");
        }
    }

    // A scalar as JSON (an element of a repeated field, a map entry, a member of an object).
    bool json_scalar(const ProtoField& f, const Scalar& v, std::string& out) {
        RawKind kind = RawKind::Null;
        switch (f.type) {
        case ProtoType::String:
            if (!core::is_valid_utf8(v.bytes.data(), v.bytes.size()))
                return fail("field " + f.name + " is a string that is not valid UTF-8");
            append_json_string(out, v.bytes);
            return true;
        case ProtoType::Bytes: {
            std::string b64;
            append_base64(b64, v.bytes);
            append_json_string(out, b64);
            return true;
        }
        default: {
            std::string_view t;
            if (!column_scalar(f, v, kind, t)) return false;
            if (kind == RawKind::True)
                out += "true";
            else if (kind == RawKind::False)
                out += "false";
            else if (kind == RawKind::String)
                append_json_string(out, t);
            else
                out += t;
            return true;
        }
        }
    }

    // --- whole messages as JSON ----------------------------------------------------------

    bool timestamp_text(std::string_view body, std::string& out) {
        w::Reader r(body);
        std::uint64_t seconds = 0, nanos = 0;
        while (!r.done()) {
            std::int32_t n = 0;
            std::uint32_t wt = 0;
            if (!r.tag(n, wt)) return fail("a google.protobuf.Timestamp is cut short");
            if ((n == 1 || n == 2) && wt == w::kVarint) {
                if (!r.varint(n == 1 ? seconds : nanos))
                    return fail("a google.protobuf.Timestamp is cut short");
            } else if (!r.skip(wt, n)) {
                return fail("a google.protobuf.Timestamp is cut short");
            }
        }
        const auto s = static_cast<std::int64_t>(seconds);
        const auto ns = static_cast<std::int32_t>(static_cast<std::uint32_t>(nanos));
        if (s < kMinTimestampSeconds || s > kMaxTimestampSeconds || ns < 0 || ns > 999999999)
            return fail("a google.protobuf.Timestamp out of range (seconds " + std::to_string(s) +
                        ", nanos " + std::to_string(ns) + ")");
        append_timestamp(out, s, ns);
        return true;
    }

    // The JSON of a message value: an object of the fields present (last one wins for a
    // singular field, every element for a repeated one, in the order the message declares
    // them), a map as an object, a timestamp as its RFC 3339 string.
    bool json_message(const ProtoMessage& m, std::string_view body, std::string& out, int depth) {
        if (depth > kMaxProtoDepth)
            return fail("messages nested deeper than " + std::to_string(kMaxProtoDepth));
        if (m.timestamp) {
            std::string ts;
            if (!timestamp_text(body, ts)) return false;
            append_json_string(out, ts);
            return true;
        }
        // Occurrences per declared field, then written in declaration order.
        struct Occ {
            std::size_t field;
            Scalar value;
            bool element_list;  // a packed run of elements in value.bytes
        };
        std::vector<Occ> occ;
        w::Reader r(body);
        while (!r.done()) {
            std::int32_t n = 0;
            std::uint32_t wt = 0;
            if (!r.tag(n, wt)) return fail("a message is cut short or has a broken tag");
            const ProtoField* f = m.field(n);
            const bool packed = f != nullptr && f->repeated && packable(f->type) && wt == w::kLen;
            if (f == nullptr || (wt != wire_of(f->type) && !packed) ||
                f->type == ProtoType::Group) {
                if (!r.skip(wt, n)) return fail("a message is cut short or has a broken field");
                continue;
            }
            Scalar v;
            if (!read_scalar(r, wt, v)) return fail("field " + f->name + " is cut short");
            occ.push_back({static_cast<std::size_t>(f - m.fields.data()), v, packed});
        }
        out += '{';
        bool first_member = true;
        for (std::size_t i = 0; i < m.fields.size(); ++i) {
            const ProtoField& f = m.fields[i];
            const Occ* last = nullptr;
            std::size_t count = 0;
            for (const Occ& o : occ)
                if (o.field == i) {
                    last = &o;
                    ++count;
                }
            if (last == nullptr) continue;
            if (!first_member) out += ", ";
            first_member = false;
            append_json_string(out, f.name);
            out += ": ";
            if (!f.repeated) {
                if (!json_value(f, last->value, out, depth)) return false;
                continue;
            }
            const bool map = f.message != nullptr && f.message->map_entry;
            out += map ? '{' : '[';
            bool first = true;
            for (const Occ& o : occ) {
                if (o.field != i) continue;
                if (o.element_list) {
                    if (!packed_elements(f, o.value.bytes, out, first)) return false;
                } else {
                    if (!first) out += ", ";
                    first = false;
                    if (map ? !map_entry(f, o.value.bytes, out, depth)
                            : !json_value(f, o.value, out, depth))
                        return false;
                }
            }
            out += map ? '}' : ']';
        }
        out += '}';
        return true;
    }

    bool json_value(const ProtoField& f, const Scalar& v, std::string& out, int depth) {
        if (f.type == ProtoType::Message) return json_message(*f.message, v.bytes, out, depth + 1);
        return json_scalar(f, v, out);
    }

    bool packed_elements(const ProtoField& f, std::string_view run, std::string& out, bool& first) {
        w::Reader r(run);
        const std::uint32_t wt = wire_of(f.type);
        while (!r.done()) {
            Scalar v;
            if (!read_scalar(r, wt, v)) return fail("the packed field " + f.name + " is cut short");
            if (!first) out += ", ";
            first = false;
            if (!json_scalar(f, v, out)) return false;
        }
        return true;
    }

    // One map entry as `"key": value` (the key as text, as JSON object keys are).
    bool map_entry(const ProtoField& f, std::string_view entry, std::string& out, int depth) {
        const ProtoMessage& e = *f.message;
        const ProtoField* kf = e.field(1);
        const ProtoField* vf = e.field(2);
        if (kf == nullptr || vf == nullptr)
            return fail("the map " + f.name + " has no key or value field");
        Scalar key, value;
        bool has_value = false;
        w::Reader r(entry);
        while (!r.done()) {
            std::int32_t n = 0;
            std::uint32_t wt = 0;
            if (!r.tag(n, wt)) return fail("an entry of the map " + f.name + " is cut short");
            const ProtoField* which = n == 1 ? kf : n == 2 ? vf : nullptr;
            if (which == nullptr || wt != wire_of(which->type)) {
                if (!r.skip(wt, n)) return fail("an entry of the map " + f.name + " is cut short");
                continue;
            }
            Scalar& into = n == 1 ? key : value;
            into = Scalar{};
            if (!read_scalar(r, wt, into))
                return fail("an entry of the map " + f.name + " is cut short");
            has_value |= n == 2;
        }
        RawKind kind = RawKind::Null;
        if (kf->type == ProtoType::String) {
            if (!core::is_valid_utf8(key.bytes.data(), key.bytes.size()))
                return fail("a key of the map " + f.name + " is not valid UTF-8");
            append_json_string(out, key.bytes);
        } else {
            std::string_view t;
            if (!column_scalar(*kf, key, kind, t)) return false;
            append_json_string(out, kind == RawKind::True    ? "true"
                                    : kind == RawKind::False ? "false"
                                                             : t);
        }
        out += ": ";
        if (!has_value && vf->type == ProtoType::Message) {
            out += "{}";
            return true;
        }
        return json_value(*vf, value, out, depth);
    }

    // --- the plan ------------------------------------------------------------------------

    void set_column(std::size_t col, RawKind kind, std::string_view t, RawRows& rows,
                    std::size_t row) {
        rows.set(row, col, kind, t);
        seen[col] = 1;
    }

    bool read_node(Node& node, std::string_view body, RawRows& rows, std::size_t row, int depth) {
        if (depth > kMaxProtoDepth)
            return fail("messages nested deeper than " + std::to_string(kMaxProtoDepth));
        node.present = true;
        w::Reader r(body);
        while (!r.done()) {
            std::int32_t n = 0;
            std::uint32_t wt = 0;
            if (!r.tag(n, wt)) return fail("the message is cut short or has a broken tag");
            Entry* e = node.find(n);
            const ProtoField* f = e ? e->field : nullptr;
            const bool packed = f != nullptr && f->repeated && packable(f->type) && wt == w::kLen;
            if (f == nullptr || (wt != wire_of(f->type) && !packed) ||
                f->type == ProtoType::Group) {
                if (!r.skip(wt, n)) return fail("the message is cut short or has a broken field");
                continue;
            }
            Scalar v;
            if (!read_scalar(r, wt, v)) return fail("field " + f->name + " is cut short");
            if (f->repeated) {
                if (!add_elements(*e, v, packed, depth)) return false;
                continue;
            }
            if (f->type == ProtoType::Message) {
                if (!e->columns.empty()) {
                    std::string json;
                    if (f->message->timestamp) {
                        if (!timestamp_text(v.bytes, json)) return false;
                        for (std::size_t c : e->columns)
                            set_column(c, RawKind::String, json, rows, row);
                    } else {
                        if (!json_message(*f->message, v.bytes, json, depth + 1)) return false;
                        for (std::size_t c : e->columns)
                            set_column(c, RawKind::Object, json, rows, row);
                    }
                }
                if (e->child && !read_node(*e->child, v.bytes, rows, row, depth + 1)) return false;
                continue;
            }
            RawKind kind = RawKind::Null;
            std::string_view t;
            if (!column_scalar(*f, v, kind, t)) return false;
            for (std::size_t c : e->columns) set_column(c, kind, t, rows, row);
        }
        return true;
    }

    // Elements of a repeated field or entries of a map, appended to the columns' JSON.
    bool add_elements(const Entry& e, const Scalar& v, bool packed, int depth) {
        const ProtoField& f = *e.field;
        const bool map = f.message != nullptr && f.message->map_entry;
        std::string piece;
        bool first = true;
        if (packed) {
            if (!packed_elements(f, v.bytes, piece, first)) return false;
        } else if (map) {
            if (!map_entry(f, v.bytes, piece, depth)) return false;
        } else if (!json_value(f, v, piece, depth)) {
            return false;
        }
        if (piece.empty()) return true;  // an empty packed run
        for (std::size_t c : e.columns) {
            if (list_items[c]++ > 0) lists[c] += ", ";
            lists[c] += piece;
        }
        return true;
    }

    // After the pass: repeated fields and maps as JSON; absent fields as proto3 reads them (the
    // type's zero value, NULL for a field with presence or a message) when their message was
    // there, absent (NULL) when it was not.
    bool finish(RawRows& rows, std::size_t row) {
        for (std::size_t c = 0; c < sources.size(); ++c) {
            const ColumnSource& s = sources[c];
            const ProtoField& f = *s.field;
            if (f.repeated) {
                if (!s.parent->present) continue;
                const bool map = f.message != nullptr && f.message->map_entry;
                text.clear();
                text += map ? '{' : '[';
                text += lists[c];
                text += map ? '}' : ']';
                rows.set(row, c, map ? RawKind::Object : RawKind::Array, text);
                continue;
            }
            if (seen[c] || !s.parent->present || f.presence || f.type == ProtoType::Message)
                continue;
            switch (f.type) {
            case ProtoType::Bool: rows.set(row, c, RawKind::False); break;
            case ProtoType::String: rows.set(row, c, RawKind::String, ""); break;
            case ProtoType::Bytes: rows.set(row, c, RawKind::String, "\\x"); break;
            case ProtoType::Enum:
                rows.set(row, c, RawKind::String, f.enumeration->first_name);
                break;
            default: rows.set(row, c, RawKind::Number, "0"); break;
            }
        }
        return true;
    }
};

ProtoRowExtractor::ProtoRowExtractor(std::shared_ptr<const ProtoSchema> schema,
                                     const ProtoMessage& root,
                                     std::vector<std::vector<std::string>> paths)
    : impl_(std::make_unique<Impl>()) {
    Impl& im = *impl_;
    im.schema = std::move(schema);
    im.root.message = &root;
    im.nodes.push_back(&im.root);
    for (std::size_t c = 0; c < paths.size(); ++c) {
        const auto& path = paths[c];
        if (path.empty())
            throw ProtoSchemaError("column " + std::to_string(c + 1) + " has an empty path");
        Impl::Node* node = &im.root;
        std::string so_far;
        for (std::size_t i = 0; i < path.size(); ++i) {
            so_far += (i ? "." : "") + path[i];
            const ProtoField* f = node->message->field(path[i]);
            if (f == nullptr)
                throw ProtoSchemaError("message " + node->message->full_name + " has no field \"" +
                                       path[i] + "\" (path " + so_far + ")");
            if (f->type == ProtoType::Group)
                throw ProtoSchemaError("field " + so_far +
                                       " is a proto2 group, which stoatflow does not read");
            Impl::Entry* e = node->find(f->number);
            if (e == nullptr) {
                Impl::Entry fresh;
                fresh.field = f;
                auto at = std::lower_bound(
                    node->entries.begin(), node->entries.end(), f->number,
                    [](const Impl::Entry& x, std::int32_t n) { return x.field->number < n; });
                e = &*node->entries.insert(at, std::move(fresh));
            }
            if (i + 1 == path.size()) {
                e->columns.push_back(c);
                im.sources.push_back({node, f});
                im.has_lists |= f->repeated;
                break;
            }
            if (f->repeated || f->type != ProtoType::Message || f->message->timestamp)
                throw ProtoSchemaError("path " + so_far + "." + path[i + 1] +
                                       " goes through field " + so_far +
                                       ", which is not a single message");
            if (!e->child) {
                e->child = std::make_unique<Impl::Node>();
                e->child->message = f->message;
                im.nodes.push_back(e->child.get());
            }
            node = e->child.get();
        }
    }
    // Inserting entries moved them: the nodes (owned by unique_ptr) did not move, but the
    // parents the sources name are nodes, so they stay valid.
    for (Impl::Node* n : im.nodes) n->index();
    im.seen.assign(paths.size(), 0);
    im.lists.assign(paths.size(), std::string());
    im.list_items.assign(paths.size(), 0);
}

ProtoRowExtractor::~ProtoRowExtractor() = default;
ProtoRowExtractor::ProtoRowExtractor(ProtoRowExtractor&&) noexcept = default;
ProtoRowExtractor& ProtoRowExtractor::operator=(ProtoRowExtractor&&) noexcept = default;

std::size_t ProtoRowExtractor::columns() const { return impl_->sources.size(); }
const std::string& ProtoRowExtractor::detail() const { return impl_->detail; }

DeadReason ProtoRowExtractor::extract(const char* body, std::size_t len, RawRows& rows,
                                      std::size_t row) {
    Impl& im = *impl_;
    im.detail.clear();
    for (Impl::Node* n : im.nodes) n->present = false;
    std::fill(im.seen.begin(), im.seen.end(), 0);
    if (im.has_lists) {
        std::fill(im.list_items.begin(), im.list_items.end(), 0);
        for (std::string& l : im.lists) l.clear();
    }
    if (!im.read_node(im.root, std::string_view(body, len), rows, row, 0) || !im.finish(rows, row))
        return DeadReason::BadProtobuf;
    return DeadReason::None;
}

bool split_confluent_proto(std::string_view message, ConfluentProto& out, std::string& detail) {
    if (message.size() < 5 || message[0] != 0) {
        detail = message.empty() ? "an empty message, not a Confluent-framed one"
                                 : "the first byte is not the Confluent magic byte 0";
        return false;
    }
    const auto b = [&](std::size_t i) {
        return static_cast<std::uint32_t>(static_cast<unsigned char>(message[i]));
    };
    out.schema_id = b(1) << 24 | b(2) << 16 | b(3) << 8 | b(4);
    w::Reader r(message.data() + 5, message.size() - 5);
    std::uint64_t count = 0;
    out.indexes.clear();
    if (!r.varint(count)) {
        detail = "the message indexes are cut short";
        return false;
    }
    const std::int64_t n = w::zigzag64(count);
    if (n < 0 || n > kMaxProtoDepth) {
        detail = "the message indexes have a count of " + std::to_string(n);
        return false;
    }
    for (std::int64_t i = 0; i < n; ++i) {
        std::uint64_t v = 0;
        if (!r.varint(v)) {
            detail = "the message indexes are cut short";
            return false;
        }
        const std::int64_t idx = w::zigzag64(v);
        if (idx < 0 || idx > 0x7fffffff) {
            detail = "a message index of " + std::to_string(idx);
            return false;
        }
        out.indexes.push_back(static_cast<std::int32_t>(idx));
    }
    if (out.indexes.empty()) out.indexes.push_back(0);
    const std::size_t used = message.size() - 5 - static_cast<std::size_t>(r.remaining());
    out.body = message.substr(5 + used);
    return true;
}

}  // namespace stoatflow::format
