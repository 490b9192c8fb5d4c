// libFuzzer target for the CSV decoder (format => 'csv'): any bytes, under options the input's
// first bytes choose, must give a verdict without a crash, and the verdict must agree with two
// oracles:
//   * a record that decodes is written back (every field quoted, NULL as the null marker or an
//     empty unquoted field) and decodes again to the same fields;
//   * a message without the quote character decodes exactly when its delimiter splits it into
//     as many fields as there are columns, with no line break but one at the end, and those
//     pieces are the fields (NULL where the null rule says).
#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/csv_decoder.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace stoatflow;
using namespace stoatflow::format;

namespace {

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "fuzz check failed at line %d: %s\n", __LINE__, #cond);           \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

using Fields = std::vector<std::optional<std::string>>;

Fields fields_of(const RawRows& rows, std::size_t row, std::size_t n) {
    Fields f;
    for (std::size_t c = 0; c < n; ++c) {
        const RawValue v = rows.get(row, c);
        FUZZ_CHECK(v.kind == RawKind::String || v.kind == RawKind::Null);
        if (v.kind == RawKind::Null)
            f.emplace_back();
        else
            f.emplace_back(std::string(v.text));
    }
    return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) return 0;
    // Byte 0: delimiter (',', ';', '\t', '|'); byte 1: quote ('"', '\''); byte 2: columns (1-8)
    // in its low bits, a null marker ("\N") and the header rule in its high ones.
    static constexpr char kDelims[] = {',', ';', '\t', '|'};
    static constexpr char kQuotes[] = {'"', '\''};
    CsvOptions o;
    o.delimiter = kDelims[data[0] % 4];
    o.quote = kQuotes[data[1] % 2];
    const std::size_t n = 1 + (data[2] & 7);
    if (data[2] & 0x10) o.null_marker = "\\N";
    o.header = (data[2] & 0x20) != 0;
    std::vector<std::string> names;
    for (std::size_t c = 0; c < n; ++c) names.push_back("c" + std::to_string(c));
    const char* msg = reinterpret_cast<const char*>(data + 3);
    const std::size_t len = size - 3;

    CsvRowDecoder dec(o, names);
    RawRows rows(n + 1);
    const std::size_t r = rows.add_row();
    bool skip = false;
    const DeadReason e = dec.decode(msg, len, true, rows, r, skip);
    FUZZ_CHECK(e == DeadReason::None || e == DeadReason::BadCsv || e == DeadReason::InvalidText);
    FUZZ_CHECK((e == DeadReason::None) == dec.detail().empty());
    FUZZ_CHECK(!skip || e == DeadReason::None);
    FUZZ_CHECK(rows.get(r, n).kind == RawKind::Absent);  // the metadata columns are not its own
    std::size_t body = len;
    if (body > 0 && msg[body - 1] == '\n') --body;
    if (body > 0 && msg[body - 1] == '\r') --body;
    if (e == DeadReason::InvalidText) FUZZ_CHECK(!core::is_valid_utf8(msg, body));
    if (e != DeadReason::None) {
        // Oracle 2, the refusing side: without a quote, a split that fits would have decoded.
        if (e == DeadReason::BadCsv && body > 0 && std::memchr(msg, o.quote, body) == nullptr &&
            std::memchr(msg, '\n', body) == nullptr && std::memchr(msg, '\r', body) == nullptr) {
            std::size_t pieces = 1;
            for (std::size_t i = 0; i < body; ++i) pieces += msg[i] == o.delimiter;
            FUZZ_CHECK(pieces != n);
        }
        return 0;
    }
    const Fields got = fields_of(rows, r, n);

    // Oracle 2: no quote in the message, so its fields are the delimiter's pieces.
    if (std::memchr(msg, o.quote, body) == nullptr) {
        Fields split;
        std::size_t start = 0;
        for (std::size_t i = 0; i <= body; ++i) {
            if (i < body && msg[i] != o.delimiter) continue;
            std::string piece(msg + start, i - start);
            FUZZ_CHECK(piece.find_first_of("\r\n") == std::string::npos);
            const bool null = o.null_marker ? piece == *o.null_marker : piece.empty();
            split.push_back(null ? std::nullopt : std::optional<std::string>(piece));
            start = i + 1;
        }
        FUZZ_CHECK(split == got);
    }

    // Oracle 1: written back, every field quoted, it decodes to the same fields.
    std::string again;
    for (std::size_t c = 0; c < n; ++c) {
        if (c > 0) again += o.delimiter;
        if (!got[c]) {
            if (o.null_marker) again += *o.null_marker;
            continue;
        }
        again += o.quote;
        for (char ch : *got[c]) {
            if (ch == o.quote) again += o.quote;
            again += ch;
        }
        again += o.quote;
    }
    if (again.empty()) return 0;  // one NULL column without a marker: an empty message
    CsvRowDecoder dec2(CsvOptions{o.delimiter, o.quote, o.null_marker, false}, names);
    RawRows rows2(n);
    const std::size_t r2 = rows2.add_row();
    bool skip2 = false;
    FUZZ_CHECK(dec2.decode(again.data(), again.size(), true, rows2, r2, skip2) == DeadReason::None);
    FUZZ_CHECK(!skip2);
    FUZZ_CHECK(fields_of(rows2, r2, n) == got);
    return 0;
}
