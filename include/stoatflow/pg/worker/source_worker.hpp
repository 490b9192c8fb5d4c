// One source's background worker: start (restore, seek) → [step: poll → process → maybe
// commit]* ; SIGTERM: commit what was consumed, exit. Any failure: record it, back off, rebuild
// from the committed state. src/pg/worker/README.md draws the states; source_worker.cpp holds the
// lifecycle, consume_step.cpp the step and the commit cycle.
#pragma once

#include "stoatflow/kafka/consumer.hpp"
#include "stoatflow/flow/alignment.hpp"
#include "stoatflow/flow/record_path.hpp"
#include "stoatflow/flow/progress_meter.hpp"
#include "stoatflow/flow/worker_policy.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "stoatflow/flow/clock.hpp"
#include "stoatflow/pg/worker/commit_cycle.hpp"

namespace stoatflow::pg {

// Bytes as the worker's messages show them: whole megabytes, rounded.
std::string megabytes(std::int64_t bytes);

class SourceWorker {
public:
    // backfill: an aggregation id to run the source's worker as that aggregation's backfill
    // worker (README "Backfill and start_from"; src/pg/worker/README.md "Backfill"); 0: the
    // source worker.
    explicit SourceWorker(std::int32_t source_id, const flow::Clock& clock,
                          std::int32_t backfill = 0);
    void run();

private:
    enum class Start { Started, NoAggregations, Dropped };
    Start start();
    void fail(const std::string& what);
    void memory_stop(const MemoryLimitExceeded& e);
    void show_memory_stop(const std::string& msg, const std::string& aggregation);
    bool memory_stop_over();
    void drop_pipeline();
    void start_over(const std::string& why);
    bool over_memory_limit(core::Millis now);
    // README "Aligned consumption" (align_step.cpp): which partitions wait, and applying it.
    flow::Alignment alignment(bool drain) const;
    void show_drain(bool drain, std::int64_t used, std::int64_t limit, core::Millis now);
    void align_consumption();
    bool partitions_added(core::Millis now);
    void set_status(const std::string& status, const std::string& error);
    void show_status(core::Millis now);

    // consume_step.cpp
    void step();
    bool consume(flow::RecordPath& path, int timeout_ms, core::Millis now);
    bool consume_while_writing(flow::RecordPath& path);
    void progress_end(core::TopicPartition tp, std::int64_t end);
    void out_of_range(core::Millis now);
    void note_skip(flow::RecordPath& path, core::TopicPartition tp, std::int64_t from,
                   std::int64_t to);
    std::string describe(core::TopicPartition tp) const;
    // README "Progress": the numbers the views show, about once a second (progress.cpp).
    void claim_progress();
    void meter_progress(flow::RecordPath& path, core::Millis now);
    void quiet_progress();
    void forget_progress();
    // False when nothing was written because the source, the backfill's row or the
    // aggregations changed meanwhile (then the worker starts over, or leaves).
    bool commit(bool final);
    void log_commit(std::int64_t seq, const CommitCounts& c, double ms);
    using PartitionStatus = std::vector<std::tuple<core::TopicPartition, std::int64_t, bool>>;
    PartitionStatus partition_status();
    void write_partition_status(const PartitionStatus& status);
    // The aggregations' ids and alterable parameters; lock: FOR SHARE (in a commit).
    std::string aggregation_signature(bool lock = false);
    bool source_exists();
    bool source_paused();
    // backfill.cpp
    bool answer_holds();
    bool source_held();
    std::int64_t backfill_start(const SourceDef& src, kafka::Consumer& consumer,
                                core::TopicPartition tp, std::int64_t lo, std::int64_t hi);
    void read_limits();
    bool backfill_step(core::Millis now);
    bool backfill_admits(core::TopicPartition tp, std::int64_t offset);
    std::int64_t position(core::TopicPartition tp);
    std::int64_t limit_of(core::TopicPartition tp) const;
    bool reached(core::TopicPartition tp);
    bool backfill_row_locked();
    bool hold_pending();
    void begin_hold();
    bool hold_over();
    bool hold_expired();
    bool adopt_joined(const std::string& signature, bool* adopted);

    std::int32_t source_id_;
    // A backfill worker's (backfill_ != 0): its aggregation, the source's committed positions it
    // reads up to, partitions stopped at them, the next offset each may hand to the path, and
    // where the hand-over stands.
    std::int32_t backfill_ = 0;
    std::string backfill_name_, backfill_from_;
    std::map<core::TopicPartition, std::int64_t> limit_, next_admitted_;
    std::map<core::TopicPartition, std::int64_t> parked_;  // → the limit it was parked at
    std::set<core::TopicPartition> to_park_;
    core::Millis holds_checked_at_ = 0;  // a source worker: when it last looked for a hold
    bool hold_requested_ = false, held_ = false, joined_ = false;
    // A source worker holding for a backfill with its pipeline kept (hold_over), since when; and
    // a commit about to answer a hold (it consumes nothing while it is written).
    bool holding_ = false, hold_expected_ = false;
    core::Millis holding_since_ = 0;
    core::Millis limits_read_at_ = 0;
    const flow::Clock& clock_;
    std::unique_ptr<CommitCycle> pipeline_;
    std::unique_ptr<kafka::Consumer> consumer_;
    std::vector<std::string> topics_;
    std::vector<std::size_t> partitions_;  // per topic: how many were assigned
    std::map<core::TopicPartition, std::int64_t> high_;
    std::map<core::TopicPartition, bool> idle_shown_;
    std::string signature_;
    flow::StatusRule status_rule_;
    flow::StatusBoard status_board_;
    flow::CommitTimer commit_timer_;
    core::Millis committed_w_ = core::kNoTime;
    bool offsets_moved_ = false;
    std::map<core::TopicPartition, core::Millis> out_of_range_;  // → when to look again
    bool status_moved_ = false;
    bool eof_seen_ = false;
    bool memory_blocked_ = false;  // over stoatflow.worker_memory_limit: not consuming
    // Over the limit, but partitions far apart in event time: only the slowest are read.
    bool memory_draining_ = false;
    std::size_t aligned_shown_ = 0;  // partitions paused as last logged
    core::Millis aligned_logged_at_ = 0;
    core::Millis drain_logged_at_ = 0;
    std::int64_t memory_stopped_at_ = 0;
    std::int64_t snapshot_bytes_ = 0;  // window state the last commit serialized  // memory_stop:
                                       // the limit (bytes) then; 0: not stopped
    core::Millis memory_checked_at_ = 0;
    core::Millis partitions_checked_at_ = 0;
    // What the aggregations' code did wrong: kept across rebuilds of the pipeline.
    flow::UserCodeLedger ledger_;
    flow::ProgressMeter meter_;
    std::map<core::TopicPartition, int> board_entries_;  // → its entry of the progress board
    bool progress_quiet_ = false;  // the entries say 0 records/s (paused, held, idle)
    bool board_full_logged_ = false;
};

}  // namespace stoatflow::pg
