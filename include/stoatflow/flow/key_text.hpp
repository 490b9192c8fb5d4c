// A window's key as text (executor.hpp): one key column is its text; several are a JSON array
// of their texts (["us","mobile"]), escaping only ", \\ and control characters. Pure C++.
#pragma once

#include "stoatflow/core/no_postgres.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace stoatflow::flow {

// The key of n column texts into `key` (replaced).
void encode_key(const char* const* texts, std::size_t n, std::string& key);

// Several columns' key back into their texts (appended to out); false for anything
// encode_key does not write.
bool decode_key(const std::string& key, std::vector<std::string>& out);

}  // namespace stoatflow::flow
