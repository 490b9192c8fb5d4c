// The JSON record decoder: one simdjson On-Demand pass that validates the whole document and
// picks the configured fields out of it on the way, then the key, time and value rules.
#include "stoatflow/format/json_decoder.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/json_text.hpp"
#include "stoatflow/format/limits.hpp"
#include "json_walk.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <system_error>

namespace stoatflow::format {
namespace {

namespace od = simdjson::ondemand;
using core::Millis;
using simdjson::error_code;

// What the walk found at one configured path. Absent until the path is seen.
enum class Seen : std::uint8_t { Absent, Null, Bool, String, Number, Object, Array };
// How a number reads as C++: exactly as int64, exactly as __int128 (an integer of at most
// 38 digits beyond int64), as a (finite) double, or neither.
enum class NumKind : std::uint8_t { Int, Big, Double, Overflow };

struct Slot {
    Seen seen = Seen::Absent;
    bool boolean = false;
    NumKind num = NumKind::Int;
    bool integer = false;  // Number: an integer token (no fraction, no exponent)
    std::int64_t i = 0;
    __int128 big = 0;
    double d = 0;
    // String: the unescaped text (in the parser's string buffer); Number: the token as written.
    std::string_view text;
};

// An integer token (grammar already checked) as int64; false if it does not fit.
bool integer_token_to_int64(std::string_view t, std::int64_t& out) {
    const bool neg = t.front() == '-';
    const std::uint64_t limit = neg ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
    std::uint64_t v = 0;
    for (std::size_t p = neg ? 1 : 0; p < t.size(); ++p) {
        const auto digit = static_cast<std::uint64_t>(t[p] - '0');
        if (v > (limit - digit) / 10) return false;
        v = v * 10 + digit;
    }
    out = neg ? static_cast<std::int64_t>(~v + 1) : static_cast<std::int64_t>(v);
    return true;
}

// Digits of an integer token (grammar already checked: no leading zeros).
std::size_t integer_digits(std::string_view t) { return t.size() - (t.front() == '-' ? 1 : 0); }

// An integer token of at most kMaxExactIntegerDigits digits as __int128 (always fits).
__int128 integer_token_to_int128(std::string_view t) {
    const bool neg = t.front() == '-';
    __int128 v = 0;
    for (std::size_t p = neg ? 1 : 0; p < t.size(); ++p) v = v * 10 + (t[p] - '0');
    return neg ? -v : v;
}

// A number token (grammar already checked) as the nearest double; false if its magnitude is
// beyond the double range. Tiny magnitudes become (signed) zero. std::from_chars rounds
// correctly and ignores the locale; simdjson 3.0.1's On-Demand get_double() misreads some
// long mantissas (0.577779223372036854775808777 gave 8.48e-09; found by the fuzzer).
bool token_to_double(std::string_view t, double& out) {
    double d = 0;
    const auto r = std::from_chars(t.data(), t.data() + t.size(), d);
    if (r.ec == std::errc() && r.ptr == t.data() + t.size()) {
        out = d;
        return std::isfinite(d);
    }
    // Out of range one way or the other: the decimal exponent of the leading significant
    // digit says which (zero has none, and zero is never out of range).
    std::int64_t magnitude = 0;
    bool leading = false, fraction = false;
    std::size_t p = t.front() == '-' ? 1 : 0;
    std::int64_t int_digits = 0, frac_zeros = 0;
    for (; p < t.size() && t[p] != 'e' && t[p] != 'E'; ++p) {
        if (t[p] == '.') {
            fraction = true;
        } else if (!leading && t[p] == '0') {
            if (fraction) ++frac_zeros;
        } else {
            leading = true;
            if (!fraction) ++int_digits;
        }
    }
    magnitude = int_digits > 0 ? int_digits : -frac_zeros;
    std::int64_t exponent = 0;
    bool negative_exponent = false;
    if (p < t.size()) {
        ++p;
        if (t[p] == '+' || t[p] == '-') negative_exponent = t[p++] == '-';
        for (; p < t.size(); ++p)
            exponent = std::min<std::int64_t>(exponent * 10 + (t[p] - '0'), 1000000000);
    }
    magnitude += negative_exponent ? -exponent : exponent;
    out = t.front() == '-' ? -0.0 : 0.0;
    return magnitude <= 0;
}

const char* kind_name(Seen s) {
    switch (s) {
    case Seen::Absent: return "missing";
    case Seen::Null: return "null";
    case Seen::Bool: return "a boolean";
    case Seen::String: return "a string";
    case Seen::Number: return "a number";
    case Seen::Object: return "an object";
    case Seen::Array: return "an array";
    }
    return "?";
}

Seen seen_of(od::json_type t) {
    switch (t) {
    case od::json_type::array: return Seen::Array;
    case od::json_type::object: return Seen::Object;
    case od::json_type::number: return Seen::Number;
    case od::json_type::string: return Seen::String;
    case od::json_type::boolean: return Seen::Bool;
    case od::json_type::null: return Seen::Null;
    }
    return Seen::Absent;
}

}  // namespace

struct JsonDecoder::Impl {
    DecoderConfig cfg;
    std::vector<Slot> slots;
    std::vector<int>
        node_slot;  // per trie node: index into slots when a configured path ends there
    int key_slot = -1;
    int time_slot = -1;
    std::vector<int> value_slots;  // -1: count(*), no field

    json_walk::Walk<Impl> walk;
    std::string detail;

    explicit Impl(DecoderConfig c) : cfg(std::move(c)) {
        key_slot = add_path(cfg.key_path);
        time_slot = add_path(cfg.time_path);
        for (const auto& v : cfg.value_paths) value_slots.push_back(add_path(v));
    }

    // Adds a path to the trie and returns its slot (shared by equal paths); -1 for "".
    int add_path(const std::string& path) {
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

    // ---- the walk's visitor ----
    static constexpr bool kContainerText = false;
    bool wants(int node) const { return node_slot[node] >= 0; }
    void forget(int node) {
        if (node_slot[node] >= 0) slots[node_slot[node]] = Slot{};
    }
    void value(int node, json_walk::Kind kind, std::string_view text, bool integer) {
        Slot& s = slots[node_slot[node]];
        switch (kind) {
        case json_walk::Kind::Object: s.seen = Seen::Object; return;
        case json_walk::Kind::Array: s.seen = Seen::Array; return;
        case json_walk::Kind::Null: s.seen = Seen::Null; return;
        case json_walk::Kind::True:
        case json_walk::Kind::False:
            s.seen = Seen::Bool;
            s.boolean = kind == json_walk::Kind::True;
            return;
        case json_walk::Kind::String:
            s.seen = Seen::String;
            s.text = text;
            return;
        case json_walk::Kind::Number:
            s.seen = Seen::Number;
            s.text = text;
            s.integer = integer;
            if (integer && integer_token_to_int64(text, s.i)) {
                s.num = NumKind::Int;
            } else if (integer && integer_digits(text) <= core::kMaxExactIntegerDigits) {
                s.num = NumKind::Big;
                s.big = integer_token_to_int128(text);
            } else {
                s.num = token_to_double(text, s.d) ? NumKind::Double : NumKind::Overflow;
            }
            return;
        }
    }

    DecodeError field_error(DecodeError e, const std::string& path, const char* what) {
        detail = "field \"";
        detail += path;
        detail += "\" is ";
        detail += what;
        return e;
    }

    // Parses the payload and fills the slots.
    DecodeError parse(const char* payload, std::size_t len) {
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

    DecodeError check_key_text(std::string_view text) {
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

    DecodeError take_key(const char* key, std::size_t key_len, std::string& out) {
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
            case Seen::Array:
                return field_error(DecodeError::BadKey, cfg.key_path, kind_name(s.seen));
            case Seen::Bool: text = s.boolean ? "true" : "false"; break;
            case Seen::String:
            case Seen::Number: text = s.text; break;
            }
        }
        // Kept even when it is not valid text: the record judge's key rule ranks first.
        out.assign(text.data(), text.size());
        return check_key_text(text);
    }

    DecodeError take_time(Millis kafka_ts, Millis& out) {
        if (time_slot < 0) {
            if (kafka_ts == core::kNoTime) {
                detail = "the Kafka message has no timestamp";
                return DecodeError::MissingTime;
            }
            if (!core::in_event_time_range(kafka_ts)) {
                detail = core::outside_event_time_range("the Kafka timestamp " +
                                                        std::to_string(kafka_ts) + " ms");
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
            in_range = core::in_event_time_range(out);
            break;
        case Seen::Number:
            if (s.num == NumKind::Int) {
                out = s.i;
                in_range = core::in_event_time_range(out);
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
            std::string what = "field \"" + path + "\" = ";
            append_excerpt(what, s.text, s.seen == Seen::String);
            detail = core::outside_event_time_range(what);
            return DecodeError::TimeOutOfRange;
        }
        return DecodeError::None;
    }

    // Every value; one an aggregate cannot use is listed in `bad` (the record stays good).
    void take_values(std::vector<core::Value>& out, std::vector<BadValue>& bad) {
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
                e = field_error(DecodeError::NonNumericValue, cfg.value_paths[i],
                                kind_name(s.seen));
            }
            if (e == DecodeError::None) continue;
            bad.push_back({i, e, detail});
            detail.clear();
        }
    }
};

JsonDecoder::JsonDecoder(DecoderConfig cfg) : impl_(std::make_unique<Impl>(std::move(cfg))) {}
JsonDecoder::~JsonDecoder() = default;
JsonDecoder::JsonDecoder(JsonDecoder&&) noexcept = default;
JsonDecoder& JsonDecoder::operator=(JsonDecoder&&) noexcept = default;

const std::string& JsonDecoder::detail() const { return impl_->detail; }

DecodeError JsonDecoder::decode(const char* payload, std::size_t len, const char* key,
                                std::size_t key_len, core::Millis kafka_ts, Decoded& out) {
    Impl& d = *impl_;
    d.detail.clear();
    DecodeError e = d.parse(payload, len);
    if (e == DecodeError::None) e = d.take_key(key, key_len, out.key);
    if (e == DecodeError::None) e = d.take_time(kafka_ts, out.time);
    if (e == DecodeError::None) d.take_values(out.values, out.bad);
    return e;
}

}  // namespace stoatflow::format
