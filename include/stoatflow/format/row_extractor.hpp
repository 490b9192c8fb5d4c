// A source's columns picked out of a JSON record in one pass over the document, as raw fields
// (raw_row.hpp): the consume thread's half of the row type; the conversion into column types
// happens later. Pure C++ on simdjson On-Demand, like the 0.1 decoder.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/format/json_decoder.hpp"
#include "stoatflow/format/raw_row.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace stoatflow::format {

class JsonRowExtractor {
public:
    // One member path per column (from the document root; see core::parse_json_path).
    explicit JsonRowExtractor(std::vector<std::vector<std::string>> paths);
    ~JsonRowExtractor();
    JsonRowExtractor(JsonRowExtractor&&) noexcept;
    JsonRowExtractor& operator=(JsonRowExtractor&&) noexcept;
    JsonRowExtractor(const JsonRowExtractor&) = delete;
    JsonRowExtractor& operator=(const JsonRowExtractor&) = delete;

    std::size_t columns() const;

    // Fills columns [0, columns()) of `row` from the payload. A path whose member is missing,
    // or crosses a value that is not an object, leaves its column Absent; when an object has
    // the same member twice, the later one wins (as in jsonb), for the member and everything
    // below it. The whole document is validated: InvalidJson (as 0.1) or NotAnObject, with
    // detail(); any bytes are safe input, the only exception is std::bad_alloc.
    DecodeError extract(const char* payload, std::size_t len, RawRows& rows, std::size_t row);
    const std::string& detail() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace stoatflow::format
