// Consumption aligned by event time (README "Aligned consumption"): which partitions a worker
// stops fetching for a while because their event time runs ahead of the partitions that hold
// the watermark back. Pure decision, no broker and no PostgreSQL: the worker applies it
// (kafka::Consumer::pause / resume). Pausing changes only the order in which partitions are
// read; positions stay per partition, so what is committed keeps its meaning.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/core/time.hpp"
#include "stoatflow/core/topic_partition.hpp"

#include <cstdint>
#include <set>
#include <vector>

namespace stoatflow::flow {

// The span a partition may run ahead of the slowest one before it is paused: the source's
// max_out_of_orderness (state spans that much anyway), at least kMinAlignmentSpan.
inline constexpr core::Millis kMinAlignmentSpan = 60'000;
core::Millis alignment_span(core::Millis max_out_of_orderness);

struct PartitionTime {
    core::TopicPartition tp;
    core::Millis max = core::kNoTime;  // largest event time read from it, kNoTime if none
    bool unread = false;               // the broker holds records not read yet
    bool idle = false;                 // README "Time and the watermark": holds nothing back
};

struct Alignment {
    std::set<core::TopicPartition> paused;  // to stop fetching (or keep stopped)
    core::Millis floor = core::kNoTime;     // the event time of the slowest partition read
};

// Partitions with records left to read and not idle compete: the slowest of them (smallest max)
// sets the floor. One ahead of the floor by more than `span` is paused; a paused one is resumed
// once it is no more than span / 2 ahead (so that it does not flap). Partitions that are idle,
// caught up or have not delivered a record yet are never paused and never hold the others: a
// partition that cannot be read cannot make the others wait. `drain` (over the memory limit):
// only the slowest partitions are read (span 0), so that the watermark moves and windows close.
// The slowest partition is never paused, so consumption always goes on somewhere.
Alignment align(const std::vector<PartitionTime>& parts,
                const std::set<core::TopicPartition>& paused_before, core::Millis span, bool drain);

// What the worker does with its window state against stoatflow.worker_memory_limit (README
// "Aligned consumption"), decided on the engines' bytes (`used`) and the limit (<= 0: none):
// - read: as usual (partitions aligned by the span);
// - drain: read only the slowest partitions (align(..., drain = true)), so that the watermark
//   moves and windows close before the limit is reached. Chosen past kDrainFrom of the limit
//   when draining would pause some partition (`drain_pauses`: a partition is ahead of the
//   slowest one), kept while the state is above kDrainUntil of the limit (no flapping);
// - stop: past the limit, whatever the partitions: commit and consume nothing until the limit
//   or the aggregations change. The limit is a bound, not a point to drain from.
enum class MemoryAction { read, drain, stop };
inline constexpr double kDrainFrom = 0.75;
inline constexpr double kDrainUntil = 0.5;
MemoryAction memory_action(std::int64_t used, std::int64_t limit, bool draining, bool drain_pauses);

}  // namespace stoatflow::flow
