// The PostgreSQL side of one source: restores a RecordPath from the committed state, and
// writes its snapshots — window state (SegmentStore), sink rows (SinkWriter), dead letters,
// progress and offsets — in the current transaction. The worker's consume thread never
// touches this object, only path().
#pragma once

#include "stoatflow/flow/record_path.hpp"
#include "stoatflow/flow/user_code_ledger.hpp"

#include <cstdint>
#include <memory>
#include <map>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/worker/exec_set.hpp"
#include "stoatflow/pg/executor/executor.hpp"
#include "stoatflow/pg/catalog/row_type.hpp"
#include "stoatflow/pg/catalog/segment_store.hpp"
#include "stoatflow/pg/sink/sink_writer.hpp"

namespace stoatflow::pg {

// What one commit wrote (for stoatflow.log_commits).
struct CommitCounts {
    std::int64_t records = 0;
    std::int64_t state_rows = 0;
    std::int64_t state_bytes = 0;
    std::int64_t sink_rows = 0;
    std::int64_t sink_deletes = 0;
    std::int64_t dead_letters = 0;
    double state_ms = 0;  // writing the state rows (segment tables created on the way included)
    double sink_ms = 0;   // writing the sink rows and deletes
};

// Thrown by the executor when an aggregation's fold failed: the state of that aggregation cannot
// be trusted, so the worker rebuilds its pipeline from the committed state (the failing record is
// then that aggregation's dead letter, see UserCodeLedger). Not a failure of the source.
class AggregationRebuild : public Error {
public:
    explicit AggregationRebuild(const std::string& what) : Error(sqlstate::kInternalError, what) {}
};

// Thrown by the executor when the engines' memory passes stoatflow.worker_memory_limit in the
// middle of a batch (PostgreSQL aggregate states can grow by a lot per record): the worker drops
// what it has not committed and stops consuming until the limit or the aggregations change.
class MemoryLimitExceeded : public Error {
public:
    explicit MemoryLimitExceeded(const std::string& aggregation)
        : Error(sqlstate::kProgramLimitExceeded, "aggregation \"" + aggregation + "\""),
          aggregation_(aggregation) {}
    // The aggregation that holds the most state.
    const std::string& aggregation_name() const { return aggregation_; }

private:
    std::string aggregation_;
};

// The record path's configuration from the catalog's definitions (row_type: the source's, when
// it has columns; exec: its executors, if any).
flow::RecordPathConfig record_path_config(const SourceDef& source,
                                          const std::vector<AggregationDef>& aggregations,
                                          const RowType* row_type = nullptr,
                                          const ExecSet* exec = nullptr);

// One aggregation as the record path runs it.
flow::RecordPathConfig::Aggregation
path_aggregation(const AggregationDef& a, std::shared_ptr<core::ExternalAggregates> external,
                 int upstream);

class CommitCycle {
public:
    // In a transaction: a source with columns resolves its row type here.
    CommitCycle(SourceDef source, std::vector<AggregationDef> aggregations,
                flow::UserCodeLedger* ledger = nullptr);
    ~CommitCycle();

    // With columns, in a transaction: converts the record the fast lane left to PostgreSQL
    // (path().blocked()) with PostgreSQL, as the source's owner, and resumes the path.
    void resolve_blocked();
    // Executor mode, in a transaction: converts and evaluates the records the consume thread
    // extracted (path().exec_waiting()) and feeds them to the path, in order (exec_run.cpp).
    void run_executor();
    bool executor() const { return path_.executor(); }

    // Reads committed offsets, the watermark and every aggregation's live windows (SPI connected).
    void restore();

    // In a transaction, once a backfill joined the source (README "Backfill and start_from"):
    // its aggregation joins this running cycle, restored from its state tables as the backfill
    // committed them; the others' engines, positions and watermark stay, and the commit sequence
    // counts on past the backfill's. Right after a commit with nothing consumed since (the
    // hand-over's positions). False (nothing changed) when the path cannot take it
    // (flow::RecordPath::adopt_aggregation: executor mode, an executor aggregation, a roll-up, a
    // field the lane does not read): the worker then builds its pipeline anew.
    bool adopt(AggregationDef def);

    // A backfill (README "Backfill and start_from"): this cycle runs the one aggregation
    // `aggregation_id`; its watermark and positions are its own (stoatflow.backfill,
    // stoatflow.backfill_offset), restored and written instead of the source's; dead letters and
    // the source's progress are the source worker's and not written. Set before restore().
    void set_backfill(std::int32_t aggregation_id) { backfill_ = aggregation_id; }
    std::int32_t backfill() const { return backfill_; }
    // The next write joins the aggregation to its source: the backfill row goes (with its
    // positions), in the same transaction as its last state.
    void set_joining(bool joining) { joining_ = joining; }
    bool joining() const { return joining_; }

    // Writes everything since the last commit into the current transaction:
    // write(take_snapshot(now)).
    void commit(core::Millis now);
    // path().take_snapshot, each executor aggregation's states serialized in its owner's sandbox
    // (in a transaction when the source runs any).
    flow::CommitSnapshot take_snapshot(core::Millis now);
    flow::UserCodeLedger& ledger() { return *ledger_; }
    // stoatflow.worker_memory_limit in bytes (0: none), checked per record while folding, with
    // `reserve` held back for the next commit (the serialized copies of every changed window,
    // in the snapshot and in the rows written from it, exist beside the live states while a
    // commit is written).
    void set_memory_limit(std::int64_t bytes, std::int64_t reserve) {
        memory_limit_ = bytes;
        memory_reserve_ = reserve;
    }
    // Writes a snapshot: runs SQL, touches nothing of the record path but its fixed layouts, so
    // the consume thread may go on with path() meanwhile.
    CommitCounts write(const flow::CommitSnapshot& snap);

    flow::RecordPath& path() { return path_; }
    const SourceDef& source() const { return source_; }
    // An aggregation owes its sink windows and may try again now: worth a commit of its own.
    bool sink_retry_due(core::Millis now) const {
        for (const auto& a : aggs_)
            if (a.sink.retry_due(now)) return true;
        return false;
    }

private:
    struct Aggregation {
        AggregationDef def;
        SegmentStore segments;
        SinkWriter sink;
        core::AggregationStats base;  // counters committed before this cycle started
        std::int64_t state_rows = 0, state_bytes = 0;
        core::Millis freshness_lag = -1;  // of the last commit that closed windows
    };
    void restore_aggregation(std::size_t i);
    void note_value_columns(const AggregationDef& a);
    void write_aggregation(std::size_t i, const flow::CommitSnapshot& snap, CommitCounts& counts);
    [[noreturn]] void memory_exceeded() const;  // throws MemoryLimitExceeded naming the largest
    void write_dead_letters(const flow::CommitSnapshot& snap);
    void write_progress(const flow::CommitSnapshot& snap);
    // README "Roll-ups": a roll-up that never committed folds its upstream sink's final rows
    // whose roll-up window is still open (read as the roll-up's owner; a failure is a WARNING).
    void seed_rollup(std::size_t i);

    // The row type and the memory context its input functions live in (row_resolve.cpp).
    struct Row {
        MemoryContext cxt = nullptr;
        std::optional<RowType> rt;
        const RowType& type() const { return *rt; }
        Row() = default;
        Row(const Row&) = delete;
        Row& operator=(const Row&) = delete;
        ~Row();
    };
    static std::unique_ptr<Row> make_row(const SourceDef& source);
    static std::unique_ptr<ExecSet> make_exec(const SourceDef& source,
                                              const std::vector<AggregationDef>& aggregations,
                                              const Row* row);
    // A converted row's key (fast-path aggregations), event time and fast-path values.
    void decode_row(const Datum* values, const bool* nulls, bool want_key,
                    flow::SlowRecord& rec) const;

    SourceDef source_;
    std::unique_ptr<Row> row_;
    std::unique_ptr<ExecSet> exec_;  // before path_: its engines hold the executors' states
    flow::RecordPath path_;
    std::string key_column_, time_column_;  // with columns
    std::vector<int> value_columns_;        // columns an aggregate reads
    std::vector<Aggregation> aggs_;
    flow::UserCodeLedger own_ledger_;  // when the caller keeps none (process_records)
    flow::UserCodeLedger* ledger_;
    std::int64_t memory_limit_ = 0, memory_reserve_ = 0;
    std::int32_t backfill_ = 0;  // the aggregation backfilled; 0: the source's cycle
    bool joining_ = false;
    void write_backfill_progress(const flow::CommitSnapshot& snap);
};

// The watermark of the aggregation as last committed: its source's, or its own while it
// backfills (kNoTime before the first commit).
core::Millis committed_watermark(std::int32_t aggregation_id);

}  // namespace stoatflow::pg
