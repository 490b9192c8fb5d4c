// Named limits of the schema registry client, in one place.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstddef>

namespace stoatflow::registry {

// An answer larger than this is not a registry answer (a schema of a few MB is already unusual).
constexpr std::size_t kMaxResponseBytes = 16u << 20;
// Characters of the answer quoted in a detail message when it is not what a registry says.
constexpr std::size_t kExcerptBytes = 120;
// Schemas the cache keeps per source (ids seen on its topics); beyond it the oldest are dropped.
constexpr std::size_t kMaxCachedSchemas = 10000;
// Retrying a registry that could not answer: the first wait and the longest one.
constexpr long kRetryFirstMs = 1000;
constexpr long kRetryMaxMs = 30000;

}  // namespace stoatflow::registry
