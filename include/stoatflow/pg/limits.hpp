// Named limits of the PostgreSQL layer: one place for every bound the worker and the SQL
// functions apply (pgvector-style). Settings users can change live in settings.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace stoatflow::pg {

// lock_timeout while writing a sink as its owner: a lock someone holds on the sink fails that
// aggregation's write (retried with backoff) instead of stalling the whole source.
constexpr const char* kOwnerLockTimeout = "2s";
// The settings that decide values' text forms, pinned to PostgreSQL's defaults wherever an
// owner's code runs (run_as_owner): keys are stored as text and read back anywhere.
inline constexpr std::pair<const char*, const char*> kOwnerTextSettings[] = {
    {"DateStyle", "ISO, MDY"}, {"IntervalStyle", "postgres"}, {"extra_float_digits", "1"}};

// After a cancel the worker waits this long before it starts over (a drop it made way for commits).
constexpr long kCancelRestartMs = 200;

// Names PostgreSQL would truncate: core::kMaxNameBytes (stoatflow/core/names.hpp).

// Folding PostgreSQL aggregate states, the worker gives free heap pages back to the kernel (at
// most this often) when its private memory exceeds the accounted state by a quarter plus this.
constexpr long kTrimEveryMs = 20;
constexpr std::size_t kTrimSlackBytes = 8u << 20;
// A commit builds and appends the rows of a segment table this many at a time.
constexpr std::size_t kStateWriteChunkRows = 1000;
// Workers allocate blocks from this size up with pages of their own (mallopt M_MMAP_THRESHOLD);
// smaller ones come from the heap, whose free pages give_back_memory returns (worker_loop.cpp).
constexpr std::size_t kMmapThresholdBytes = 64u << 20;

// How often the worker measures its memory against stoatflow.worker_memory_limit.
constexpr std::int64_t kMemoryCheckIntervalMs = 250;

// Broker calls block the worker (SIGTERM waits for them): keep each one short and let the
// retry loop with backoff do the waiting.
constexpr int kKafkaTimeoutMs = 2000;
// How often a running worker asks the broker whether its topic has gained partitions.
constexpr std::int64_t kPartitionCheckMs = 10000;
// A partition whose position fell out of the log is re-assigned after this when the broker fails.
constexpr std::int64_t kOutOfRangeRetryMs = 1000;

// The consume step: one poll waits at most this long for records, takes at most this many,
// and waits less while the main thread writes (so the step ends soon after the write).
constexpr int kPollTimeoutMs = 100;
constexpr int kPollWhileWritingMs = 20;
constexpr std::size_t kPollBatch = 10000;
// Executor mode: records the consume thread extracts ahead of the main thread, at most (while
// a commit is written; the raw rows of each are kept until evaluated).
constexpr std::size_t kMaxExecWaiting = 200000;

// The launcher: with no background worker slot free it tries again this often; it lists the
// sources this often (a committed declaration wakes it sooner).
constexpr std::int64_t kWorkerSlotRetryMs = 10000;
constexpr long kLauncherLookMs = 1000;
// A source worker that ran this long is healthy again: its restart backoff starts over.
constexpr std::int64_t kWorkerHealthyMs = 60000;
// Restart backoff after the n-th exit in a row: 500 ms << n, up to this.
constexpr std::int64_t kWorkerRestartMaxMs = 30000;
constexpr int kWorkerRestartMaxShift = 6;

// A source without aggregations (or a worker stopped at its memory limit) looks again this often.
constexpr long kIdleCheckMs = 200;
// A backfill (README "Backfill and start_from"): how often it reads the source's committed
// positions (and a source worker looks for a backfill asking it to hold), and how many records
// behind them it may be when it asks the source's worker to hold: the hold lasts that last
// stretch only, so the source's other aggregations stay fresh.
constexpr long kBackfillLookMs = 200;
constexpr std::int64_t kBackfillHoldLag = 5000;
// A source worker holding for a backfill looks this often whether it joined; a hold not
// followed by the join within kBackfillHoldMaxMs (the backfill worker died or stalls) is
// released, and the backfill asks again.
constexpr long kHoldLookMs = 50;
constexpr long kBackfillHoldMaxMs = 10000;
// A failed worker retries after 1 s, doubling up to 30 s.
constexpr std::int64_t kFailureRetryFirstMs = 1000;
constexpr std::int64_t kFailureRetryMaxMs = 30000;

// Sinks and state tables are written in heap multi-inserts of this many rows.
constexpr int kBulkInsertBatchRows = 1000;

// How much of a dead letter's detail the catalog keeps.
constexpr std::size_t kDeadLetterDetailBytes = 512;

// Longer exception texts are cut (at a UTF-8 character boundary) before being reported.
constexpr std::size_t kMaxReportedTextBytes = 64 * 1024;

}  // namespace stoatflow::pg
