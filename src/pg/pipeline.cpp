// A source's pipeline: decode → watermark → window engines per record (pure C++), and
// restore from the committed state tables.
#include "stoatflow/core/error.hpp"

#include <functional>
#include <map>
#include <set>
#include <string>

#include "stoatflow/pg/pipeline.hpp"
#include "stoatflow/pg/sink_writer.hpp"
#include "stoatflow/pg/spi.hpp"
#include "stoatflow/pg/text.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

namespace stoatflow::pg {

namespace {
constexpr core::Millis kPgEpochMs = 946684800000LL;  // 2000-01-01 in Unix milliseconds

kafka::DecoderConfig decoder_config(const SourceDef& src, const std::vector<AggregationDef>& aggs) {
    kafka::DecoderConfig cfg;
    cfg.key_path = src.key_path;
    cfg.time_path = src.event_time_path;
    cfg.max_key_bytes = src.max_key_bytes;
    cfg.future_limit = src.future_limit;
    std::set<std::string> seen;
    for (const auto& a : aggs)
        for (const auto& s : a.aggregates)
            if (!s.field.empty() && seen.insert(s.field).second) cfg.value_paths.push_back(s.field);
    return cfg;
}
}  // namespace

Datum millis_to_timestamptz(core::Millis ms) { return TimestampTzGetDatum((ms - kPgEpochMs) * 1000); }

SourcePipeline::SourcePipeline(SourceDef source, std::vector<AggregationDef> aggregations)
    : source_(std::move(source)), decoder_(decoder_config(source_, aggregations)),
      watermark_(source_.max_out_of_orderness, source_.idle_timeout) {
    const auto cfg = decoder_config(source_, aggregations);
    for (auto& def : aggregations) {
        Aggregation a;
        a.engine = std::make_unique<core::WindowedAggregation>(def.spec, def.aggregates, def.emit,
                                                               def.retention);
        for (const auto& s : def.aggregates) {
            int idx = -1;
            for (std::size_t i = 0; i < cfg.value_paths.size(); ++i)
                if (cfg.value_paths[i] == s.field) idx = static_cast<int>(i);
            a.value_index.push_back(idx);
        }
        a.values.resize(def.aggregates.size());
        a.def = std::move(def);
        aggs_.push_back(std::move(a));
    }
}

std::vector<Segment> load_segments(std::int32_t aggregation_id) {
    const auto n = spi_exec(
        "SELECT segment_start, span_ms, relname, relid FROM stoatflow.segment "
        "WHERE aggregation_id OPERATOR(pg_catalog.=) $1 ORDER BY segment_start",
        {arg_int32(aggregation_id)});
    std::vector<Segment> out;
    for (std::uint64_t r = 0; r < n; ++r)
        out.push_back({*spi_int64(r, 1), *spi_int64(r, 2), *spi_text(r, 3),
                       static_cast<Oid>(spi_int64(r, 4).value_or(InvalidOid))});
    return out;
}

core::Millis committed_watermark(std::int32_t aggregation_id) {
    if (spi_exec("SELECT p.watermark_ms FROM stoatflow.source_progress p JOIN stoatflow.aggregation a "
                 "USING (source_id) WHERE a.aggregation_id OPERATOR(pg_catalog.=) $1",
                 {arg_int32(aggregation_id)}) > 0 &&
        !spi_isnull(0, 1))
        return *spi_int64(0, 1);
    return core::kNoTime;
}

namespace {
// A segment table was read and its rows copied: its read lock can go now, not at commit.
// Restoring an aggregation with thousands of live segments would otherwise hold thousands of
// locks in one transaction, more than PostgreSQL's shared lock table may have room for.
void release_read_lock(Oid relid) {
    pg_call([&] {
        LOCKTAG tag;
        SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
        while (LockHeldByMe(&tag, AccessShareLock)) LockRelease(&tag, AccessShareLock, false);
    });
}
}  // namespace

void read_window_rows(const AggregationDef& /*def*/, const core::AggLayout& layout,
                      const std::vector<Segment>& segments,
                      const std::function<void(const core::WindowStateRow&)>& f) {
    // Each segment is an append-only log of window versions; the newest version per window
    // (highest commit) wins, across segments (a session moves as it grows). One segment at a
    // time, so that each one's lock is held only while it is read.
    struct Newest {
        core::WindowStateRow row;
        std::int64_t seq = 0;
    };
    std::map<std::pair<std::string, core::Millis>, Newest> newest;
    for (const auto& seg : segments) {
        const auto n = spi_exec(
            "SELECT DISTINCT ON (key, window_start) key, window_start, window_end, event_time, state, removed, "
            "commit_seq FROM stoatflow_state." +
            quote_ident(seg.relname) + " ORDER BY key, window_start, commit_seq DESC");
        for (std::uint64_t r = 0; r < n; ++r) {
            const std::int64_t seq = *spi_int64(r, 7);
            auto key = std::make_pair(*spi_text(r, 1), *spi_int64(r, 2));
            auto it = newest.find(key);
            if (it != newest.end() && it->second.seq >= seq) continue;
            core::WindowStateRow row;
            row.key = key.first;
            row.start = key.second;
            row.end = *spi_int64(r, 3);
            row.event_time = *spi_int64(r, 4);
            row.removed = *spi_bool(r, 6);
            if (!row.removed) {
                const auto bytes = spi_bytea(r, 5);
                if (!bytes) throw Error(sqlstate::kDataCorrupted, "window state row without state");
                row.cells = layout.deserialize(bytes->data(), bytes->size(), &row.floor);
            }
            newest[std::move(key)] = {std::move(row), seq};
        }
        Oid relid = seg.relid;
        if (!OidIsValid(relid)) {
            const char* relname = seg.relname.c_str();
            relid = pg_call([&] { return get_relname_relid(relname, get_namespace_oid("stoatflow_state", false)); });
        }
        if (OidIsValid(relid)) release_read_lock(relid);
    }
    for (const auto& [id, n] : newest) f(n.row);
}

void SourcePipeline::restore() {
    if (spi_exec("SELECT watermark_state, commit_seq FROM stoatflow.source_progress "
                 "WHERE source_id OPERATOR(pg_catalog.=) $1",
                 {arg_int32(source_.id)}) > 0) {
        watermark_.restore(*spi_text(0, 1));
        commit_seq_ = *spi_int64(0, 2);
    }
    const auto n = spi_exec("SELECT partition, next_offset FROM stoatflow.partition_offset "
                            "WHERE source_id OPERATOR(pg_catalog.=) $1",
                            {arg_int32(source_.id)});
    for (std::uint64_t r = 0; r < n; ++r)
        next_offsets_[static_cast<std::int32_t>(*spi_int64(r, 1))] = *spi_int64(r, 2);

    const core::Millis w = watermark_.current();
    w_at_commit_ = w;
    for (auto& a : aggs_) {
        if (spi_exec("SELECT records_in, dropped_late_window, dropped_late_session, windows_emitted, "
                     "windows_reemitted, sessions_merged, state_rows_written, state_bytes_written "
                     "FROM stoatflow.aggregation_progress WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
                     {arg_int32(a.def.id)}) > 0) {
            a.base.records_in = *spi_int64(0, 1);
            a.base.dropped_late_window = *spi_int64(0, 2);
            a.base.dropped_late_session = *spi_int64(0, 3);
            a.base.windows_emitted = *spi_int64(0, 4);
            a.base.windows_reemitted = *spi_int64(0, 5);
            a.base.sessions_merged = *spi_int64(0, 6);
            a.state_rows = *spi_int64(0, 7);
            a.state_bytes = *spi_int64(0, 8);
        }
        if (outbox_size(a.def.id) > 0) a.sink.owe();  // retried at the first commit
        const auto segs = load_segments(a.def.id);
        for (const auto& s : segs) a.segments[s.start] = s;
        read_window_rows(a.def, a.engine->layout(), segs,
                         [&](const core::WindowStateRow& row) { a.engine->restore(row, w); });
    }
}

std::vector<std::pair<std::string, std::size_t>> SourcePipeline::aggregation_memory() const {
    std::vector<std::pair<std::string, std::size_t>> out;
    for (const auto& a : aggs_) out.emplace_back(a.def.name, a.engine->memory_bytes());
    return out;
}

void SourcePipeline::tick(core::Millis now) {
    const core::Millis w = watermark_.tick(now);
    if (w != w_at_commit_ && w_moved_at_ == 0) w_moved_at_ = now;
}

bool SourcePipeline::note_end_of_partition(std::int32_t partition, std::int64_t offset) {
    auto it = next_offsets_.find(partition);
    if (it != next_offsets_.end() && it->second >= offset) return false;
    next_offsets_[partition] = offset;
    return true;
}

void SourcePipeline::skip_offsets(std::int32_t partition, std::int64_t from, std::int64_t to) {
    if (to <= from) return;
    next_offsets_[partition] = to;
    skipped_[partition] += to - from;
    dead_.push_back({partition, from, "offsets_skipped",
                     "offsets " + std::to_string(from) + " to " + std::to_string(to - 1) + " (" +
                         std::to_string(to - from) +
                         ") were deleted by the topic's retention before the source read them",
                     ""});
}

void SourcePipeline::process(std::int32_t partition, std::int64_t offset, const char* payload,
                             std::size_t len, const char* key, std::size_t key_len,
                             core::Millis kafka_ts, core::Millis now) {
    ++records_since_commit_;
    next_offsets_[partition] = offset + 1;
    if (staged_ == staged_records_.size()) drain();
    Staged& st = staged_records_[staged_];
    const auto err = decoder_.decode(payload, len, key, key_len, kafka_ts, now, st.record);
    if (err != kafka::DecodeError::None) {
        dead_.push_back({partition, offset, kafka::to_string(err), decoder_.detail(),
                         storable_text(payload, len, kDeadLetterPayloadBytes)});
        return;
    }
    // W is updated with each record before that record is judged: keep the value it is
    // judged against with it, so the batch sees exactly what record-at-a-time would.
    st.watermark = watermark_.observe(partition, st.record.time, now);
    if (st.watermark != w_at_commit_ && w_moved_at_ == 0) w_moved_at_ = now;
    ++staged_;
}

void SourcePipeline::drain() {
    if (staged_ == 0) return;
    for (auto& a : aggs_) {
        const std::size_t naggs = a.value_index.size();
        a.values.resize(staged_ * naggs);
        a.refs.resize(staged_);
        for (std::size_t r = 0; r < staged_; ++r) {
            const kafka::Decoded& d = staged_records_[r].record;
            core::Value* v = a.values.data() + r * naggs;
            for (std::size_t i = 0; i < naggs; ++i)
                v[i] = a.value_index[i] < 0 ? core::Value::missing() : d.values[a.value_index[i]];
            a.refs[r] = {d.key, d.time, v, staged_records_[r].watermark};
        }
        a.engine->process_batch(a.refs.data(), staged_);
    }
    staged_ = 0;
}

}  // namespace stoatflow::pg
