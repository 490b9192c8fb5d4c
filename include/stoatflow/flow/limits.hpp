// Named limits of the record path and the worker's pure policies (src/flow): the bounds the
// consume thread applies without PostgreSQL.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stoatflow/core/no_postgres.hpp"

namespace stoatflow::flow {

// A failing sink is retried after 1 s, doubling up to 30 s.
constexpr std::int64_t kSinkRetryFirstMs = 1000;
constexpr std::int64_t kSinkRetryMaxMs = 30000;

// A broker error shows as status 'error' while it is this recent and nothing was consumed since.
constexpr std::int64_t kBrokerErrorShownMs = 30000;

// Decoded records staged between the decoder and the engines (one cache-friendly batch).
constexpr std::size_t kStageRecords = 512;

// How much of a dead letter's payload dead_letters keeps: beside its rule, record_judge.hpp.

}  // namespace stoatflow::flow
