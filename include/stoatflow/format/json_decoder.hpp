// Turns one Kafka message (JSON object payload, key, timestamp) into the grouping key, the
// event time and one numeric value per aggregate, or names why it belongs in dead_letters.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/format/dead_reason.hpp"
#include "stoatflow/format/iso8601.hpp"  // parse_iso8601, for the decoder's callers

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace stoatflow::format {

struct DecoderConfig {
    std::string key_path;   // JSON field path of the grouping key; empty: the Kafka message key
    std::string time_path;  // JSON field path of the event time; empty: the Kafka timestamp
    std::vector<std::string> value_paths;  // one per aggregate, in order; empty for count(*)
};

// Why a record cannot be read (the formats' part of the one reason list); to_string() gives
// the dead-letter reason. The key's length and the future limit are the record judge's
// (stoatflow/flow/record_judge.hpp), applied once the record was read.
using DecodeError = DeadReason;

// A value an aggregate cannot use (non_numeric_value, value_out_of_range): the record itself is
// still good; it is a dead letter of the aggregations reading it (README "Views and tables",
// dead_letters).
struct BadValue {
    std::size_t index = 0;  // into value_paths
    DecodeError error = DecodeError::None;
    std::string detail;  // 'field "page" is a string'
};

struct Decoded {
    std::string key;
    core::Millis time = 0;
    std::vector<core::Value> values;  // values[i] belongs to value_paths[i]; Missing if bad
    std::vector<BadValue> bad;        // in value_paths order; empty when every value is usable
};

// One decoder per consumer thread: it owns a reusable parser and padded buffer, so decoding a
// record allocates nothing once the buffers have grown to the largest message seen.
class JsonDecoder {
public:
    // Throws stoatflow::Error (22023) for a malformed field path.
    explicit JsonDecoder(DecoderConfig cfg);
    ~JsonDecoder();
    JsonDecoder(JsonDecoder&&) noexcept;
    JsonDecoder& operator=(JsonDecoder&&) noexcept;
    JsonDecoder(const JsonDecoder&) = delete;
    JsonDecoder& operator=(const JsonDecoder&) = delete;

    // payload: the message value; key: the Kafka message key (nullptr if it has none);
    // kafka_ts: the Kafka timestamp in ms, or core::kNoTime. On an error `out` is unspecified,
    // except that after the key was read (the errors of the event time, and InvalidText of the
    // key) out.key holds the key's text: the record judge's key rule goes first.
    // A value that cannot be aggregated does not fail the record: it is listed in `out.bad`.
    // Any bytes are safe input; the only exception is std::bad_alloc.
    DecodeError decode(const char* payload, std::size_t len, const char* key, std::size_t key_len,
                       core::Millis kafka_ts, Decoded& out);

    // Human-readable detail of the last error ("" after success). Quotes at most 64 bytes of
    // the message, with control characters and invalid UTF-8 escaped as \xNN.
    const std::string& detail() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace stoatflow::format
