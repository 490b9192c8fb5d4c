// The record path with a row type (SPEC 11): a record is extracted into a raw row, its key,
// event time and aggregated values taken through the fast lane; a value the lane leaves to
// PostgreSQL blocks the path until the main thread has converted it (resume()), so every
// record still goes through in order. Pure C++ like record_path.cpp (see the Makefile).
#include "stoatflow/flow/record_path.hpp"

#include <string>

#include "stoatflow/core/event_time.hpp"

namespace stoatflow::flow {

namespace {

// What a record's metadata columns are made of.
format::RecordMeta record_meta(std::string_view topic, core::TopicPartition tp, std::int64_t offset,
                               const char* key, std::size_t key_len, core::Millis kafka_ts,
                               const format::KafkaHeader* headers, std::size_t header_count) {
    format::RecordMeta meta;
    meta.topic = topic;
    meta.partition = tp.partition;
    meta.offset = offset;
    meta.key = key;
    meta.key_len = key_len;
    meta.timestamp_ms = kafka_ts;
    meta.headers = headers;
    meta.header_count = header_count;
    return meta;
}

}  // namespace

void RecordPath::process_row(core::TopicPartition tp, std::int64_t offset, const char* payload,
                             std::size_t len, const char* key, std::size_t key_len,
                             core::Millis kafka_ts, core::Millis now,
                             const format::KafkaHeader* headers, std::size_t header_count) {
    rows_.clear();
    const std::size_t r = rows_.add_row();
    format::DecodeError e = extractor_->extract(payload, len, rows_, r);
    DeadReason reason = DeadReason::None;
    std::string detail = extractor_->detail();
    if (e == format::DecodeError::None &&
        !format::fill_metadata(rows_, r, plan_->paths.size(),
                               record_meta(topic_name(tp.topic), tp, offset, key, key_len, kafka_ts,
                                           headers, header_count),
                               detail))
        e = format::DecodeError::InvalidText;
    if (e != format::DecodeError::None) {
        count(tp, offset);
        dead_.push_back(RecordJudge::dead_letter(tp, offset, e, detail, payload, len));
        return;
    }
    if (staged_ == staged_records_.size()) drain();
    staged_records_[staged_].skipping = false;  // (the lane leaves bad values to PostgreSQL)
    switch (fast_record(staged_records_[staged_].record, now, reason, detail)) {
    case Verdict::Ask:
        queued(tp, offset);
        blocked_ = true;
        blocked_record_.tp = tp;
        blocked_record_.offset = offset;
        blocked_record_.payload.assign(payload, len);
        blocked_record_.now = now;
        return;
    case Verdict::Dead:
        count(tp, offset);
        dead_.push_back(RecordJudge::dead_letter(tp, offset, reason, detail, payload, len));
        return;
    case Verdict::Staged: count(tp, offset); stage(tp, now);
    }
}

RecordPath::Verdict RecordPath::fast_record(format::Decoded& d, core::Millis now,
                                            DeadReason& reason, std::string& detail) {
    using Kind = format::FastValue::Kind;
    auto fast = [&](int col) { return format::fast_convert(plan_->fast[col], rows_.get(0, col)); };
    // Every declared column must convert, read or not (a value that does not is a dead letter,
    // before any other reason, as on PostgreSQL's way): what the lane cannot vouch for, PostgreSQL
    // checks.
    for (std::size_t c = 0; c < plan_->paths.size(); ++c)
        if (!format::fast_valid(plan_->fast[c], rows_.get(0, c))) return Verdict::Ask;
    const format::FastValue k = fast(plan_->key_col);
    switch (k.kind) {
    case Kind::Null:
        reason = DeadReason::MissingKey;
        detail = RecordJudge::column_is_null(plan_->names[plan_->key_col]);
        return Verdict::Dead;
    case Kind::Text: d.key.assign(k.text.data(), k.text.size()); break;
    case Kind::Int: d.key = std::to_string(k.i); break;
    case Kind::Big: d.key = core::int128_to_string(k.big); break;
    default: return Verdict::Ask;  // other types' text output is PostgreSQL's
    }
    const format::FastValue t = fast(plan_->time_col);
    switch (t.kind) {
    case Kind::Null:
        reason = DeadReason::MissingTime;
        detail = RecordJudge::column_is_null(plan_->names[plan_->time_col]);
        return Verdict::Dead;
    case Kind::Micros: d.time = core::unix_micros_to_ms(t.i); break;
    case Kind::Int: d.time = t.i; break;  // bigint/integer epoch milliseconds
    default: return Verdict::Ask;
    }
    d.values.assign(plan_->names.size(), core::Value::missing());
    d.bad.clear();
    for (int c : value_cols_) {
        const format::FastValue v = fast(c);
        switch (v.kind) {
        case Kind::Null: break;
        case Kind::Int: d.values[c] = core::Value::of_int(v.i); break;
        case Kind::Big: d.values[c] = core::Value::of_big(v.big); break;
        case Kind::Double: d.values[c] = core::Value::of_double(v.d); break;
        default: return Verdict::Ask;
        }
    }
    reason = check_record(d, now, detail);
    return reason == DeadReason::None ? Verdict::Staged : Verdict::Dead;
}

// The rules a decoded record meets whichever lane converted it (the record judge's).
DeadReason RecordPath::check_record(const format::Decoded& d, core::Millis now,
                                    std::string& detail) const {
    const std::string time_name = plan_->time_col >= 0
                                      ? "column \"" + plan_->names[plan_->time_col] + "\""
                                      : std::string("event_time");
    return judge_.judge(d.key, d.time, now, time_name, detail);
}

void RecordPath::stage(core::TopicPartition tp, core::Millis now) {
    Staged& st = staged_records_[staged_];
    st.watermark = watermark_.observe(tp.id(), st.record.time, now);
    if (st.watermark != w_at_commit_ && w_moved_at_ == 0) w_moved_at_ = now;
    ++staged_;
}

void RecordPath::resume(const SlowRecord& rec) {
    if (!blocked_) return;
    blocked_ = false;
    const Waiting& b = blocked_record_;
    count(b.tp, b.offset);
    DeadReason reason = rec.reason;
    std::string detail = rec.detail;
    if (reason == DeadReason::None) {
        if (staged_ == staged_records_.size()) drain();
        format::Decoded& d = staged_records_[staged_].record;
        if (!rec.key) {
            reason = DeadReason::MissingKey;
            detail = RecordJudge::column_is_null(plan_->names[plan_->key_col]);
        } else if (!rec.time) {
            reason = DeadReason::MissingTime;
            detail = RecordJudge::column_is_null(plan_->names[plan_->time_col]);
        } else {
            d.key = *rec.key;
            d.time = *rec.time;
            d.values = rec.values;
            d.values.resize(plan_->names.size(), core::Value::missing());
            d.bad = rec.bad;
            Staged& st = staged_records_[staged_];
            st.skipping = false;
            reason = check_record(d, b.now, detail);
            if (reason == DeadReason::None) {
                // A value only some aggregations cannot use: their dead letters, as on the
                // JSON-path route (judge_values; none can use it: a dead letter of the source).
                if (d.bad.empty() ||
                    judge_values(b.tp, b.offset, b.payload.data(), b.payload.size(), st))
                    stage(b.tp, b.now);
            }
        }
    }
    if (reason != DeadReason::None)
        dead_.push_back(RecordJudge::dead_letter(b.tp, b.offset, reason, detail, b.payload.data(),
                                                 b.payload.size()));
    // The records that waited, in order, until one blocks again.
    while (!blocked_ && !waiting_.empty()) {
        Waiting w = std::move(waiting_.front());
        waiting_.pop_front();
        std::vector<format::KafkaHeader> hs;
        for (const auto& [name, value] : w.headers)
            hs.push_back({name, value ? value->data() : nullptr, value ? value->size() : 0});
        process_row(w.tp, w.offset, w.payload.data(), w.payload.size(),
                    w.has_key ? w.key.data() : nullptr, w.key.size(), w.kafka_ts, w.now, hs.data(),
                    hs.size());
    }
    release_ends();
}

// ---------------------------------------------------------------------------------
// Executor mode: the consume thread extracts; the main thread converts, evaluates and feeds.

void RecordPath::exec_extract(core::TopicPartition tp, std::int64_t offset, const char* payload,
                              std::size_t len, const char* key, std::size_t key_len,
                              core::Millis kafka_ts, core::Millis now,
                              const format::KafkaHeader* headers, std::size_t header_count) {
    ExecRecord rec;
    rec.tp = tp;
    rec.offset = offset;
    rec.now = now;
    rec.payload.assign(payload == nullptr ? "" : payload, payload == nullptr ? 0 : len);
    const std::size_t r = exec_.rows.add_row();
    format::DecodeError e = extractor_->extract(payload, len, exec_.rows, r);
    std::string detail = extractor_->detail();
    if (e == format::DecodeError::None &&
        !format::fill_metadata(exec_.rows, r, plan_->paths.size(),
                               record_meta(topic_name(tp.topic), tp, offset, key, key_len, kafka_ts,
                                           headers, header_count),
                               detail))
        e = format::DecodeError::InvalidText;
    if (e != format::DecodeError::None) {
        exec_.rows.drop_last();
        rec.reason = e;
        rec.detail = detail;
    } else {
        rec.row = r;
    }
    queued(tp, offset);
    exec_.records.push_back(std::move(rec));
}

const ExecBatch& RecordPath::take_exec_batch() {
    std::swap(exec_, exec_taken_);
    exec_.rows.clear();
    exec_.records.clear();
    return exec_taken_;
}

void RecordPath::exec_dead(const ExecRecord& r, DeadReason reason, const std::string& detail) {
    count(r.tp, r.offset);
    exec_note(r, reason, detail);
    release_ends();
}

void RecordPath::exec_skip(const ExecRecord& r) {
    count(r.tp, r.offset);
    release_ends();
}

void RecordPath::exec_note(const ExecRecord& r, DeadReason reason, const std::string& detail) {
    dead_.push_back(RecordJudge::dead_letter(r.tp, r.offset, reason, detail, r.payload.data(),
                                             r.payload.size()));
}

bool RecordPath::exec_fast_usable(const std::vector<format::BadValue>& bad) const {
    for (const auto& a : aggs_)
        if (!a.executor && bad_of(a, bad) == nullptr) return true;
    return false;
}

void RecordPath::exec_bad_values(const ExecRecord& r, const std::vector<format::BadValue>& bad,
                                 bool whole) {
    if (bad.empty()) return;
    if (whole) return exec_dead(r, bad.front().error, bad.front().detail);
    for (const auto& a : aggs_)
        if (const format::BadValue* b = a.executor ? nullptr : bad_of(a, bad))
            exec_note(r, b->error, RecordJudge::of_aggregation(a.name, b->detail));
}

std::optional<core::Millis> RecordPath::exec_admit(const ExecRecord& r, core::Millis time,
                                                   const std::string* key,
                                                   const core::Value* values, ExecFold* folds,
                                                   const std::vector<format::BadValue>* bad) {
    // The checks every record meets (check_record), on the computed time and keys.
    format::Decoded& d = staged_records_[0].record;
    d.time = time;
    d.key = key != nullptr ? *key : std::string();
    std::string detail;
    if (const DeadReason reason = check_record(d, r.now, detail); reason != DeadReason::None) {
        exec_dead(r, reason, detail);
        return std::nullopt;
    }
    // A value a fast-path aggregation cannot use is its dead letter only (README "Views and
    // tables", dead_letters), as a key too long for one executor aggregation is that one's.
    const bool has_bad = bad != nullptr && !bad->empty();
    bool kept = key != nullptr && (!has_bad || exec_fast_usable(*bad));
    if (has_bad) exec_bad_values(r, *bad, false);
    for (std::size_t i = 0; i < aggs_.size(); ++i) {
        if (!aggs_[i].executor) continue;
        if (folds[i].fold &&
            judge_.key(folds[i].key, detail, /*quote=*/false) != DeadReason::None) {
            exec_note(r, DeadReason::KeyTooLong,
                      RecordJudge::of_aggregation(aggs_[i].name, detail));
            folds[i].fold = false;
            folds[i].filtered = false;
        }
        kept |= folds[i].fold || folds[i].filtered;
    }
    if (!kept) {  // every aggregation noted a dead letter: consumed, nothing else
        count(r.tp, r.offset);
        return std::nullopt;
    }
    count(r.tp, r.offset);
    const core::Millis w = watermark_.observe(r.tp.id(), time, r.now);
    if (w != w_at_commit_ && w_moved_at_ == 0) w_moved_at_ = r.now;
    for (std::size_t i = 0; i < aggs_.size(); ++i) {
        Aggregation& a = aggs_[i];
        if (a.executor || (has_bad && bad_of(a, *bad) != nullptr)) continue;
        const std::size_t naggs = a.value_index.size();
        a.values.resize(naggs);
        for (std::size_t k = 0; k < naggs; ++k)
            a.values[k] = a.value_index[k] < 0 ? core::Value::missing() : values[a.value_index[k]];
        a.engine->process(d.key, time, a.values.data(), w);
    }
    return w;
}

void RecordPath::exec_fold(std::size_t aggregation, const ExecFold& fold, core::Millis time,
                           core::Millis watermark) {
    Aggregation& a = aggs_[aggregation];
    if (!fold.fold) {
        if (fold.filtered) ++a.filtered;
        return;
    }
    a.engine->process(fold.key, time, nullptr, watermark, fold.row);
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

}  // namespace stoatflow::flow
