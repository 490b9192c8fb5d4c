// Named bounds of README "Security" that the core enforces, in one place, so the docs, the checks
// and the messages can never disagree about a number.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

namespace stoatflow::core {

// Most windows one record may fall into (hopping size / advance). Every window of a record
// costs memory and a state row per commit; past this a definition is a mistake, not a need.
inline constexpr long kMaxWindowsPerRecord = 1000;

}  // namespace stoatflow::core
