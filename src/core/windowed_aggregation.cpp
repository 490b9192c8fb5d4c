// The window engine for one aggregation: records to the assigner of their window kind,
// and at a commit the state rows and sink rows of closed, forgotten and changed windows.
#include "stoatflow/core/windowed_aggregation.hpp"

#include "stoatflow/core/error.hpp"

#include <algorithm>

namespace stoatflow::core {

const char* to_string(DropReason r) {
    return r == DropReason::LateWindow ? "late_window" : "late_session";
}

namespace {
// The built-in aggregates, checked; none at all is fine when external ones are there.
std::vector<AggSpec> checked(std::vector<AggSpec> aggregates, bool external) {
    return external && aggregates.empty() ? aggregates
                                          : normalize_aggregates(std::move(aggregates));
}
}  // namespace

WindowedAggregation::WindowedAggregation(WindowSpec spec, std::vector<AggSpec> aggregates,
                                         EmitStrategy emit, Millis retention,
                                         Millis segment_interval,
                                         std::shared_ptr<ExternalAggregates> external)
    : store_(spec, AggLayout(checked(std::move(aggregates), external != nullptr), external),
             retention, segment_interval),
      grid_(store_), sliding_(store_), session_(store_), emitter_(emit, store_.ext()),
      committed_emit_(emit) {
    if (store_.ext() && spec.kind == WindowKind::Session && !store_.ext()->can_merge())
        throw Error(sqlstate::kFeatureNotSupported,
                    "session windows need aggregates that can be combined",
                    "Every aggregate of a session window needs a combine function.");
}

// ---------------------------------------------------------------------------------
// Records in

void WindowedAggregation::process(std::string_view key, Millis t, const Value* values,
                                  Millis watermark, const void* row) {
    process_one(store_.keys().find_or_insert(key), t, values, watermark, row);
}

void WindowedAggregation::process_batch(const RecordRef* records, std::size_t n) {
    constexpr std::size_t kGroup = 16;
    std::uint64_t hashes[kGroup];
    WindowStore::KeyMap& keys = store_.keys();
    for (std::size_t base = 0; base < n; base += kGroup) {
        const std::size_t m = std::min(kGroup, n - base);
        for (std::size_t i = 0; i < m; ++i) {
            hashes[i] = WindowStore::KeyMap::hash_of(records[base + i].key);
            keys.prefetch_slot(hashes[i]);
        }
        for (std::size_t i = 0; i < m; ++i) keys.prefetch_entry(hashes[i]);
        for (std::size_t i = 0; i < m; ++i) {
            // the key's newest window, every line of it (grid kinds mostly hit it; the
            // flags sit at its head, the cells further on)
            if (const auto* e = keys.peek(hashes[i]); e && !e->second.windows.empty()) {
                const char* w = reinterpret_cast<const char*>(&e->second.windows.back());
                for (std::size_t off = 0; off < sizeof(WindowState); off += 64)
                    __builtin_prefetch(w + off);
            }
        }
        for (std::size_t i = 0; i < m; ++i) {
            const RecordRef& r = records[base + i];
            process_one(keys.find_or_insert(r.key, hashes[i]), r.t, r.values, r.watermark, r.row);
        }
    }
}

void WindowedAggregation::process_one(KeyIt kit, Millis t, const Value* values, Millis watermark,
                                      const void* row) {
    ++stats_.records_in;
    store_.set_record(row);
    switch (store_.spec().kind) {
    case WindowKind::Tumbling:
    case WindowKind::Hopping: grid_.assign(kit, t, values, watermark, stats_); break;
    case WindowKind::Sliding: sliding_.assign(kit, t, values, watermark, stats_); break;
    case WindowKind::Session: session_.assign(kit, t, values, watermark, stats_); break;
    }
    store_.erase_if_unused(kit);  // all late
}

// ---------------------------------------------------------------------------------
// Commit

void WindowedAggregation::flush(Millis watermark, CommitOutput& out) {
    const WindowSpec& spec = store_.spec();
    const SegmentLayout& segments = store_.segments();
    WindowStore::Sweep sweep = store_.take_removals(out);
    out.state.reserve(out.state.size() + store_.pending_changes());
    out.upserts.reserve(out.upserts.size() + emitter_.rows_for_changes(store_.pending_changes()));

    // Windows the watermark has closed: their final row, then they leave memory (grid
    // windows at once; sliding windows and sessions at their eviction_time).
    store_.close_due(watermark, sweep, [&](KeyIt kit, WindowState& ws) {
        // Every window the sink receives has its state row, written in the same commit
        // unless an earlier one already holds this very version: the state tables then
        // hold every window within retention, and the sink can be rewritten from them.
        // (Restore still skips closed windows, except sliding ones later windows derive from.)
        if (spec.kind == WindowKind::Session) {
            // A closed session's final version goes to the segment of last + gap: kept
            // until W ≥ end + retention + gap at least, as long as the session is
            // remembered (eviction_time). Unless W is past that already.
            const Millis later = segments.segment_of(ws.end - 1 + spec.size);
            if (!segments.expired(later, watermark))
                store_.state_row(kit->first, ws, out, later);
            else if (ws.dirty || !ws.persisted)
                store_.state_row(kit->first, ws, out);
        } else if (ws.dirty || !ws.persisted) {
            store_.state_row(kit->first, ws, out);
        }
        ws.dirty = false;
        emitter_.closed(kit->first, ws, out, stats_);
    });
    store_.evict_due(watermark, sweep, [&](KeyIt kit, Millis start, Millis end) {
        if (spec.kind == WindowKind::Session) session_.forgotten(kit, start, end, out);
    });
    // Windows changed since the last commit and still open.
    store_.take_changed(sweep, [&](KeyIt kit, WindowState& ws) {
        store_.state_row(kit->first, ws, out);
        emitter_.changed(kit->first, ws, out, stats_);
    });
    store_.end_sweep(sweep);
}

void WindowedAggregation::restore(const WindowStateRow& row, Millis watermark) {
    const WindowSpec& spec = store_.spec();
    if (row.removed) return;
    // Closed in the committed state: by the closed frontier committed with it when there is one
    // (after alter_aggregation the grace may differ from the one that state was made under: a
    // window the new grace would close is still open, and closes at the next flush).
    const bool closed = spec.closed_through != kNoTime ? row.end <= spec.closed_through
                                                       : spec.is_closed(row.end, watermark);
    // Closed windows are final and emitted already; sliding windows and sessions come back
    // as closed ones until their eviction_time, as in an uninterrupted run.
    if (closed && (!(spec.kind == WindowKind::Sliding || spec.kind == WindowKind::Session) ||
                   watermark >= store_.eviction_time(row.start, row.end)))
        return;
    if (row.cells.size() != store_.layout().size())
        throw Error(sqlstate::kDataCorrupted, "restored window state has the wrong aggregates");
    ExternalAggregates* ext = store_.ext();
    if (!ext && !row.external.empty())
        throw Error(sqlstate::kDataCorrupted,
                    "restored window state has external aggregates' state the aggregation lacks");
    KeyIt kit = store_.keys().find_or_insert(row.key);
    if (WindowStore::find_window(kit, row.start)) return;
    ExternalState ext_state;
    if (ext) {
        try {
            ext_state =
                ExternalState(ext, ext->deserialize(row.external.data(), row.external.size()));
        } catch (...) {
            store_.erase_if_unused(kit);
            throw;
        }
    }
    WindowState& ws = store_.open_window(kit, row.start, row.end, false);
    ws.cells = row.cells;
    ws.ext = std::move(ext_state);
    ws.max_time = row.event_time;
    ws.persisted = true;
    // A session's floor comes with its state; rows without one (written by 0.1) get the
    // forgotten zone of now, which may refuse more than an uninterrupted run would.
    if (spec.kind == WindowKind::Session)
        ws.floor = row.floor ? *row.floor : session_.forgotten_zone(watermark);
    if (Emitter::in_sink(committed_emit_, closed)) {
        ws.emitted_start = ws.start;
        ws.ever_emitted = true;
    }
    if (closed) {
        store_.mark_closed(kit, ws);
        store_.schedule_eviction(kit, ws);
    } else if (!ws.ever_emitted && emitter_.strategy() == EmitStrategy::OnWindowUpdate) {
        store_.touch(kit, ws);  // on_window_close → on_window_update: written at the next commit
    }
}

}  // namespace stoatflow::core
