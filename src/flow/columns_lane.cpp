// The columns lane (columns_lane.hpp). Pure C++ (src/README.md).
#include "stoatflow/flow/columns_lane.hpp"

#include <string>

#include "stoatflow/core/event_time.hpp"
#include "stoatflow/format/fast_convert.hpp"

namespace stoatflow::flow {

ColumnsLane::ColumnsLane(const RowPlan& plan)
    : plan_(plan), decoder_(row_decoder(plan)), rows_(plan.names.size()) {}

void ColumnsLane::process(RecordPath& p, core::TopicPartition tp, std::int64_t offset,
                          const char* payload, std::size_t len, const char* key,
                          std::size_t key_len, core::Millis kafka_ts, core::Millis now,
                          const format::KafkaHeader* headers, std::size_t header_count) {
    if (!blocked_)
        return process_row(p, tp, offset, payload, len, key, key_len, kafka_ts, now, headers,
                           header_count);
    Waiting w;
    w.tp = tp;
    w.offset = offset;
    w.payload.assign(payload == nullptr ? "" : payload, payload == nullptr ? 0 : len);
    w.has_key = key != nullptr;
    if (key != nullptr) w.key.assign(key, key_len);
    w.kafka_ts = kafka_ts;
    w.now = now;
    for (std::size_t i = 0; i < header_count; ++i)
        w.headers.emplace_back(
            std::string(headers[i].name),
            headers[i].value == nullptr
                ? std::nullopt
                : std::optional<std::string>(std::string(headers[i].value, headers[i].value_len)));
    p.queued(tp, offset);
    waiting_.push_back(std::move(w));
}

void ColumnsLane::process_row(RecordPath& p, core::TopicPartition tp, std::int64_t offset,
                              const char* payload, std::size_t len, const char* key,
                              std::size_t key_len, core::Millis kafka_ts, core::Millis now,
                              const format::KafkaHeader* headers, std::size_t header_count) {
    rows_.clear();
    const std::size_t r = rows_.add_row();
    bool skip = false;
    format::DecodeError e = decoder_->decode(payload, len, offset == 0, rows_, r, skip);
    if (skip) return p.count(tp, offset);  // no data (a CSV header): consumed, nothing else
    DeadReason reason = DeadReason::None;
    std::string detail = decoder_->detail();
    // A key the format reads itself (a registry-framed Avro key): kafka_key is its text.
    std::string key_text;
    bool key_null = false;
    if (key != nullptr && decoder_->key_text(key, key_len, key_text, key_null)) {
        key = key_null ? nullptr : key_text.data();
        key_len = key_null ? 0 : key_text.size();
    }
    // The metadata columns are filled when the lane reads one (the key, the event time or a
    // value) or leaves the record to PostgreSQL (below); their one check, the key's text, is made
    // for every record all the same (an invalid key is the same dead letter either way).
    const format::RecordMeta meta =
        p.meta_of(tp, offset, key, key_len, kafka_ts, headers, header_count);
    bool meta_filled = false;
    if (e == format::DecodeError::None) {
        if (p.reads_metadata_) {
            meta_filled = format::fill_metadata(rows_, r, plan_.paths.size(), meta, detail);
            if (!meta_filled) e = format::DecodeError::InvalidText;
        } else if (!format::metadata_key_valid(meta, detail)) {
            e = format::DecodeError::InvalidText;
        }
    }
    if (e != format::DecodeError::None) {
        p.count(tp, offset);
        p.dead(RecordJudge::dead_letter(tp, offset, e, detail, payload, len));
        return;
    }
    RecordPath::Staged& st = p.next_staged();
    st.skipping = false;  // (the lane leaves bad values to PostgreSQL)
    switch (fast_record(p, st.record, now, reason, detail)) {
    case Verdict::Ask:
        // PostgreSQL converts the whole row (the key's text was checked above: this fills).
        if (!meta_filled) format::fill_metadata(rows_, r, plan_.paths.size(), meta, detail);
        p.queued(tp, offset);
        blocked_ = true;
        blocked_record_.tp = tp;
        blocked_record_.offset = offset;
        blocked_record_.payload.assign(payload, len);
        blocked_record_.now = now;
        return;
    case Verdict::Dead:
        p.count(tp, offset);
        p.dead(RecordJudge::dead_letter(tp, offset, reason, detail, payload, len));
        return;
    case Verdict::Staged: p.count(tp, offset); p.stage(tp, now);
    }
}

ColumnsLane::Verdict ColumnsLane::fast_record(const RecordPath& p, format::Decoded& d,
                                              core::Millis now, DeadReason& reason,
                                              std::string& detail) {
    using Kind = format::FastValue::Kind;
    // Every declared column must convert, read or not (a value that does not is a dead letter,
    // before any other reason, as on PostgreSQL's way): what the lane cannot vouch for, PostgreSQL
    // checks. Each is converted once, and the key, time and values below read those conversions
    // (an Avro timestamp, rendered as text, is parsed once, not twice); a json/jsonb column and
    // the metadata columns after the declared ones convert when read.
    converted_.resize(plan_.paths.size());
    for (std::size_t c = 0; c < plan_.paths.size(); ++c) {
        if (plan_.fast[c] == format::FastType::Json) {
            if (!format::fast_valid(plan_.fast[c], rows_.get(0, c))) return Verdict::Ask;
            continue;
        }
        converted_[c] = format::fast_convert(plan_.fast[c], rows_.get(0, c));
        if (converted_[c].kind == Kind::Ask) return Verdict::Ask;
    }
    auto fast = [&](int col) {
        const auto c = static_cast<std::size_t>(col);
        if (c < converted_.size() && plan_.fast[c] != format::FastType::Json) return converted_[c];
        return format::fast_convert(plan_.fast[c], rows_.get(0, c));
    };
    const format::FastValue k = fast(plan_.key_col);
    switch (k.kind) {
    case Kind::Null:
        reason = DeadReason::MissingKey;
        detail = RecordJudge::column_is_null(plan_.names[plan_.key_col]);
        return Verdict::Dead;
    case Kind::Text: d.key.assign(k.text.data(), k.text.size()); break;
    case Kind::Int: d.key = std::to_string(k.i); break;
    case Kind::Big: d.key = core::int128_to_string(k.big); break;
    default: return Verdict::Ask;  // other types' text output is PostgreSQL's
    }
    const format::FastValue t = fast(plan_.time_col);
    switch (t.kind) {
    case Kind::Null:
        reason = DeadReason::MissingTime;
        detail = RecordJudge::column_is_null(plan_.names[plan_.time_col]);
        return Verdict::Dead;
    case Kind::Micros: d.time = core::unix_micros_to_ms(t.i); break;
    case Kind::Int: d.time = t.i; break;  // bigint/integer epoch milliseconds
    default: return Verdict::Ask;
    }
    d.values.assign(plan_.names.size(), core::Value::missing());
    d.bad.clear();
    for (int c : p.value_cols_) {
        const format::FastValue v = fast(c);
        switch (v.kind) {
        case Kind::Null: break;
        case Kind::Int: d.values[c] = core::Value::of_int(v.i); break;
        case Kind::Big: d.values[c] = core::Value::of_big(v.big); break;
        case Kind::Double: d.values[c] = core::Value::of_double(v.d); break;
        default: return Verdict::Ask;
        }
    }
    reason = p.judge_record(d, now, detail);
    return reason == DeadReason::None ? Verdict::Staged : Verdict::Dead;
}

void ColumnsLane::resume(RecordPath& p, const SlowRecord& rec) {
    if (!blocked_) return;
    blocked_ = false;
    const Waiting& b = blocked_record_;
    p.count(b.tp, b.offset);
    DeadReason reason = rec.reason;
    std::string detail = rec.detail;
    if (reason == DeadReason::None) {
        RecordPath::Staged& st = p.next_staged();
        format::Decoded& d = st.record;
        if (!rec.key) {
            reason = DeadReason::MissingKey;
            detail = RecordJudge::column_is_null(plan_.names[plan_.key_col]);
        } else if (!rec.time) {
            reason = DeadReason::MissingTime;
            detail = RecordJudge::column_is_null(plan_.names[plan_.time_col]);
        } else {
            d.key = *rec.key;
            d.time = *rec.time;
            d.values = rec.values;
            d.values.resize(plan_.names.size(), core::Value::missing());
            d.bad = rec.bad;
            st.skipping = false;
            reason = p.judge_record(d, b.now, detail);
            if (reason == DeadReason::None) {
                // A value only some aggregations cannot use: their dead letters, as on the
                // JSON-path route (judge_values; none can use it: a dead letter of the source).
                if (d.bad.empty() ||
                    p.judge_values(b.tp, b.offset, b.payload.data(), b.payload.size(), st))
                    p.stage(b.tp, b.now);
            }
        }
    }
    if (reason != DeadReason::None)
        p.dead(RecordJudge::dead_letter(b.tp, b.offset, reason, detail, b.payload.data(),
                                        b.payload.size()));
    // The records that waited, in order, until one blocks again.
    while (!blocked_ && !waiting_.empty()) {
        Waiting w = std::move(waiting_.front());
        waiting_.pop_front();
        std::vector<format::KafkaHeader> hs;
        for (const auto& [name, value] : w.headers)
            hs.push_back({name, value ? value->data() : nullptr, value ? value->size() : 0});
        process_row(p, w.tp, w.offset, w.payload.data(), w.payload.size(),
                    w.has_key ? w.key.data() : nullptr, w.key.size(), w.kafka_ts, w.now, hs.data(),
                    hs.size());
    }
    p.release_ends();
}

}  // namespace stoatflow::flow
