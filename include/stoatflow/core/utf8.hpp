// The one UTF-8 rule (RFC 3629) and the one way stoatflow shows a byte it cannot keep as text
// (\xNN, lowercase hex): dead-letter payloads and details (PostgreSQL layer) and decoder
// messages (kafka layer) both use these.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace stoatflow::core {

// Length of the well-formed UTF-8 sequence at s[0..n) (no overlong forms, no surrogates, nothing
// beyond U+10FFFF), or 0 if there is none. n must be at least 1.
inline std::size_t utf8_sequence_length(const unsigned char* s, std::size_t n) {
    const unsigned c = s[0];
    if (c < 0x80) return 1;
    std::size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;  // overlong
        if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;  // overlong
        if (c == 0xF4) hi = 0x8F;  // beyond U+10FFFF
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (std::size_t k = 2; k < len; ++k)
        if (s[k] < 0x80 || s[k] > 0xBF) return 0;
    return len;
}

// True when all of s[0..n) is well-formed UTF-8.
inline bool is_valid_utf8(const char* data, std::size_t n) {
    const auto* s = reinterpret_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n;) {
        if (n - i >= 8) {  // eight ASCII bytes at a time
            std::uint64_t w;
            std::memcpy(&w, s + i, sizeof w);
            if ((w & 0x8080808080808080ULL) == 0) {
                i += 8;
                continue;
            }
        }
        if (s[i] < 0x80) {
            ++i;
            continue;
        }
        const std::size_t len = utf8_sequence_length(s + i, n - i);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

// Appends \xNN for a byte shown instead of kept.
inline void append_byte_escape(std::string& out, unsigned char byte) {
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
}

// At most max_bytes of input as text PostgreSQL can store: valid UTF-8 is kept as is, NUL and
// bytes that are not valid UTF-8 become \xNN (dead-letter payloads and details).
inline std::string storable_text(const char* data, std::size_t len, std::size_t max_bytes) {
    std::string out;
    const auto* p = reinterpret_cast<const unsigned char*>(data);
    std::size_t i = 0;
    while (i < len && out.size() < max_bytes) {
        const std::size_t n = p[i] == 0 ? 0 : utf8_sequence_length(p + i, len - i);
        if (n == 0) {
            append_byte_escape(out, p[i]);
            ++i;
        } else {
            out.append(data + i, n);
            i += n;
        }
    }
    return out;
}

}  // namespace stoatflow::core
