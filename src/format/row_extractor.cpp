// The JSON row extractor: one simdjson On-Demand pass that validates the whole document and
// copies each column's value (found through a trie of the column paths) into a raw row.
#include "stoatflow/format/row_extractor.hpp"

#include "json_walk.hpp"

#include <memory>

namespace stoatflow::format {

struct JsonRowExtractor::Impl {
    std::vector<std::vector<int>> node_columns;  // per trie node: the columns whose path ends there
    std::size_t ncols = 0;
    json_walk::Walk<Impl> walk;
    std::string detail;
    RawRows* rows = nullptr;  // during extract()
    std::size_t row = 0;

    explicit Impl(const std::vector<std::vector<std::string>>& paths) : ncols(paths.size()) {
        for (std::size_t c = 0; c < paths.size(); ++c) {
            int node = 0;
            for (const auto& member : paths[c]) node = walk.trie.child(node, member);
            node_columns.resize(walk.trie.nodes.size());
            node_columns[node].push_back(static_cast<int>(c));
        }
        node_columns.resize(walk.trie.nodes.size());
    }

    // ---- the walk's visitor ----
    static constexpr bool kContainerText = true;
    bool wants(int node) const { return !node_columns[node].empty(); }
    void set(int node, RawKind kind, std::string_view text) {
        for (int c : node_columns[node]) rows->set(row, static_cast<std::size_t>(c), kind, text);
    }
    // A later duplicate member replaces an earlier one: forget what the earlier one filled in.
    void forget(int node) { set(node, RawKind::Absent, {}); }
    void value(int node, json_walk::Kind kind, std::string_view text, bool /*integer*/) {
        switch (kind) {
        case json_walk::Kind::Null: set(node, RawKind::Null, {}); return;
        case json_walk::Kind::True: set(node, RawKind::True, {}); return;
        case json_walk::Kind::False: set(node, RawKind::False, {}); return;
        case json_walk::Kind::String: set(node, RawKind::String, text); return;
        case json_walk::Kind::Number: set(node, RawKind::Number, text); return;
        case json_walk::Kind::Object: set(node, RawKind::Object, text); return;
        case json_walk::Kind::Array: set(node, RawKind::Array, text); return;
        }
    }

    DecodeError extract(const char* payload, std::size_t len) {
        json_walk::od::json_type type;
        if (const auto e = walk.run(payload, len, *this, type)) {
            detail = walk.detail(e);
            return DecodeError::InvalidJson;
        }
        if (type != json_walk::od::json_type::object) {
            detail = "the payload is not a JSON object";
            return DecodeError::NotAnObject;
        }
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
    return d.extract(payload, len);
}

}  // namespace stoatflow::format
