// One windowed aggregation over a stream of records: each record goes to the assigner of
// its window kind (GridAssigner, SlidingAssigner, SessionMerger), which folds it into the
// key's windows in the WindowStore; at each commit the aggregation decides what the state
// tables receive and, through its Emitter, what the sink receives.
#pragma once
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/emit/commit_output.hpp"
#include "stoatflow/core/emit/emit_strategy.hpp"
#include "stoatflow/core/emit/emitter.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window/grid_assigner.hpp"
#include "stoatflow/core/window/session_merger.hpp"
#include "stoatflow/core/window/sliding_assigner.hpp"
#include "stoatflow/core/window/window_assigner.hpp"
#include "stoatflow/core/window/window_state.hpp"
#include "stoatflow/core/window/window_store.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace stoatflow::core {

enum class DropReason { LateWindow, LateSession };
const char* to_string(DropReason r);

class WindowedAggregation {
public:
    using WindowState = core::WindowState;

    // segment_interval: the interval the catalog stored for this aggregation (its segment
    // tables are laid out by it); 0 computes it (SegmentLayout's formula). external: the
    // aggregates the core cannot fold (may be the only ones: then `aggregates` may be
    // empty); sessions need them mergeable. The engine keeps it alive while it holds states.
    WindowedAggregation(WindowSpec spec, std::vector<AggSpec> aggregates, EmitStrategy emit,
                        Millis retention, Millis segment_interval = 0,
                        std::shared_ptr<ExternalAggregates> external = nullptr);
    WindowedAggregation(const WindowedAggregation&) = delete;
    WindowedAggregation& operator=(const WindowedAggregation&) = delete;

    // Judge and fold one record against watermark W (already updated with this record).
    // values[i] is the field value for aggregate i; `row` is handed to the external
    // aggregates' add for every window the record joins.
    void process(std::string_view key, Millis t, const Value* values, Millis watermark,
                 const void* row = nullptr);

    // The same for a batch of records, in order (each with the watermark it is judged
    // against); lookups are prefetched so the memory latency of records overlaps.
    struct RecordRef {
        std::string_view key;
        Millis t;
        const Value* values;
        Millis watermark;
        const void* row = nullptr;  // for the external aggregates (see process)
    };
    void process_batch(const RecordRef* records, std::size_t n);

    // At a commit with watermark W: closes windows, decides emissions per strategy,
    // collects changed state. Appends to `out`.
    void flush(Millis watermark, CommitOutput& out);

    // Recovery: reinstate one persisted window given the committed watermark. Feed the
    // newest version per (key, start) across all live segments; tombstones are skipped
    // here.
    void restore(const WindowStateRow& row, Millis watermark);
    // The emit strategy the state to restore was committed under, when alter_aggregation changed
    // it since (README "Altering an aggregation"): it says which windows the sink holds. From
    // on_window_close to on_window_update, the open windows restored are written at the next
    // commit. Call before restore.
    void restore_committed_under(EmitStrategy committed) { committed_emit_ = committed; }

    const WindowSpec& spec() const { return store_.spec(); }
    const AggLayout& layout() const { return store_.layout(); }
    const SegmentLayout& segments() const { return store_.segments(); }
    EmitStrategy emit() const { return emitter_.strategy(); }
    const AggregationStats& stats() const { return stats_; }
    // Windows not yet closed, and keys holding at least one of them.
    std::size_t open_windows() const { return store_.open_windows(); }
    std::size_t keys_with_open_windows() const { return store_.keys_with_open_windows(); }
    // Windows changed since the last flush (what the next commit will write, at least).
    std::size_t pending_changes() const { return store_.pending_changes(); }
    // Segments those windows live in (what the next commit will lock, at least).
    std::size_t pending_segments() const { return store_.pending_segments(); }
    // Windows held in memory (open ones plus closed sliding windows and sessions kept a while).
    std::size_t resident_windows() const { return store_.resident_windows(); }
    // An estimate of the heap this engine holds: keys with their bytes, the key table,
    // windows (the per-key blocks as allocated, cells beyond the inline ones), the close
    // calendar and heaps, the dirty list and pending retractions. O(1): kept up to date as
    // memory is taken and given back, for worker_memory_limit (README "Security") to check often.
    std::size_t memory_bytes() const { return sizeof(*this) + store_.heap_bytes(); }

    // Live (open and retained) windows, for window_state(): calls f(key, state).
    template <class F>
    void for_each_window(F&& f) const {
        store_.for_each_window(std::forward<F>(f));
    }

private:
    using KeyIt = WindowStore::KeyIt;
    void process_one(KeyIt kit, Millis t, const Value* values, Millis w, const void* row);

    WindowStore store_;  // first: the assigners and the emitter refer to it
    GridAssigner grid_;
    SlidingAssigner sliding_;
    SessionMerger session_;
    Emitter emitter_;
    EmitStrategy committed_emit_;  // what restore reads the sink's rows by
    AggregationStats stats_;
};

}  // namespace stoatflow::core
