// The commit cycle's writing side: restore a source's record path from the committed state,
// and write each snapshot in the current transaction — changed window state (bulk, into
// segment tables), sink deletes and upserts (as the aggregation's owner), segment expiry,
// dead letters, progress and offsets.
#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "stoatflow/pg/worker/commit_cycle.hpp"
#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/border/sandbox.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/border/text.hpp"
#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/declare/declare.hpp"
#include "stoatflow/pg/worker/registry_schemas.hpp"

extern "C" {
#include "catalog/pg_type.h"
}

namespace stoatflow::pg {

flow::RecordPathConfig record_path_config(const SourceDef& src,
                                          const std::vector<AggregationDef>& aggs,
                                          const RowType* row_type, const ExecSet* exec) {
    flow::RecordPathConfig cfg;
    cfg.executor = exec != nullptr && exec->any();
    cfg.topics = src.topics;
    cfg.max_key_bytes = src.max_key_bytes;
    cfg.future_limit = src.future_limit;
    if (row_type != nullptr) {
        flow::RowPlan plan;
        for (std::size_t i = 0; i < row_type->width(); ++i) {
            plan.names.push_back(row_type->column(i).name);
            plan.fast.push_back(row_type->column(i).fast);
        }
        plan.paths = row_type->paths();
        plan.format = format::parse_record_format(src.format, src.format_options);
        // A format read through a schema registry: its schemas, fetched off the hot path
        // (README "Formats").
        if (plan.format.uses_registry())
            plan.format.schemas =
                registry_schemas(plan.format, declare::may_read_server_files(src.owner));
        plan.key_col = row_type->index_of(src.key_path.empty() ? "kafka_key" : src.key_path);
        plan.time_col = row_type->index_of(src.event_time_path.empty() ? "kafka_timestamp"
                                                                       : src.event_time_path);
        // An expression instead of a column (-1): the source runs in executor mode.
        if ((plan.key_col < 0 || plan.time_col < 0) && !cfg.executor)
            throw Error(sqlstate::kUndefinedColumn,
                        "source \"" + src.name + "\": key or event_time names no column");
        cfg.row = std::move(plan);
    } else {
        cfg.decoder.key_path = src.key_path;
        cfg.decoder.time_path = src.event_time_path;
        std::set<std::string> seen;
        for (const auto& a : aggs)
            for (const auto& s : a.aggregates)
                if (a.upstream_id == 0 && !s.field.empty() && seen.insert(s.field).second)
                    cfg.decoder.value_paths.push_back(s.field);
    }
    cfg.max_out_of_orderness = src.max_out_of_orderness;
    cfg.idle_timeout = src.idle_timeout;
    for (std::size_t i = 0; i < aggs.size(); ++i) {
        const AggregationDef& a = aggs[i];
        // A roll-up's upstream by its index (README "Roll-ups"); the list is ordered by id, so
        // an upstream comes first.
        int upstream = -1;
        for (std::size_t u = 0; u < i && a.upstream_id != 0; ++u)
            if (aggs[u].id == a.upstream_id) upstream = static_cast<int>(u);
        if (a.upstream_id != 0 && upstream < 0)
            throw Error(sqlstate::kDataCorrupted,
                        "roll-up \"" + a.name + "\" is run without its upstream aggregation");
        cfg.aggregations.push_back(
            path_aggregation(a, exec != nullptr ? exec->external[i] : nullptr, upstream));
    }
    return cfg;
}

flow::RecordPathConfig::Aggregation
path_aggregation(const AggregationDef& a, std::shared_ptr<core::ExternalAggregates> external,
                 int upstream) {
    return {a.name,
            a.spec,
            a.aggregates,
            a.emit,
            a.retention,
            a.segment_interval,
            std::move(external),
            a.committed_emit,
            upstream};
}

CommitCycle::CommitCycle(SourceDef source, std::vector<AggregationDef> aggregations,
                         flow::UserCodeLedger* ledger)
    : source_(std::move(source)), row_(make_row(source_)),
      exec_(make_exec(source_, aggregations, row_.get())),
      path_(
          record_path_config(source_, aggregations, row_ ? &row_->type() : nullptr, exec_.get())) {
    if (row_) {
        key_column_ = source_.key_path.empty() ? "kafka_key" : source_.key_path;
        time_column_ =
            source_.event_time_path.empty() ? "kafka_timestamp" : source_.event_time_path;
        for (const auto& a : aggregations) note_value_columns(a);
        // Executor mode converts only what is read: the event time, the fast path's key and
        // values, and the executors' columns (make_exec marked those).
        if (exec_) {
            exec_->used.resize(row_->type().width(), false);
            const int t = row_->type().index_of(time_column_),
                      k = row_->type().index_of(key_column_);
            if (t >= 0) exec_->used[t] = true;
            if (exec_->has_fast && k >= 0) exec_->used[k] = true;
            for (int c : value_columns_) exec_->used[c] = true;
        }
    }
    ledger_ = ledger != nullptr ? ledger : &own_ledger_;
    aggs_.reserve(aggregations.size());
    for (auto& def : aggregations) {
        SegmentStore segments(def.id, def.segment_interval, def.retention);
        aggs_.push_back({std::move(def), std::move(segments), SinkWriter{}, {}, 0, 0, -1});
    }
}

// With columns: the columns an aggregation's aggregates read (converted by decode_row).
void CommitCycle::note_value_columns(const AggregationDef& a) {
    for (const auto& s : a.aggregates) {
        // A roll-up's fields name its upstream's columns (README "Roll-ups").
        const int c = s.field.empty() || a.upstream_id != 0 ? -1 : row_->type().index_of(s.field);
        if (c >= 0 &&
            std::find(value_columns_.begin(), value_columns_.end(), c) == value_columns_.end())
            value_columns_.push_back(c);
    }
}

core::Millis committed_watermark(std::int32_t aggregation_id) {
    if (spi_exec("SELECT CASE WHEN b.aggregation_id IS NULL THEN p.watermark_ms ELSE "
                 "b.watermark_ms END FROM stoatflow.aggregation a LEFT JOIN "
                 "stoatflow.source_progress p ON p.source_id OPERATOR(pg_catalog.=) a.source_id "
                 "LEFT JOIN stoatflow.backfill b ON b.aggregation_id OPERATOR(pg_catalog.=) "
                 "a.aggregation_id WHERE a.aggregation_id OPERATOR(pg_catalog.=) $1",
                 {arg_int32(aggregation_id)}) == 0 ||
        spi_isnull(0, 1))
        return core::kNoTime;
    core::Millis w = *spi_int64(0, 1);
    // A roll-up's watermark trails its upstream's by the upstream's size + grace (README
    // "Roll-ups"), along the chain.
    for (std::int32_t id = aggregation_id;
         spi_exec("SELECT u.aggregation_id, u.size_ms OPERATOR(pg_catalog.+) u.grace_ms FROM "
                  "stoatflow.aggregation a JOIN stoatflow.aggregation u ON u.aggregation_id "
                  "OPERATOR(pg_catalog.=) a.upstream_id WHERE a.aggregation_id "
                  "OPERATOR(pg_catalog.=) $1",
                  {arg_int32(id)}) > 0;) {
        id = static_cast<std::int32_t>(*spi_int64(0, 1));
        w -= *spi_int64(0, 2);
    }
    return w;
}

void CommitCycle::restore() {
    if (backfill_ != 0) {
        if (spi_exec("SELECT watermark_state, commit_seq FROM stoatflow.backfill WHERE "
                     "aggregation_id OPERATOR(pg_catalog.=) $1 AND watermark_state IS NOT NULL",
                     {arg_int32(backfill_)}) > 0)
            path_.restore_progress(*spi_text(0, 1), *spi_int64(0, 2));
    } else if (spi_exec("SELECT watermark_state, commit_seq FROM stoatflow.source_progress "
                        "WHERE source_id OPERATOR(pg_catalog.=) $1",
                        {arg_int32(source_.id)}) > 0) {
        path_.restore_progress(*spi_text(0, 1), *spi_int64(0, 2));
    }
    const auto n =
        backfill_ != 0
            ? spi_exec("SELECT topic, partition, next_offset FROM stoatflow.backfill_offset "
                       "WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
                       {arg_int32(backfill_)})
            : spi_exec("SELECT topic, partition, next_offset FROM stoatflow.partition_offset "
                       "WHERE source_id OPERATOR(pg_catalog.=) $1",
                       {arg_int32(source_.id)});
    for (std::uint64_t r = 0; r < n; ++r) {
        const std::int32_t t = topic_index(source_, *spi_text(r, 1));
        if (t < 0)
            throw Error(sqlstate::kDataCorrupted,
                        "source \"" + source_.name + "\" has a committed offset for topic \"" +
                            *spi_text(r, 1) + "\", which is not one of its topics");
        path_.restore_offset({t, static_cast<std::int32_t>(*spi_int64(r, 2))}, *spi_int64(r, 3));
    }

    for (std::size_t i = 0; i < aggs_.size(); ++i) restore_aggregation(i);
    // README "Roll-ups": one added to a running upstream starts from the upstream's sink.
    if (backfill_ == 0)
        for (std::size_t i = 0; i < aggs_.size(); ++i)
            if (aggs_[i].def.upstream_id != 0 &&
                spi_exec("SELECT 1 FROM stoatflow.aggregation_progress p WHERE p.aggregation_id "
                         "OPERATOR(pg_catalog.=) $1 AND p.last_commit_at IS NULL",
                         {arg_int32(aggs_[i].def.id)}) > 0)
                seed_rollup(i);
}

// One aggregation's committed counters, sink, segments and live windows (restore(), adopt()).
void CommitCycle::restore_aggregation(std::size_t i) {
    Aggregation& a = aggs_[i];
    if (spi_exec(
            "SELECT records_in, dropped_late_window, dropped_late_session, windows_emitted, "
            "windows_reemitted, sessions_merged, state_rows_written, state_bytes_written, filtered "
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
        a.base.filtered = *spi_int64(0, 9);
    }
    a.sink.restore(a.def.id);
    a.segments.load();
    // An executor aggregation's states are read back by its owner's receive and
    // deserialization functions: the rows are read as the worker (the state tables are
    // not the owner's), then restored in the owner's sandbox.
    if (path_.layout(i).external() == nullptr) {
        a.segments.read_windows(path_.layout(i), [&](const core::WindowStateRow& row) {
            path_.restore_window(i, row);
        });
        return;
    }
    std::vector<core::WindowStateRow> rows;
    a.segments.read_windows(path_.layout(i),
                            [&](const core::WindowStateRow& row) { rows.push_back(row); });
    run_as_owner(a.def.owner, [&] {
        for (const auto& row : rows) path_.restore_window(i, row);
    });
}

// README "Backfill and start_from": the source worker adopts a joined backfill's aggregation
// without rebuilding the others. The backfill's join raised the source's commit_seq past its
// own commits; the path counts on from there, so the state rows written next are the newest.
bool CommitCycle::adopt(AggregationDef def) {
    if (backfill_ != 0 || def.executor || def.upstream_id != 0 ||
        !path_.adopt_aggregation(path_aggregation(def, nullptr, -1)))
        return false;
    if (row_) note_value_columns(def);
    SegmentStore segments(def.id, def.segment_interval, def.retention);
    aggs_.push_back({std::move(def), std::move(segments), SinkWriter{}, {}, 0, 0, -1});
    restore_aggregation(aggs_.size() - 1);
    if (spi_exec("SELECT commit_seq FROM stoatflow.source_progress WHERE source_id "
                 "OPERATOR(pg_catalog.=) $1",
                 {arg_int32(source_.id)}) > 0 &&
        !spi_isnull(0, 1))
        path_.raise_commit_seq(*spi_int64(0, 1));
    return true;
}

namespace {

// A sink column's text as the value a roll-up aggregate folds (flow::rollup_value's rule): count
// an integer, sum the exact integer when it is one, else (and min, max) the double.
core::Value sink_value(core::AggFn upstream_fn, const std::optional<std::string>& text) {
    if (!text) return core::Value::missing();
    char* end = nullptr;
    if (upstream_fn == core::AggFn::Count || upstream_fn == core::AggFn::CountStar ||
        upstream_fn == core::AggFn::Sum) {
        errno = 0;
        const long long v = std::strtoll(text->c_str(), &end, 10);
        if (errno == 0 && end != text->c_str() && *end == '\0') return core::Value::of_int(v);
    }
    return core::Value::of_double(std::strtod(text->c_str(), &end));
}

}  // namespace

void CommitCycle::seed_rollup(std::size_t i) {
    const AggregationDef& def = aggs_[i].def;
    const Aggregation* up = nullptr;
    for (const Aggregation& a : aggs_)
        if (a.def.id == def.upstream_id) up = &a;
    if (up == nullptr) return;
    const core::Millis w = committed_watermark(def.id);
    if (w == core::kNoTime) return;  // the source has not committed yet: nothing is final
    // Only windows whose roll-up window can still be open (seed_rollup judges each exactly).
    const core::Millis from = w - def.spec.size - def.spec.grace - def.spec.advance;
    std::string cols;
    std::vector<core::AggFn> fns;
    for (const core::AggSpec& s : def.aggregates) {
        cols += ", " + quote_ident(s.field) + "::pg_catalog.text";
        core::AggFn fn = core::AggFn::Sum;
        for (const core::AggSpec& u : up->def.aggregates)
            if (u.column == s.field) fn = u.fn;
        fns.push_back(fn);
    }
    const std::string sql =
        "SELECT key::pg_catalog.text, (pg_catalog.date_part('epoch', window_start) "
        "OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8" +
        cols + " FROM " + quote_ident(up->def.sink_schema) + "." + quote_ident(up->def.sink_table) +
        " WHERE final AND window_start OPERATOR(pg_catalog.>=) pg_catalog.to_timestamp($1 "
        "OPERATOR(pg_catalog./) 1000.0) ORDER BY window_start, key";
    std::int64_t seeded = 0;
    const std::string error = try_in_subtransaction([&] {
        run_as_owner(def.owner, [&] {
            const auto n = spi_exec(sql, {arg_int64(from)});
            std::vector<core::Value> values(fns.size());
            for (std::uint64_t r = 0; r < n; ++r) {
                for (std::size_t k = 0; k < fns.size(); ++k)
                    values[k] = sink_value(fns[k], spi_text(r, static_cast<int>(k) + 3));
                seeded +=
                    path_.seed_rollup(i, spi_text(r, 1).value_or(""), *spi_int64(r, 2), values);
            }
        });
    });
    const std::string msg =
        error.empty() ? "roll-up \"" + def.name + "\" starts with " + std::to_string(seeded) +
                            " final windows of aggregation \"" + up->def.name + "\" from its sink"
                      : "roll-up \"" + def.name +
                            "\" starts without the final windows in the "
                            "sink of aggregation \"" +
                            up->def.name + "\": " + error;
    pg_call([&] { elog(error.empty() ? LOG : WARNING, "stoatflow: %s", msg.c_str()); });
}

void CommitCycle::write_aggregation(std::size_t i, const flow::CommitSnapshot& snap,
                                    CommitCounts& counts) {
    Aggregation& agg = aggs_[i];
    const flow::CommitSnapshot::Aggregation& a = snap.aggs[i];
    const core::CommitOutput& out = a.out;
    const core::AggLayout& layout = path_.layout(i);
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const SegmentStore::Written written = agg.segments.write(layout, out.state, snap.seq);
    agg.state_rows += written.rows;
    agg.state_bytes += written.bytes;
    counts.state_bytes += written.bytes;
    const auto t1 = Clock::now();
    agg.sink.write(agg.def, layout, out, snap.now);
    counts.state_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    counts.sink_ms += std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    // Everything closed by W was emitted in this same commit, so the emit frontier is W under
    // both strategies; expiry runs behind it.
    // (A roll-up's watermark is its own: README "Roll-ups".)
    const core::Millis frontier = a.watermark;
    agg.segments.expire(frontier);
    // What this state has closed, committed with it: a restore under another grace keeps it
    // closed (README "Altering an aggregation").
    const core::Millis closed = path_.engine_spec(i).closed_frontier(a.watermark);
    const auto& st = a.stats;
    bool closed_some = false;
    for (const auto& u : out.upserts) closed_some |= u.final;
    if (closed_some)
        agg.freshness_lag =
            snap.w_moved_at > 0 ? std::max<core::Millis>(0, snap.now - snap.w_moved_at) : 0;
    const std::int64_t owed = agg.sink.owed_windows(agg.def.id);
    // The aggregation's own error: its sink's while that fails, else what its code last did
    // wrong (kept after recovery, like a source's last_error); status says which state it is in.
    std::string error = agg.sink.error();
    std::string status =
        error.empty() ? (backfill_ != 0 && !joining_ ? "backfilling" : "running") : "error";
    if (const flow::UserCodeLedger::Stall* st = ledger_->resting(agg.def.id, snap.now)) {
        status = "stalled";
        error = st->error;
    } else if (error.empty()) {
        const auto e = ledger_->last_error.find(agg.def.id);
        if (e != ledger_->last_error.end()) error = e->second;
    }
    spi_exec(
        "UPDATE stoatflow.aggregation_progress SET emit_frontier_ms = $2, records_in = $3, "
        "dropped_late_window = $4, dropped_late_session = $5, windows_emitted = $6, "
        "windows_reemitted = $7, sessions_merged = $8, state_rows_written = $9, "
        "state_bytes_written = $10, open_windows = $11, keys_with_open_windows = $12, "
        "freshness_lag_ms = coalesce($13, freshness_lag_ms), last_commit_at = pg_catalog.now(), "
        "last_error = CASE WHEN $14 OPERATOR(pg_catalog.=) '' THEN NULL ELSE $14 END, sink_owed = $15, "
        "filtered = $16, status = $17, closed_through_ms = $18, state_emit = $19, "
        "memory_bytes = $20 "
        "WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
        {arg_int32(agg.def.id),
         frontier == core::kNoTime ? arg_null(INT8OID) : arg_int64(frontier),
         arg_int64(agg.base.records_in + st.records_in),
         arg_int64(agg.base.dropped_late_window + st.dropped_late_window),
         arg_int64(agg.base.dropped_late_session + st.dropped_late_session),
         arg_int64(agg.base.windows_emitted + st.windows_emitted),
         arg_int64(agg.base.windows_reemitted + st.windows_reemitted),
         arg_int64(agg.base.sessions_merged + st.sessions_merged),
         arg_int64(agg.state_rows),
         arg_int64(agg.state_bytes),
         arg_int64(a.open_windows),
         arg_int64(a.keys_with_open_windows),
         agg.freshness_lag < 0 ? arg_null(INT8OID) : arg_int64(agg.freshness_lag),
         arg_text(error),
         arg_int64(owed),
         arg_int64(agg.base.filtered + st.filtered),
         arg_text(status),
         closed == core::kNoTime ? arg_null(INT8OID) : arg_int64(closed),
         arg_text(core::to_string(path_.engine_emit(i))),
         arg_int64(a.memory_bytes)});
}

void CommitCycle::commit(core::Millis now) { write(take_snapshot(now)); }

flow::CommitSnapshot CommitCycle::take_snapshot(core::Millis now) {
    // Serializing an executor aggregation's states runs its owner's send and serialization
    // functions: each in its sandbox.
    return path_.take_snapshot(now, [this](std::size_t i, const std::function<void()>& body) {
        run_as_owner(aggs_[i].def.owner, body);
    });
}

CommitCounts CommitCycle::write(const flow::CommitSnapshot& snap) {
    CommitCounts counts;
    counts.records = snap.records;
    counts.dead_letters = static_cast<std::int64_t>(snap.dead.size());
    for (std::size_t i = 0; i < aggs_.size(); ++i) {
        write_aggregation(i, snap, counts);
        counts.state_rows += static_cast<std::int64_t>(snap.aggs[i].out.state.size());
        counts.sink_rows += static_cast<std::int64_t>(snap.aggs[i].out.upserts.size());
        counts.sink_deletes += static_cast<std::int64_t>(snap.aggs[i].out.deletes.size());
    }
    if (backfill_ != 0) {
        write_backfill_progress(snap);
        return counts;
    }
    write_dead_letters(snap);
    write_progress(snap);
    return counts;
}

// A backfill's commit: its watermark and positions (README "Backfill and start_from"). Joining,
// the backfill row goes instead; the source's commit_seq is raised to the backfill's so that the
// source's next commits write state rows newer than the backfill's (a segment keeps the newest
// row of a window by commit_seq). The source worker holds meanwhile and commits nothing.
void CommitCycle::write_backfill_progress(const flow::CommitSnapshot& snap) {
    if (joining_) {
        spi_exec("UPDATE stoatflow.source_progress SET commit_seq = "
                 "GREATEST(commit_seq, $2) WHERE source_id OPERATOR(pg_catalog.=) $1",
                 {arg_int32(source_.id), arg_int64(snap.seq)});
        spi_exec("DELETE FROM stoatflow.backfill WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
                 {arg_int32(backfill_)});
        return;
    }
    spi_exec("UPDATE stoatflow.backfill SET watermark_ms = $2, watermark_state = $3, commit_seq = "
             "$4, committed_at = pg_catalog.now() WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
             {arg_int32(backfill_),
              snap.watermark == core::kNoTime ? arg_null(INT8OID) : arg_int64(snap.watermark),
              arg_text(snap.watermark_state), arg_int64(snap.seq)});
    if (snap.next_offsets.empty()) return;
    std::vector<Datum> topics, parts, offsets;
    for (const auto& [tp, o] : snap.next_offsets) {
        topics.push_back(text_datum(path_.topic_name(tp.topic)));
        parts.push_back(Int32GetDatum(tp.partition));
        offsets.push_back(Int64GetDatum(o));
    }
    spi_exec("INSERT INTO stoatflow.backfill_offset (aggregation_id, topic, partition, "
             "next_offset) SELECT $1, t, p, o FROM " +
                 unnest_rows(3, 2) +
                 " AS u(t, p, o) ON CONFLICT (aggregation_id, topic, partition) DO UPDATE SET "
                 "next_offset = EXCLUDED.next_offset",
             {arg_int32(backfill_),
              {TEXTARRAYOID, make_array(topics, {}, TEXTOID)},
              {INT4ARRAYOID, make_array(parts, {}, INT4OID)},
              {INT8ARRAYOID, make_array(offsets, {}, INT8OID)}});
}

void CommitCycle::write_dead_letters(const flow::CommitSnapshot& snap) {
    if (snap.dead.empty()) return;
    std::vector<Datum> topics, parts, offsets, reasons, details, payloads;
    for (const auto& d : snap.dead) {
        topics.push_back(text_datum(path_.topic_name(d.from.topic)));
        parts.push_back(Int32GetDatum(d.from.partition));
        offsets.push_back(Int64GetDatum(d.offset));
        reasons.push_back(text_datum(d.reason));
        details.push_back(
            text_datum(storable_text(d.detail.data(), d.detail.size(), kDeadLetterDetailBytes)));
        payloads.push_back(text_datum(d.payload));
    }
    spi_exec(
        "INSERT INTO stoatflow.dead_letters (source_name, topic, partition, \"offset\", reason, detail, payload) "
        "SELECT $1, t, p, o, r, d, y FROM " +
            unnest_rows(6, 2) + " AS u(t, p, o, r, d, y)",
        {arg_text(source_.name),
         {TEXTARRAYOID, make_array(topics, {}, TEXTOID)},
         {INT4ARRAYOID, make_array(parts, {}, INT4OID)},
         {INT8ARRAYOID, make_array(offsets, {}, INT8OID)},
         {TEXTARRAYOID, make_array(reasons, {}, TEXTOID)},
         {TEXTARRAYOID, make_array(details, {}, TEXTOID)},
         {TEXTARRAYOID, make_array(payloads, {}, TEXTOID)}});
}

void CommitCycle::write_progress(const flow::CommitSnapshot& snap) {
    spi_exec(
        "INSERT INTO stoatflow.source_progress (source_id, watermark_ms, watermark_state, commit_seq, committed_at) "
        "VALUES ($1, $2, $3, $4, pg_catalog.now()) ON CONFLICT (source_id) DO UPDATE SET "
        "watermark_ms = EXCLUDED.watermark_ms, watermark_state = EXCLUDED.watermark_state, "
        "commit_seq = EXCLUDED.commit_seq, committed_at = EXCLUDED.committed_at",
        {arg_int32(source_.id),
         snap.watermark == core::kNoTime ? arg_null(INT8OID) : arg_int64(snap.watermark),
         arg_text(snap.watermark_state), arg_int64(snap.seq)});
    if (snap.next_offsets.empty()) return;
    std::vector<Datum> topics, parts, offsets, skipped;
    for (const auto& [tp, o] : snap.next_offsets) {
        topics.push_back(text_datum(path_.topic_name(tp.topic)));
        parts.push_back(Int32GetDatum(tp.partition));
        offsets.push_back(Int64GetDatum(o));
        const auto s = snap.skipped.find(tp);
        skipped.push_back(Int64GetDatum(s == snap.skipped.end() ? 0 : s->second));
    }
    spi_exec(
        "INSERT INTO stoatflow.partition_offset (source_id, topic, partition, next_offset, offsets_skipped) "
        "SELECT $1, t, p, o, s FROM " +
            unnest_rows(4, 2) +
            " AS u(t, p, o, s) "
            "ON CONFLICT (source_id, topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset, "
            "offsets_skipped = partition_offset.offsets_skipped OPERATOR(pg_catalog.+) EXCLUDED.offsets_skipped",
        {arg_int32(source_.id),
         {TEXTARRAYOID, make_array(topics, {}, TEXTOID)},
         {INT4ARRAYOID, make_array(parts, {}, INT4OID)},
         {INT8ARRAYOID, make_array(offsets, {}, INT8OID)},
         {INT8ARRAYOID, make_array(skipped, {}, INT8OID)}});
}

}  // namespace stoatflow::pg
