// What the JSON decoder's walk found at one configured path (Slot), how number tokens read
// as C++ values, and the excerpts of a payload that dead-letter details quote.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/limits.hpp"
#include "json_walk.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace stoatflow::format::json_fields {

namespace od = simdjson::ondemand;

// What the walk found at one configured path. Absent until the path is seen.
enum class Seen : std::uint8_t { Absent, Null, Bool, String, Number, Object, Array };
// How a number reads as C++: exactly as int64, exactly as __int128 (an integer of at most
// 38 digits beyond int64), as a (finite) double, or neither.
enum class NumKind : std::uint8_t { Int, Big, Double, Overflow };

struct Slot {
    Seen seen = Seen::Absent;
    bool boolean = false;
    NumKind num = NumKind::Int;
    bool integer = false;  // Number: an integer token (no fraction, no exponent)
    std::int64_t i = 0;
    __int128 big = 0;
    double d = 0;
    // String: the unescaped text (in the parser's string buffer); Number: the token as written.
    std::string_view text;
};

// An integer token (grammar already checked) as int64; false if it does not fit.
inline bool integer_token_to_int64(std::string_view t, std::int64_t& out) {
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

// Digits of an integer token (grammar already checked: no leading zeros).
inline std::size_t integer_digits(std::string_view t) {
    return t.size() - (t.front() == '-' ? 1 : 0);
}

// An integer token of at most kMaxExactIntegerDigits digits as __int128 (always fits).
inline __int128 integer_token_to_int128(std::string_view t) {
    const bool neg = t.front() == '-';
    __int128 v = 0;
    for (std::size_t p = neg ? 1 : 0; p < t.size(); ++p) v = v * 10 + (t[p] - '0');
    return neg ? -v : v;
}

// A number token (grammar already checked) as the nearest double; false if its magnitude is
// beyond the double range. Tiny magnitudes become (signed) zero. std::from_chars rounds
// correctly and ignores the locale; simdjson 3.0.1's On-Demand get_double() misreads some
// long mantissas (0.577779223372036854775808777 gave 8.48e-09; found by the fuzzer).
inline bool token_to_double(std::string_view t, double& out) {
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

// Appends an excerpt of at most kExcerptBytes bytes of s (in quotes unless a number token):
// valid UTF-8 is kept, quotes and backslashes are escaped, control characters and invalid
// bytes become \xNN, so the detail is always storable text.
inline void append_excerpt(std::string& out, std::string_view s, bool quoted = true) {
    const auto* u = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t limit = std::min(s.size(), kExcerptBytes);
    std::size_t i = 0;
    if (quoted) out += '"';
    while (i < limit) {
        const unsigned char c = u[i];
        if (c >= 0x20 && c < 0x7F) {
            if (c == '"' || c == '\\') out += '\\';
            out += static_cast<char>(c);
            ++i;
            continue;
        }
        const std::size_t len = c >= 0x80 ? core::utf8_sequence_length(u + i, s.size() - i) : 0;
        if (len != 0) {
            if (i + len > limit) break;  // do not cut a character in half
            out.append(s.data() + i, len);
            i += len;
        } else {
            core::append_byte_escape(out, c);
            ++i;
        }
    }
    if (quoted) out += '"';
    if (i < s.size()) out += "...";
}

inline const char* kind_name(Seen s) {
    switch (s) {
    case Seen::Absent: return "missing";
    case Seen::Null: return "null";
    case Seen::Bool: return "a boolean";
    case Seen::String: return "a string";
    case Seen::Number: return "a number";
    case Seen::Object: return "an object";
    case Seen::Array: return "an array";
    }
    return "?";
}

inline Seen seen_of(od::json_type t) {
    switch (t) {
    case od::json_type::array: return Seen::Array;
    case od::json_type::object: return Seen::Object;
    case od::json_type::number: return Seen::Number;
    case od::json_type::string: return Seen::String;
    case od::json_type::boolean: return Seen::Bool;
    case od::json_type::null: return Seen::Null;
    }
    return Seen::Absent;
}

}  // namespace stoatflow::format::json_fields
