// The record path's spine (record_path.hpp): offsets, the watermark, staging into the window
// engines, dead letters, restore and the snapshot a commit writes; the lanes (json_lane.cpp,
// columns_lane.cpp, exec_lane.cpp) feed it. Pure C++ (src/README.md).
#include "stoatflow/flow/record_path.hpp"

#include "stoatflow/flow/columns_lane.hpp"
#include "stoatflow/flow/exec_lane.hpp"
#include "stoatflow/flow/json_lane.hpp"

#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <string>

namespace stoatflow::flow {

std::unique_ptr<format::RowDecoder> row_decoder(const RowPlan& plan) {
    const std::vector<std::string> declared(plan.names.begin(),
                                            plan.names.begin() + plan.paths.size());
    // A timestamptz column takes an instant as epoch milliseconds (fast_convert.hpp, and the
    // PostgreSQL lane alike), so the decoder need not render it as text parsed back.
    std::vector<bool> epoch_ms(plan.paths.size(), false);
    for (std::size_t c = 0; c < epoch_ms.size() && c < plan.fast.size(); ++c)
        epoch_ms[c] = plan.fast[c] == format::FastType::Timestamptz;
    return format::make_row_decoder(plan.format, declared, plan.paths, epoch_ms);
}

RecordPath::RecordPath(const RecordPathConfig& config)
    : topics_(config.topics), plan_(config.row), judge_(config.max_key_bytes, config.future_limit),
      watermark_(config.max_out_of_orderness, config.idle_timeout) {
    // Values are looked up by field path (0.1) or, with columns, by column name.
    fields_ = plan_ ? plan_->names : config.decoder.value_paths;
    if (plan_) {
        const auto declared = static_cast<int>(plan_->paths.size());
        reads_metadata_ = plan_->key_col >= declared || plan_->time_col >= declared;
    }
    if (!plan_)
        json_ = std::make_unique<JsonLane>(config.decoder);
    else if (config.executor)
        exec_ = std::make_unique<ExecLane>(*plan_);
    else
        columns_ = std::make_unique<ColumnsLane>(*plan_);
    for (const auto& def : config.aggregations) add_aggregation(def);
}

// One aggregation's engine and how it reads the records (the constructor's, and an adoption's).
void RecordPath::add_aggregation(const RecordPathConfig::Aggregation& def) {
    Aggregation a;
    a.name = def.name;
    a.engine = std::make_unique<core::WindowedAggregation>(
        def.spec, def.aggregates, def.emit, def.retention, def.segment_interval, def.external);
    if (def.committed_emit) a.engine->restore_committed_under(*def.committed_emit);
    a.executor = def.external != nullptr;
    if (def.upstream >= 0) {
        // README "Roll-ups": an upstream listed before it, on the fast path (its finals carry
        // built-in cells), and no source field read.
        const auto up = static_cast<std::size_t>(def.upstream);
        if (up >= aggs_.size() || aggs_[up].executor || a.executor)
            throw Error(sqlstate::kDataCorrupted,
                        "roll-up \"" + def.name + "\" has no upstream it can read");
        const Aggregation& u = aggs_[up];
        a.rollup = rollup_input(up, u.name, u.engine->spec(), u.engine->layout().specs(), u.lag(),
                                def.spec, def.aggregates);
        a.value_index.assign(def.aggregates.size(), -1);
        a.values.resize(def.aggregates.size());
        aggs_.push_back(std::move(a));
        return;
    }
    for (const auto& s : def.aggregates) {
        int idx = -1;
        for (std::size_t i = 0; i < fields_.size(); ++i)
            if (!s.field.empty() && fields_[i] == s.field) idx = static_cast<int>(i);
        a.value_index.push_back(idx);
        if (plan_ && idx >= 0 &&
            std::find(value_cols_.begin(), value_cols_.end(), idx) == value_cols_.end()) {
            value_cols_.push_back(idx);
            if (idx >= static_cast<int>(plan_->paths.size())) reads_metadata_ = true;
        }
    }
    a.values.resize(def.aggregates.size());
    aggs_.push_back(std::move(a));
}

bool RecordPath::adopt_aggregation(const RecordPathConfig::Aggregation& def) {
    if (exec_ || def.external != nullptr || def.upstream >= 0) return false;
    for (const auto& s : def.aggregates)
        if (!s.field.empty() && std::find(fields_.begin(), fields_.end(), s.field) == fields_.end())
            return false;  // the lane does not read it
    drain();               // the staged records are the others' (none after a commit)
    add_aggregation(def);
    return true;
}

RecordPath::~RecordPath() = default;

bool RecordPath::ready(const char* payload, std::size_t len, const char* key, std::size_t key_len) {
    if (columns_) return columns_->decoder().ready(payload, len, key, key_len);
    if (exec_) return exec_->decoder().ready(payload, len, key, key_len);
    return true;
}

void RecordPath::restore_progress(const std::string& watermark_state, std::int64_t commit_seq) {
    watermark_.restore(watermark_state);
    commit_seq_ = commit_seq;
    w_at_commit_ = watermark_.current();
}

void RecordPath::restore_window(std::size_t aggregation, const core::WindowStateRow& row) {
    Aggregation& a = aggs_[aggregation];
    a.engine->restore(row, rollup_watermark(w_at_commit_, a.lag()));
}

bool RecordPath::seed_rollup(std::size_t aggregation, const std::string& key, core::Millis start,
                             const std::vector<core::Value>& values) {
    Aggregation& a = aggs_[aggregation];
    if (!a.rollup || start % a.rollup->tile != 0 || values.size() != a.value_index.size())
        return false;
    const core::Millis w = rollup_watermark(w_at_commit_, a.lag());
    // Final upstream windows start at or below the roll-up's watermark; those above it are
    // still open upstream and come with their close.
    if (w != core::kNoTime && start > w) return false;
    const core::WindowSpec& spec = a.engine->spec();
    if (spec.is_closed(core::floor_to(start, spec.advance) + spec.size, w)) return false;
    a.engine->process(key, start, values.data(), w);
    return true;
}

std::vector<std::pair<std::string, std::size_t>> RecordPath::aggregation_memory() const {
    std::vector<std::pair<std::string, std::size_t>> out;
    for (const auto& a : aggs_) out.emplace_back(a.name, a.engine->memory_bytes());
    return out;
}

void RecordPath::tick(core::Millis now) {
    const core::Millis w = watermark_.tick(now);
    if (w != w_at_commit_ && w_moved_at_ == 0) w_moved_at_ = now;
}

bool RecordPath::note_end_of_partition(core::TopicPartition tp, std::int64_t offset) {
    // Records wait behind a blocked one (or for the executor): the position must not pass them.
    if (waiting_for_main()) return false;
    auto it = next_offsets_.find(tp);
    if (it != next_offsets_.end() && it->second >= offset) return false;
    next_offsets_[tp] = offset;
    return true;
}

bool RecordPath::end_of_partition(core::TopicPartition tp, std::int64_t offset, core::Millis now) {
    const auto q = queued_last_.find(tp);
    if (q != queued_last_.end()) {
        const auto next = next_offsets_.find(tp);
        if (next == next_offsets_.end() || next->second <= q->second) {
            pending_ends_.push_back({tp, offset, now, q->second});
            return false;
        }
    }
    watermark_.caught_up(tp.id(), now);
    return note_end_of_partition(tp, offset);
}

void RecordPath::release_ends() {
    if (pending_ends_.empty() || ends_held_) return;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < pending_ends_.size(); ++i) {
        const PendingEnd e = pending_ends_[i];
        const auto next = next_offsets_.find(e.tp);
        if (next == next_offsets_.end() || next->second <= e.after) {
            pending_ends_[kept++] = e;
            continue;
        }
        watermark_.caught_up(e.tp.id(), e.now);
        // The position follows with the next commit (the records just handled are counted).
        note_end_of_partition(e.tp, e.offset);
    }
    pending_ends_.resize(kept);
}

void RecordPath::skip_offsets(core::TopicPartition tp, std::int64_t from, std::int64_t to) {
    if (to <= from) return;
    next_offsets_[tp] = to;
    skipped_[tp] += to - from;
    dead_.push_back(RecordJudge::dead_letter(tp, from, DeadReason::OffsetsSkipped,
                                             RecordJudge::offsets_skipped(from, to), nullptr, 0));
}

void RecordPath::process(std::int32_t topic_index, std::int32_t partition, std::int64_t offset,
                         const char* payload, std::size_t len, const char* key, std::size_t key_len,
                         core::Millis kafka_ts, core::Millis now,
                         const format::KafkaHeader* headers, std::size_t header_count) {
    const core::TopicPartition tp{topic_index, partition};
    if (json_)
        json_->process(*this, tp, offset, payload, len, key, key_len, kafka_ts, now);
    else if (columns_)
        columns_->process(*this, tp, offset, payload, len, key, key_len, kafka_ts, now, headers,
                          header_count);
    else
        exec_->extract(*this, tp, offset, payload, len, key, key_len, kafka_ts, now, headers,
                       header_count);
}

void RecordPath::stage(core::TopicPartition tp, core::Millis now) {
    Staged& st = staged_records_[staged_];
    // W is updated with each record before that record is judged: keep the value it is
    // judged against with it, so the batch sees exactly what record-at-a-time would.
    st.watermark = watermark_.observe(tp.id(), st.record.time, now);
    if (st.watermark != w_at_commit_ && w_moved_at_ == 0) w_moved_at_ = now;
    ++staged_;
}

// The rules a record meets whichever lane converted it (the record judge's).
DeadReason RecordPath::judge_record(const format::Decoded& d, core::Millis now,
                                    std::string& detail) const {
    const std::string time_name = plan_->time_col >= 0
                                      ? "column \"" + plan_->names[plan_->time_col] + "\""
                                      : std::string("event_time");
    return judge_.judge(d.key, d.time, now, time_name, detail);
}

format::RecordMeta RecordPath::meta_of(core::TopicPartition tp, std::int64_t offset,
                                       const char* key, std::size_t key_len, core::Millis kafka_ts,
                                       const format::KafkaHeader* headers,
                                       std::size_t header_count) const {
    format::RecordMeta meta;
    meta.topic = topic_name(tp.topic);
    meta.partition = tp.partition;
    meta.offset = offset;
    meta.key = key;
    meta.key_len = key_len;
    meta.timestamp_ms = kafka_ts;
    meta.headers = headers;
    meta.header_count = header_count;
    return meta;
}

// The lanes' part of the interface.
bool RecordPath::blocked() const { return columns_ && columns_->blocked(); }
const format::RawRows& RecordPath::blocked_row() const {
    static const format::RawRows none;
    return columns_ ? columns_->blocked_row() : none;
}
void RecordPath::resume(const SlowRecord& record) {
    if (columns_) columns_->resume(*this, record);
}
std::size_t RecordPath::exec_waiting() const { return exec_ ? exec_->waiting() : 0; }
const ExecBatch& RecordPath::take_exec_batch() { return exec_->take_batch(); }
void RecordPath::exec_dead(const ExecRecord& r, DeadReason reason, const std::string& detail) {
    exec_->dead(*this, r, reason, detail);
}
void RecordPath::exec_note(const ExecRecord& r, DeadReason reason, const std::string& detail) {
    exec_->note(*this, r, reason, detail);
}
void RecordPath::exec_skip(const ExecRecord& r) { exec_->skip(*this, r); }
std::optional<core::Millis> RecordPath::exec_admit(const ExecRecord& r, core::Millis time,
                                                   const std::string* key,
                                                   const core::Value* values, ExecFold* folds,
                                                   const std::vector<format::BadValue>* bad) {
    return exec_->admit(*this, r, time, key, values, folds, bad);
}
bool RecordPath::exec_fast_usable(const std::vector<format::BadValue>& bad) const {
    return exec_->fast_usable(*this, bad);
}
void RecordPath::exec_bad_values(const ExecRecord& r, const std::vector<format::BadValue>& bad,
                                 bool whole) {
    exec_->bad_values(*this, r, bad, whole);
}
void RecordPath::exec_fold(std::size_t aggregation, const ExecFold& fold, core::Millis time,
                           core::Millis watermark) {
    exec_->fold(*this, aggregation, fold, time, watermark);
}
void RecordPath::exec_feed(const ExecRecord& r, core::Millis time, const std::string* key,
                           const core::Value* values, ExecFold* folds,
                           const std::vector<format::BadValue>* bad) {
    const std::optional<core::Millis> w = exec_admit(r, time, key, values, folds, bad);
    if (w)
        for (std::size_t i = 0; i < aggs_.size(); ++i)
            if (aggs_[i].executor) exec_fold(i, folds[i], time, *w);
    release_ends();
}

const format::BadValue* RecordPath::bad_of(const Aggregation& a,
                                           const std::vector<format::BadValue>& bad) {
    for (int idx : a.value_index)
        for (const auto& b : bad)
            if (idx >= 0 && b.index == static_cast<std::size_t>(idx)) return &b;
    return nullptr;
}

// README "Views and tables", dead_letters: a value only some aggregations read and cannot use is a
// dead letter of each of them (they skip the record as a whole); the others fold the record and
// it moves the watermark. False when no aggregation can use it: a dead letter of the source, as
// when every value was bad in 0.1.
bool RecordPath::judge_values(core::TopicPartition tp, std::int64_t offset, const char* payload,
                              std::size_t len, Staged& st) {
    const auto& bad = st.record.bad;
    bool usable = false;
    for (const auto& a : aggs_) usable |= a.of_source() && bad_of(a, bad) == nullptr;
    if (!usable) {
        dead_.push_back(RecordJudge::dead_letter(tp, offset, bad.front().error, bad.front().detail,
                                                 payload, len));
        return false;
    }
    st.skipping = true;
    st.skip.assign(aggs_.size(), 0);
    for (std::size_t i = 0; i < aggs_.size(); ++i) {
        const format::BadValue* b = bad_of(aggs_[i], bad);
        if (b == nullptr) continue;
        st.skip[i] = 1;
        dead_.push_back(RecordJudge::dead_letter(
            tp, offset, b->error, RecordJudge::of_aggregation(aggs_[i].name, b->detail), payload,
            len));
    }
    return true;
}

void RecordPath::drain() {
    if (staged_ == 0) return;
    for (std::size_t ai = 0; ai < aggs_.size(); ++ai) {
        Aggregation& a = aggs_[ai];
        if (!a.of_source()) continue;  // a roll-up: fed at the snapshot
        const std::size_t naggs = a.value_index.size();
        a.values.resize(staged_ * naggs);
        a.refs.resize(staged_);
        std::size_t m = 0;  // records this aggregation folds
        for (std::size_t r = 0; r < staged_; ++r) {
            const Staged& st = staged_records_[r];
            if (st.skipping && st.skip[ai]) continue;  // its dead letter is noted
            const format::Decoded& d = st.record;
            core::Value* v = a.values.data() + m * naggs;
            for (std::size_t i = 0; i < naggs; ++i)
                v[i] = a.value_index[i] < 0 ? core::Value::missing() : d.values[a.value_index[i]];
            a.refs[m++] = {d.key, d.time, v, st.watermark};
        }
        a.engine->process_batch(a.refs.data(), m);
    }
    staged_ = 0;
}

CommitSnapshot RecordPath::take_snapshot(core::Millis now, const AggregationScope& scope) {
    drain();
    CommitSnapshot snap;
    snap.seq = ++commit_seq_;
    snap.records = records_since_commit_;
    snap.now = now;
    snap.watermark = watermark_.current();
    snap.watermark_state = watermark_.serialize();
    snap.w_moved_at = w_moved_at_;
    snap.next_offsets = next_offsets_;
    snap.skipped.swap(skipped_);
    snap.dead.swap(dead_);
    snap.aggs.resize(aggs_.size());
    for (std::size_t i = 0; i < aggs_.size(); ++i) {
        auto& engine = *aggs_[i].engine;
        // README "Roll-ups": an upstream flushes first (it is listed before); its finals are the
        // roll-up's records, judged against the roll-up's watermark at its previous flush (below
        // the start of every upstream window still open then), before the roll-up flushes with
        // its own watermark — in this same snapshot, so in the commit that makes them final.
        const core::Millis w = rollup_watermark(snap.watermark, aggs_[i].lag());
        if (const auto& in = aggs_[i].rollup)
            feed_rollup(snap.aggs[in->upstream].out, aggs_[in->upstream].engine->layout(), *in,
                        engine, rollup_watermark(w_at_commit_, in->lag));
        snap.aggs[i].watermark = w;
        if (scope && aggs_[i].executor)
            scope(i, [&] { engine.flush(w, snap.aggs[i].out); });
        else
            engine.flush(w, snap.aggs[i].out);
        snap.aggs[i].stats = engine.stats();
        snap.aggs[i].stats.filtered = aggs_[i].filtered;
        snap.aggs[i].open_windows = static_cast<std::int64_t>(engine.open_windows());
        snap.aggs[i].keys_with_open_windows =
            static_cast<std::int64_t>(engine.keys_with_open_windows());
        snap.aggs[i].memory_bytes = static_cast<std::int64_t>(engine.memory_bytes());
    }
    records_since_commit_ = 0;
    w_at_commit_ = snap.watermark;
    w_moved_at_ = 0;
    return snap;
}

}  // namespace stoatflow::flow
