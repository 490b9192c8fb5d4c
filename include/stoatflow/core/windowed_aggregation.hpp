// One windowed aggregation over a stream of records: assigns each record to its
// windows (grid, sliding per KIP-450, merging sessions), folds it into per-key window
// state, and at each commit decides what the sink and the state tables must receive.
#pragma once
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/key_table.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window_assigner.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <cstdint>
#include <map>
#include <queue>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace stoatflow::core {

enum class EmitStrategy { OnWindowUpdate, OnWindowClose };
const char* to_string(EmitStrategy e);
// 'on_window_update' | 'on_window_close'; throws Error (22023) otherwise.
EmitStrategy emit_strategy_from_name(const std::string& name);

enum class DropReason { LateWindow, LateSession };
const char* to_string(DropReason r);

// One window's state as it is persisted (a row of a segment table) and restored.
struct WindowStateRow {
    std::string key;
    Millis start = 0;
    Millis end = 0;         // exclusive; sessions: last record + 1 ms
    Millis event_time = 0;  // latest record time in the window
    CellArray cells;
    bool removed = false;         // tombstone: a session merged away or moved
    Millis segment = 0;           // segment start this row belongs to
    std::optional<Millis> floor;  // sessions: WindowState::floor (nullopt: not recorded)
    // The external aggregates' state as ExternalAggregates::serialize wrote it (empty when
    // the aggregation has none, and in tombstones): bytes, never a live state.
    std::string external;
};

// One sink operation.
struct SinkRow {
    std::string key;
    Millis start = 0;
    Millis end = 0;
    Millis event_time = 0;
    CellArray cells;
    bool final = false;
    // Never written to the sink before (by this aggregation, under any start): the row can
    // be inserted rather than upserted.
    bool fresh = false;
    // The external aggregates' state, serialized (the sink writer finalizes from it).
    std::string external;
};
struct SinkDelete {
    std::string key;
    Millis start = 0;
};

// Everything one commit must write for one aggregation, in this order:
// state rows, sink deletes, sink upserts.
struct CommitOutput {
    std::vector<WindowStateRow> state;
    std::vector<SinkDelete> deletes;
    std::vector<SinkRow> upserts;
    void clear() {
        state.clear();
        deletes.clear();
        upserts.clear();
    }
};

struct AggregationStats {
    std::int64_t records_in = 0;
    std::int64_t dropped_late_window = 0;
    std::int64_t dropped_late_session = 0;
    std::int64_t windows_emitted = 0;    // first emission of a window
    std::int64_t windows_reemitted = 0;  // later emissions of the same window
    std::int64_t sessions_merged = 0;    // sessions absorbed by a merge
    std::int64_t filtered = 0;  // records the aggregation's filter skipped (counted by the path)
};

class WindowedAggregation {
public:
    // segment_interval: the interval the catalog stored for this aggregation (its segment
    // tables are laid out by it); 0 computes it (SegmentLayout's formula). external: the
    // aggregates the core cannot fold (may be the only ones: then `aggregates` may be
    // empty); sessions need them mergeable. The engine keeps it alive while it holds states.
    WindowedAggregation(WindowSpec spec, std::vector<AggSpec> aggregates, EmitStrategy emit,
                        Millis retention, Millis segment_interval = 0,
                        std::shared_ptr<ExternalAggregates> external = nullptr);

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

    const WindowSpec& spec() const { return spec_; }
    const AggLayout& layout() const { return layout_; }
    const SegmentLayout& segments() const { return segments_; }
    EmitStrategy emit() const { return emit_; }
    const AggregationStats& stats() const { return stats_; }
    // Windows not yet closed, and keys holding at least one of them.
    std::size_t open_windows() const { return open_windows_; }
    std::size_t keys_with_open_windows() const;
    // Windows changed since the last flush (what the next commit will write, at least).
    std::size_t pending_changes() const { return dirty_count_; }
    // Segments those windows live in (what the next commit will lock, at least).
    std::size_t pending_segments() const { return dirty_segments_.size(); }
    // Windows held in memory (open ones plus closed sliding windows and sessions kept a while).
    std::size_t resident_windows() const { return resident_; }
    // An estimate of the heap this engine holds: keys with their bytes, the key table,
    // windows (the per-key blocks as allocated, cells beyond the inline ones), the close
    // calendar and heaps, the dirty list and pending retractions. O(1): kept up to date as
    // memory is taken and given back, for worker_memory_limit (README "Security") to check often.
    std::size_t memory_bytes() const;

    // Live (open and retained) windows, for window_state(): calls f(key, state).
    template <class F>
    void for_each_window(F&& f) const {
        keys_.for_each([&](const auto& e) {
            for (const auto& w : e.second.windows) f(e.first, w);
        });
    }

    struct WindowState {
        Millis start = 0;
        Millis end = 0;  // exclusive
        Millis max_time = kNoTime;
        Millis emitted_start = kNoTime;  // start of the sink row written for it, if any
        // Sessions: a late record may extend the session back only to times after this
        // (may_start_at); persisted with its state.
        Millis floor = kNoTime;
        bool dirty = false;
        bool closed = false;
        bool persisted = false;
        bool ever_emitted = false;
        bool gone = false;  // leaves memory at the end of this flush
        CellArray cells;
        ExternalState ext;  // the external aggregates' state (empty when there are none)
    };

private:
    // A key's windows, sorted by start. Most keys hold a handful, so one flat block beats
    // a tree: no node allocation per window and a lookup scans contiguous memory. A
    // reference into it is valid only until the key's next window insert or erase, so
    // everything kept across records names a window by (key, start).
    using Windows = std::vector<WindowState>;
    struct KeyState {
        Windows windows;
        std::uint32_t open = 0;
        std::uint32_t refs = 0;  // pending close/eviction/dirty entries naming this key
        // Grid kinds: the calendar bucket the key is filed in (its earliest open window's
        // close point), kNoTime when it has none. Entries at any other point are stale.
        Millis close_at = kNoTime;
        bool dirty_listed = false;  // on dirty_keys_
        bool has_gone = false;      // holds windows marked gone (on compact_ in flush)
    };
    using KeyMap = KeyTable<KeyState>;
    using KeyIt = KeyMap::Entry*;
    struct Pending {
        Millis at;  // close point, or eviction time
        KeyIt key;  // alive while referenced (KeyState::refs)
        Millis start;
        Millis end;  // the end the close point was computed for (sessions grow)
        bool operator>(const Pending& o) const { return at > o.at; }
    };
    using MinHeap = std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>>;
    // Grid windows close on a few grid-aligned points shared by every key, so keys are
    // filed per close point (a calendar) instead of costing O(log n) heap work per window.
    // A key is filed once, under its earliest open window: all its grid windows have the
    // same size, so the ones a watermark closes are a prefix of its windows, closed in
    // one visit, after which the key is filed again under the next one.
    struct GridClose {
        KeyIt key;
        Millis at;
    };
    using Calendar = std::map<Millis, std::vector<GridClose>>;

    void process_one(KeyIt kit, Millis t, const Value* values, Millis w, const void* row);
    void process_grid(KeyIt kit, Millis t, const Value* values, Millis w);
    void process_sliding(KeyIt kit, Millis t, const Value* values, Millis w);
    void process_session(KeyIt kit, Millis t, const Value* values, Millis w);

    // Inserts a window at its place by start; invalidates references into the key's windows.
    // Its external state is a fresh one unless the caller gives it one (fresh_ext = false).
    WindowState& open_window(KeyIt kit, Millis start, Millis end, bool fresh_ext = true);
    WindowState& init_window(KeyIt kit, WindowState& ws, Millis start, Millis end,
                             bool fresh_ext = true);
    void add_to(KeyIt kit, WindowState& ws, Millis t, const Value* values);
    // Folds the current record into a window's cells and external state.
    void fold(WindowState& ws, const Value* values) {
        layout_.add(ws.cells.data(), values);
        if (ext_) ws.ext.add(row_);
    }
    ExternalState new_external() const {
        return ext_ ? ExternalState::create(*ext_) : ExternalState();
    }

    void touch(KeyIt kit, WindowState& ws);
    void remove_window(KeyIt kit, std::size_t index);
    // Inserts an empty window at index (memory accounted); invalidates references.
    WindowState& insert_window(KeyIt kit, std::size_t index);
    // Erases a key that holds no windows and no references (memory accounted).
    void erase_key(KeyIt kit);
    void schedule_close(KeyIt kit, const WindowState& ws);
    // Closed windows that stay in memory: sliding ones until they leave retention (later
    // windows derive from them), sessions until W ≥ end + retention + gap (their start
    // stays reserved, see process_session).
    void schedule_eviction(KeyIt kit, const WindowState& ws);
    Millis eviction_time(Millis start, Millis end) const;
    // Sessions: may a late record at t extend m[keep] (open) back to start at t?
    bool may_start_at(const Windows& m, std::size_t keep, Millis t, Millis w) const;
    // Sessions: the latest last-record time a forgotten closed session can have at W.
    Millis forgotten_zone(Millis w) const;
    void file_grid_close(KeyIt kit, Millis at);
    // Marks a window to leave memory once the flush is done with the key.
    void mark_gone(KeyIt kit, WindowState& ws, std::vector<KeyIt>& compact);
    // Drops one reference; erases the key once it has no windows and no references.
    void release(KeyIt kit);
    void emit_row(const std::string& key, WindowState& ws, bool final, CommitOutput& out);
    // A tombstone for the window's state rows (merged away, or its start moved).
    void tombstone(const std::string& key, const WindowState& ws);
    // A state row in the window's own segment, or in the one given.
    void state_row(const std::string& key, WindowState& ws, CommitOutput& out,
                   Millis segment = kNoTime);
    Millis segment_time(const WindowState& ws) const;
    bool grid_kind() const {
        return spec_.kind == WindowKind::Tumbling || spec_.kind == WindowKind::Hopping;
    }

    // sliding helpers
    bool is_record_window(const WindowState& ws) const {
        return ws.max_time == ws.start + spec_.size;
    }

    WindowSpec spec_;
    AggLayout layout_;  // before keys_: the external aggregates outlive every window
    ExternalAggregates* ext_ = nullptr;  // layout_.external(), at hand
    const void* row_ = nullptr;          // the record being processed (for ext_)
    EmitStrategy emit_;
    SegmentLayout segments_;
    WindowAssigner grid_;

    KeyMap keys_;
    Calendar calendar_;  // grid kinds
    std::vector<GridClose>* last_bucket_ =
        nullptr;  // the bucket filed into last (nodes are stable)
    Millis last_bucket_at_ = kNoTime;
    MinHeap closes_;     // sliding and sessions
    MinHeap evictions_;  // sliding and sessions: closed windows kept a while (eviction_time)
    // Keys with a window changed since the last flush; the windows carry the dirty flag.
    std::vector<KeyIt> dirty_keys_;
    std::size_t dirty_count_ = 0;                // windows that became dirty since the last flush
    std::unordered_set<Millis> dirty_segments_;  // their segments (cleared by flush)
    Millis last_dirty_segment_ = kNoTime;        // the one inserted last
    static WindowState* find_window(KeyIt kit, Millis start);
    std::vector<SinkDelete> retractions_;     // session rows to delete at the next commit
    std::vector<WindowStateRow> tombstones_;  // persisted windows that no longer exist
    std::size_t open_windows_ = 0;
    std::size_t resident_ = 0;          // windows in the keys' blocks
    std::size_t window_capacity_ = 0;   // WindowState slots allocated across the keys' blocks
    std::size_t calendar_entries_ = 0;  // GridClose entries filed in calendar_
    AggregationStats stats_;
};

}  // namespace stoatflow::core
