// Replays the fuzz corpus (test/fuzz/corpus) through the JSON decoder in every ctest run, so
// the inputs the fuzzer once found keep being decoded in CI even where libFuzzer is not built.
#include "stoatflow/core/time.hpp"
#include "stoatflow/flow/record_judge.hpp"
#include "stoatflow/format/json_decoder.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#ifndef STOATFLOW_FUZZ_CORPUS
#error "STOATFLOW_FUZZ_CORPUS must name test/fuzz/corpus (set by CMakeLists.txt)"
#endif

using namespace stoatflow;
using format::DecodeError;

namespace {

std::map<std::string, std::string> corpus() {
    std::map<std::string, std::string> files;  // sorted: failures read the same every run
    for (const auto& entry : std::filesystem::directory_iterator(STOATFLOW_FUZZ_CORPUS)) {
        if (!entry.is_regular_file()) continue;
        std::ifstream in(entry.path(), std::ios::binary);
        files[entry.path().filename().string()] =
            std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return files;
}

bool clean_text(const std::string& s) {
    return std::memchr(s.data(), '\0', s.size()) == nullptr &&
           simdjson::validate_utf8(s.data(), s.size());
}

// The limits are the record judge's, applied after the decoder as the JSON lane does.
const flow::RecordJudge kLimits(3, 0);

DecodeError judged(format::JsonDecoder& dec, bool limited, const std::string& bytes,
                   const char* key, std::size_t key_len, core::Millis kafka_ts, core::Millis now,
                   format::Decoded& out, std::string& detail) {
    DecodeError e = dec.decode(bytes.data(), bytes.size(), key, key_len, kafka_ts, out);
    detail.clear();
    if (limited) e = kLimits.after_decode(e, out, now, detail);
    if (e != DecodeError::None && detail.empty()) detail = dec.detail();
    return e;
}

}  // namespace

TEST(FuzzCorpus, EveryFileDecodesToASaneVerdict) {
    const auto files = corpus();
    ASSERT_GE(files.size(), 19u) << STOATFLOW_FUZZ_CORPUS;
    ASSERT_TRUE(files.count("regression_long_mantissa.json"));  // the simdjson get_double bug
    format::JsonDecoder nested({"user.id", "ts", {"amount", "m.v"}});
    format::JsonDecoder from_kafka({"", "", {"", "amount"}});
    format::JsonDecoder limits({"user.id", "ts", {"amount", "m.v"}});
    const core::Millis now = 1732960800000;  // record_basic's own time
    for (const auto& [name, bytes] : files) {
        SCOPED_TRACE(name);
        for (format::JsonDecoder* dec : {&nested, &from_kafka, &limits}) {
            for (const char* key : {static_cast<const char*>(nullptr), "kafka-key"}) {
                for (core::Millis kafka_ts : {core::kNoTime, core::Millis{0}, now + 1}) {
                    format::Decoded out;
                    const std::size_t key_len = key ? std::strlen(key) : 0;
                    std::string detail;
                    const DecodeError e = judged(*dec, dec == &limits, bytes, key, key_len,
                                                 kafka_ts, now, out, detail);
                    EXPECT_EQ(e == DecodeError::None, detail.empty()) << detail;
                    EXPECT_EQ(e == DecodeError::None, std::string(to_string(e)).empty());
                    EXPECT_LT(detail.size(), 400u);
                    EXPECT_TRUE(clean_text(detail)) << detail;
                    if (e != DecodeError::None) continue;
                    EXPECT_EQ(out.values.size(), 2u);
                    EXPECT_GE(out.time, core::kMinEventTime);
                    EXPECT_LE(out.time, core::kMaxEventTime);
                    EXPECT_TRUE(clean_text(out.key));
                    if (dec == &limits) {
                        EXPECT_LE(out.key.size(), 3u);
                        EXPECT_LE(out.time, now);
                    }
                }
            }
        }
    }
    // A few verdicts pinned, so a decoder that says "ok" to everything is noticed too.
    auto verdict = [&](format::JsonDecoder& dec, const std::string& name) {
        format::Decoded out;
        const std::string& b = files.at(name);
        std::string detail;
        return std::string(to_string(
            judged(dec, &dec == &limits, b, nullptr, 0, core::kNoTime, now, out, detail)));
    };
    EXPECT_EQ(verdict(nested, "record_basic.json"), "");
    EXPECT_EQ(verdict(nested, "regression_long_mantissa.json"), "");
    EXPECT_EQ(verdict(nested, "trailing_comma.json"), "invalid_json");
    EXPECT_EQ(verdict(nested, "array_root.json"), "not_an_object");
    EXPECT_EQ(verdict(nested, "invalid_utf8.json"), "invalid_json");
    EXPECT_EQ(verdict(nested, "key_nul_escape.json"), "invalid_text");
    EXPECT_EQ(verdict(limits, "record_basic.json"), "key_too_long");
    format::Decoded out;
    const std::string& m = files.at("regression_long_mantissa.json");
    ASSERT_EQ(nested.decode(m.data(), m.size(), nullptr, 0, core::kNoTime, out), DecodeError::None);
    EXPECT_EQ(out.values[1].kind, core::Value::Kind::Double);
    EXPECT_DOUBLE_EQ(out.values[1].d, 0.577779223372036854775808777);
}
