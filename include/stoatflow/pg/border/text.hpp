// Text that PostgreSQL can store and SQL that quotes names: small helpers shared by the
// commit cycle, dead letters and the SQL functions.
#pragma once

#include "stoatflow/core/utf8.hpp"
#include "stoatflow/pg/limits.hpp"

#include <cstddef>
#include <string>

namespace stoatflow::pg {

// At most max_bytes of input as valid UTF-8 without NUL: invalid bytes and NUL become \xNN
// (the core's one UTF-8 rule, core/utf8.hpp).
using core::storable_text;
// "name" quoted as an SQL identifier when needed.
std::string quote_ident(const std::string& name);

}  // namespace stoatflow::pg
