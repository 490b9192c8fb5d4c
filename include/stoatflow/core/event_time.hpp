// Event time: the one owner of its range and of its conversions (README "Time and the
// watermark"). PostgreSQL's timestamptz counts microseconds since 2000-01-01 UTC; stoatflow's
// event time counts milliseconds since 1970-01-01 UTC. The PostgreSQL layer turns a Datum into
// its int64 and calls these, so every place converts, floors and checks alike.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace stoatflow::core {

// 2000-01-01 00:00:00 UTC (PostgreSQL's epoch) in Unix milliseconds and microseconds.
inline constexpr Millis kPgEpochMs = 946684800000LL;
inline constexpr std::int64_t kPgEpochMicros = kPgEpochMs * 1000;

// time_out_of_range's detail: `what` (e.g. 'field "ts" = 1e20') is outside the range.
inline std::string outside_event_time_range(std::string_view what) {
    return std::string(what) + " is outside the event time range 0001-01-01 .. 9999-12-31 (UTC)";
}

// The event time range: kMinEventTime .. kMaxEventTime.
inline constexpr bool in_event_time_range(Millis t) {
    return t >= kMinEventTime && t <= kMaxEventTime;
}

// Unix microseconds → event time: floored to the millisecond (before 1970 too).
inline constexpr Millis unix_micros_to_ms(std::int64_t micros) { return floor_div(micros, 1000); }

// A timestamptz's value (microseconds since 2000-01-01) → event time, floored. Defined for every
// finite timestamptz (PostgreSQL's range ends in 294276 AD, far inside int64 after the shift).
inline constexpr Millis pg_timestamp_to_ms(std::int64_t pg_micros) {
    return floor_div(pg_micros, 1000) + kPgEpochMs;
}

// Event time → a timestamptz's value. Exact for every time in the event time range.
inline constexpr std::int64_t ms_to_pg_timestamp(Millis ms) { return (ms - kPgEpochMs) * 1000; }

// Event time → Unix microseconds (the fast lane's timestamptz).
inline constexpr std::int64_t ms_to_unix_micros(Millis ms) { return ms * 1000; }

// Unix microseconds (the fast lane's timestamptz) → a timestamptz's value.
inline constexpr std::int64_t unix_micros_to_pg_timestamp(std::int64_t micros) {
    return micros - kPgEpochMicros;
}

// A duration given as an interval without months (its days of 24 hours and its microseconds,
// PostgreSQL's Interval fields) in milliseconds, floored: a fraction of a millisecond rounds
// down, as floor(extract(epoch FROM i) * 1000) in the declarations. Every int32 of days and
// int64 of microseconds fits.
inline constexpr Millis interval_to_ms(std::int32_t days, std::int64_t micros) {
    const __int128 us = static_cast<__int128>(days) * 86400000000LL + micros;
    __int128 ms = us / 1000;
    if (us % 1000 < 0) --ms;
    return static_cast<Millis>(ms);
}

}  // namespace stoatflow::core
