// libFuzzer target for the JSON record decoder and parse_iso8601: any bytes as payload and
// key must give a verdict without a crash, and the verdict must agree with simdjson's DOM parser.
//
// Oracles: every input is also parsed by the (fully validating) DOM parser. Where DOM accepts
// the document the decoder must not say invalid_json, and the fields it extracts must match a
// DOM lookup of the same paths (last duplicate member wins); where DOM rejects it for any reason
// but an unrepresentable number (which the decoder handles: integers of up to 38 digits stay
// exact, longer ones and numbers beyond the double range are value_out_of_range) the decoder
// must say invalid_json. parse_iso8601 results must survive a format/parse round trip.
#include "stoatflow/core/time.hpp"
#include "stoatflow/flow/record_judge.hpp"
#include "stoatflow/format/json_decoder.hpp"

#include <simdjson.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

using namespace stoatflow;
using stoatflow::format::DecodeError;

namespace {

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "fuzz check failed at line %d: %s\n", __LINE__, #cond);           \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

bool clean_text(const std::string& s) {
    return std::memchr(s.data(), '\0', s.size()) == nullptr &&
           simdjson::validate_utf8(s.data(), s.size());
}

// The DOM element at a dotted path, the last of duplicate members winning; false if absent.
bool dom_lookup(simdjson::dom::element root, std::string_view path, simdjson::dom::element& out) {
    simdjson::dom::element cur = root;
    while (true) {
        const std::size_t dot = path.find('.');
        const std::string_view name = path.substr(0, dot);
        simdjson::dom::object obj;
        if (cur.get_object().get(obj)) return false;
        bool found = false;
        for (auto field : obj) {
            if (field.key == name) {
                cur = field.value;
                found = true;
            }
        }
        if (!found) return false;
        if (dot == std::string_view::npos) break;
        path.remove_prefix(dot + 1);
    }
    out = cur;
    return true;
}

// `refused`: the decoder listed the value in Decoded::bad (a value that cannot be aggregated fails
// only the aggregations reading it, never the record): then it is Missing and not a plain number
// the DOM reads exactly.
void check_value(simdjson::dom::element root, std::string_view path, const core::Value& v,
                 bool refused) {
    simdjson::dom::element e;
    if (!dom_lookup(root, path, e) || e.is_null()) {
        FUZZ_CHECK(v.kind == core::Value::Kind::Missing && !refused);
        return;
    }
    if (refused) {
        FUZZ_CHECK(v.kind == core::Value::Kind::Missing);
        std::int64_t i;
        FUZZ_CHECK(e.get_int64().get(i) != simdjson::SUCCESS);  // an int64 is always usable
        return;
    }
    std::int64_t i;
    std::uint64_t u;
    double d;
    if (!e.get_int64().get(i)) {
        FUZZ_CHECK(v.kind == core::Value::Kind::Int && v.i == i);
    } else if (!e.get_uint64().get(u)) {  // beyond int64: exact (README "Security")
        FUZZ_CHECK(v.kind == core::Value::Kind::BigInt && v.big() == static_cast<__int128>(u));
    } else if (!e.get_double().get(d)) {
        // A double, or an integer token of up to 38 digits the DOM reads as one.
        FUZZ_CHECK((v.kind == core::Value::Kind::Double && v.d == d) ||
                   (v.kind == core::Value::Kind::BigInt && static_cast<double>(v.big()) == d));
    } else {
        FUZZ_CHECK(false);  // a non-number is refused, never decoded
    }
}

void check_against_dom(const std::uint8_t* data, std::size_t size, DecodeError got,
                       const format::Decoded& out) {
    static simdjson::dom::parser dom;
    simdjson::dom::element root;
    const simdjson::error_code err = dom.parse(data, size).get(root);
    if (err == simdjson::NUMBER_ERROR) return;  // e.g. 1e400 or 2^64: DOM gives up, we do not
    if (err) {
        FUZZ_CHECK(got == DecodeError::InvalidJson);
        return;
    }
    FUZZ_CHECK(got != DecodeError::InvalidJson);
    FUZZ_CHECK((got == DecodeError::NotAnObject) == !root.is_object());
    if (got != DecodeError::None) return;

    simdjson::dom::element e;
    FUZZ_CHECK(dom_lookup(root, "user.id", e));
    std::string_view s;
    std::int64_t i;
    if (!e.get_string().get(s)) FUZZ_CHECK(out.key == s);
    if (!e.get_int64().get(i) && i != 0) FUZZ_CHECK(out.key == std::to_string(i));
    if (e.is_bool()) FUZZ_CHECK(out.key == (e.get_bool().value_unsafe() ? "true" : "false"));

    FUZZ_CHECK(dom_lookup(root, "ts", e));
    double d;
    core::Millis t;
    if (!e.get_int64().get(i))
        FUZZ_CHECK(out.time == i);
    else if (!e.get_double().get(d))
        FUZZ_CHECK(out.time == static_cast<core::Millis>(std::floor(d)));
    else if (!e.get_string().get(s))
        FUZZ_CHECK(format::parse_iso8601(s, t) && out.time == t);
    else
        FUZZ_CHECK(false);

    auto refused = [&](std::size_t index) {
        for (const auto& b : out.bad)
            if (b.index == index) return true;
        return false;
    };
    check_value(root, "amount", out.values[0], refused(0));
    check_value(root, "m.v", out.values[1], refused(1));
}

void check_iso8601(std::string_view s) {
    core::Millis ms = 0;
    if (!format::parse_iso8601(s, ms)) return;
    // Year 0000 minus an offset up to year 9999 plus one: the widest a valid string can reach.
    FUZZ_CHECK(ms >= -62167219200000 - 86400000 && ms <= 253402300800000 + 86400000);
    const std::time_t secs = static_cast<std::time_t>(core::floor_div(ms, 1000));
    std::tm tm{};
    FUZZ_CHECK(gmtime_r(&secs, &tm) != nullptr);
    const long year = tm.tm_year + 1900L;
    if (year < 0 || year > 9999) return;
    char text[40];
    std::snprintf(text, sizeof text, "%04ld-%02d-%02dT%02d:%02d:%02d.%03dZ", year, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms - core::floor_div(ms, 1000) * 1000));
    core::Millis again = 0;
    FUZZ_CHECK(format::parse_iso8601(text, again));
    FUZZ_CHECK(again == ms);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static format::JsonDecoder nested(format::DecoderConfig{"user.id", "ts", {"amount", "m.v"}});
    static format::JsonDecoder from_kafka(format::DecoderConfig{"", "", {"", "amount"}});
    // The limits are the record judge's, after the decoder (as the record path's JSON lane).
    static format::JsonDecoder limited({"user.id", "ts", {"amount", "m.v"}});
    static const flow::RecordJudge limits(16, 1000);
    const char* payload = reinterpret_cast<const char*>(data);

    // The key is the input's tail (its length from the first byte); sometimes absent.
    const std::size_t key_len = size == 0 ? 0 : std::min<std::size_t>(data[0] % 24, size);
    const char* key = size % 7 == 0 ? nullptr : payload + (size - key_len);
    core::Millis kafka_ts = core::kNoTime;
    if (size >= 8 && size % 5 != 0) std::memcpy(&kafka_ts, data, sizeof kafka_ts);
    // The wall clock: sometimes absent, sometimes anything at all.
    core::Millis now = core::kNoTime;
    if (size >= 16 && size % 3 != 0) std::memcpy(&now, data + 8, sizeof now);

    format::Decoded out;
    for (format::JsonDecoder* dec : {&nested, &from_kafka, &limited}) {
        DecodeError e = dec->decode(payload, size, key, key_len, kafka_ts, out);
        std::string detail;
        if (dec == &limited) e = limits.after_decode(e, out, now, detail);
        if (e != DecodeError::None && detail.empty()) detail = dec->detail();
        FUZZ_CHECK(to_string(e) != nullptr);
        FUZZ_CHECK((e == DecodeError::None) == detail.empty());
        FUZZ_CHECK(detail.size() < 400 && clean_text(detail));
        if (e == DecodeError::None) {
            FUZZ_CHECK(out.values.size() == 2);
            FUZZ_CHECK(out.time >= core::kMinEventTime && out.time <= core::kMaxEventTime);
            FUZZ_CHECK(clean_text(out.key));
            if (dec == &limited) {
                FUZZ_CHECK(out.key.size() <= 16);
                FUZZ_CHECK(now == core::kNoTime || static_cast<__int128>(out.time) - now <= 1000);
            }
        }
        if (dec == &nested) check_against_dom(data, size, e, out);
    }

    check_iso8601(std::string_view(payload, size));
    return 0;
}
