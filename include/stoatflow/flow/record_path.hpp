// A source's record path: read → judge → watermark → every aggregation's window engine, with the
// offsets, staging and dead letters that go with them. RecordPath is the spine; one lane per way
// a record is read feeds it: JSON paths (json_lane.hpp), the columns' fast lane
// (columns_lane.hpp), PostgreSQL's executor (exec_lane.hpp); the record judge
// (record_judge.hpp) makes every dead letter. Pure C++, compiled without PostgreSQL's headers
// (src/README.md), so the consume thread — which touches only this and the consumer — cannot
// reach PostgreSQL. take_snapshot() hands the writing side (commit_cycle.hpp) plain values.
#pragma once

#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/topic_partition.hpp"
#include "stoatflow/core/watermark.hpp"
#include "stoatflow/core/windowed_aggregation.hpp"
#include "stoatflow/format/fast_convert.hpp"
#include "stoatflow/format/json_decoder.hpp"
#include "stoatflow/format/raw_row.hpp"
#include "stoatflow/format/row_decoder.hpp"
#include "stoatflow/format/row_extractor.hpp"
#include "stoatflow/flow/limits.hpp"
#include "stoatflow/flow/record_judge.hpp"
#include "stoatflow/flow/rollup.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stoatflow::flow {

class JsonLane;
class ColumnsLane;
class ExecLane;

// Everything one commit makes durable, taken from the record path at one instant (plain
// values: the path goes on consuming while a snapshot is written).
struct CommitSnapshot {
    std::int64_t seq = 0;
    std::int64_t records = 0;  // consumed since the previous snapshot
    core::Millis now = 0;
    core::Millis watermark = core::kNoTime;
    std::string watermark_state;
    core::Millis w_moved_at = 0;
    std::map<core::TopicPartition, std::int64_t> next_offsets;
    std::map<core::TopicPartition, std::int64_t> skipped;  // offsets skipped (skip_offsets)
    std::vector<DeadLetter> dead;
    struct Aggregation {
        core::CommitOutput out;
        core::AggregationStats stats;
        std::int64_t open_windows = 0;
        std::int64_t keys_with_open_windows = 0;
        std::int64_t memory_bytes = 0;  // the engine's heap (WindowedAggregation::memory_bytes)
        // The watermark it flushed with: the source's, or a roll-up's own (README "Roll-ups").
        core::Millis watermark = core::kNoTime;
    };
    std::vector<Aggregation> aggs;  // in the path's aggregation order
};

// With `columns` (README "Expressions and PostgreSQL aggregates"): the source's row type as the
// record path reads it. The key, the event time and the aggregates' fields name columns (declared,
// then the six metadata ones).
struct RowPlan {
    std::vector<std::string> names;               // every column
    std::vector<std::vector<std::string>> paths;  // the declared columns' member paths
    format::RecordFormat format;                  // how a message becomes a row (the lanes'
                                                  // decoder: format::make_row_decoder)
    std::vector<format::FastType> fast;           // every column's fast-lane type
    int key_col = -1;
    int time_col = -1;
};

// The decoder of a plan's format for its declared columns (the lanes hold one each).
std::unique_ptr<format::RowDecoder> row_decoder(const RowPlan& plan);

// A record the fast lane left to PostgreSQL, as the main thread converted it.
struct SlowRecord {
    DeadReason reason = DeadReason::None;  // a dead letter (bad_value, value_out_of_range) ...
    std::string detail;                    // ... with this detail
    std::optional<std::string> key;        // nullopt: NULL
    std::optional<core::Millis> time;      // nullopt: NULL
    std::vector<core::Value> values;       // per column; Missing for NULL, unread and bad columns
    // Values that converted but no aggregate can use (value_out_of_range; index: the column):
    // dead letters of the aggregations reading them only (README "Views and tables",
    // dead_letters); the record is one of the source when every aggregation reads one.
    std::vector<format::BadValue> bad;
};

// What a record path is built from (the catalog's source and aggregations, as plain values).
struct RecordPathConfig {
    // Executor mode (README "Expressions and PostgreSQL aggregates", a source with aggregations
    // PostgreSQL's executor runs): the consume thread only extracts records into raw rows; the main
    // thread converts and evaluates them and feeds each one (RecordPath::exec_*), in order.
    bool executor = false;
    std::vector<std::string> topics;  // the source's topics; a TopicPartition's topic indexes this
    std::optional<RowPlan> row;       // with columns; then aggregates' fields name columns
    format::DecoderConfig decoder;    // value_paths: every field an aggregate reads, once
    // The record judge's limits (RecordJudge): stoatflow.max_key_bytes (0: unlimited) and
    // create_source(future_limit) (core::kNoTime: none).
    std::size_t max_key_bytes = 0;
    core::Millis future_limit = core::kNoTime;
    core::Millis max_out_of_orderness = 0;
    core::Millis idle_timeout = 0;
    struct Aggregation {
        std::string name;
        core::WindowSpec spec;
        std::vector<core::AggSpec> aggregates;
        core::EmitStrategy emit = core::EmitStrategy::OnWindowUpdate;
        core::Millis retention = 0;
        core::Millis segment_interval = 0;  // as stored in the catalog
        // Run by the executor: its records come with exec_feed's folds, its aggregate states
        // are these (nullptr: the built-in fast path only).
        std::shared_ptr<core::ExternalAggregates> external;
        // The emit strategy its committed state was written under (nullopt: `emit`); it differs
        // after alter_aggregation (README "Altering an aggregation").
        std::optional<core::EmitStrategy> committed_emit;
        // A roll-up (README "Roll-ups"): its records are the final windows of aggregation
        // `upstream` (an index below its own, of the built-in fast path), not the source's
        // records. -1: an aggregation of the source.
        int upstream = -1;
    };
    std::vector<Aggregation> aggregations;
};

// Executor mode: one record as the consume thread left it for the main thread.
struct ExecRecord {
    core::TopicPartition tp;
    std::int64_t offset = 0;
    core::Millis now = 0;
    std::size_t row = 0;                   // its raw row in ExecBatch::rows (when reason is empty)
    DeadReason reason = DeadReason::None;  // already a dead letter (it could not be read)
    std::string detail;
    std::string payload;  // for a dead letter's payload
};
struct ExecBatch {
    format::RawRows rows;
    std::vector<ExecRecord> records;
};

// Executor mode: what one record gives one aggregation run by the executor.
struct ExecFold {
    bool fold = false;          // false: not folded, because ...
    bool filtered = false;      // ... the aggregation's filter skipped it (else: a dead letter)
    std::string_view key;       // the key the executor computed
    const void* row = nullptr;  // for the external aggregates' add
};

class RecordPath {
public:
    explicit RecordPath(const RecordPathConfig& config);
    ~RecordPath();
    RecordPath(const RecordPath&) = delete;
    RecordPath& operator=(const RecordPath&) = delete;

    // Restore from the committed state (before the first record): the watermark and commit
    // sequence, each partition's next offset, then every live window per aggregation.
    void restore_progress(const std::string& watermark_state, std::int64_t commit_seq);
    void restore_offset(core::TopicPartition tp, std::int64_t next_offset) {
        next_offsets_[tp] = next_offset;
    }
    void restore_window(std::size_t aggregation, const core::WindowStateRow& row);
    // A backfill joining a running source (README "Backfill and start_from"): one more
    // aggregation, after the commit at the hand-over's positions (so nothing of the others is
    // staged), its windows then restored with restore_window; the others' engines, positions
    // and watermark stay. False (nothing changed) when the path cannot take it as it is: in
    // executor mode, run by the executor, a roll-up, or reading a field the lane does not
    // read; then the path is built anew.
    bool adopt_aggregation(const RecordPathConfig::Aggregation& def);
    // The commit sequence the next snapshot counts on from, raised to `seq` (a joined
    // backfill's commits were numbered past the source's).
    void raise_commit_seq(std::int64_t seq) {
        if (seq > commit_seq_) commit_seq_ = seq;
    }
    // README "Roll-ups": a roll-up that never committed starts from its upstream's sink. One
    // final upstream window (key, window_start, per roll-up aggregate the value it reads) is
    // folded when the roll-up reads it (a tile) and a roll-up window holding it is still open;
    // after restore_progress, before the first record. Returns whether it was folded.
    bool seed_rollup(std::size_t aggregation, const std::string& key, core::Millis start,
                     const std::vector<core::Value>& values);

    // The per-record path. Records are decoded and judged against the watermark at once, then
    // run through the engines in batches (drain(), also called by take_snapshot()).
    // topic_index: the record's topic, as its ordinal in RecordPathConfig::topics (its name is
    // topic_name(topic_index)); partition: its partition in that topic.
    void process(std::int32_t topic_index, std::int32_t partition, std::int64_t offset,
                 const char* payload, std::size_t len, const char* key, std::size_t key_len,
                 core::Millis kafka_ts, core::Millis now,
                 const format::KafkaHeader* headers = nullptr, std::size_t header_count = 0);
    void drain();
    // With columns: whether a message can be decoded now (format::RowDecoder::ready): false
    // while the writer schema its id names is still being fetched. The caller then holds it back,
    // and every message after it, and asks again later (it is no dead letter).
    bool ready(const char* payload, std::size_t len, const char* key, std::size_t key_len);
    // The declared columns' format (nullptr without columns: JSON paths).
    const format::RecordFormat* row_format() const { return plan_ ? &plan_->format : nullptr; }

    // With columns: a record whose key, event time or aggregated values the fast lane left to
    // PostgreSQL blocks the path. It and every record after it wait (in order, not counted,
    // their offsets not committed) until the main thread converted it and called resume().
    bool blocked() const;
    // Records wait for the main thread (blocked, or extracted in executor mode).
    bool waiting_for_main() const { return blocked() || exec_waiting() != 0; }
    // The waiting record as one raw row of the row type.
    const format::RawRows& blocked_row() const;
    void resume(const SlowRecord& record);

    // Executor mode. Records extracted and waiting for the main thread:
    std::size_t exec_waiting() const;
    bool executor() const { return exec_ != nullptr; }
    // The main thread takes them (valid until the next take); each must then be given, in
    // order, to exactly one of exec_dead and exec_feed.
    const ExecBatch& take_exec_batch();
    void exec_dead(const ExecRecord& r, DeadReason reason, const std::string& detail);
    // A dead letter for one aggregation only (its key is NULL, its expressions raised an
    // error): the record itself goes on (exec_feed, or exec_dead when no aggregation keeps it).
    void exec_note(const ExecRecord& r, DeadReason reason, const std::string& detail);
    // A record every aggregation noted a dead letter for: consumed, nothing else.
    void exec_skip(const ExecRecord& r);
    // A record whose event time and keys were computed: judged like any (time range, future
    // limit, the fast-path key's length: dead letters), then counted, the watermark observed, and
    // every fast-path aggregation folds it with `key` and `values` (per column, as
    // SlowRecord::values). An executor aggregation whose key is too long gets a dead letter of its
    // own (its folds[i].fold is cleared), and so does a fast-path aggregation reading one of
    // `bad` (SlowRecord::bad; it does not fold the record). Returns the watermark the executor
    // aggregations fold the record with (exec_fold), or nothing when the record is a dead letter
    // as a whole.
    std::optional<core::Millis> exec_admit(const ExecRecord& r, core::Millis time,
                                           const std::string* key, const core::Value* values,
                                           ExecFold* folds,
                                           const std::vector<format::BadValue>* bad = nullptr);
    // Some fast-path aggregation reads none of `bad` (it can fold the record).
    bool exec_fast_usable(const std::vector<format::BadValue>& bad) const;
    // A record no aggregation can use, `bad` among the reasons: with `whole`, a dead letter of
    // the source for its first bad value (as exec_dead); else (the record already is one) each
    // fast-path aggregation reading a bad value notes its own.
    void exec_bad_values(const ExecRecord& r, const std::vector<format::BadValue>& bad, bool whole);
    // An executor aggregation folds an admitted record (or counts it filtered), with the watermark
    // exec_admit gave. Each aggregation takes its records in order; aggregations are independent.
    void exec_fold(std::size_t aggregation, const ExecFold& fold, core::Millis time,
                   core::Millis watermark);
    // Both for one record (exec_admit, then exec_fold of every executor aggregation).
    void exec_feed(const ExecRecord& r, core::Millis time, const std::string* key,
                   const core::Value* values, ExecFold* folds,
                   const std::vector<format::BadValue>* bad = nullptr);

    // Wall clock tick: idle partitions may release the watermark.
    void tick(core::Millis now);

    // The consumer reached the end of a partition at `offset`: nothing before it is left to
    // read (gaps from compaction or transaction markers included). Returns true if the
    // committed position moves (false while records wait for the main thread).
    bool note_end_of_partition(core::TopicPartition tp, std::int64_t offset);
    // The same end as the watermark's too, seen at wall time `now` (README "Time and the
    // watermark": a partition holding data holds W back until its records were observed).
    // While records of `tp` consumed before the end still wait for the main thread (blocked,
    // or extracted in executor mode), the partition is not caught up yet: the end takes effect
    // once the last of them was handled, so they are judged as the partition's own, not late.
    bool end_of_partition(core::TopicPartition tp, std::int64_t offset, core::Millis now);
    // Applies the ends held back whose records were all handled. Executor mode handles a batch
    // in phases, not record by record in offset order: the main thread holds the ends while it
    // runs a batch (hold_ends(true)) and releases them after (hold_ends(false)).
    void release_ends();
    void hold_ends(bool held) {
        ends_held_ = held;
        if (!held) release_ends();
    }

    // Offsets [from, to) of a partition can no longer be read (the topic's retention deleted
    // them before the source read them): the position moves to `to`, and the next commit
    // records the loss with it, as a dead letter 'offsets_skipped' and in
    // stoatflow.partition_offset.offsets_skipped.
    void skip_offsets(core::TopicPartition tp, std::int64_t from, std::int64_t to);
    bool skipped_pending() const { return !skipped_.empty(); }

    // Everything since the last snapshot, as values; the path starts the next commit. `scope`
    // (when given) wraps what runs an aggregation's external aggregates (serializing its states:
    // its owner's code), one call per aggregation.
    using AggregationScope =
        std::function<void(std::size_t aggregation, const std::function<void()>& body)>;
    CommitSnapshot take_snapshot(core::Millis now, const AggregationScope& scope = {});

    core::Watermark& watermark() { return watermark_; }
    // Next offset to consume per partition (what the commit makes durable).
    const std::map<core::TopicPartition, std::int64_t>& next_offsets() const {
        return next_offsets_;
    }
    // The source's topics (a TopicPartition's topic is an index into them).
    const std::vector<std::string>& topics() const { return topics_; }
    const std::string& topic_name(std::int32_t topic_index) const {
        return topics_.at(static_cast<std::size_t>(topic_index));
    }
    std::int64_t records_since_commit() const { return records_since_commit_; }
    std::int64_t dead_letters_since_commit() const {
        return static_cast<std::int64_t>(dead_.size());
    }
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
    // The memory every engine holds (estimated; PostgreSQL aggregate states as allocated).
    std::size_t memory_bytes() const {
        std::size_t n = 0;
        for (const auto& a : aggs_) n += a.engine->memory_bytes();
        return n;
    }
    // What the next commit will hold beside the live states, estimated: each engine's memory in
    // the share of its windows changed since the last commit (their serialized copies).
    std::size_t pending_state_bytes() const {
        double n = 0;
        for (const auto& a : aggs_) {
            const double open = static_cast<double>(a.engine->open_windows());
            const double changed = static_cast<double>(a.engine->pending_changes());
            if (open > 0)
                n += static_cast<double>(a.engine->memory_bytes()) * std::min(1.0, changed / open);
        }
        return static_cast<std::size_t>(n);
    }
    // Per aggregation: name and the memory its engine holds (estimated), for the memory limit.
    std::vector<std::pair<std::string, std::size_t>> aggregation_memory() const;

    // An aggregation's state layout: fixed at construction, so the writing side may read it
    // while the consume thread runs.
    const core::AggLayout& layout(std::size_t aggregation) const {
        return aggs_[aggregation].engine->layout();
    }
    // Its window and emit strategy: fixed at construction too.
    const core::WindowSpec& engine_spec(std::size_t aggregation) const {
        return aggs_[aggregation].engine->spec();
    }
    core::EmitStrategy engine_emit(std::size_t aggregation) const {
        return aggs_[aggregation].engine->emit();
    }

private:
    // The lanes (README "Columns"): one per way a record is read. Each feeds the spine below
    // (counting, staging, the watermark, dead letters) through these members.
    friend class JsonLane;
    friend class ColumnsLane;
    friend class ExecLane;

    void count(core::TopicPartition tp, std::int64_t offset) {
        ++records_since_commit_;
        // Executor mode judges a batch's records in phases, not strictly in offset order: the
        // position never moves back.
        std::int64_t& next = next_offsets_[tp];
        if (offset + 1 > next) next = offset + 1;
    }
    // A record of `tp` now waits for the main thread.
    void queued(core::TopicPartition tp, std::int64_t offset) { queued_last_[tp] = offset; }

    struct Aggregation {
        std::string name;
        std::unique_ptr<core::WindowedAggregation> engine;
        std::vector<int> value_index;  // per aggregate: index into the decoder's values, -1: none
        std::vector<core::Value> values;  // per staged record, per aggregate
        std::vector<core::WindowedAggregation::RecordRef> refs;
        bool executor = false;      // fed by exec_feed's folds
        std::int64_t filtered = 0;  // since the path was built (stats `filtered`)
        // A roll-up: fed by take_snapshot from its upstream's finals, never by the lanes.
        std::optional<RollupInput> rollup;
        bool of_source() const { return !rollup; }
        core::Millis lag() const { return rollup ? rollup->lag : 0; }
    };
    struct Staged {
        format::Decoded record;
        core::Millis watermark = core::kNoTime;
        bool skipping = false;           // some aggregations skip it (judge_values) ...
        std::vector<std::uint8_t> skip;  // ... these (per aggregation)
    };
    // The next staging slot (the staged batch runs through the engines first when full).
    Staged& next_staged() {
        if (staged_ == staged_records_.size()) drain();
        return staged_records_[staged_];
    }
    // The slot next_staged() gave is staged: the watermark observes it.
    void stage(core::TopicPartition tp, core::Millis now);
    bool judge_values(core::TopicPartition tp, std::int64_t offset, const char* payload,
                      std::size_t len, Staged& st);
    // The first of `bad` an aggregation's aggregates read (nullptr: none).
    static const format::BadValue* bad_of(const Aggregation& a,
                                          const std::vector<format::BadValue>& bad);
    // With columns: the record judge on a record whose key, time and values are known.
    DeadReason judge_record(const format::Decoded& d, core::Millis now, std::string& detail) const;
    void dead(DeadLetter d) { dead_.push_back(std::move(d)); }
    // What a record's metadata columns are made of.
    format::RecordMeta meta_of(core::TopicPartition tp, std::int64_t offset, const char* key,
                               std::size_t key_len, core::Millis kafka_ts,
                               const format::KafkaHeader* headers, std::size_t header_count) const;

    void add_aggregation(const RecordPathConfig::Aggregation& def);

    std::vector<Aggregation> aggs_;
    // What an aggregate's field is looked up in: the decoder's value paths (0.1), or with
    // columns, every column's name.
    std::vector<std::string> fields_;
    std::vector<Staged> staged_records_ = std::vector<Staged>(kStageRecords);
    std::size_t staged_ = 0;
    std::vector<std::string> topics_;
    std::optional<RowPlan> plan_;  // with columns
    std::vector<int> value_cols_;  // with columns: the columns an aggregate reads
    // With columns: the key, the event time or one of value_cols_ is a metadata column (the
    // columns lane fills them only then). Kept with value_cols_: an adopted aggregation may
    // read one the others did not.
    bool reads_metadata_ = false;
    RecordJudge judge_;
    core::Watermark watermark_;
    // Per partition, the last offset that waited for the main thread; and the ends of
    // partitions seen while records of theirs still waited (end_of_partition).
    std::map<core::TopicPartition, std::int64_t> queued_last_;
    struct PendingEnd {
        core::TopicPartition tp;
        std::int64_t offset = 0;  // the end
        core::Millis now = 0;
        std::int64_t after = 0;  // takes effect once this offset of tp was handled
    };
    std::vector<PendingEnd> pending_ends_;
    bool ends_held_ = false;
    std::map<core::TopicPartition, std::int64_t> next_offsets_;
    std::map<core::TopicPartition, std::int64_t> skipped_;
    std::vector<DeadLetter> dead_;
    std::int64_t commit_seq_ = 0;
    std::int64_t records_since_commit_ = 0;
    // Wall time the watermark first moved since the last commit: windows it closed are
    // emitted at the next commit, so their freshness lag is commit time minus this.
    core::Millis w_moved_at_ = 0;
    core::Millis w_at_commit_ = core::kNoTime;
    // Exactly one lane: JSON paths (no columns), the columns' fast lane, or the executor's.
    std::unique_ptr<JsonLane> json_;
    std::unique_ptr<ColumnsLane> columns_;
    std::unique_ptr<ExecLane> exec_;
};

}  // namespace stoatflow::flow
