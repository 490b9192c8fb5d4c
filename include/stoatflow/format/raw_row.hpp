// Records as raw rows: per column, what the record held (absent, null, a string's unescaped
// bytes, a number's text, true/false, an object's or array's JSON text), before any conversion
// into a column type. Format-neutral (JSON today; CSV and Avro decoders produce the same) and
// cheap: one byte arena per batch, fields as offset and length into it.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stoatflow::format {

enum class RawKind : std::uint8_t { Absent, Null, String, Number, True, False, Object, Array };

// "absent", "null", "a string", ... (for messages).
const char* raw_kind_name(RawKind k);

struct RawValue {
    RawKind kind = RawKind::Absent;
    std::string_view text;  // String: unescaped bytes; Number/Object/Array: JSON text
};

// A batch of rows of `width` fields each. Views returned by get() stay valid until the next
// append or clear().
class RawRows {
public:
    explicit RawRows(std::size_t width = 0) : width_(width) {}
    std::size_t width() const { return width_; }
    std::size_t size() const { return width_ == 0 ? rows_ : fields_.size() / width_; }
    void clear() {
        arena_.clear();
        fields_.clear();
        rows_ = 0;
    }

    // Starts a row (every field absent) and returns its index; set() fills it, drop_last()
    // takes it back (a record that turned out to be a dead letter).
    std::size_t add_row() {
        fields_.resize(fields_.size() + width_);
        return rows_++;
    }
    void drop_last() {
        fields_.resize(fields_.size() - width_);
        --rows_;
    }
    void set(std::size_t row, std::size_t col, RawKind kind, std::string_view text = {}) {
        Field& f = fields_[row * width_ + col];
        f.kind = kind;
        f.offset = arena_.size();
        f.length = text.size();
        arena_.append(text.data(), text.size());
    }
    // Appends bytes to the arena for the field set last at (row, col) (built in pieces).
    void append(std::size_t row, std::size_t col, std::string_view more) {
        fields_[row * width_ + col].length += more.size();
        arena_.append(more.data(), more.size());
    }
    RawValue get(std::size_t row, std::size_t col) const {
        const Field& f = fields_[row * width_ + col];
        return {f.kind, std::string_view(arena_.data() + f.offset, f.length)};
    }
    std::size_t arena_bytes() const { return arena_.size(); }

private:
    struct Field {
        RawKind kind = RawKind::Absent;
        std::size_t offset = 0;
        std::size_t length = 0;
    };
    std::size_t width_;
    std::size_t rows_ = 0;
    std::string arena_;
    std::vector<Field> fields_;
};

// One Kafka header as the consumer saw it (value nullptr: a header without a value).
struct KafkaHeader {
    std::string_view name;
    const char* value = nullptr;
    std::size_t value_len = 0;
};

// What a record's metadata columns are made of (README "Semantics").
struct RecordMeta {
    std::string_view topic;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    const char* key = nullptr;  // nullptr: the message has no key
    std::size_t key_len = 0;
    std::int64_t timestamp_ms = INT64_MIN;  // INT64_MIN (core::kNoTime): none
    const KafkaHeader* headers = nullptr;
    std::size_t header_count = 0;
};

// Fills the six metadata columns of `row`, starting at column `first` in the order of
// core::kMetadataColumns: kafka_key (String; Null when absent), kafka_topic (String),
// kafka_partition and kafka_offset (Number), kafka_timestamp (Number, epoch ms; Null when
// absent), kafka_headers (Object: name → value as text, a later header of the same name wins,
// a value that is not UTF-8 (or holds NUL) given as \x followed by its bytes in hex, a header
// without a value as null). Returns false, with `detail` set, when the key is not valid UTF-8
// (or holds NUL): the record is a dead letter invalid_text.
bool fill_metadata(RawRows& rows, std::size_t row, std::size_t first, const RecordMeta& meta,
                   std::string& detail);

// fill_metadata's one check without the columns: false, with `detail` set, when the key is not
// valid UTF-8 (or holds NUL). For a lane that fills the metadata columns only when it reads
// them (flow/columns_lane.cpp): the record is the same dead letter either way.
bool metadata_key_valid(const RecordMeta& meta, std::string& detail);

}  // namespace stoatflow::format
