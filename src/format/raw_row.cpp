// The metadata columns of a record (README "Semantics") as raw fields, and the names of raw kinds.
#include "stoatflow/format/raw_row.hpp"

#include "stoatflow/core/metadata_columns.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/json_text.hpp"
#include "stoatflow/format/limits.hpp"

#include <charconv>
#include <cstring>
#include <map>

namespace stoatflow::format {
namespace {

bool is_text(const char* s, std::size_t n) {
    return std::memchr(s, '\0', n) == nullptr && core::is_valid_utf8(s, n);
}

// Text as itself, or \x followed by every byte in hex when it is not text (as bytea shows it).
std::string text_or_hex(const char* s, std::size_t n) {
    if (is_text(s, n)) return std::string(s, n);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\\x";
    for (std::size_t i = 0; i < n; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
    return out;
}

}  // namespace

const char* raw_kind_name(RawKind k) {
    switch (k) {
    case RawKind::Absent: return "absent";
    case RawKind::Null: return "null";
    case RawKind::String: return "a string";
    case RawKind::Number: return "a number";
    case RawKind::True:
    case RawKind::False: return "a boolean";
    case RawKind::Object: return "an object";
    case RawKind::Array: return "an array";
    }
    return "?";
}

namespace {

// kafka_headers: name → value; a later header of the same name wins (std::map keeps the names
// sorted, which is also the order jsonb shows them in for names of equal length).
std::string headers_json(const RecordMeta& meta) {
    if (meta.header_count == 0) return "{}";
    std::map<std::string, std::pair<bool, std::string>> last;
    for (std::size_t i = 0; i < meta.header_count; ++i) {
        const KafkaHeader& h = meta.headers[i];
        auto& slot = last[text_or_hex(h.name.data(), h.name.size())];
        slot.first = h.value != nullptr;
        slot.second = h.value ? text_or_hex(h.value, h.value_len) : std::string();
    }
    std::string json = "{";
    for (const auto& [name, value] : last) {
        if (json.size() > 1) json += ", ";
        append_json_string(json, name);
        json += ": ";
        if (value.first)
            append_json_string(json, value.second);
        else
            json += "null";
    }
    json += '}';
    return json;
}

}  // namespace

bool metadata_key_valid(const RecordMeta& meta, std::string& detail) {
    if (meta.key == nullptr || is_text(meta.key, meta.key_len)) return true;
    detail = "the Kafka message key is not valid UTF-8 text: ";
    detail += core::storable_text(meta.key, meta.key_len, kExcerptBytes);
    return false;
}

bool fill_metadata(RawRows& rows, std::size_t row, std::size_t first, const RecordMeta& meta,
                   std::string& detail) {
    char num[24];  // per record: no allocation
    auto number = [&](std::size_t col, std::int64_t v) {
        const auto r = std::to_chars(num, num + sizeof num, v);
        rows.set(row, col, RawKind::Number, std::string_view(num, r.ptr - num));
    };
    for (std::size_t i = 0; i < core::kMetadataColumnCount; ++i) {
        const std::size_t col = first + i;
        switch (core::kMetadataColumns[i].field) {
        case core::MetadataField::Key:
            if (meta.key == nullptr) {
                rows.set(row, col, RawKind::Null);
            } else if (!metadata_key_valid(meta, detail)) {
                return false;
            } else {
                rows.set(row, col, RawKind::String, std::string_view(meta.key, meta.key_len));
            }
            break;
        case core::MetadataField::Topic: rows.set(row, col, RawKind::String, meta.topic); break;
        case core::MetadataField::Partition: number(col, meta.partition); break;
        case core::MetadataField::Offset: number(col, meta.offset); break;
        case core::MetadataField::Timestamp:
            if (meta.timestamp_ms == core::kNoTime)
                rows.set(row, col, RawKind::Null);
            else
                number(col, meta.timestamp_ms);
            break;
        case core::MetadataField::Headers:
            rows.set(row, col, RawKind::Object, headers_json(meta));
            break;
        }
    }
    return true;
}

}  // namespace stoatflow::format
