// format => 'csv' (README "Formats", CSV): one record per Kafka message, RFC 4180 quoting, the
// i-th field into the i-th declared column, as raw fields (raw_row.hpp) like the JSON row
// extractor's: the conversion into column types happens later, the same for every format.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/format/dead_reason.hpp"
#include "stoatflow/format/raw_row.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stoatflow::format {

struct CsvOptions {
    char delimiter = ',';
    char quote = '"';
    // An unquoted field equal to it is NULL; without one, an empty unquoted field is NULL. A
    // quoted field is always a string ("" the empty one).
    std::optional<std::string> null_marker;
    // A partition's first record (offset 0), when it equals the column names, is skipped.
    bool header = false;
};

class CsvRowDecoder {
public:
    // names: the declared columns, in order (the header a record is compared with).
    CsvRowDecoder(CsvOptions options, std::vector<std::string> names);

    std::size_t columns() const { return names_.size(); }

    // Fills columns [0, columns()) of `row` from one message, every field a String or Null.
    // `first`: the message is its partition's first (offset 0; only it may be a header). Returns
    // BadCsv (wrong number of fields, an unterminated quote, a quote inside an unquoted field or
    // after a closing one, a line break outside quotes, an empty message) or InvalidText (bytes
    // that are not UTF-8) with detail(); `skip` is set (None returned) for a header record. One
    // line break (LF, CR LF or CR) at the end of the message is not part of the record. Any bytes
    // are safe input; the only exception is std::bad_alloc.
    DeadReason decode(const char* payload, std::size_t len, bool first, RawRows& rows,
                      std::size_t row, bool& skip);
    const std::string& detail() const { return detail_; }

private:
    DeadReason fail(DeadReason reason, std::string detail);
    bool is_header(const RawRows& rows, std::size_t row) const;

    CsvOptions options_;
    std::vector<std::string> names_;
    std::string detail_;
};

}  // namespace stoatflow::format
