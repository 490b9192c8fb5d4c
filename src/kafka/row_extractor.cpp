// The JSON row extractor: one simdjson On-Demand pass that validates the whole document and
// copies each column's value (found through a trie of the column paths) into a raw row.
#include "stoatflow/kafka/row_extractor.hpp"

#include "stoatflow/kafka/json_text.hpp"
#include "stoatflow/kafka/limits.hpp"

#ifndef SIMDJSON_THREADS_ENABLED
#define SIMDJSON_THREADS_ENABLED 1
#endif
#ifndef SIMDJSON_DEVELOPMENT_CHECKS
#define SIMDJSON_DEVELOPMENT_CHECKS 0
#endif
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace stoatflow::kafka {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

struct Node {
    std::string name;
    std::vector<int> columns;  // columns whose path ends here
    std::vector<int> children;
    bool visited = false;  // seen in this document (a later duplicate member replaces it)
};

}  // namespace

struct JsonRowExtractor::Impl {
    std::vector<Node> nodes;  // nodes[0]: the document root
    std::size_t ncols = 0;
    od::parser parser;
    std::unique_ptr<char[]> buf;
    std::size_t buf_cap = 0;
    std::string detail;
    od::document* doc = nullptr;  // during extract()
    RawRows* rows = nullptr;
    std::size_t row = 0;

    explicit Impl(const std::vector<std::vector<std::string>>& paths) : ncols(paths.size()) {
        nodes.emplace_back();
        for (std::size_t c = 0; c < paths.size(); ++c) {
            int node = 0;
            for (const auto& member : paths[c]) {
                int child = find_child(node, member);
                if (child < 0) {
                    child = static_cast<int>(nodes.size());
                    nodes.emplace_back();
                    nodes.back().name = member;
                    nodes[node].children.push_back(child);
                }
                node = child;
            }
            nodes[node].columns.push_back(static_cast<int>(c));
        }
    }

    int find_child(int node, std::string_view name) const {
        for (int c : nodes[node].children)
            if (nodes[c].name == name) return c;
        return -1;
    }

    void set(int node, RawKind kind, std::string_view text = {}) {
        for (int c : nodes[node].columns) rows->set(row, static_cast<std::size_t>(c), kind, text);
    }

    // A later duplicate member replaces an earlier one: forget what the earlier one filled in.
    void forget_below(int node) {
        for (int c : nodes[node].children) {
            nodes[c].visited = false;
            set(c, RawKind::Absent);
            forget_below(c);
        }
    }

    // The JSON text of the container that started at `start` and was just walked.
    error_code container_text(const char* start, std::string_view& out) {
        const char* end = nullptr;
        if (auto e = doc->current_location().get(end)) return e;
        out = trim_json_ws(std::string_view(start, static_cast<std::size_t>(end - start)));
        return simdjson::SUCCESS;
    }

    error_code walk_value(od::value& v, int node, int depth) {
        od::json_type type;
        if (auto e = v.type().get(type)) return e;
        const bool wanted = node >= 0 && !nodes[node].columns.empty();
        switch (type) {
        case od::json_type::object:
        case od::json_type::array: {
            if (depth >= kMaxDepth) return simdjson::DEPTH_ERROR;
            const char* start = v.raw_json_token().data();
            error_code e;
            if (type == od::json_type::object) {
                od::object o;
                if ((e = v.get_object().get(o))) return e;
                e = walk_object(o, node, depth + 1);
            } else {
                od::array a;
                if ((e = v.get_array().get(a))) return e;
                e = walk_array(a, depth + 1);
            }
            if (e) return e;
            if (wanted) {
                std::string_view text;
                if ((e = container_text(start, text))) return e;
                set(node, type == od::json_type::object ? RawKind::Object : RawKind::Array, text);
            }
            return simdjson::SUCCESS;
        }
        case od::json_type::string: {
            std::string_view str;
            if (auto e = v.get_string().get(str)) return e;
            if (wanted) set(node, RawKind::String, str);
            return simdjson::SUCCESS;
        }
        case od::json_type::number: {
            const std::string_view tok = trim_json_ws(v.raw_json_token());
            bool integer = false;
            if (!json_number(tok, integer)) return simdjson::NUMBER_ERROR;
            if (wanted) set(node, RawKind::Number, tok);
            return simdjson::SUCCESS;
        }
        case od::json_type::boolean: {
            const std::string_view tok = trim_json_ws(v.raw_json_token());
            if (tok != "true" && tok != "false") return simdjson::T_ATOM_ERROR;
            if (wanted) set(node, tok == "true" ? RawKind::True : RawKind::False);
            return simdjson::SUCCESS;
        }
        case od::json_type::null: {
            if (trim_json_ws(v.raw_json_token()) != "null") return simdjson::N_ATOM_ERROR;
            if (wanted) set(node, RawKind::Null);
            return simdjson::SUCCESS;
        }
        }
        return simdjson::TAPE_ERROR;
    }

    error_code walk_object(od::object& o, int node, int depth) {
        const bool descend = node >= 0 && !nodes[node].children.empty();
        for (auto member : o) {
            od::field f;
            if (auto e = std::move(member).get(f)) return e;
            std::string_view name;
            if (auto e = f.unescaped_key().get(name)) return e;
            const int child = descend ? find_child(node, name) : -1;
            if (child >= 0) {
                if (nodes[child].visited) forget_below(child);
                nodes[child].visited = true;
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

    // A document that is not an object: still invalid_json when it is not valid JSON (as 0.1).
    error_code check_other_document(od::document& d, od::json_type type, std::size_t len) {
        if (type == od::json_type::array) {
            od::array a;
            error_code e = d.get_array().get(a);
            if (!e) e = walk_array(a, 1);
            if (!e && d.current_location().error() != simdjson::OUT_OF_BOUNDS)
                e = simdjson::TRAILING_CONTENT;
            return e;
        }
        std::string_view raw;
        if (auto e = d.raw_json_token().get(raw)) return e;
        if (raw.data() + raw.size() != buf.get() + len) return simdjson::TRAILING_CONTENT;
        const std::string_view tok = trim_json_ws(raw);
        bool integer = false;
        switch (type) {
        case od::json_type::string: {
            std::string_view str;
            return d.get_string().get(str);
        }
        case od::json_type::number:
            return json_number(tok, integer) ? simdjson::SUCCESS : simdjson::NUMBER_ERROR;
        case od::json_type::boolean:
            return tok == "true" || tok == "false" ? simdjson::SUCCESS : simdjson::T_ATOM_ERROR;
        case od::json_type::null: return tok == "null" ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
        default: return simdjson::TAPE_ERROR;
        }
    }

    DecodeError invalid_json(error_code e) {
        detail = "invalid JSON: ";
        detail += simdjson::error_message(e);
        return DecodeError::InvalidJson;
    }

    DecodeError extract(const char* payload, std::size_t len) {
        for (auto& n : nodes) n.visited = false;
        if (payload == nullptr || len == 0) {
            detail = "invalid JSON: the payload is empty";
            return DecodeError::InvalidJson;
        }
        const std::size_t need = len + simdjson::SIMDJSON_PADDING;
        if (need > buf_cap) {
            const std::size_t cap = std::max({need, buf_cap * 2, std::size_t{4096}});
            buf = std::make_unique<char[]>(cap);
            buf_cap = cap;
            const error_code e = parser.allocate(cap - simdjson::SIMDJSON_PADDING);
            if (e == simdjson::MEMALLOC) throw std::bad_alloc();
            if (e) return invalid_json(e);
        }
        std::memcpy(buf.get(), payload, len);
        std::memset(buf.get() + len, 0, simdjson::SIMDJSON_PADDING);

        od::document d;
        if (auto e = parser.iterate(buf.get(), len, buf_cap).get(d)) {
            if (e == simdjson::MEMALLOC) throw std::bad_alloc();
            return invalid_json(e);
        }
        doc = &d;
        od::json_type type;
        if (auto e = d.type().get(type)) return invalid_json(e);
        if (type != od::json_type::object) {
            if (auto e = check_other_document(d, type, len)) return invalid_json(e);
            detail = "the payload is not a JSON object";
            return DecodeError::NotAnObject;
        }
        od::object o;
        error_code e = d.get_object().get(o);
        if (!e) e = walk_object(o, 0, 1);
        if (!e && d.current_location().error() != simdjson::OUT_OF_BOUNDS)
            e = simdjson::TRAILING_CONTENT;
        if (e) return invalid_json(e);
        return DecodeError::None;
    }
};

JsonRowExtractor::JsonRowExtractor(std::vector<std::vector<std::string>> paths)
    : impl_(std::make_unique<Impl>(paths)) {}
JsonRowExtractor::~JsonRowExtractor() = default;
JsonRowExtractor::JsonRowExtractor(JsonRowExtractor&&) noexcept = default;
JsonRowExtractor& JsonRowExtractor::operator=(JsonRowExtractor&&) noexcept = default;

std::size_t JsonRowExtractor::columns() const { return impl_->ncols; }
const std::string& JsonRowExtractor::detail() const { return impl_->detail; }

DecodeError JsonRowExtractor::extract(const char* payload, std::size_t len, RawRows& rows,
                                      std::size_t row) {
    Impl& d = *impl_;
    d.detail.clear();
    d.rows = &rows;
    d.row = row;
    for (std::size_t c = 0; c < d.ncols; ++c) rows.set(row, c, RawKind::Absent);
    const DecodeError e = d.extract(payload, len);
    d.doc = nullptr;
    return e;
}

}  // namespace stoatflow::kafka
