// Excerpts of record text for dead letters' details (json_text.hpp).
#include "stoatflow/format/json_text.hpp"

#include <algorithm>

#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/limits.hpp"

namespace stoatflow::format {

void append_excerpt(std::string& out, std::string_view s, bool quoted) {
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

}  // namespace stoatflow::format
