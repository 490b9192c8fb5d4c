// The commit cycle: everything one commit must make durable, written in the current
// transaction — changed window state (bulk, into segment tables), sink deletes and
// upserts (as the aggregation's owner), segment expiry, dead letters and progress.
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/segment_layout.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/pipeline.hpp"
#include "stoatflow/pg/rows.hpp"
#include "stoatflow/pg/sink_writer.hpp"
#include "stoatflow/pg/spi.hpp"
#include "stoatflow/pg/text.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
}

namespace stoatflow::pg {

namespace {

std::string segment_relname(std::int32_t agg_id, core::Millis start) {
    return "a" + std::to_string(agg_id) + "_" + (start < 0 ? "m" + std::to_string(-start) : std::to_string(start));
}

Columns state_columns() {
    Columns c;
    c.add("key", TEXTOID);
    c.add("window_start", INT8OID);
    c.add("window_end", INT8OID);
    c.add("event_time", INT8OID);
    c.add("state", BYTEAOID);
    c.add("removed", BOOLOID);
    c.add("commit_seq", INT8OID);
    return c;
}

}  // namespace

Segment& SourcePipeline::segment_for(Aggregation& agg, core::Millis start) {
    auto it = agg.segments.find(start);
    if (it != agg.segments.end()) return it->second;
    Segment seg{start, agg.def.segment_interval, segment_relname(agg.def.id, start)};
    // Index-free append-only log of window versions, tagged with the commit that wrote them.
    spi_exec("CREATE TABLE stoatflow_state." + quote_ident(seg.relname) +
             " (key text NOT NULL, window_start bigint NOT NULL, window_end bigint NOT NULL, "
             "event_time bigint NOT NULL, state bytea, removed boolean NOT NULL, "
             "commit_seq bigint NOT NULL)");
    const char* relname = seg.relname.c_str();
    seg.relid = pg_call([&] { return get_relname_relid(relname, get_namespace_oid("stoatflow_state", false)); });
    // relid: stoatflow.stats sizes segments by id, so a segment dropped meanwhile is just gone.
    spi_exec("INSERT INTO stoatflow.segment (aggregation_id, segment_start, span_ms, relname, relid) "
             "VALUES ($1, $2, $3, $4, $5)",
             {arg_int32(agg.def.id), arg_int64(seg.start), arg_int64(seg.span), arg_text(seg.relname),
              {OIDOID, ObjectIdGetDatum(seg.relid)}});
    return agg.segments.emplace(start, seg).first->second;
}

void SourcePipeline::write_state(Aggregation& agg, const std::vector<core::WindowStateRow>& rows,
                                 std::int64_t seq) {
    if (rows.empty()) return;
    // Group by segment: one multi-row INSERT per segment table.
    std::map<core::Millis, std::vector<const core::WindowStateRow*>> by_segment;
    for (const auto& r : rows) by_segment[r.segment].push_back(&r);
    std::string bytes;
    for (const auto& [seg_start, group] : by_segment) {
        Segment& seg = segment_for(agg, seg_start);
        // Row-major values of the 7 columns, appended without the executor; should the table
        // have been changed by hand (an index, a trigger, a column), by INSERT instead.
        constexpr int kCols = 7;
        std::vector<Datum> values;
        std::vector<bool> nulls;
        values.reserve(group.size() * kCols);
        nulls.reserve(group.size() * kCols);
        for (const auto* r : group) {
            if (!r->removed) {
                bytes.clear();
                agg.engine->layout().serialize(r->cells.data(), bytes, r->floor);
                agg.state_bytes += static_cast<std::int64_t>(bytes.size());
            }
            const Datum row[kCols] = {text_datum(r->key),       Int64GetDatum(r->start),
                                      Int64GetDatum(r->end),     Int64GetDatum(r->event_time),
                                      r->removed ? (Datum)0 : bytea_datum(bytes),
                                      BoolGetDatum(r->removed), Int64GetDatum(seq)};
            for (int c = 0; c < kCols; ++c) {
                values.push_back(row[c]);
                nulls.push_back(c == 4 && r->removed);
            }
        }
        if (!OidIsValid(seg.relid)) {
            const char* relname = seg.relname.c_str();
            seg.relid = pg_call([&] { return get_relname_relid(relname, get_namespace_oid("stoatflow_state", false)); });
        }
        append_or_insert(seg.relid, "stoatflow_state." + quote_ident(seg.relname), state_columns(), values, nulls, false);
        spi_exec("UPDATE stoatflow.segment SET rows_written = rows_written OPERATOR(pg_catalog.+) $3 "
                 "WHERE aggregation_id OPERATOR(pg_catalog.=) $1 AND segment_start OPERATOR(pg_catalog.=) $2",
                 {arg_int32(agg.def.id), arg_int64(seg.start), arg_int64(static_cast<std::int64_t>(group.size()))});
        agg.state_rows += static_cast<std::int64_t>(group.size());
    }
}

// A failing sink stalls only its own aggregation (SPEC 10): its writes run in a subtransaction;
// when they fail, what this commit owed the sink goes to the outbox instead (same transaction as
// the state, so nothing is lost or doubled across crashes) and the aggregation retries with
// backoff; once a write succeeds, the outbox drains into the sink in that commit.
void SourcePipeline::write_sink(Aggregation& agg, const core::CommitOutput& out, core::Millis now) {
    const auto& layout = agg.engine->layout();
    const bool owed = agg.sink.owed();
    if (owed) outbox_add(agg.def.id, layout, out.deletes, out.upserts);
    if (!owed && out.deletes.empty() && out.upserts.empty()) return;
    if (agg.sink.waiting(now)) return;
    Oid sink = InvalidOid;
    const std::string failure = try_in_subtransaction([&] {
        sink = resolve_sink(agg.def);
        if (owed) {
            outbox_flush(agg.def, layout, sink);
        } else {
            std::vector<const core::SinkRow*> upserts;
            upserts.reserve(out.upserts.size());
            for (const auto& u : out.upserts) upserts.push_back(&u);
            write_sink_rows(agg.def, layout, sink, out.deletes, upserts);
        }
    });
    if (failure.empty()) {
        if (sink != agg.def.sink) {  // re-created by name: from now on, this table
            spi_exec("UPDATE stoatflow.aggregation SET sink = $2 WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
                     {arg_int32(agg.def.id), {OIDOID, ObjectIdGetDatum(sink)}});
            agg.def.sink = sink;
        }
        agg.sink.succeeded();
        return;
    }
    if (!owed) outbox_add(agg.def.id, layout, out.deletes, out.upserts);
    agg.sink.failed(now, failure);
    const std::string name = agg.def.name;
    pg_call([&] {
        ereport(LOG, (errmsg("stoatflow aggregation \"%s\": sink write failed, retrying in %lld ms: %s", name.c_str(),
                             static_cast<long long>(agg.sink.delay()), failure.c_str())));
    });
}

void SourcePipeline::expire_segments(Aggregation& agg, core::Millis frontier) {
    // Whole-segment drops only; sink tables are never touched by expiry.
    for (auto it = agg.segments.begin(); it != agg.segments.end();) {
        const Segment& s = it->second;
        if (!core::SegmentLayout::expired(s.start, s.span, frontier, agg.def.retention)) break;
        spi_exec("DROP TABLE IF EXISTS stoatflow_state." + quote_ident(s.relname));
        spi_exec("DELETE FROM stoatflow.segment WHERE aggregation_id OPERATOR(pg_catalog.=) $1 "
                 "AND segment_start OPERATOR(pg_catalog.=) $2",
                 {arg_int32(agg.def.id), arg_int64(s.start)});
        it = agg.segments.erase(it);
    }
}

void SourcePipeline::write_aggregation(Aggregation& agg, const CommitSnapshot::Aggregation& a,
                                       const CommitSnapshot& snap, CommitCounts& counts) {
    const core::CommitOutput& out = a.out;
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    write_state(agg, out.state, snap.seq);
    const auto t1 = Clock::now();
    write_sink(agg, out, snap.now);
    counts.state_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    counts.sink_ms += std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    // Everything closed by W was emitted in this same commit, so the emit frontier is W under
    // both strategies; expiry runs behind it.
    const core::Millis frontier = snap.watermark;
    expire_segments(agg, frontier);
    const auto& st = a.stats;
    bool closed_some = false;
    for (const auto& u : out.upserts) closed_some |= u.final;
    if (closed_some)
        agg.freshness_lag = snap.w_moved_at > 0 ? std::max<core::Millis>(0, snap.now - snap.w_moved_at) : 0;
    const std::int64_t owed = agg.sink.owed() ? outbox_size(agg.def.id) : 0;
    spi_exec(
        "UPDATE stoatflow.aggregation_progress SET emit_frontier_ms = $2, records_in = $3, "
        "dropped_late_window = $4, dropped_late_session = $5, windows_emitted = $6, "
        "windows_reemitted = $7, sessions_merged = $8, state_rows_written = $9, "
        "state_bytes_written = $10, open_windows = $11, keys_with_open_windows = $12, "
        "freshness_lag_ms = coalesce($13, freshness_lag_ms), last_commit_at = pg_catalog.now(), "
        "last_error = CASE WHEN $14 OPERATOR(pg_catalog.=) '' THEN NULL ELSE $14 END, sink_owed = $15 "
        "WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
        {arg_int32(agg.def.id), frontier == core::kNoTime ? arg_null(INT8OID) : arg_int64(frontier),
         arg_int64(agg.base.records_in + st.records_in),
         arg_int64(agg.base.dropped_late_window + st.dropped_late_window),
         arg_int64(agg.base.dropped_late_session + st.dropped_late_session),
         arg_int64(agg.base.windows_emitted + st.windows_emitted),
         arg_int64(agg.base.windows_reemitted + st.windows_reemitted),
         arg_int64(agg.base.sessions_merged + st.sessions_merged), arg_int64(agg.state_rows),
         arg_int64(agg.state_bytes), arg_int64(a.open_windows), arg_int64(a.keys_with_open_windows),
         agg.freshness_lag < 0 ? arg_null(INT8OID) : arg_int64(agg.freshness_lag), arg_text(agg.sink.error()),
         arg_int64(owed)});
}

CommitSnapshot SourcePipeline::take_snapshot(core::Millis now) {
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
        engine.flush(snap.watermark, snap.aggs[i].out);
        snap.aggs[i].stats = engine.stats();
        snap.aggs[i].open_windows = static_cast<std::int64_t>(engine.open_windows());
        snap.aggs[i].keys_with_open_windows = static_cast<std::int64_t>(engine.keys_with_open_windows());
    }
    records_since_commit_ = 0;
    w_at_commit_ = snap.watermark;
    w_moved_at_ = 0;
    return snap;
}

void SourcePipeline::commit(core::Millis now) { write(take_snapshot(now)); }

CommitCounts SourcePipeline::write(const CommitSnapshot& snap) {
    CommitCounts counts;
    counts.records = snap.records;
    counts.dead_letters = static_cast<std::int64_t>(snap.dead.size());
    for (std::size_t i = 0; i < aggs_.size(); ++i) {
        const std::int64_t bytes_before = aggs_[i].state_bytes;
        write_aggregation(aggs_[i], snap.aggs[i], snap, counts);
        counts.state_bytes += aggs_[i].state_bytes - bytes_before;
        counts.state_rows += static_cast<std::int64_t>(snap.aggs[i].out.state.size());
        counts.sink_rows += static_cast<std::int64_t>(snap.aggs[i].out.upserts.size());
        counts.sink_deletes += static_cast<std::int64_t>(snap.aggs[i].out.deletes.size());
    }
    if (!snap.dead.empty()) {
        std::vector<Datum> parts, offsets, reasons, details, payloads;
        for (const auto& d : snap.dead) {
            parts.push_back(Int32GetDatum(d.partition));
            offsets.push_back(Int64GetDatum(d.offset));
            reasons.push_back(text_datum(d.reason));
            details.push_back(text_datum(storable_text(d.detail.data(), d.detail.size(), kDeadLetterDetailBytes)));
            payloads.push_back(text_datum(d.payload));
        }
        spi_exec("INSERT INTO stoatflow.dead_letters (source_name, partition, \"offset\", reason, detail, payload) "
                 "SELECT $1, p, o, r, d, y FROM " + unnest_rows(5, 2) + " AS u(p, o, r, d, y)",
                 {arg_text(source_.name), {INT4ARRAYOID, make_array(parts, {}, INT4OID)},
                  {INT8ARRAYOID, make_array(offsets, {}, INT8OID)},
                  {TEXTARRAYOID, make_array(reasons, {}, TEXTOID)},
                  {TEXTARRAYOID, make_array(details, {}, TEXTOID)},
                  {TEXTARRAYOID, make_array(payloads, {}, TEXTOID)}});
    }
    spi_exec("INSERT INTO stoatflow.source_progress (source_id, watermark_ms, watermark_state, commit_seq, committed_at) "
             "VALUES ($1, $2, $3, $4, pg_catalog.now()) ON CONFLICT (source_id) DO UPDATE SET "
             "watermark_ms = EXCLUDED.watermark_ms, watermark_state = EXCLUDED.watermark_state, "
             "commit_seq = EXCLUDED.commit_seq, committed_at = EXCLUDED.committed_at",
             {arg_int32(source_.id), snap.watermark == core::kNoTime ? arg_null(INT8OID) : arg_int64(snap.watermark),
              arg_text(snap.watermark_state), arg_int64(snap.seq)});
    if (!snap.next_offsets.empty()) {
        std::vector<Datum> parts, offsets, skipped;
        for (const auto& [p, o] : snap.next_offsets) {
            parts.push_back(Int32GetDatum(p));
            offsets.push_back(Int64GetDatum(o));
            const auto s = snap.skipped.find(p);
            skipped.push_back(Int64GetDatum(s == snap.skipped.end() ? 0 : s->second));
        }
        spi_exec("INSERT INTO stoatflow.partition_offset (source_id, partition, next_offset, offsets_skipped) "
                 "SELECT $1, p, o, s FROM " + unnest_rows(3, 2) + " AS u(p, o, s) "
                 "ON CONFLICT (source_id, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset, "
                 "offsets_skipped = partition_offset.offsets_skipped OPERATOR(pg_catalog.+) EXCLUDED.offsets_skipped",
                 {arg_int32(source_.id), {INT4ARRAYOID, make_array(parts, {}, INT4OID)},
                  {INT8ARRAYOID, make_array(offsets, {}, INT8OID)},
                  {INT8ARRAYOID, make_array(skipped, {}, INT8OID)}});
    }
    return counts;
}

}  // namespace stoatflow::pg
