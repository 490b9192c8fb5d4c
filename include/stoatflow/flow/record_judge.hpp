// The record judge: every rule that makes a record a dead letter once its key and event time
// are known, and every dead letter's reason and detail text, written once (README "Views and
// tables", dead_letters). The formats report why a record cannot be read (format::DeadReason,
// their own details, which quote the record); the lanes of the record path ask the judge for
// the rest, whichever way they converted the record (JSON paths, the columns' fast lane,
// PostgreSQL's executor).
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/core/time.hpp"
#include "stoatflow/core/topic_partition.hpp"
#include "stoatflow/format/dead_reason.hpp"
#include "stoatflow/format/json_decoder.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stoatflow::flow {

using format::DeadReason;

// How much of a dead letter's payload dead_letters keeps (made storable text).
constexpr std::size_t kDeadLetterPayloadBytes = 1024;

struct DeadLetter {
    core::TopicPartition from;  // topic ordinal (RecordPathConfig::topics) and partition
    std::int64_t offset = 0;
    std::string reason;  // format::to_string(DeadReason)
    std::string detail;
    std::string payload;  // first bytes, made storable as text
};

class RecordJudge {
public:
    // max_key_bytes: the longest grouping key, in bytes (0: unlimited; stoatflow.max_key_bytes).
    // future_limit: how far an event time may lie ahead of the wall clock, in ms (core::kNoTime:
    // no limit; create_source(future_limit)). A negative limit throws stoatflow::Error (22023).
    RecordJudge(std::size_t max_key_bytes, core::Millis future_limit);

    // A record whose key and event time are known, in this order: the key's length
    // (key_too_long), the event time range (time_out_of_range; `time_name` names the time in
    // the detail: 'column "ts"', "event_time"), the future limit (time_in_future; `now`
    // core::kNoTime: not checked). None, or the reason with `detail` set.
    DeadReason judge(std::string_view key, core::Millis time, core::Millis now,
                     std::string_view time_name, std::string& detail) const;

    // After the JSON decoder gave `read` for `d` (format::JsonDecoder::decode): the key's length
    // as soon as the key was read (before its text and the event time are checked), then the
    // future limit once the whole record was read. Returns the reason: the judge's, with
    // `detail` set, or `read` (detail untouched: the decoder's own).
    DeadReason after_decode(DeadReason read, const format::Decoded& d, core::Millis now,
                            std::string& detail) const;

    // The key rule alone. `quote`: the detail quotes the key's first bytes (false for an
    // executor's encoded key).
    DeadReason key(std::string_view key, std::string& detail, bool quote = true) const;
    // The future limit alone (the time is in the event time range).
    DeadReason future(core::Millis time, core::Millis now, std::string& detail) const;

    std::size_t max_key_bytes() const { return max_key_bytes_; }

    // Details of the reasons the lanes decide themselves.
    // missing_key, missing_time: a column the key or event time is is NULL.
    static std::string column_is_null(std::string_view column);
    // missing_key, missing_time: the source's key or event time expression gave NULL.
    static std::string expression_is_null(bool time);
    // bad_value: the event time `what` (e.g. 'column "ts" is infinity') is not finite.
    static std::string not_finite(std::string_view what);
    // offsets_skipped: offsets [from, to) deleted by the topic's retention.
    static std::string offsets_skipped(std::int64_t from, std::int64_t to);
    // A dead letter of one aggregation only: its name before the detail.
    static std::string of_aggregation(std::string_view aggregation, std::string_view detail);

    // The dead letter itself, its payload made storable (kDeadLetterPayloadBytes).
    static DeadLetter dead_letter(core::TopicPartition from, std::int64_t offset, DeadReason reason,
                                  std::string detail, const char* payload, std::size_t len);

private:
    std::size_t max_key_bytes_ = 0;
    core::Millis future_limit_ = core::kNoTime;
};

}  // namespace stoatflow::flow
