// Splits create_source's `columns` list (`name type [PATH '$.a.b']`, comma separated) into
// names, type names and member paths; every refusal names the position it found.
#include "stoatflow/core/column_list.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/core/names.hpp"

#include <cstring>

namespace stoatflow::core {
namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           static_cast<unsigned char>(c) >= 0x80;
}
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9') || c == '$'; }

// The text at position p, for messages: at most 20 characters, or "end of input".
std::string near(const std::string& s, std::size_t p) {
    if (p >= s.size()) return "end of input";
    std::string t = s.substr(p, 20);
    for (char& c : t)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    return "\"" + t + (p + 20 < s.size() ? "...\"" : "\"");
}

[[noreturn]] void syntax(const std::string& s, std::size_t p, const std::string& what) {
    throw Error(sqlstate::kSyntaxError,
                "syntax error in columns at position " + std::to_string(p + 1) + " (" + near(s, p) +
                    "): " + what,
                "Write columns as 'name type [PATH ''$.a.b'']', comma separated, for example "
                "'user_id text, amount numeric, city text PATH ''$.address.city'''.");
}

class Scanner {
public:
    explicit Scanner(const std::string& s) : s_(s) {}
    std::size_t pos() const { return p_; }
    bool at_end() const { return p_ >= s_.size(); }
    char peek() const { return at_end() ? '\0' : s_[p_]; }
    void skip_space() {
        while (!at_end() && is_space(s_[p_])) ++p_;
    }

    std::string name() {
        if (peek() == '"') {
            const std::size_t start = p_++;
            std::string out;
            for (;;) {
                if (at_end()) syntax(s_, start, "unterminated quoted name");
                if (s_[p_] == '"') {
                    if (p_ + 1 < s_.size() && s_[p_ + 1] == '"') {
                        out += '"';
                        p_ += 2;
                        continue;
                    }
                    ++p_;
                    break;
                }
                out += s_[p_++];
            }
            if (out.empty()) syntax(s_, start, "a quoted name must not be empty");
            return out;
        }
        if (!ident_start(peek())) syntax(s_, p_, "expected a column name");
        std::string out;
        while (!at_end() && ident_char(s_[p_])) {
            char c = s_[p_++];
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            out += c;
        }
        return out;
    }

    // True when the word PATH starts at p_ and a string literal follows it.
    bool at_path_clause() const {
        if (s_.size() - p_ < 4 || strncasecmp(s_.c_str() + p_, "path", 4) != 0) return false;
        if (p_ > 0 && !is_space(s_[p_ - 1])) return false;
        std::size_t q = p_ + 4;
        while (q < s_.size() && is_space(s_[q])) ++q;
        return q < s_.size() && s_[q] == '\'';
    }

    // The type name: up to a top-level comma, the end, or a PATH clause.
    std::string type_name() {
        const std::size_t start = p_;
        int depth = 0;
        while (!at_end()) {
            const char c = s_[p_];
            if (c == '"') {
                const std::size_t q = s_.find('"', p_ + 1);
                if (q == std::string::npos) syntax(s_, p_, "unterminated quoted name");
                p_ = q + 1;
                continue;
            }
            if (c == '(' || c == '[') ++depth;
            if (c == ')' || c == ']') --depth;
            if (depth < 0) syntax(s_, p_, "unbalanced parenthesis");
            if (depth == 0 && (c == ',' || at_path_clause())) break;
            if (depth == 0 && c == '\'') syntax(s_, p_, "unexpected string literal");
            ++p_;
        }
        if (depth != 0) syntax(s_, start, "unbalanced parenthesis");
        std::size_t end = p_;
        while (end > start && is_space(s_[end - 1])) --end;
        return s_.substr(start, end - start);
    }

    std::string string_literal() {
        const std::size_t start = p_;
        ++p_;  // the opening quote
        std::string out;
        for (;;) {
            if (at_end()) syntax(s_, start, "unterminated string literal");
            if (s_[p_] == '\'') {
                if (p_ + 1 < s_.size() && s_[p_ + 1] == '\'') {
                    out += '\'';
                    p_ += 2;
                    continue;
                }
                ++p_;
                return out;
            }
            out += s_[p_++];
        }
    }
    void advance(std::size_t n) { p_ += n; }

private:
    const std::string& s_;
    std::size_t p_ = 0;
};

}  // namespace

std::vector<std::string> parse_json_path(const std::string& path) {
    auto refuse = [&](const std::string& why) {
        throw Error(sqlstate::kSyntaxError, "unsupported PATH '" + path + "': " + why,
                    "A PATH names members from the document root: '$.a.b' or '$.\"a b\".c' "
                    "(no array subscripts, wildcards, filters or lax/strict modes).");
    };
    std::size_t p = 0;
    if (path.empty() || path[0] != '$') refuse("it must start with $");
    ++p;
    std::vector<std::string> members;
    while (p < path.size()) {
        if (path[p] != '.') refuse("expected \".\" at position " + std::to_string(p + 1));
        ++p;
        std::string m;
        if (p < path.size() && path[p] == '"') {
            ++p;
            for (;;) {
                if (p >= path.size()) refuse("unterminated quoted member");
                const char c = path[p++];
                if (c == '"') break;
                if (c == '\\') {
                    if (p >= path.size()) refuse("unterminated quoted member");
                    const char e = path[p++];
                    if (e != '"' && e != '\\') refuse("only \\\" and \\\\ escapes are supported");
                    m += e;
                } else {
                    m += c;
                }
            }
        } else {
            if (p >= path.size() || !ident_start(path[p]) || path[p] == '$')
                refuse("expected a member name at position " + std::to_string(p + 1));
            while (p < path.size() && (ident_start(path[p]) || (path[p] >= '0' && path[p] <= '9')))
                m += path[p++];
        }
        members.push_back(std::move(m));
    }
    if (members.empty()) refuse("it names no member");
    return members;
}

std::vector<ColumnDecl> parse_column_list(const std::string& text) {
    Scanner sc(text);
    std::vector<ColumnDecl> out;
    sc.skip_space();
    if (sc.at_end())
        throw Error(sqlstate::kSyntaxError, "columns lists no column",
                    "Give at least one column, or leave columns NULL for 0.1's field paths.");
    for (;;) {
        sc.skip_space();
        ColumnDecl col;
        col.position = sc.pos() + 1;
        col.name = sc.name();
        check_name_length("column name", col.name,
                          "PostgreSQL would truncate it; choose a shorter name.");
        for (const auto& other : out)
            if (other.name == col.name)
                throw Error(sqlstate::kDuplicateColumn,
                            "column \"" + col.name + "\" specified more than once");
        if (is_metadata_column(col.name))
            throw Error(sqlstate::kDuplicateColumn,
                        "column name \"" + col.name + "\" is taken by a Kafka metadata column",
                        metadata_column_names() + " are always there; rename the column.");
        sc.skip_space();
        const std::size_t type_at = sc.pos();
        col.type = sc.type_name();
        if (col.type.empty()) syntax(text, type_at, "column \"" + col.name + "\" has no type");
        if (sc.at_path_clause()) {
            sc.advance(4);
            sc.skip_space();
            col.path = parse_json_path(sc.string_literal());
            col.path_given = true;
            sc.skip_space();
        } else {
            col.path = {col.name};
        }
        out.push_back(std::move(col));
        if (sc.at_end()) break;
        if (sc.peek() != ',') syntax(text, sc.pos(), "expected \",\" or the end of the list");
        sc.advance(1);
    }
    return out;
}

}  // namespace stoatflow::core
