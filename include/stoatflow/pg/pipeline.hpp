// One source's pipeline inside PostgreSQL: decode → watermark → every aggregation's window
// engine (pure C++, per record), and the commit cycle that writes state, sink rows, dead
// letters and progress in the current transaction (SPI, per commit).
#pragma once

#include "stoatflow/core/watermark.hpp"
#include "stoatflow/core/windowed_aggregation.hpp"
#include "stoatflow/kafka/json_decoder.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stoatflow/pg/catalog.hpp"
#include "stoatflow/pg/worker_policy.hpp"

namespace stoatflow::pg {

struct DeadLetter {
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::string reason;
    std::string detail;
    std::string payload;  // first bytes, made storable as text
};

// Milliseconds since the epoch ↔ PostgreSQL timestamptz.
Datum millis_to_timestamptz(core::Millis ms);

// A segment table of one aggregation, as registered in stoatflow.segment.
struct Segment {
    core::Millis start = 0;
    core::Millis span = 0;
    std::string relname;
    Oid relid = InvalidOid;  // looked up when first written, if not recorded
};

// Everything one commit makes durable, taken from the pipeline at one instant (pure C++
// values: the pipeline may go on consuming while a snapshot is written).
struct CommitSnapshot {
    std::int64_t seq = 0;
    std::int64_t records = 0;  // consumed since the previous snapshot
    core::Millis now = 0;
    core::Millis watermark = core::kNoTime;
    std::string watermark_state;
    core::Millis w_moved_at = 0;
    std::map<std::int32_t, std::int64_t> next_offsets;
    std::map<std::int32_t, std::int64_t> skipped;  // offsets skipped per partition (skip_offsets)
    std::vector<DeadLetter> dead;
    struct Aggregation {
        core::CommitOutput out;
        core::AggregationStats stats;
        std::int64_t open_windows = 0;
        std::int64_t keys_with_open_windows = 0;
    };
    std::vector<Aggregation> aggs;  // in the pipeline's aggregation order
};

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

class SourcePipeline {
public:
    SourcePipeline(SourceDef source, std::vector<AggregationDef> aggregations);

    // Reads committed offsets, the watermark and every aggregation's live windows.
    void restore();

    // The per-record path: no PostgreSQL call in here. Records are decoded and judged
    // against the watermark at once, then run through the engines in batches (drain(),
    // also called by commit()).
    void process(std::int32_t partition, std::int64_t offset, const char* payload, std::size_t len,
                 const char* key, std::size_t key_len, core::Millis kafka_ts, core::Millis now);

    void drain();

    // Wall clock tick: idle partitions may release the watermark.
    void tick(core::Millis now);

    // The consumer reached the end of a partition at `offset`: nothing before it is left to
    // read (gaps from compaction or transaction markers included). Returns true if the
    // committed position moves.
    bool note_end_of_partition(std::int32_t partition, std::int64_t offset);

    // Offsets [from, to) of a partition can no longer be read (the topic's retention deleted
    // them before the source read them): the position moves to `to`, and the next commit
    // records the loss with it, as a dead letter 'offsets_skipped' and in
    // stoatflow.partition_offset.offsets_skipped.
    void skip_offsets(std::int32_t partition, std::int64_t from, std::int64_t to);
    bool skipped_pending() const { return !skipped_.empty(); }

    // Writes everything since the last commit into the current transaction:
    // write(take_snapshot(now)).
    void commit(core::Millis now);
    // The two halves of commit(): taking the snapshot is quick and touches no PostgreSQL;
    // writing it runs SQL and touches none of what process() uses, so the two may overlap.
    CommitSnapshot take_snapshot(core::Millis now);
    CommitCounts write(const CommitSnapshot& snap);

    const SourceDef& source() const { return source_; }
    core::Watermark& watermark() { return watermark_; }
    // Next offset to consume per partition (what the commit makes durable).
    const std::map<std::int32_t, std::int64_t>& next_offsets() const { return next_offsets_; }
    std::int64_t records_since_commit() const { return records_since_commit_; }
    // Windows changed since the last commit, over all aggregations.
    std::size_t pending_changes() const {
        std::size_t n = 0;
        for (const auto& a : aggs_) n += a.engine->pending_changes();
        return n;
    }
    // Segment tables the next commit will write, at least (over all aggregations).
    std::size_t pending_segments() const {
        std::size_t n = 0;
        for (const auto& a : aggs_) n += a.engine->pending_segments();
        return n;
    }
    // An aggregation owes its sink windows and may try again now: worth a commit of its own.
    bool sink_retry_due(core::Millis now) const {
        for (const auto& a : aggs_)
            if (a.sink.due(now)) return true;
        return false;
    }
    // Per aggregation: name and the memory its engine holds (estimated), for the memory limit.
    std::vector<std::pair<std::string, std::size_t>> aggregation_memory() const;
    std::int64_t dead_letters_since_commit() const { return static_cast<std::int64_t>(dead_.size()); }

    struct Aggregation {
        AggregationDef def;
        std::unique_ptr<core::WindowedAggregation> engine;
        std::vector<int> value_index;  // per aggregate: index into the decoder's values, -1: none
        std::vector<core::Value> values;  // per staged record, per aggregate
        std::vector<core::WindowedAggregation::RecordRef> refs;
        std::map<core::Millis, Segment> segments;
        core::AggregationStats base;   // counters committed before this pipeline started
        std::int64_t state_rows = 0, state_bytes = 0;
        core::Millis freshness_lag = -1;  // of the last commit that closed windows
        // The sink failed: what it is owed waits in the outbox, retried with backoff.
        SinkRetry sink;
    };

private:
    void write_aggregation(Aggregation& agg, const CommitSnapshot::Aggregation& a, const CommitSnapshot& snap,
                           CommitCounts& counts);
    void write_state(Aggregation& agg, const std::vector<core::WindowStateRow>& rows, std::int64_t seq);
    void write_sink(Aggregation& agg, const core::CommitOutput& out, core::Millis now);
    void expire_segments(Aggregation& agg, core::Millis frontier);
    Segment& segment_for(Aggregation& agg, core::Millis start);

    SourceDef source_;
    std::vector<Aggregation> aggs_;
    kafka::JsonDecoder decoder_;
    struct Staged {
        kafka::Decoded record;
        core::Millis watermark = core::kNoTime;
    };
    static constexpr std::size_t kStageRecords = 512;
    std::vector<Staged> staged_records_ = std::vector<Staged>(kStageRecords);
    std::size_t staged_ = 0;
    core::Watermark watermark_;
    std::map<std::int32_t, std::int64_t> next_offsets_;
    std::map<std::int32_t, std::int64_t> skipped_;
    std::vector<DeadLetter> dead_;
    std::int64_t commit_seq_ = 0;
    std::int64_t records_since_commit_ = 0;
    // Wall time the watermark first moved since the last commit: windows it closed are
    // emitted at the next commit, so their freshness lag is commit time minus this.
    core::Millis w_moved_at_ = 0;
    core::Millis w_at_commit_ = core::kNoTime;
};

// Reads the newest version of every window of an aggregation (tombstones included) from
// its live segment tables, calling f(row) for each.
void read_window_rows(const AggregationDef& def, const core::AggLayout& layout,
                      const std::vector<Segment>& segments,
                      const std::function<void(const core::WindowStateRow&)>& f);
std::vector<Segment> load_segments(std::int32_t aggregation_id);
// The watermark of the aggregation's source as last committed (kNoTime before the first commit).
core::Millis committed_watermark(std::int32_t aggregation_id);

}  // namespace stoatflow::pg
