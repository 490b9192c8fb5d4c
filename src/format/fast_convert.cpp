// The fast lane of column conversion (see the header). Each rule below claims a strict subset
// of what the type's PostgreSQL 15 input function accepts, and gives exactly its value.
#include "stoatflow/format/fast_convert.hpp"
#include "stoatflow/core/event_time.hpp"

#include "stoatflow/core/time.hpp"
#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/json_text.hpp"

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <system_error>

namespace stoatflow::format {
namespace {

using Kind = FastValue::Kind;

// isspace() in the C locale, which pg_strtoint*, numeric_in and boolin skip.
bool pg_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// pg_strtoint16/32/64 of PostgreSQL 15: spaces, an optional sign, ASCII digits, spaces.
// False on anything else and on overflow (PostgreSQL rejects those).
bool pg_integer(std::string_view t, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
    std::size_t p = 0, n = t.size();
    while (p < n && pg_space(t[p])) ++p;
    bool neg = false;
    if (p < n && (t[p] == '-' || t[p] == '+')) neg = t[p++] == '-';
    if (p >= n || !json_is_digit(t[p])) return false;
    const std::uint64_t limit =
        neg ? static_cast<std::uint64_t>(-(lo + 1)) + 1 : static_cast<std::uint64_t>(hi);
    std::uint64_t v = 0;
    for (; p < n && json_is_digit(t[p]); ++p) {
        const auto digit = static_cast<std::uint64_t>(t[p] - '0');
        if (v > (limit - digit) / 10) return false;
        v = v * 10 + digit;
    }
    while (p < n && pg_space(t[p])) ++p;
    if (p != n) return false;
    out = neg ? static_cast<std::int64_t>(~v + 1) : static_cast<std::int64_t>(v);
    return true;
}

// numeric_in of an integer: spaces, a sign, ASCII digits (leading zeros allowed), spaces, at
// most 38 significant digits. False for fractions, exponents, NaN, Infinity and the rest.
bool pg_numeric_integer(std::string_view t, __int128& out) {
    std::size_t p = 0, n = t.size();
    while (p < n && pg_space(t[p])) ++p;
    bool neg = false;
    if (p < n && (t[p] == '-' || t[p] == '+')) neg = t[p++] == '-';
    if (p >= n || !json_is_digit(t[p])) return false;
    while (p + 1 < n && t[p] == '0' && json_is_digit(t[p + 1])) ++p;
    __int128 v = 0;
    int digits = 0;
    for (; p < n && json_is_digit(t[p]); ++p) {
        if (++digits > 38) return false;
        v = v * 10 + (t[p] - '0');
    }
    while (p < n && pg_space(t[p])) ++p;
    if (p != n) return false;
    out = neg ? -v : v;
    return true;
}

// float8in/float4in: only a JSON number token (no spaces, no NaN/Infinity) whose value is
// finite and normal (or an exact zero): strtod/strtof and std::from_chars both round correctly.
template <typename F>
bool pg_float(std::string_view t, F min_normal, F& out) {
    bool integer = false;
    if (!json_number(t, integer)) return false;
    F v = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size() || !std::isfinite(v)) return false;
    if (v == 0) {
        // Zero only when every digit of the mantissa is zero (else PostgreSQL reports underflow).
        for (char c : t) {
            if (c == 'e' || c == 'E') break;
            if (c >= '1' && c <= '9') return false;
        }
    } else if (std::fabs(v) < min_normal) {
        return false;
    }
    out = v;
    return true;
}

bool ascii_iequals(std::string_view a, const char* b) {
    const std::size_t n = std::strlen(b);
    if (a.size() != n) return false;
    for (std::size_t i = 0; i < n; ++i) {
        char c = a[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (c != b[i]) return false;
    }
    return true;
}

FastValue ask() { return {}; }
FastValue of_kind(Kind k) {
    FastValue v;
    v.kind = k;
    return v;
}
FastValue of_int(std::int64_t i) {
    FastValue v = of_kind(Kind::Int);
    v.i = i;
    return v;
}
FastValue of_text(std::string_view t) {
    FastValue v = of_kind(Kind::Text);
    v.text = t;
    return v;
}

bool is_digit2(std::string_view s, std::size_t at, int& v) {
    if (at + 2 > s.size() || !json_is_digit(s[at]) || !json_is_digit(s[at + 1])) return false;
    v = (s[at] - '0') * 10 + (s[at + 1] - '0');
    return true;
}

}  // namespace

bool parse_iso_timestamptz(std::string_view s, std::int64_t& micros) {
    int c1, c2, month, day, hour, minute, second;
    if (s.size() < 20 || !is_digit2(s, 0, c1) || !is_digit2(s, 2, c2) || s[4] != '-' ||
        !is_digit2(s, 5, month) || s[7] != '-' || !is_digit2(s, 8, day) ||
        (s[10] != 'T' && s[10] != ' ') || !is_digit2(s, 11, hour) || s[13] != ':' ||
        !is_digit2(s, 14, minute) || s[16] != ':' || !is_digit2(s, 17, second))
        return false;
    const int year = c1 * 100 + c2;
    static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (year < 1 || month < 1 || month > 12 || day < 1 ||
        day > kDays[month - 1] + (month == 2 && leap ? 1 : 0) || hour > 23 || minute > 59 ||
        second > 59)
        return false;
    std::size_t p = 19;
    std::int64_t fraction = 0;
    if (p < s.size() && s[p] == '.') {
        ++p;
        int digits = 0;
        for (; p < s.size() && json_is_digit(s[p]); ++p, ++digits) {
            if (digits == 6) return false;  // PostgreSQL rounds finer fractions: its call
            fraction = fraction * 10 + (s[p] - '0');
        }
        if (digits == 0) return false;
        for (int k = digits; k < 6; ++k) fraction *= 10;
    }
    int offset_seconds = 0;
    if (p < s.size() && s[p] == 'Z') {
        ++p;
    } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
        const int sign = s[p] == '-' ? -1 : 1;
        int oh = 0, om = 0;
        if (!is_digit2(s, p + 1, oh)) return false;
        p += 3;
        if (p < s.size() && s[p] == ':') {
            if (!is_digit2(s, p + 1, om)) return false;
            p += 3;
        }
        if (oh > 15 || om > 59) return false;
        offset_seconds = sign * (oh * 3600 + om * 60);
    } else {
        return false;  // no offset: the session's time zone applies, PostgreSQL's call
    }
    if (p != s.size()) return false;
    // Days since 1970-01-01 (proleptic Gregorian).
    auto leaps_through = [](std::int64_t y) {
        return core::floor_div(y, 4) - core::floor_div(y, 100) + core::floor_div(y, 400);
    };
    static constexpr int kBefore[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    const std::int64_t days = 365 * (std::int64_t{year} - 1970) + leaps_through(year - 1) -
                              leaps_through(1969) + kBefore[month - 1] +
                              (month > 2 && leap ? 1 : 0) + (day - 1);
    const std::int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_seconds;
    micros = secs * 1000000 + fraction;
    return true;
}

const char* clock_dependent_time(std::string_view text) {
    // ParseDateTime splits the text into fields; a word is a run of letters. Any run equal to
    // one of these words is the special value (or makes the text invalid): either way it is not
    // a time the record itself fixes.
    static constexpr const char* kWords[] = {"now", "today", "tomorrow", "yesterday"};
    std::size_t p = 0;
    const std::size_t n = text.size();
    while (p < n) {
        auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
        if (!letter(text[p])) {
            ++p;
            continue;
        }
        const std::size_t start = p;
        while (p < n && letter(text[p])) ++p;
        const std::string_view word = text.substr(start, p - start);
        for (const char* w : kWords)
            if (ascii_iequals(word, w)) return w;
    }
    return nullptr;
}

bool is_infinity_text(std::string_view text) {
    std::size_t b = 0, e = text.size();
    while (b < e && pg_space(text[b])) ++b;
    while (e > b && pg_space(text[e - 1])) --e;
    std::string_view t = text.substr(b, e - b);
    if (!t.empty() && (t.front() == '-' || t.front() == '+')) t.remove_prefix(1);
    return ascii_iequals(t, "infinity");
}

FastValue fast_convert(FastType type, const RawValue& raw) {
    // NULL is NULL for the lane's own types; a type it does not know (a domain that refuses
    // NULL among them) decides for itself.
    if (raw.kind == RawKind::Absent || raw.kind == RawKind::Null)
        return type == FastType::Other ? ask() : of_kind(Kind::Null);
    const bool scalar_text = raw.kind == RawKind::String || raw.kind == RawKind::Number;
    switch (type) {
    case FastType::Other:
    case FastType::Json: return ask();
    case FastType::Int2:
    case FastType::Int4:
    case FastType::Int8: {
        if (!scalar_text) return ask();
        const std::int64_t lo = type == FastType::Int2   ? INT16_MIN
                                : type == FastType::Int4 ? INT32_MIN
                                                         : INT64_MIN;
        const std::int64_t hi = type == FastType::Int2   ? INT16_MAX
                                : type == FastType::Int4 ? INT32_MAX
                                                         : INT64_MAX;
        std::int64_t v = 0;
        return pg_integer(raw.text, lo, hi, v) ? of_int(v) : ask();
    }
    case FastType::Numeric: {
        __int128 v = 0;
        if (!scalar_text || !pg_numeric_integer(raw.text, v)) return ask();
        if (v >= INT64_MIN && v <= INT64_MAX) return of_int(static_cast<std::int64_t>(v));
        FastValue out = of_kind(Kind::Big);
        out.big = v;
        return out;
    }
    case FastType::Float4:
    case FastType::Float8: {
        if (!scalar_text) return ask();
        FastValue out = of_kind(Kind::Double);
        if (type == FastType::Float8) return pg_float(raw.text, DBL_MIN, out.d) ? out : ask();
        float f = 0;
        if (!pg_float(raw.text, FLT_MIN, f)) return ask();
        out.d = f;
        return out;
    }
    case FastType::Bool: {
        FastValue out = of_kind(Kind::Bool);
        if (raw.kind == RawKind::True || raw.kind == RawKind::False) {
            out.b = raw.kind == RawKind::True;
            return out;
        }
        if (raw.kind != RawKind::String) return ask();
        for (const char* t : {"t", "true", "y", "yes", "on", "1"})
            if (ascii_iequals(raw.text, t)) {
                out.b = true;
                return out;
            }
        for (const char* f : {"f", "false", "n", "no", "off", "0"})
            if (ascii_iequals(raw.text, f)) return out;
        return ask();
    }
    case FastType::Text:
        switch (raw.kind) {
        case RawKind::True: return of_text("true");
        case RawKind::False: return of_text("false");
        case RawKind::String:
            // NUL cannot be in a text value; the PostgreSQL lane refuses it with its reason.
            if (std::memchr(raw.text.data(), '\0', raw.text.size()) != nullptr ||
                !core::is_valid_utf8(raw.text.data(), raw.text.size()))
                return ask();
            return of_text(raw.text);
        default: return of_text(raw.text);  // a number's, object's or array's JSON text
        }
    case FastType::Timestamptz: {
        FastValue out = of_kind(Kind::Micros);
        if (raw.kind == RawKind::Number) {
            std::int64_t ms = 0;
            if (!pg_integer(raw.text, INT64_MIN, INT64_MAX, ms) || !core::in_event_time_range(ms))
                return ask();
            out.i = core::ms_to_unix_micros(ms);
            return out;
        }
        if (raw.kind == RawKind::String && parse_iso_timestamptz(raw.text, out.i)) return out;
        return ask();
    }
    }
    return ask();
}

namespace {

// JSON text (already validated) that jsonb_in certainly takes: no \u0000 escape in a string,
// no number of more than 100 characters or with an exponent beyond 1000 (numeric's range).
bool jsonb_certain(std::string_view t) {
    bool in_string = false;
    for (std::size_t i = 0; i < t.size(); ++i) {
        const char c = t[i];
        if (in_string) {
            if (c == '\\') {
                if (t.compare(i, 6, "\\u0000") == 0) return false;
                ++i;
            } else if (c == '"') {
                in_string = false;
            }
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '-' || json_is_digit(c)) {
            std::size_t end = i;
            while (end < t.size() && (json_is_digit(t[end]) || t[end] == '-' || t[end] == '+' ||
                                      t[end] == '.' || t[end] == 'e' || t[end] == 'E'))
                ++end;
            if (end - i > 100) return false;
            for (std::size_t k = i; k < end; ++k)
                if ((t[k] == 'e' || t[k] == 'E') && end - k > 4) return false;  // |exp| > 999
            i = end - 1;
        }
    }
    return true;
}

}  // namespace

bool fast_valid(FastType type, const RawValue& raw) {
    if (type == FastType::Json) {
        switch (raw.kind) {
        case RawKind::Absent:
        case RawKind::Null:
        case RawKind::True:
        case RawKind::False: return true;
        case RawKind::String: return std::memchr(raw.text.data(), '\0', raw.text.size()) == nullptr;
        default: return jsonb_certain(raw.text);
        }
    }
    return fast_convert(type, raw).kind != FastValue::Kind::Ask;
}

}  // namespace stoatflow::format
