// Named limits of the PostgreSQL layer: one place for every bound the worker and the SQL
// functions apply (pgvector-style). Settings users can change live in settings.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stoatflow::pg {

// lock_timeout while writing a sink as its owner: a lock someone holds on the sink fails that
// aggregation's write (retried with backoff) instead of stalling the whole source.
constexpr const char* kOwnerLockTimeout = "2s";

// A failing sink is retried after 1 s, doubling up to 30 s.
constexpr std::int64_t kSinkRetryFirstMs = 1000;
constexpr std::int64_t kSinkRetryMaxMs = 30000;

// A broker error shows as status 'error' while it is this recent and nothing was consumed since.
constexpr std::int64_t kBrokerErrorShownMs = 30000;

// Names PostgreSQL would truncate (NAMEDATALEN - 1 bytes) are refused, never truncated.
constexpr std::size_t kMaxNameBytes = 63;

// How often the worker measures its memory against stoatflow.worker_memory_limit.
constexpr std::int64_t kMemoryCheckIntervalMs = 250;

// Broker calls block the worker (SIGTERM waits for them): keep each one short and let the
// retry loop with backoff do the waiting.
constexpr int kKafkaTimeoutMs = 2000;
// How often a running worker asks the broker whether its topic has gained partitions.
constexpr std::int64_t kPartitionCheckMs = 10000;

}  // namespace stoatflow::pg
