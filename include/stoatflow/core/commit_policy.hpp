// When a source's worker commits: every commit interval, or sooner when one commit would
// grow too large (records consumed, windows changed). While the worker is far behind its
// topic it commits less often (the catch-up interval): each commit rewrites every window
// changed since the last one, and during a backlog those rows would be superseded within
// seconds. Pure: the worker feeds it clocks and counters, tests feed it numbers.
#pragma once

#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"

#include <cstddef>
#include <cstdint>

namespace stoatflow::core {

struct CommitPolicy {
    Millis interval = 1000;           // stoatflow.commit_interval
    Millis catchup_interval = 10000;  // stoatflow.catchup_commit_interval (off unless > interval)

    // Records waiting in the topic from which the worker counts as catching up.
    static constexpr std::int64_t kCatchupLagRecords = 50000;
    // Bounds on one commit: its transaction size, and the memory of its output.
    static constexpr std::int64_t kMaxRecords = 500000;
    static constexpr std::int64_t kMaxRecordsCatchingUp = 4000000;  // no memory once windowed
    static constexpr std::size_t kMaxChangedWindows = 200000;
    // Catching up, a larger output (~0.4 KB per changed window while it is written) buys
    // fewer rewrites of windows that are still open.
    static constexpr std::size_t kMaxChangedWindowsCatchingUp = 500000;
    // Every segment table a commit writes stays locked until it commits, and PostgreSQL's
    // shared lock table is sized max_locks_per_transaction × connections (a few thousand):
    // a backlog far ahead of the watermark must not make one commit lock thousands of them.
    static constexpr std::size_t kMaxSegmentsPerCommit = 256;

    bool catching_up(std::int64_t waiting) const {
        return waiting >= kCatchupLagRecords && catchup_interval > interval;
    }

    // since_commit: wall time since the last commit; records: consumed since then;
    // changed: windows changed since then; waiting: records in the topic not consumed yet.
    // segments: segment tables the changed windows live in (over all aggregations).
    bool due(Millis since_commit, std::int64_t records, std::size_t changed, std::int64_t waiting,
             std::size_t segments = 0) const {
        const bool behind = catching_up(waiting);
        return since_commit >= (behind ? catchup_interval : interval) ||
               segments >= kMaxSegmentsPerCommit ||
               records >= (behind ? kMaxRecordsCatchingUp : kMaxRecords) ||
               changed >= (behind ? kMaxChangedWindowsCatchingUp : kMaxChangedWindows);
    }
};

}  // namespace stoatflow::core
