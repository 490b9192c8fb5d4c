// Event times written as text: ISO-8601 / RFC 3339 date-times to epoch milliseconds.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"

#include <string_view>

namespace stoatflow::format {

// ISO-8601 / RFC 3339 date-time to epoch ms: YYYY-MM-DD, 'T' (or 't' or a space),
// hh:mm:ss, an optional fraction of 1-9 digits (truncated to ms), and an optional offset
// ('Z', +hh:mm, +hhmm or +hh; none means UTC). Seconds may be 60 (a leap second, read as
// the first second of the next minute, as PostgreSQL does). False on anything else.
bool parse_iso8601(std::string_view s, core::Millis& out);

}  // namespace stoatflow::format
