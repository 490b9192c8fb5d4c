// Named limits of the Kafka layer (topics, decoding records), in one place.
#pragma once
#include <cstddef>

#include "stoatflow/core/no_postgres.hpp"

namespace stoatflow::kafka {

// At most this many payload bytes are quoted in a dead letter's detail message.
constexpr std::size_t kExcerptBytes = 64;
// JSON nesting limit: bounds the decoder's recursion, and stays below the On-Demand parser's own
// max_depth (1024), which it asserts on in debug builds but does not check otherwise.
constexpr int kMaxDepth = 1000;

// A source reads at most this many topics (SPEC 11: create_source(topic => 'a, b')). Each is
// a few metadata and offset queries when the worker starts, and a row per partition in the
// catalog; the bound keeps a typo (a pasted list of thousands) from becoming a stalled start.
constexpr std::size_t kMaxTopicsPerSource = 64;
// Kafka's own limit on a topic name's length.
constexpr std::size_t kMaxTopicNameBytes = 249;

}  // namespace stoatflow::kafka
