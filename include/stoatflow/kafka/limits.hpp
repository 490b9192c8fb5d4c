// Named limits of the Kafka layer (topics), in one place.
#pragma once
#include <cstddef>

#include "stoatflow/core/no_postgres.hpp"

namespace stoatflow::kafka {

// A source reads at most this many topics (README "Expressions and PostgreSQL aggregates":
// create_source(topic => 'a, b')). Each is a few metadata and offset queries when the worker
// starts, and a row per partition in the catalog; the bound keeps a typo (a pasted list of
// thousands) from becoming a stalled start.
constexpr std::size_t kMaxTopicsPerSource = 64;
// Kafka's own limit on a topic name's length.
constexpr std::size_t kMaxTopicNameBytes = 249;
// drop_source removes the source's consumer group in Kafka within this time; a broker that is
// down or slow does not hold the drop up longer (README "Removing a pipeline").
constexpr int kDeleteGroupTimeoutMs = 3000;
// A batch held back because a message's schema is still being fetched (Consumer::poll's
// `ready`): how long a poll waits before it asks again. Short: the worker's loop (signals, the
// commit cycle) runs between polls.
constexpr int kHeldBatchWaitMs = 20;

}  // namespace stoatflow::kafka
