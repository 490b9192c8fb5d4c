// The record judge (record_judge.hpp): the dead-letter rules and their texts, once.
#include "stoatflow/flow/record_judge.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/json_text.hpp"

namespace stoatflow::flow {

RecordJudge::RecordJudge(std::size_t max_key_bytes, core::Millis future_limit)
    : max_key_bytes_(max_key_bytes), future_limit_(future_limit) {
    if (future_limit_ != core::kNoTime && future_limit_ < 0)
        throw Error(sqlstate::kInvalidParameterValue, "future_limit must not be negative",
                    "Use NULL for no limit, or an interval of zero or more.");
}

DeadReason RecordJudge::key(std::string_view key, std::string& detail, bool quote) const {
    if (max_key_bytes_ == 0 || key.size() <= max_key_bytes_) return DeadReason::None;
    detail = "the key is " + std::to_string(key.size()) + " bytes, longer than max_key_bytes " +
             std::to_string(max_key_bytes_);
    if (quote) {
        detail += ": ";
        format::append_excerpt(detail, key);
    }
    return DeadReason::KeyTooLong;
}

// The time is in the event time range, so t − now cannot overflow for any wall clock inside it
// either; a clock outside it (a test's) is widened first.
DeadReason RecordJudge::future(core::Millis time, core::Millis now, std::string& detail) const {
    if (future_limit_ == core::kNoTime || now == core::kNoTime) return DeadReason::None;
    const __int128 ahead = static_cast<__int128>(time) - now;
    if (ahead <= future_limit_) return DeadReason::None;
    detail = "event time " + std::to_string(time) + " ms is " + core::int128_to_string(ahead) +
             " ms ahead of the server clock (" + std::to_string(now) +
             " ms), more than future_limit " + std::to_string(future_limit_) + " ms";
    return DeadReason::TimeInFuture;
}

DeadReason RecordJudge::judge(std::string_view key_text, core::Millis time, core::Millis now,
                              std::string_view time_name, std::string& detail) const {
    if (const DeadReason r = key(key_text, detail); r != DeadReason::None) return r;
    if (!core::in_event_time_range(time)) {
        detail = core::outside_event_time_range(std::string(time_name) + " = " +
                                                std::to_string(time) + " ms");
        return DeadReason::TimeOutOfRange;
    }
    return future(time, now, detail);
}

DeadReason RecordJudge::after_decode(DeadReason read, const format::Decoded& d, core::Millis now,
                                     std::string& detail) const {
    switch (read) {
    case DeadReason::None:
    case DeadReason::InvalidText:  // (the key's: d.key holds it)
    case DeadReason::MissingTime:
    case DeadReason::BadTime:
    case DeadReason::TimeOutOfRange:
        if (const DeadReason k = key(d.key, detail); k != DeadReason::None) return k;
        break;
    default: return read;
    }
    return read == DeadReason::None ? future(d.time, now, detail) : read;
}

std::string RecordJudge::column_is_null(std::string_view column) {
    return "column \"" + std::string(column) + "\" is null";
}

std::string RecordJudge::expression_is_null(bool time) {
    return time ? "event_time is null" : "key is null";
}

std::string RecordJudge::not_finite(std::string_view what) {
    return std::string(what) + ": an event time must be finite";
}

std::string RecordJudge::offsets_skipped(std::int64_t from, std::int64_t to) {
    return "offsets " + std::to_string(from) + " to " + std::to_string(to - 1) + " (" +
           std::to_string(to - from) +
           ") were deleted by the topic's retention before the source read them";
}

std::string RecordJudge::of_aggregation(std::string_view aggregation, std::string_view detail) {
    return "aggregation \"" + std::string(aggregation) + "\": " + std::string(detail);
}

DeadLetter RecordJudge::dead_letter(core::TopicPartition from, std::int64_t offset,
                                    DeadReason reason, std::string detail, const char* payload,
                                    std::size_t len) {
    return {from, offset, format::to_string(reason), std::move(detail),
            payload == nullptr ? std::string()
                               : core::storable_text(payload, len, kDeadLetterPayloadBytes)};
}

}  // namespace stoatflow::flow
