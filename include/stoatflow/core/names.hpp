// The name limit: PostgreSQL truncates identifiers longer than NAMEDATALEN - 1 bytes (63), so
// two long names could become one. stoatflow refuses them, never truncates (README "Names").
// The one constant and the one check; src/pg/declare/analyze_names.cpp asserts it equals
// PostgreSQL's NAMEDATALEN - 1.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/core/error.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace stoatflow::core {

inline constexpr std::size_t kMaxNameBytes = 63;

// Bytes, not characters: what PostgreSQL's NAMEDATALEN counts.
inline constexpr bool name_fits(std::size_t bytes) { return bytes <= kMaxNameBytes; }

// The message: `what` (e.g. 'column name "x"', "a name") is longer than 63 bytes.
inline std::string name_too_long_message(std::string_view what) {
    return std::string(what) + " is longer than " + std::to_string(kMaxNameBytes) + " bytes";
}

// Throws Error 42622 (name_too_long), `what "name"` named in the message, when `name` does not
// fit. `hint`: what the user can do in this place.
inline void check_name_length(std::string_view what, std::string_view name, const char* hint) {
    if (name_fits(name.size())) return;
    throw Error(sqlstate::kNameTooLong,
                name_too_long_message(std::string(what) + " \"" + std::string(name) + "\""), hint);
}

}  // namespace stoatflow::core
