// Names PostgreSQL would truncate (README "Limits"), found in an expression's text before the
// scanner silently shortens them: identifiers only, string literals and comments skipped.
#include <cctype>
#include <cstring>

#include "stoatflow/core/names.hpp"
#include "stoatflow/pg/declare/analyze_internal.hpp"

namespace stoatflow::pg::analyze_detail {

static_assert(core::kMaxNameBytes == NAMEDATALEN - 1, "the name limit is PostgreSQL's");

namespace {

bool ident_start(unsigned char c) { return isalpha(c) || c == '_' || c >= 0x80; }
bool ident_char(unsigned char c) { return ident_start(c) || isdigit(c) || c == '$'; }

}  // namespace

// The first identifier PostgreSQL's scanner would truncate (over NAMEDATALEN - 1 bytes): a
// byte offset, or -1. Skips string literals (standard, E'', dollar-quoted) and comments.
int long_identifier(const char* s) {
    const int n = static_cast<int>(strlen(s));
    auto at = [&](int i) { return i < n ? static_cast<unsigned char>(s[i]) : 0; };
    for (int i = 0; i < n;) {
        const unsigned char c = at(i);
        if (c == '-' && at(i + 1) == '-') {
            while (i < n && s[i] != '\n') ++i;
        } else if (c == '/' && at(i + 1) == '*') {
            int depth = 0;
            do {
                if (at(i) == '/' && at(i + 1) == '*') {
                    ++depth;
                    i += 2;
                } else if (at(i) == '*' && at(i + 1) == '/') {
                    --depth;
                    i += 2;
                } else {
                    ++i;
                }
            } while (i < n && depth > 0);
        } else if (c == '\'') {
            const bool escapes =
                i > 0 && (s[i - 1] == 'E' || s[i - 1] == 'e') && (i < 2 || !ident_char(at(i - 2)));
            for (++i; i < n; ++i) {
                if (escapes && s[i] == '\\')
                    ++i;
                else if (s[i] == '\'' && at(i + 1) == '\'')
                    ++i;
                else if (s[i] == '\'')
                    break;
            }
            ++i;
        } else if (c == '$' && (i == 0 || !ident_char(at(i - 1)))) {
            int j = i + 1;
            while (j < n && ident_char(at(j)) && s[j] != '$') ++j;
            if (j < n && s[j] == '$') {
                const int tag = j - i + 1;
                const char* end = strstr(s + j + 1, pnstrdup(s + i, tag));
                i = end ? static_cast<int>(end - s) + tag : n;
            } else {
                i = j;
            }
        } else if (c == '"') {
            const int start = i;
            int len = 0;
            for (++i; i < n; ++i, ++len) {
                if (s[i] == '"' && at(i + 1) == '"')
                    ++i;
                else if (s[i] == '"')
                    break;
            }
            ++i;
            if (!core::name_fits(static_cast<std::size_t>(len))) return start;
        } else if (ident_start(c)) {
            const int start = i;
            while (i < n && ident_char(at(i))) ++i;
            if (!core::name_fits(static_cast<std::size_t>(i - start))) return start;
        } else if (isdigit(c)) {
            while (i < n && (isalnum(at(i)) || s[i] == '.')) ++i;
        } else {
            ++i;
        }
    }
    return -1;
}

}  // namespace stoatflow::pg::analyze_detail
