// The executor lane (exec_lane.hpp): the consume thread extracts; the main thread converts,
// evaluates and hands each record back. Pure C++ (src/README.md).
#include "stoatflow/flow/exec_lane.hpp"

#include <string>
#include <utility>

namespace stoatflow::flow {

ExecLane::ExecLane(const RowPlan& plan) : plan_(plan), decoder_(row_decoder(plan)) {
    batch_.rows = format::RawRows(plan.names.size());
    taken_.rows = format::RawRows(plan.names.size());
}

void ExecLane::extract(RecordPath& p, core::TopicPartition tp, std::int64_t offset,
                       const char* payload, std::size_t len, const char* key, std::size_t key_len,
                       core::Millis kafka_ts, core::Millis now, const format::KafkaHeader* headers,
                       std::size_t header_count) {
    const std::size_t r = batch_.rows.add_row();
    bool skip = false;
    DeadReason e = decoder_->decode(payload, len, offset == 0, batch_.rows, r, skip);
    if (skip) {
        // No data (a CSV header): consumed, nothing else. It is its partition's first record
        // (offset 0), so none of that partition waits before it.
        batch_.rows.drop_last();
        return p.count(tp, offset);
    }
    ExecRecord rec;
    rec.tp = tp;
    rec.offset = offset;
    rec.now = now;
    rec.payload.assign(payload == nullptr ? "" : payload, payload == nullptr ? 0 : len);
    std::string detail = decoder_->detail();
    // A key the format reads itself (a registry-framed Avro key): kafka_key is its text.
    std::string key_text;
    bool key_null = false;
    if (key != nullptr && decoder_->key_text(key, key_len, key_text, key_null)) {
        key = key_null ? nullptr : key_text.data();
        key_len = key_null ? 0 : key_text.size();
    }
    if (e == DeadReason::None &&
        !format::fill_metadata(batch_.rows, r, plan_.paths.size(),
                               p.meta_of(tp, offset, key, key_len, kafka_ts, headers, header_count),
                               detail))
        e = DeadReason::InvalidText;
    if (e != DeadReason::None) {
        batch_.rows.drop_last();
        rec.reason = e;
        rec.detail = detail;
    } else {
        rec.row = r;
    }
    p.queued(tp, offset);
    batch_.records.push_back(std::move(rec));
}

const ExecBatch& ExecLane::take_batch() {
    std::swap(batch_, taken_);
    batch_.rows.clear();
    batch_.records.clear();
    return taken_;
}

void ExecLane::dead(RecordPath& p, const ExecRecord& r, DeadReason reason,
                    const std::string& detail) {
    p.count(r.tp, r.offset);
    note(p, r, reason, detail);
    p.release_ends();
}

void ExecLane::skip(RecordPath& p, const ExecRecord& r) {
    p.count(r.tp, r.offset);
    p.release_ends();
}

void ExecLane::note(RecordPath& p, const ExecRecord& r, DeadReason reason,
                    const std::string& detail) {
    p.dead(RecordJudge::dead_letter(r.tp, r.offset, reason, detail, r.payload.data(),
                                    r.payload.size()));
}

bool ExecLane::fast_usable(const RecordPath& p, const std::vector<format::BadValue>& bad) const {
    for (const auto& a : p.aggs_)
        if (!a.executor && a.of_source() && RecordPath::bad_of(a, bad) == nullptr) return true;
    return false;
}

void ExecLane::bad_values(RecordPath& p, const ExecRecord& r,
                          const std::vector<format::BadValue>& bad, bool whole) {
    if (bad.empty()) return;
    if (whole) return dead(p, r, bad.front().error, bad.front().detail);
    for (const auto& a : p.aggs_)
        if (const format::BadValue* b = a.executor ? nullptr : RecordPath::bad_of(a, bad))
            note(p, r, b->error, RecordJudge::of_aggregation(a.name, b->detail));
}

std::optional<core::Millis> ExecLane::admit(RecordPath& p, const ExecRecord& r, core::Millis time,
                                            const std::string* key, const core::Value* values,
                                            ExecFold* folds,
                                            const std::vector<format::BadValue>* bad) {
    // The checks every record meets (the record judge), on the computed time and keys.
    format::Decoded& d = p.staged_records_[0].record;  // (nothing is staged in this lane)
    d.time = time;
    d.key = key != nullptr ? *key : std::string();
    std::string detail;
    if (const DeadReason reason = p.judge_record(d, r.now, detail); reason != DeadReason::None) {
        dead(p, r, reason, detail);
        return std::nullopt;
    }
    // A value a fast-path aggregation cannot use is its dead letter only (README "Views and
    // tables", dead_letters), as a key too long for one executor aggregation is that one's.
    auto& aggs = p.aggs_;
    const bool has_bad = bad != nullptr && !bad->empty();
    bool kept = key != nullptr && (!has_bad || fast_usable(p, *bad));
    if (has_bad) bad_values(p, r, *bad, false);
    for (std::size_t i = 0; i < aggs.size(); ++i) {
        if (!aggs[i].executor) continue;
        if (folds[i].fold &&
            p.judge_.key(folds[i].key, detail, /*quote=*/false) != DeadReason::None) {
            note(p, r, DeadReason::KeyTooLong, RecordJudge::of_aggregation(aggs[i].name, detail));
            folds[i].fold = false;
            folds[i].filtered = false;
        }
        kept |= folds[i].fold || folds[i].filtered;
    }
    p.count(r.tp, r.offset);
    if (!kept) return std::nullopt;  // every aggregation noted a dead letter: consumed, no more
    const core::Millis w = p.watermark_.observe(r.tp.id(), time, r.now);
    if (w != p.w_at_commit_ && p.w_moved_at_ == 0) p.w_moved_at_ = r.now;
    for (auto& a : aggs) {
        if (a.executor || !a.of_source() || (has_bad && RecordPath::bad_of(a, *bad) != nullptr))
            continue;
        const std::size_t naggs = a.value_index.size();
        a.values.resize(naggs);
        for (std::size_t k = 0; k < naggs; ++k)
            a.values[k] = a.value_index[k] < 0 ? core::Value::missing() : values[a.value_index[k]];
        a.engine->process(d.key, time, a.values.data(), w);
    }
    return w;
}

void ExecLane::fold(RecordPath& p, std::size_t aggregation, const ExecFold& f, core::Millis time,
                    core::Millis watermark) {
    RecordPath::Aggregation& a = p.aggs_[aggregation];
    if (!f.fold) {
        if (f.filtered) ++a.filtered;
        return;
    }
    a.engine->process(f.key, time, nullptr, watermark, f.row);
}

}  // namespace stoatflow::flow
