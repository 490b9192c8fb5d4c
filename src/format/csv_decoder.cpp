// The CSV decoder (csv_decoder.hpp): one pass over the message, fields copied into the raw row's
// arena (a quoted field in pieces, between its doubled quotes).
#include "stoatflow/format/csv_decoder.hpp"

#include "stoatflow/core/utf8.hpp"
#include "stoatflow/format/json_text.hpp"

#include <cstring>
#include <string_view>
#include <utility>

namespace stoatflow::format {

CsvRowDecoder::CsvRowDecoder(CsvOptions options, std::vector<std::string> names)
    : options_(std::move(options)), names_(std::move(names)) {}

DeadReason CsvRowDecoder::fail(DeadReason reason, std::string detail) {
    detail_ = std::move(detail);
    return reason;
}

bool CsvRowDecoder::is_header(const RawRows& rows, std::size_t row) const {
    for (std::size_t c = 0; c < names_.size(); ++c) {
        const RawValue v = rows.get(row, c);
        if (v.kind != RawKind::String || v.text != names_[c]) return false;
    }
    return true;
}

DeadReason CsvRowDecoder::decode(const char* payload, std::size_t len, bool first, RawRows& rows,
                                 std::size_t row, bool& skip) {
    skip = false;
    detail_.clear();
    const std::size_t n = names_.size();
    for (std::size_t c = 0; c < n; ++c) rows.set(row, c, RawKind::Absent);
    if (payload == nullptr) len = 0;
    // One line break at the end belongs to the producer, not to the record.
    if (len > 0 && payload[len - 1] == '\n') --len;
    if (len > 0 && payload[len - 1] == '\r') --len;
    if (len == 0) return fail(DeadReason::BadCsv, "the message is empty");
    if (!core::is_valid_utf8(payload, len)) {
        std::string d = "the message is not valid UTF-8: ";
        append_excerpt(d, std::string_view(payload, len));
        return fail(DeadReason::InvalidText, std::move(d));
    }
    const char d = options_.delimiter, q = options_.quote;
    const char* p = payload;
    const char* const end = payload + len;
    std::size_t col = 0;
    for (;;) {
        if (col == n)
            return fail(DeadReason::BadCsv, "the record has more than " + std::to_string(n) +
                                                " fields (one per column)");
        if (p < end && *p == q) {
            // A quoted field: up to the quote that is not doubled; line breaks are data.
            ++p;
            rows.set(row, col, RawKind::String);
            for (;;) {
                const auto* close =
                    static_cast<const char*>(std::memchr(p, q, static_cast<std::size_t>(end - p)));
                if (close == nullptr)
                    return fail(DeadReason::BadCsv,
                                "field " + std::to_string(col + 1) + ": the quote is not closed");
                rows.append(row, col, std::string_view(p, static_cast<std::size_t>(close - p)));
                if (close + 1 < end && close[1] == q) {
                    rows.append(row, col, std::string_view(close, 1));
                    p = close + 2;
                    continue;
                }
                p = close + 1;
                break;
            }
            if (p < end && *p != d)
                return fail(DeadReason::BadCsv,
                            "field " + std::to_string(col + 1) +
                                ": a closing quote must end the field (double a quote inside one)");
        } else {
            const char* start = p;
            while (p < end && *p != d) {
                const char c = *p;
                if (c == q)
                    return fail(DeadReason::BadCsv,
                                "field " + std::to_string(col + 1) +
                                    ": a quote inside an unquoted field (quote the whole field)");
                if (c == '\n' || c == '\r')
                    return fail(DeadReason::BadCsv,
                                "field " + std::to_string(col + 1) +
                                    ": a line break outside quotes (one record per message)");
                ++p;
            }
            const std::string_view text(start, static_cast<std::size_t>(p - start));
            const bool null = options_.null_marker ? text == *options_.null_marker : text.empty();
            if (null)
                rows.set(row, col, RawKind::Null);
            else
                rows.set(row, col, RawKind::String, text);
        }
        ++col;
        if (p == end) break;
        ++p;  // the delimiter: another field follows (maybe an empty one at the end)
    }
    if (col != n)
        return fail(DeadReason::BadCsv, "the record has " + std::to_string(col) +
                                            (col == 1 ? " field" : " fields") + ", the source " +
                                            std::to_string(n) + " columns");
    if (first && options_.header && is_header(rows, row)) skip = true;
    return DeadReason::None;
}

}  // namespace stoatflow::format
