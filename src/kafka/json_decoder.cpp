// The JSON record decoder: one simdjson On-Demand pass that validates the whole document and
// picks the configured fields out of it on the way (the walk, json_walk_impl.hpp, compiled
// here for the portable simdjson "fallback" On-Demand implementation and, in
// json_decoder_haswell.cpp, for AVX2), then the key, time and value rules.
#include "stoatflow/kafka/json_decoder.hpp"

#include "stoatflow/core/error.hpp"

// This unit's copy of the walk: simdjson::ondemand is simdjson::fallback::ondemand here, as
// this file is compiled for baseline x86-64 (no -mavx2), so it runs on any CPU.
#include "json_walk_impl.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace stoatflow::kafka {
namespace {

using core::Millis;
using detail::PathNode;
using detail::NumKind;
using detail::Seen;
using detail::Slot;
using simdjson::error_code;

// At most this many payload bytes are quoted in a detail message.
constexpr std::size_t kExcerptBytes = 64;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Length of the well-formed UTF-8 sequence at s[0..n), or 0 if it is not one.
std::size_t utf8_sequence(const unsigned char* s, std::size_t n) {
    const unsigned c = s[0];
    if (c < 0x80) return 1;
    std::size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;  // overlong
        if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;  // overlong
        if (c == 0xF4) hi = 0x8F;  // beyond U+10FFFF
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (std::size_t k = 2; k < len; ++k)
        if (s[k] < 0x80 || s[k] > 0xBF) return 0;
    return len;
}

// Appends an excerpt of at most kExcerptBytes bytes of s (in quotes unless a number token):
// valid UTF-8 is kept, quotes and backslashes are escaped, control characters and invalid
// bytes become \xNN, so the detail is always storable text.
void append_excerpt(std::string& out, std::string_view s, bool quoted = true) {
    static constexpr char kHex[] = "0123456789abcdef";
    const auto* u = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t limit = std::min(s.size(), kExcerptBytes);
    std::size_t i = 0;
    if (quoted) out += '"';
    while (i < limit) {
        const unsigned char c = u[i];
        if (c >= 0x20 && c < 0x7F) {
            if (c == '"' || c == '\\') out += '\\';
            out += static_cast<char>(c);
            ++i;
            continue;
        }
        const std::size_t len = c >= 0x80 ? utf8_sequence(u + i, s.size() - i) : 0;
        if (len != 0) {
            if (i + len > limit) break;  // do not cut a character in half
            out.append(s.data() + i, len);
            i += len;
        } else {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
            ++i;
        }
    }
    if (quoted) out += '"';
    if (i < s.size()) out += "...";
}

const char* kind_name(Seen s) {
    switch (s) {
    case Seen::Absent:
        return "missing";
    case Seen::Null:
        return "null";
    case Seen::Bool:
        return "a boolean";
    case Seen::String:
        return "a string";
    case Seen::Number:
        return "a number";
    case Seen::Object:
        return "an object";
    case Seen::Array:
        return "an array";
    }
    return "?";
}

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int days_in_month(std::int64_t y, int m) {
    static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (negative before 1970).
std::int64_t days_since_epoch(std::int64_t y, int m, int d) {
    static constexpr int kBeforeMonth[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    auto leap_years_through = [](std::int64_t yr) {
        return core::floor_div(yr, 4) - core::floor_div(yr, 100) + core::floor_div(yr, 400);
    };
    std::int64_t days = 365 * (y - 1970) + leap_years_through(y - 1) - leap_years_through(1969);
    days += kBeforeMonth[m - 1] + ((m > 2 && is_leap(y)) ? 1 : 0) + (d - 1);
    return days;
}

}  // namespace

namespace detail {

WalkKernel::~WalkKernel() = default;

WalkKernel* new_fallback_kernel() { return new Kernel("fallback"); }

}  // namespace detail

namespace {

// True if this CPU and OS run the AVX2 kernel: what simdjson's own haswell kernel needs (AVX2,
// BMI1, PCLMULQDQ, and the OS saving YMM registers; the library checks these with CPUID and
// XGETBV), plus LZCNT, which json_decoder_haswell.cpp is compiled with (simdjson's haswell
// target flags) and which every AVX2 CPU has, but we ask anyway. Only baseline code runs here.
bool haswell_kernel_supported() {
#if defined(__x86_64__)
    const simdjson::implementation* haswell = simdjson::get_available_implementations()["haswell"];
    if (haswell == nullptr || !haswell->supported_by_runtime_system()) return false;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) == 0) return false;
    return (ecx & bit_LZCNT) != 0;
#else
    return false;
#endif
}

// STOATFLOW_JSON_KERNEL=fallback makes Auto mean Fallback: a way to run a whole test suite or
// a server on the portable kernel. Read once per process.
bool fallback_forced_by_environment() {
    static const bool forced = [] {
        const char* v = std::getenv("STOATFLOW_JSON_KERNEL");
        return v != nullptr && std::strcmp(v, "fallback") == 0;
    }();
    return forced;
}

// Chosen once per decoder, not per record: decode() then makes one virtual call per record.
std::unique_ptr<detail::WalkKernel> make_kernel(JsonKernel k) {
    static const bool haswell_ok = haswell_kernel_supported();
    if (k == JsonKernel::Auto && fallback_forced_by_environment()) k = JsonKernel::Fallback;
    if (k != JsonKernel::Fallback && haswell_ok) {
        if (detail::WalkKernel* h = detail::new_haswell_kernel())
            return std::unique_ptr<detail::WalkKernel>(h);
    }
    return std::unique_ptr<detail::WalkKernel>(detail::new_fallback_kernel());
}

}  // namespace

const char* to_string(DecodeError e) {
    switch (e) {
    case DecodeError::None:
        return "";
    case DecodeError::InvalidJson:
        return "invalid_json";
    case DecodeError::NotAnObject:
        return "not_an_object";
    case DecodeError::MissingKey:
        return "missing_key";
    case DecodeError::BadKey:
        return "bad_key";
    case DecodeError::MissingTime:
        return "missing_time";
    case DecodeError::BadTime:
        return "bad_time";
    case DecodeError::TimeOutOfRange:
        return "time_out_of_range";
    case DecodeError::NonNumericValue:
        return "non_numeric_value";
    case DecodeError::InvalidText:
        return "invalid_text";
    }
    return "unknown";
}

bool parse_iso8601(std::string_view s, Millis& out) {
    const char* p = s.data();
    const char* const end = p + s.size();
    auto number = [&](int width, int& v) {
        if (end - p < width) return false;
        v = 0;
        for (int k = 0; k < width; ++k) {
            if (!is_digit(p[k])) return false;
            v = v * 10 + (p[k] - '0');
        }
        p += width;
        return true;
    };
    auto literal = [&](char c) {
        if (p == end || *p != c) return false;
        ++p;
        return true;
    };

    int year, month, day, hour, minute, second;
    if (!number(4, year) || !literal('-') || !number(2, month) || !literal('-') || !number(2, day))
        return false;
    if (p == end || (*p != 'T' && *p != 't' && *p != ' ')) return false;
    ++p;
    if (!number(2, hour) || !literal(':') || !number(2, minute) || !literal(':') ||
        !number(2, second))
        return false;

    int millis = 0;
    if (literal('.')) {
        int digits = 0;
        for (; p != end && is_digit(*p); ++p, ++digits) {
            if (digits == 9) return false;  // finer than nanoseconds: not a time we emit
            if (digits < 3) millis = millis * 10 + (*p - '0');
        }
        if (digits == 0) return false;
        for (int k = digits; k < 3; ++k) millis *= 10;
    }

    int offset_minutes = 0;
    if (p != end) {
        if (*p == 'Z' || *p == 'z') {
            ++p;
        } else if (*p == '+' || *p == '-') {
            const int sign = *p == '-' ? -1 : 1;
            ++p;
            int oh = 0, om = 0;
            if (!number(2, oh)) return false;
            if (p != end) {
                literal(':');
                if (!number(2, om)) return false;
            }
            if (oh > 23 || om > 59) return false;
            offset_minutes = sign * (oh * 60 + om);
        } else {
            return false;
        }
    }
    if (p != end) return false;

    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
        minute > 59 || second > 60)
        return false;
    const std::int64_t seconds = days_since_epoch(year, month, day) * 86400 + hour * 3600 +
                                 minute * 60 + second - offset_minutes * 60;
    out = seconds * 1000 + millis;
    return true;
}

struct JsonDecoder::Impl {
    DecoderConfig cfg;
    std::vector<PathNode> nodes;  // nodes[0]: the document root
    std::vector<Slot> slots;
    int key_slot = -1;
    int time_slot = -1;
    std::vector<int> value_slots;  // -1: count(*), no field

    // The simdjson parser and the walk, for the instruction set chosen at construction.
    std::unique_ptr<detail::WalkKernel> kernel;
    std::unique_ptr<char[]> buf;  // payload copy followed by SIMDJSON_PADDING bytes
    std::size_t buf_cap = 0;
    std::string detail;

    Impl(DecoderConfig c, JsonKernel k) : cfg(std::move(c)), kernel(make_kernel(k)) {
        nodes.emplace_back();
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
            const std::string_view name(path.data() + start, dot - start);
            int child = find_child(node, name);
            if (child < 0) {
                child = static_cast<int>(nodes.size());
                nodes.emplace_back();
                nodes.back().name = std::string(name);
                nodes[node].children.push_back(child);
            }
            node = child;
            start = dot + 1;
        }
        if (nodes[node].slot < 0) {
            nodes[node].slot = static_cast<int>(slots.size());
            slots.emplace_back();
        }
        return nodes[node].slot;
    }

    int find_child(int node, std::string_view name) const {
        for (int c : nodes[node].children)
            if (nodes[c].name == name) return c;
        return -1;
    }

    DecodeError invalid_json(error_code e) {
        detail = "invalid JSON: ";
        detail += simdjson::error_message(e);
        return DecodeError::InvalidJson;
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
        for (auto& n : nodes) n.visited = false;
        for (auto& s : slots) s = Slot{};
        if (payload == nullptr || len == 0) {
            detail = "invalid JSON: the payload is empty";
            return DecodeError::InvalidJson;
        }
        const std::size_t need = len + simdjson::SIMDJSON_PADDING;
        if (need > buf_cap) {
            // Grow by doubling, the parser with the buffer, so a stream of slowly growing
            // messages does not reallocate on every record.
            const std::size_t cap = std::max({need, buf_cap * 2, std::size_t{4096}});
            buf = std::make_unique<char[]>(cap);
            buf_cap = cap;
            const error_code e = kernel->allocate(cap - simdjson::SIMDJSON_PADDING);
            if (e == simdjson::MEMALLOC) throw std::bad_alloc();
            if (e) return invalid_json(e);  // CAPACITY: beyond simdjson's 4 GiB limit
        }
        std::memcpy(buf.get(), payload, len);
        std::memset(buf.get() + len, 0, simdjson::SIMDJSON_PADDING);

        Seen root = Seen::Absent;
        if (const error_code e = kernel->parse(buf.get(), len, buf_cap, nodes, slots, root)) {
            if (e == simdjson::MEMALLOC) throw std::bad_alloc();
            return invalid_json(e);
        }
        if (root != Seen::Object) {
            detail = "the payload is ";
            detail += kind_name(root);
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
        if (!simdjson::validate_utf8(text.data(), text.size())) {
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
            case Seen::Bool:
                text = s.boolean ? "true" : "false";
                break;
            case Seen::String:
            case Seen::Number:
                text = s.text;
                break;
            }
        }
        if (auto e = check_key_text(text); e != DecodeError::None) return e;
        out.assign(text.data(), text.size());
        return DecodeError::None;
    }

    static bool in_event_time_range(Millis t) {
        return t >= core::kMinEventTime && t <= core::kMaxEventTime;
    }

    DecodeError take_time(Millis kafka_ts, Millis& out) {
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
        case Seen::Null:
            return field_error(DecodeError::MissingTime, path, kind_name(s.seen));
        case Seen::Bool:
        case Seen::Object:
        case Seen::Array:
            return field_error(DecodeError::BadTime, path, kind_name(s.seen));
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

    DecodeError take_values(std::vector<core::Value>& out) {
        out.resize(value_slots.size());
        for (std::size_t i = 0; i < value_slots.size(); ++i) {
            out[i] = core::Value::missing();
            if (value_slots[i] < 0) continue;
            const Slot& s = slots[value_slots[i]];
            switch (s.seen) {
            case Seen::Absent:
            case Seen::Null:
                break;
            case Seen::Number:
                if (s.num == NumKind::Int) {
                    out[i] = core::Value::of_int(s.i);
                } else if (s.num == NumKind::Double) {
                    out[i] = core::Value::of_double(s.d);
                } else {
                    field_error(DecodeError::NonNumericValue, cfg.value_paths[i], "");
                    append_excerpt(detail, s.text, false);
                    detail += ", beyond the double precision range";
                    return DecodeError::NonNumericValue;
                }
                break;
            default:
                return field_error(DecodeError::NonNumericValue, cfg.value_paths[i],
                                   kind_name(s.seen));
            }
        }
        return DecodeError::None;
    }
};

JsonDecoder::JsonDecoder(DecoderConfig cfg, JsonKernel kernel)
    : impl_(std::make_unique<Impl>(std::move(cfg), kernel)) {}
JsonDecoder::~JsonDecoder() = default;
JsonDecoder::JsonDecoder(JsonDecoder&&) noexcept = default;
JsonDecoder& JsonDecoder::operator=(JsonDecoder&&) noexcept = default;

const std::string& JsonDecoder::detail() const { return impl_->detail; }

const char* JsonDecoder::kernel_name() const { return impl_->kernel->name(); }

DecodeError JsonDecoder::decode(const char* payload, std::size_t len, const char* key,
                                std::size_t key_len, core::Millis kafka_ts, Decoded& out) {
    Impl& d = *impl_;
    d.detail.clear();
    DecodeError e = d.parse(payload, len);
    if (e == DecodeError::None) e = d.take_key(key, key_len, out.key);
    if (e == DecodeError::None) e = d.take_time(kafka_ts, out.time);
    if (e == DecodeError::None) e = d.take_values(out.values);
    return e;
}

}  // namespace stoatflow::kafka
