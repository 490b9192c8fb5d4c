// Internal to the JSON decoder: the document walk, included by exactly one translation unit
// per simdjson On-Demand implementation (json_decoder.cpp: the portable "fallback" build;
// json_decoder_haswell.cpp: compiled with AVX2). simdjson::ondemand names the implementation
// the including unit was compiled for (simdjson::fallback::ondemand, simdjson::haswell::...),
// so each copy is a distinct set of symbols. Everything here has internal linkage: only the
// including unit's new_*_kernel() function is visible to the rest of the program.
#pragma once
#include "json_walk.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

namespace stoatflow::kafka::detail {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// Nesting limit: bounds the walk's recursion, and stays below the On-Demand parser's own
// max_depth (1024), which it asserts on in debug builds but does not check otherwise.
constexpr int kMaxDepth = 1000;

bool is_json_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim_json_ws(std::string_view t) {
    while (!t.empty() &&
           (t.back() == ' ' || t.back() == '\t' || t.back() == '\n' || t.back() == '\r'))
        t.remove_suffix(1);
    return t;
}

// RFC 8259 number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool json_number(std::string_view t, bool& integer) {
    std::size_t p = 0, n = t.size();
    if (p < n && t[p] == '-') ++p;
    if (p >= n || !is_json_digit(t[p])) return false;
    if (t[p] == '0') {
        ++p;
    } else {
        while (p < n && is_json_digit(t[p])) ++p;
    }
    integer = true;
    if (p < n && t[p] == '.') {
        integer = false;
        ++p;
        if (p >= n || !is_json_digit(t[p])) return false;
        while (p < n && is_json_digit(t[p])) ++p;
    }
    if (p < n && (t[p] == 'e' || t[p] == 'E')) {
        integer = false;
        ++p;
        if (p < n && (t[p] == '+' || t[p] == '-')) ++p;
        if (p >= n || !is_json_digit(t[p])) return false;
        while (p < n && is_json_digit(t[p])) ++p;
    }
    return p == n;
}

// An integer token (grammar already checked) as int64; false if it does not fit.
bool integer_token_to_int64(std::string_view t, std::int64_t& out) {
    const bool neg = t.front() == '-';
    const std::uint64_t limit = neg ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
    std::uint64_t v = 0;
    for (std::size_t p = neg ? 1 : 0; p < t.size(); ++p) {
        const auto digit = static_cast<std::uint64_t>(t[p] - '0');
        if (v > (limit - digit) / 10) return false;
        v = v * 10 + digit;
    }
    out = neg ? static_cast<std::int64_t>(~v + 1) : static_cast<std::int64_t>(v);
    return true;
}

// A number token (grammar already checked) as the nearest double; false if its magnitude is
// beyond the double range. Tiny magnitudes become (signed) zero. std::from_chars rounds
// correctly and ignores the locale; simdjson 3.0.1's On-Demand get_double() misreads some
// long mantissas (0.577779223372036854775808777 gave 8.48e-09; found by the fuzzer).
bool token_to_double(std::string_view t, double& out) {
    double d = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), d);
    if (r.ec == std::errc() && r.ptr == t.data() + t.size()) {
        out = d;
        return std::isfinite(d);
    }
    // Out of range one way or the other: the decimal exponent of the leading significant
    // digit says which (zero has none, and zero is never out of range).
    std::int64_t magnitude = 0;
    bool leading = false, fraction = false;
    std::size_t p = t.front() == '-' ? 1 : 0;
    std::int64_t int_digits = 0, frac_zeros = 0;
    for (; p < t.size() && t[p] != 'e' && t[p] != 'E'; ++p) {
        if (t[p] == '.') {
            fraction = true;
        } else if (!leading && t[p] == '0') {
            if (fraction) ++frac_zeros;
        } else {
            leading = true;
            if (!fraction) ++int_digits;
        }
    }
    magnitude = int_digits > 0 ? int_digits : -frac_zeros;
    std::int64_t exponent = 0;
    bool negative_exponent = false;
    if (p < t.size()) {
        ++p;
        if (t[p] == '+' || t[p] == '-') negative_exponent = t[p++] == '-';
        for (; p < t.size(); ++p)
            exponent = std::min<std::int64_t>(exponent * 10 + (t[p] - '0'), 1000000000);
    }
    magnitude += negative_exponent ? -exponent : exponent;
    out = t.front() == '-' ? -0.0 : 0.0;
    return magnitude <= 0;
}

Seen seen_of(od::json_type t) {
    switch (t) {
    case od::json_type::array:
        return Seen::Array;
    case od::json_type::object:
        return Seen::Object;
    case od::json_type::number:
        return Seen::Number;
    case od::json_type::string:
        return Seen::String;
    case od::json_type::boolean:
        return Seen::Bool;
    case od::json_type::null:
        return Seen::Null;
    }
    return Seen::Absent;
}

class Kernel final : public WalkKernel {
public:
    explicit Kernel(const char* name) : name_(name) {}

    const char* name() const override { return name_; }

    error_code allocate(std::size_t capacity) override { return parser_.allocate(capacity); }

    error_code parse(const char* buf, std::size_t len, std::size_t allocated,
                     std::vector<PathNode>& nodes, std::vector<Slot>& slots,
                     Seen& root) override {
        nodes_ = nodes.data();
        slots_ = slots.data();
        od::document doc;
        if (auto e = parser_.iterate(buf, len, allocated).get(doc)) return e;
        od::json_type type;
        if (auto e = doc.type().get(type)) return e;
        error_code e = simdjson::SUCCESS;
        if (type == od::json_type::object) {
            od::object o;
            e = doc.get_object().get(o);
            if (!e) e = walk_object(o, 0, 1);
        } else if (type == od::json_type::array) {
            od::array a;
            e = doc.get_array().get(a);
            if (!e) e = walk_array(a, 1);
        } else {
            e = check_scalar_document(doc, type, buf + len);
        }
        if (!e && (type == od::json_type::object || type == od::json_type::array)) {
            // Nothing may follow the root container.
            const error_code at = doc.current_location().error();
            if (at != simdjson::OUT_OF_BOUNDS) e = simdjson::TRAILING_CONTENT;
        }
        root = seen_of(type);
        return e;
    }

private:
    const char* name_;
    od::parser parser_;
    // The decoder's trie and slots during one parse() (plain pointers: see json_walk.hpp).
    PathNode* nodes_ = nullptr;
    Slot* slots_ = nullptr;

    int find_child(int node, std::string_view name) const {
        const std::vector<int>& children = nodes_[node].children;
        const int* c = children.data();
        const int* const end = c + children.size();
        for (; c != end; ++c)
            if (std::string_view(nodes_[*c].name) == name) return *c;
        return -1;
    }

    // A later duplicate member replaces an earlier one (as in jsonb): forget what the
    // earlier one's subtree filled in.
    void forget_below(int node) {
        const std::vector<int>& children = nodes_[node].children;
        for (std::size_t k = 0; k < children.size(); ++k) {
            const int c = children.data()[k];
            nodes_[c].visited = false;
            if (nodes_[c].slot >= 0) slots_[nodes_[c].slot] = Slot{};
            forget_below(c);
        }
    }

    Slot* slot_of(int node) {
        return node >= 0 && nodes_[node].slot >= 0 ? &slots_[nodes_[node].slot] : nullptr;
    }

    // ---- the walk: validates every value (the On-Demand API only checks what is read) ----

    error_code walk_value(od::value& v, int node, int depth) {
        od::json_type type;
        if (auto e = v.type().get(type)) return e;
        Slot* s = slot_of(node);
        switch (type) {
        case od::json_type::object: {
            if (depth >= kMaxDepth) return simdjson::DEPTH_ERROR;
            od::object o;
            if (auto e = v.get_object().get(o)) return e;
            if (s) s->seen = Seen::Object;
            return walk_object(o, node, depth + 1);
        }
        case od::json_type::array: {
            if (depth >= kMaxDepth) return simdjson::DEPTH_ERROR;
            od::array a;
            if (auto e = v.get_array().get(a)) return e;
            if (s) s->seen = Seen::Array;
            return walk_array(a, depth + 1);
        }
        case od::json_type::string: {
            std::string_view str;
            if (auto e = v.get_string().get(str)) return e;
            if (s) {
                s->seen = Seen::String;
                s->text = str;
            }
            return simdjson::SUCCESS;
        }
        case od::json_type::number: {
            const std::string_view tok = trim_json_ws(v.raw_json_token());
            bool integer = false;
            if (!json_number(tok, integer)) return simdjson::NUMBER_ERROR;
            if (s) {
                s->seen = Seen::Number;
                s->text = tok;
                if (integer && integer_token_to_int64(tok, s->i)) {
                    s->num = NumKind::Int;
                } else {
                    s->num = token_to_double(tok, s->d) ? NumKind::Double : NumKind::Overflow;
                }
            }
            return simdjson::SUCCESS;
        }
        case od::json_type::boolean: {
            const std::string_view tok = trim_json_ws(v.raw_json_token());
            if (tok != "true" && tok != "false") return simdjson::T_ATOM_ERROR;
            if (s) {
                s->seen = Seen::Bool;
                s->boolean = tok == "true";
            }
            return simdjson::SUCCESS;
        }
        case od::json_type::null: {
            if (trim_json_ws(v.raw_json_token()) != "null") return simdjson::N_ATOM_ERROR;
            if (s) s->seen = Seen::Null;
            return simdjson::SUCCESS;
        }
        }
        return simdjson::TAPE_ERROR;
    }

    error_code walk_object(od::object& o, int node, int depth) {
        const bool wanted = node >= 0 && !nodes_[node].children.empty();
        for (auto member : o) {
            od::field f;
            if (auto e = std::move(member).get(f)) return e;
            std::string_view name;
            if (auto e = f.unescaped_key().get(name)) return e;  // also checks its escapes
            int child = wanted ? find_child(node, name) : -1;
            if (child >= 0) {
                if (nodes_[child].visited) forget_below(child);
                nodes_[child].visited = true;
            }
            if (auto e = walk_value(f.value(), child, depth)) return e;
        }
        return simdjson::SUCCESS;
    }

    error_code walk_array(od::array& a, int depth) {
        for (auto element : a) {
            od::value v;
            if (auto e = std::move(element).get(v)) return e;
            if (auto e = walk_value(v, -1, depth)) return e;
        }
        return simdjson::SUCCESS;
    }

    // A scalar document: valid JSON, but not an object. Checks it the same way as above.
    error_code check_scalar_document(od::document& doc, od::json_type type, const char* end) {
        std::string_view raw;
        if (auto e = doc.raw_json_token().get(raw)) return e;
        if (raw.data() + raw.size() != end) return simdjson::TRAILING_CONTENT;
        const std::string_view tok = trim_json_ws(raw);
        bool integer = false;
        switch (type) {
        case od::json_type::string: {
            std::string_view str;
            return doc.get_string().get(str);
        }
        case od::json_type::number:
            return json_number(tok, integer) ? simdjson::SUCCESS : simdjson::NUMBER_ERROR;
        case od::json_type::boolean:
            return tok == "true" || tok == "false" ? simdjson::SUCCESS : simdjson::T_ATOM_ERROR;
        case od::json_type::null:
            return tok == "null" ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
        default:
            return simdjson::TAPE_ERROR;
        }
    }
};

}  // namespace
}  // namespace stoatflow::kafka::detail
