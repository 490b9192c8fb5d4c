// Text that PostgreSQL can store and SQL that quotes names: small helpers shared by the
// commit cycle, dead letters and the SQL functions.
#pragma once

#include <cstddef>
#include <string>

namespace stoatflow::pg {

// How much of an undecodable payload dead_letters keeps.
constexpr std::size_t kDeadLetterPayloadBytes = 1024;
// How much of a dead letter's detail it keeps.
constexpr std::size_t kDeadLetterDetailBytes = 512;

// At most max_bytes of input as valid UTF-8 without NUL: invalid bytes and NUL become \xNN.
std::string storable_text(const char* data, std::size_t len, std::size_t max_bytes);
// "name" quoted as an SQL identifier when needed.
std::string quote_ident(const std::string& name);

}  // namespace stoatflow::pg
