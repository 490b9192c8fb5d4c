// A partition of one of a source's topics (README "Expressions and PostgreSQL aggregates": a source
// may read several topics). The topic is its ordinal in the source's topic list, which never
// changes once the source exists. The watermark keys its partitions by id(): topic 0's ids are the
// bare partition numbers, so a watermark state committed by 0.1 (one topic) restores unchanged.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstdint>
#include <tuple>

namespace stoatflow::core {

// The watermark's key for a partition: topic ordinal << 32 | partition.
using PartitionId = std::int64_t;

struct TopicPartition {
    std::int32_t topic = 0;  // ordinal in the source's topic list
    std::int32_t partition = 0;

    PartitionId id() const {
        return (static_cast<PartitionId>(topic) << 32) |
               static_cast<PartitionId>(static_cast<std::uint32_t>(partition));
    }
    static TopicPartition from_id(PartitionId id) {
        return {static_cast<std::int32_t>(id >> 32),
                static_cast<std::int32_t>(static_cast<std::uint32_t>(id & 0xffffffffLL))};
    }
    friend bool operator<(const TopicPartition& a, const TopicPartition& b) {
        return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
    }
    friend bool operator==(const TopicPartition& a, const TopicPartition& b) {
        return a.topic == b.topic && a.partition == b.partition;
    }
    friend bool operator!=(const TopicPartition& a, const TopicPartition& b) { return !(a == b); }
};

}  // namespace stoatflow::core
