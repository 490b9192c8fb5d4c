// Small JSON text rules shared by the decoders of the Kafka layer: the number grammar that
// simdjson On-Demand does not check on tokens it is not asked to read, and JSON string quoting.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <string>
#include <string_view>

namespace stoatflow::format {

inline bool json_is_digit(char c) { return c >= '0' && c <= '9'; }

// A raw token without the whitespace simdjson leaves after it.
inline std::string_view trim_json_ws(std::string_view t) {
    while (!t.empty() &&
           (t.back() == ' ' || t.back() == '\t' || t.back() == '\n' || t.back() == '\r'))
        t.remove_suffix(1);
    return t;
}

// RFC 8259 number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?; `integer` tells
// whether there is neither a fraction nor an exponent.
inline bool json_number(std::string_view t, bool& integer) {
    std::size_t p = 0, n = t.size();
    if (p < n && t[p] == '-') ++p;
    if (p >= n || !json_is_digit(t[p])) return false;
    if (t[p] == '0') {
        ++p;
    } else {
        while (p < n && json_is_digit(t[p])) ++p;
    }
    integer = true;
    if (p < n && t[p] == '.') {
        integer = false;
        ++p;
        if (p >= n || !json_is_digit(t[p])) return false;
        while (p < n && json_is_digit(t[p])) ++p;
    }
    if (p < n && (t[p] == 'e' || t[p] == 'E')) {
        integer = false;
        ++p;
        if (p < n && (t[p] == '+' || t[p] == '-')) ++p;
        if (p >= n || !json_is_digit(t[p])) return false;
        while (p < n && json_is_digit(t[p])) ++p;
    }
    return p == n;
}

// Appends s as a JSON string (quoted; ", \ and control characters escaped). s must be UTF-8.
inline void append_json_string(std::string& out, std::string_view s) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += '"';
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20) {
            out += "\\u00";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        } else {
            out += ch;
        }
    }
    out += '"';
}

// Appends an excerpt of at most kExcerptBytes bytes of s (in quotes unless a number token):
// valid UTF-8 is kept, quotes and backslashes are escaped, control characters and invalid
// bytes become \xNN, so a dead letter's detail is always storable text (json_text.cpp).
void append_excerpt(std::string& out, std::string_view s, bool quoted = true);

}  // namespace stoatflow::format
