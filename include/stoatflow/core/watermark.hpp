// The per-source watermark of README "Time and the watermark": the minimum over partitions holding
// data of their largest event time, minus max out-of-orderness; monotonic; idle partitions (after
// idle_timeout of wall clock) stop holding it back. Serializable for commits. One watermark over
// every partition of every topic of the source (README "Expressions and PostgreSQL aggregates"):
// partitions are keyed by TopicPartition::id().
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/core/topic_partition.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace stoatflow::core {

class Watermark {
public:
    // idle_timeout ≤ 0: never idle.
    explicit Watermark(Millis max_out_of_orderness, Millis idle_timeout = 0);

    // A partition is assigned. holds_data: it had records to consume when consumption
    // started (or it has a restored position with data behind it). A partition holding
    // data holds W back until its first record; one without data does not.
    void assign(PartitionId partition, bool holds_data);
    void revoke(PartitionId partition);

    // A record from `partition` at event time t, seen at wall time `now`. Returns W
    // after the update (the value the record is judged against).
    Millis observe(PartitionId partition, Millis t, Millis now = 0);

    // The broker reports unread records on a partition that has never delivered one: it
    // holds W back again until its first record arrives.
    void data_pending(PartitionId partition);

    // The consumer reached the end of `partition` (caught up) at wall time `now`.
    void caught_up(PartitionId partition, Millis now);
    // Wall clock tick: partitions caught up and silent for idle_timeout stop holding W.
    // When all are idle, W follows the newest record of any partition.
    Millis tick(Millis now);

    Millis current() const { return w_; }
    Millis max_out_of_orderness() const { return max_ooo_; }
    // Largest event time seen from a partition, kNoTime if none.
    Millis partition_max(PartitionId partition) const;
    bool is_idle(PartitionId partition) const;

    // Persisted with the offsets; restore() reinstates W and every partition's max.
    std::string serialize() const;
    void restore(const std::string& blob);

private:
    struct Partition {
        Millis max = kNoTime;
        bool holds_data = false;  // waiting for its first record
        bool caught_up = false;
        bool idle = false;
        Millis last_activity = 0;  // wall clock
    };
    void recompute();

    Millis max_ooo_;
    Millis idle_timeout_;
    Millis w_ = kNoTime;
    std::map<PartitionId, Partition> parts_;
    // The smallest max over the partitions counted by the last recompute (none holding data,
    // not idle), when it counted any: a record of a partition above it cannot move W.
    bool slowest_known_ = false;
    Millis slowest_ = kNoTime;
};

}  // namespace stoatflow::core
