// The JSON record decoder: one simdjson On-Demand pass that validates the whole document and
// picks the configured fields out of it on the way, then the key, time and value rules. This
// file compiles the configuration (paths into the walk's trie); json_decoder_record.cpp
// decodes one record.
#include "stoatflow/format/json_decoder.hpp"

#include "stoatflow/core/error.hpp"
#include "json_decoder_impl.hpp"

namespace stoatflow::format {

const char* to_string(DecodeError e) {
    switch (e) {
    case DecodeError::None: return "";
    case DecodeError::InvalidJson: return "invalid_json";
    case DecodeError::NotAnObject: return "not_an_object";
    case DecodeError::MissingKey: return "missing_key";
    case DecodeError::BadKey: return "bad_key";
    case DecodeError::MissingTime: return "missing_time";
    case DecodeError::BadTime: return "bad_time";
    case DecodeError::TimeOutOfRange: return "time_out_of_range";
    case DecodeError::NonNumericValue: return "non_numeric_value";
    case DecodeError::InvalidText: return "invalid_text";
    case DecodeError::KeyTooLong: return "key_too_long";
    case DecodeError::TimeInFuture: return "time_in_future";
    case DecodeError::ValueOutOfRange: return "value_out_of_range";
    }
    return "unknown";
}

JsonDecoder::Impl::Impl(DecoderConfig c) : cfg(std::move(c)) {
    if (cfg.future_limit != core::kNoTime && cfg.future_limit < 0)
        throw Error(sqlstate::kInvalidParameterValue, "future_limit must not be negative",
                    "Use NULL for no limit, or an interval of zero or more.");
    key_slot = add_path(cfg.key_path);
    time_slot = add_path(cfg.time_path);
    for (const auto& v : cfg.value_paths) value_slots.push_back(add_path(v));
}

// Adds a path to the trie and returns its slot (shared by equal paths); -1 for "".
int JsonDecoder::Impl::add_path(const std::string& path) {
    if (path.empty()) return -1;
    core::validate_field_path(path);
    int node = 0;
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t dot = path.find('.', start);
        if (dot == std::string::npos) dot = path.size();
        node = walk.trie.child(node, std::string_view(path.data() + start, dot - start));
        start = dot + 1;
    }
    node_slot.resize(walk.trie.nodes.size(), -1);
    if (node_slot[node] < 0) {
        node_slot[node] = static_cast<int>(slots.size());
        slots.emplace_back();
    }
    return node_slot[node];
}

JsonDecoder::JsonDecoder(DecoderConfig cfg) : impl_(std::make_unique<Impl>(std::move(cfg))) {}
JsonDecoder::~JsonDecoder() = default;
JsonDecoder::JsonDecoder(JsonDecoder&&) noexcept = default;
JsonDecoder& JsonDecoder::operator=(JsonDecoder&&) noexcept = default;

const std::string& JsonDecoder::detail() const { return impl_->detail; }

}  // namespace stoatflow::format
