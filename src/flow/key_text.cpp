// A window's key as text (key_text.hpp).
#include "stoatflow/flow/key_text.hpp"

#include "stoatflow/format/json_text.hpp"

#include <cstdlib>

namespace stoatflow::flow {

void encode_key(const char* const* texts, std::size_t n, std::string& key) {
    key.clear();
    if (n == 1) {
        key = texts[0];
        return;
    }
    key += '[';
    for (std::size_t i = 0; i < n; ++i) {
        if (i > 0) key += ',';
        format::append_json_string(key, texts[i]);
    }
    key += ']';
}

bool decode_key(const std::string& key, std::vector<std::string>& out) {
    std::size_t i = 0;
    const std::size_t n = key.size();
    if (n < 2 || key[0] != '[' || key[n - 1] != ']') return false;
    i = 1;
    for (std::size_t parts = 0; i < n - 1; ++parts) {
        if (parts > 0) {
            if (key[i] != ',') return false;
            ++i;
        }
        if (i >= n - 1 || key[i] != '"') return false;
        ++i;
        std::string s;
        for (;;) {
            if (i >= n - 1) return false;
            const char ch = key[i++];
            if (ch == '"') break;
            if (ch != '\\') {
                s += ch;
                continue;
            }
            if (i >= n - 1) return false;
            const char e = key[i++];
            if (e == '"' || e == '\\') {
                s += e;
            } else if (e == 'u' && i + 4 <= n - 1 && key.compare(i, 2, "00") == 0) {
                const std::string hex = key.substr(i + 2, 2);
                char* end = nullptr;
                const long v = std::strtol(hex.c_str(), &end, 16);
                if (end != hex.c_str() + 2) return false;
                s += static_cast<char>(v);
                i += 4;
            } else {
                return false;
            }
        }
        out.push_back(std::move(s));
    }
    return true;
}

}  // namespace stoatflow::flow
