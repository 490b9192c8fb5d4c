// Storable text for dead letters and identifier quoting.
#include <cstdio>

#include "stoatflow/pg/guard.hpp"
#include "stoatflow/pg/text.hpp"

extern "C" {
#include "utils/builtins.h"
}

namespace stoatflow::pg {

namespace {
// Length of a valid UTF-8 sequence at p (no overlongs, no surrogates), or 0.
std::size_t utf8_len(const unsigned char* p, std::size_t left) {
    const unsigned char c = p[0];
    if (c < 0x80) return 1;
    std::size_t n;
    unsigned cp;
    if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
    else return 0;
    if (left < n) return 0;
    for (std::size_t i = 1; i < n; ++i) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}
}  // namespace

std::string storable_text(const char* data, std::size_t len, std::size_t max_bytes) {
    std::string out;
    const auto* p = reinterpret_cast<const unsigned char*>(data);
    std::size_t i = 0;
    while (i < len && out.size() < max_bytes) {
        const std::size_t n = p[i] == 0 ? 0 : utf8_len(p + i, len - i);
        if (n == 0) {
            char buf[5];
            snprintf(buf, sizeof buf, "\\x%02X", p[i]);
            out += buf;
            ++i;
        } else {
            out.append(data + i, n);
            i += n;
        }
    }
    return out;
}

std::string quote_ident(const std::string& name) {
    // PostgreSQL's own rule, keywords included ("order", "end", "user" must be quoted).
    const char* quoted = pg_call([&] { return quote_identifier(name.c_str()); });
    return std::string(quoted);
}

}  // namespace stoatflow::pg
