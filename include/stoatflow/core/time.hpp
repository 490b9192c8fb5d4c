// Event time in milliseconds since the epoch, and the integer arithmetic every
// window rule needs (floor division that is right for times before 1970).
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstdint>
#include <limits>

namespace stoatflow::core {

using Millis = std::int64_t;

// "No time yet": the watermark before any record, a partition without data.
inline constexpr Millis kNoTime = std::numeric_limits<Millis>::min();

// Largest event time accepted (year ~294,000 either way would overflow window math);
// we stay well inside int64 so start + size + grace can never overflow.
inline constexpr Millis kMaxEventTime = 253402300799999;  // 9999-12-31T23:59:59.999Z
inline constexpr Millis kMinEventTime = -62135596800000;  // 0001-01-01T00:00:00Z

inline constexpr Millis floor_div(Millis a, Millis b) {
    Millis q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

inline constexpr Millis floor_to(Millis t, Millis step) { return floor_div(t, step) * step; }

}  // namespace stoatflow::core
