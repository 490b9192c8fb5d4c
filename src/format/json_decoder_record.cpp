// One record through the JSON decoder: the walk fills the slots, then the key, the event
// time (with its range and future limit) and the values are judged, each failure a
// dead-letter reason with its detail.
#include "stoatflow/format/json_decoder.hpp"

#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/iso8601.hpp"
#include "json_decoder_impl.hpp"

#include <cmath>
#include <cstring>
#include <string>

namespace stoatflow::format {

namespace od = simdjson::ondemand;
using simdjson::error_code;

DecodeError JsonDecoder::Impl::field_error(DecodeError e, const std::string& path,
                                           const char* what) {
    detail = "field \"";
    detail += path;
    detail += "\" is ";
    detail += what;
    return e;
}

// Parses the payload and fills the slots.
DecodeError JsonDecoder::Impl::parse(const char* payload, std::size_t len) {
    for (auto& s : slots) s = Slot{};
    od::json_type type;
    if (const error_code e = walk.run(payload, len, *this, type)) {
        detail = walk.detail(e);
        return DecodeError::InvalidJson;
    }
    if (type != od::json_type::object) {
        detail = "the payload is ";
        detail += kind_name(seen_of(type));
        detail += ", not a JSON object";
        return DecodeError::NotAnObject;
    }
    return DecodeError::None;
}

DecodeError JsonDecoder::Impl::check_key_text(std::string_view text) {
    if (std::memchr(text.data(), '\0', text.size()) != nullptr) {
        detail = "the key contains a NUL byte: ";
        append_excerpt(detail, text);
        return DecodeError::InvalidText;
    }
    if (!core::is_valid_utf8(text.data(), text.size())) {
        detail = "the key is not valid UTF-8: ";
        append_excerpt(detail, text);
        return DecodeError::InvalidText;
    }
    return DecodeError::None;
}

DecodeError JsonDecoder::Impl::take_key(const char* key, std::size_t key_len, std::string& out) {
    std::string_view text;
    if (key_slot < 0) {
        if (key == nullptr) {
            detail = "the Kafka message has no key";
            return DecodeError::MissingKey;
        }
        text = std::string_view(key, key_len);
    } else {
        const Slot& s = slots[key_slot];
        switch (s.seen) {
        case Seen::Absent:
        case Seen::Null:
            return field_error(DecodeError::MissingKey, cfg.key_path, kind_name(s.seen));
        case Seen::Object:
        case Seen::Array: return field_error(DecodeError::BadKey, cfg.key_path, kind_name(s.seen));
        case Seen::Bool: text = s.boolean ? "true" : "false"; break;
        case Seen::String:
        case Seen::Number: text = s.text; break;
        }
    }
    if (cfg.max_key_bytes != 0 && text.size() > cfg.max_key_bytes) {
        detail = "the key is " + std::to_string(text.size()) +
                 " bytes, longer than max_key_bytes " + std::to_string(cfg.max_key_bytes) + ": ";
        append_excerpt(detail, text);
        return DecodeError::KeyTooLong;
    }
    if (auto e = check_key_text(text); e != DecodeError::None) return e;
    out.assign(text.data(), text.size());
    return DecodeError::None;
}

DecodeError JsonDecoder::Impl::take_time(Millis kafka_ts, Millis& out) {
    static constexpr const char* kRange =
        " is outside the event time range 0001-01-01 .. 9999-12-31 (UTC)";
    if (time_slot < 0) {
        if (kafka_ts == core::kNoTime) {
            detail = "the Kafka message has no timestamp";
            return DecodeError::MissingTime;
        }
        if (!in_event_time_range(kafka_ts)) {
            detail = "the Kafka timestamp " + std::to_string(kafka_ts) + " ms" + kRange;
            return DecodeError::TimeOutOfRange;
        }
        out = kafka_ts;
        return DecodeError::None;
    }
    const Slot& s = slots[time_slot];
    const std::string& path = cfg.time_path;
    bool in_range = false;
    switch (s.seen) {
    case Seen::Absent:
    case Seen::Null: return field_error(DecodeError::MissingTime, path, kind_name(s.seen));
    case Seen::Bool:
    case Seen::Object:
    case Seen::Array: return field_error(DecodeError::BadTime, path, kind_name(s.seen));
    case Seen::String:
        if (!parse_iso8601(s.text, out)) {
            field_error(DecodeError::BadTime, path, "not an ISO-8601 time: ");
            append_excerpt(detail, s.text);
            return DecodeError::BadTime;
        }
        in_range = in_event_time_range(out);
        break;
    case Seen::Number:
        if (s.num == NumKind::Int) {
            out = s.i;
            in_range = in_event_time_range(out);
        } else if (s.num == NumKind::Double) {
            // Epoch milliseconds with a fraction: floor to the millisecond. Compared as
            // doubles first, so the conversion to int64 is always defined.
            const double f = std::floor(s.d);
            in_range = f >= static_cast<double>(core::kMinEventTime) &&
                       f <= static_cast<double>(core::kMaxEventTime);
            if (in_range) out = static_cast<Millis>(f);
        }
        break;
    }
    if (!in_range) {
        detail = "field \"" + path + "\" = ";
        append_excerpt(detail, s.text, s.seen == Seen::String);
        detail += kRange;
        return DecodeError::TimeOutOfRange;
    }
    return DecodeError::None;
}

// After take_time: the time is in the event time range, so t − now cannot overflow for
// any wall clock inside it either; a clock outside it (a test's) is widened first.
DecodeError JsonDecoder::Impl::check_future(Millis t, Millis now) {
    if (cfg.future_limit == core::kNoTime || now == core::kNoTime) return DecodeError::None;
    const __int128 ahead = static_cast<__int128>(t) - now;
    if (ahead <= cfg.future_limit) return DecodeError::None;
    detail = "event time " + std::to_string(t) + " ms is " + core::int128_to_string(ahead) +
             " ms ahead of the server clock (" + std::to_string(now) +
             " ms), more than future_limit " + std::to_string(cfg.future_limit) + " ms";
    return DecodeError::TimeInFuture;
}

// Every value; one an aggregate cannot use is listed in `bad` (the record stays good).
void JsonDecoder::Impl::take_values(std::vector<core::Value>& out, std::vector<BadValue>& bad) {
    out.resize(value_slots.size());
    bad.clear();
    for (std::size_t i = 0; i < value_slots.size(); ++i) {
        out[i] = core::Value::missing();
        if (value_slots[i] < 0) continue;
        const Slot& s = slots[value_slots[i]];
        DecodeError e = DecodeError::None;
        switch (s.seen) {
        case Seen::Absent:
        case Seen::Null: break;
        case Seen::Number:
            if (s.num == NumKind::Int) {
                out[i] = core::Value::of_int(s.i);
            } else if (s.num == NumKind::Big) {
                out[i] = core::Value::of_big(s.big);
            } else if (s.integer) {
                // Sums of integers are exact; one this long cannot be (nor be stored).
                e = field_error(DecodeError::ValueOutOfRange, cfg.value_paths[i], "");
                append_excerpt(detail, s.text, false);
                detail += ", an integer of " + std::to_string(integer_digits(s.text)) +
                          " digits; at most " + std::to_string(core::kMaxExactIntegerDigits) +
                          " are summed exactly";
            } else if (s.num == NumKind::Double) {
                out[i] = core::Value::of_double(s.d);
            } else {
                e = field_error(DecodeError::ValueOutOfRange, cfg.value_paths[i], "");
                append_excerpt(detail, s.text, false);
                detail += ", beyond the double precision range";
            }
            break;
        default:
            e = field_error(DecodeError::NonNumericValue, cfg.value_paths[i], kind_name(s.seen));
        }
        if (e == DecodeError::None) continue;
        bad.push_back({i, e, detail});
        detail.clear();
    }
}

DecodeError JsonDecoder::decode(const char* payload, std::size_t len, const char* key,
                                std::size_t key_len, core::Millis kafka_ts, core::Millis now,
                                Decoded& out) {
    Impl& d = *impl_;
    d.detail.clear();
    DecodeError e = d.parse(payload, len);
    if (e == DecodeError::None) e = d.take_key(key, key_len, out.key);
    if (e == DecodeError::None) e = d.take_time(kafka_ts, out.time);
    if (e == DecodeError::None) e = d.check_future(out.time, now);
    if (e == DecodeError::None) d.take_values(out.values, out.bad);
    return e;
}

}  // namespace stoatflow::format
