// One pass over a JSON document for the formats (json_decoder.cpp: 0.1's field
// paths; row_extractor.cpp: a row type's columns). simdjson's On-Demand API checks only what is
// read, so the walk reads everything: every value is validated (numbers by the RFC 8259 grammar,
// nesting bounded by kMaxDepth, nothing after the root), and each value that lies on a member
// path of the trie is reported to a visitor. Internal to src/format.
#pragma once

#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/format/json_text.hpp"
#include "stoatflow/format/limits.hpp"

// Match the packaged library's build (its pkg-config Cflags), whichever build compiles us.
#ifndef SIMDJSON_THREADS_ENABLED
#define SIMDJSON_THREADS_ENABLED 1
#endif
// Without NDEBUG (the PGXS build) simdjson turns on its development checks, which cost speed
// and abort() on API misuse inside the server. Off unless asked for: the fuzzer turns them on.
#ifndef SIMDJSON_DEVELOPMENT_CHECKS
#define SIMDJSON_DEVELOPMENT_CHECKS 0
#endif
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

namespace stoatflow::format::json_walk {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// What a value is, as reported to a visitor.
enum class Kind { Null, True, False, String, Number, Object, Array };

// A trie of member paths from the document root; nodes[0] is the root.
struct Trie {
    struct Node {
        std::string name;
        std::vector<int> children;
        bool visited = false;  // seen in this document (a later duplicate member replaces it)
    };
    std::vector<Node> nodes = std::vector<Node>(1);

    int find_child(int node, std::string_view name) const {
        for (int c : nodes[node].children)
            if (nodes[c].name == name) return c;
        return -1;
    }
    // The node of `name` under `node`, added when missing.
    int child(int node, std::string_view name) {
        int c = find_child(node, name);
        if (c >= 0) return c;
        c = static_cast<int>(nodes.size());
        nodes.emplace_back();
        nodes.back().name = std::string(name);
        nodes[node].children.push_back(c);
        return c;
    }
};

// The walk. A Visitor has:
//   bool wants(int node)                                   a value here is to be reported
//   void value(int node, Kind kind, std::string_view text, bool integer)
//        string: unescaped; number, true, false, null: the token (integer: a number without
//        fraction or exponent); object/array: the container's JSON text if
//        Visitor::kContainerText, else empty
//   void forget(int node)                                  a later duplicate member replaces
//        the subtree below this node: drop what was reported for `node` itself
template <class Visitor>
class Walk {
public:
    Trie trie;

    // Parses payload and walks it; root_type is the document's type when the result is
    // SUCCESS. Throws std::bad_alloc when simdjson cannot allocate. On an error, detail() says
    // what was wrong for a dead letter.
    error_code run(const char* payload, std::size_t len, Visitor& visitor,
                   od::json_type& root_type) {
        for (auto& n : trie.nodes) n.visited = false;
        empty_ = payload == nullptr || len == 0;
        if (empty_) return simdjson::EMPTY;
        const std::size_t need = len + simdjson::SIMDJSON_PADDING;
        if (need > buf_cap_) {
            // Grow by doubling, the parser with the buffer, so a stream of slowly growing
            // messages does not reallocate on every record.
            const std::size_t cap = std::max({need, buf_cap_ * 2, std::size_t{4096}});
            buf_ = std::make_unique<char[]>(cap);
            buf_cap_ = cap;
            const error_code e = parser_.allocate(cap - simdjson::SIMDJSON_PADDING);
            if (e == simdjson::MEMALLOC) throw std::bad_alloc();
            if (e) return e;  // CAPACITY: beyond simdjson's 4 GiB limit
        }
        std::memcpy(buf_.get(), payload, len);
        std::memset(buf_.get() + len, 0, simdjson::SIMDJSON_PADDING);

        od::document doc;
        if (auto e = parser_.iterate(buf_.get(), len, buf_cap_).get(doc)) {
            if (e == simdjson::MEMALLOC) throw std::bad_alloc();
            return e;
        }
        doc_ = &doc;
        visitor_ = &visitor;
        if (auto e = doc.type().get(root_type)) return e;
        error_code e = simdjson::SUCCESS;
        if (root_type == od::json_type::object) {
            od::object o;
            e = doc.get_object().get(o);
            if (!e) e = walk_object(o, 0, 1);
        } else if (root_type == od::json_type::array) {
            od::array a;
            e = doc.get_array().get(a);
            if (!e) e = walk_array(a, 1);
        } else {
            return check_scalar_document(doc, root_type, len);
        }
        // Nothing may follow the root container.
        if (!e && doc.current_location().error() != simdjson::OUT_OF_BOUNDS)
            e = simdjson::TRAILING_CONTENT;
        return e;
    }

    // "invalid JSON: <simdjson's message>" for what run() returned ("the payload is empty").
    std::string detail(error_code e) const {
        if (empty_) return "invalid JSON: the payload is empty";
        return std::string("invalid JSON: ") + simdjson::error_message(e);
    }

private:
    bool empty_ = false;
    od::parser parser_;
    std::unique_ptr<char[]> buf_;  // payload copy followed by SIMDJSON_PADDING bytes
    std::size_t buf_cap_ = 0;
    od::document* doc_ = nullptr;  // during run()
    Visitor* visitor_ = nullptr;

    void forget_below(int node) {
        for (int c : trie.nodes[node].children) {
            trie.nodes[c].visited = false;
            visitor_->forget(c);
            forget_below(c);
        }
    }

    error_code walk_value(od::value& v, int node, int depth) {
        od::json_type type;
        if (auto e = v.type().get(type)) return e;
        const bool wanted = node >= 0 && visitor_->wants(node);
        switch (type) {
        case od::json_type::object:
        case od::json_type::array: {
            if (depth >= kMaxDepth) return simdjson::DEPTH_ERROR;
            const char* start = Visitor::kContainerText ? v.raw_json_token().data() : nullptr;
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
                if (Visitor::kContainerText) {
                    const char* end = nullptr;
                    if ((e = doc_->current_location().get(end))) return e;
                    text = trim_json_ws(
                        std::string_view(start, static_cast<std::size_t>(end - start)));
                }
                visitor_->value(node, type == od::json_type::object ? Kind::Object : Kind::Array,
                                text, false);
            }
            return simdjson::SUCCESS;
        }
        case od::json_type::string: {
            std::string_view str;
            if (auto e = v.get_string().get(str)) return e;
            if (wanted) visitor_->value(node, Kind::String, str, false);
            return simdjson::SUCCESS;
        }
        case od::json_type::number: {
            const std::string_view tok = trim_json_ws(v.raw_json_token());
            bool integer = false;
            if (!json_number(tok, integer)) return simdjson::NUMBER_ERROR;
            if (wanted) visitor_->value(node, Kind::Number, tok, integer);
            return simdjson::SUCCESS;
        }
        case od::json_type::boolean: {
            const std::string_view tok = trim_json_ws(v.raw_json_token());
            if (tok != "true" && tok != "false") return simdjson::T_ATOM_ERROR;
            if (wanted) visitor_->value(node, tok == "true" ? Kind::True : Kind::False, tok, false);
            return simdjson::SUCCESS;
        }
        case od::json_type::null: {
            const std::string_view tok = trim_json_ws(v.raw_json_token());
            if (tok != "null") return simdjson::N_ATOM_ERROR;
            if (wanted) visitor_->value(node, Kind::Null, tok, false);
            return simdjson::SUCCESS;
        }
        }
        return simdjson::TAPE_ERROR;
    }

    error_code walk_object(od::object& o, int node, int depth) {
        const bool descend = node >= 0 && !trie.nodes[node].children.empty();
        for (auto member : o) {
            od::field f;
            if (auto e = std::move(member).get(f)) return e;
            std::string_view name;
            if (auto e = f.unescaped_key().get(name)) return e;  // also checks its escapes
            const int child = descend ? trie.find_child(node, name) : -1;
            if (child >= 0) {
                if (trie.nodes[child].visited) forget_below(child);
                trie.nodes[child].visited = true;
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

    // A scalar document: valid JSON, but not an object. Checked the same way as above.
    error_code check_scalar_document(od::document& doc, od::json_type type, std::size_t len) {
        std::string_view raw;
        if (auto e = doc.raw_json_token().get(raw)) return e;
        if (raw.data() + raw.size() != buf_.get() + len) return simdjson::TRAILING_CONTENT;
        const std::string_view tok = trim_json_ws(raw);
        bool integer = false;
        switch (type) {
        case od::json_type::string: {
            std::string_view str;
            return doc.get_string().get(str);
        }
        case od::json_type::number:
            return json_number(tok, integer) ? simdjson::SUCCESS : simdjson::NUMBER_ERROR;
        case od::json_type::boolean:
            return tok == "true" || tok == "false" ? simdjson::SUCCESS : simdjson::T_ATOM_ERROR;
        case od::json_type::null: return tok == "null" ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
        default: return simdjson::TAPE_ERROR;
        }
    }
};

}  // namespace stoatflow::format::json_walk
