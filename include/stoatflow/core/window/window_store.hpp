// The windows of one aggregation, per key: each key's windows sorted by start, folded cells,
// which ones changed since the last commit (and their segments), when each closes and
// leaves memory, and an estimate of the heap all of it holds. The assigners (GridAssigner,
// SlidingAssigner, SessionMerger) decide which windows a record joins; WindowedAggregation
// decides what a commit writes; this store keeps the books for both.
#pragma once
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/emit/commit_output.hpp"
#include "stoatflow/core/key_table.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window/pending_queue.hpp"
#include "stoatflow/core/window/window_state.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

namespace stoatflow::core {

class WindowStore {
public:
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
        bool has_gone = false;      // holds windows marked gone (on Sweep::compact)
    };
    using KeyMap = KeyTable<KeyState>;
    using KeyIt = KeyMap::Entry*;

    // retention and segment_interval as WindowedAggregation takes them (the spec is
    // validated here, after the layout was built).
    WindowStore(const WindowSpec& spec, AggLayout layout, Millis retention,
                Millis segment_interval);
    WindowStore(const WindowStore&) = delete;
    WindowStore& operator=(const WindowStore&) = delete;

    const WindowSpec& spec() const { return spec_; }
    const AggLayout& layout() const { return layout_; }
    const SegmentLayout& segments() const { return segments_; }
    ExternalAggregates* ext() const { return ext_; }
    KeyMap& keys() { return keys_; }
    const KeyMap& keys() const { return keys_; }
    bool grid_kind() const {
        return spec_.kind == WindowKind::Tumbling || spec_.kind == WindowKind::Hopping;
    }

    std::size_t open_windows() const { return open_windows_; }
    std::size_t keys_with_open_windows() const;
    std::size_t pending_changes() const { return dirty_count_; }
    std::size_t pending_segments() const { return dirty_segments_.size(); }
    std::size_t resident_windows() const { return resident_; }
    // The heap held (WindowedAggregation::memory_bytes adds the engine's own size).
    std::size_t heap_bytes() const;
    // What heap_bytes counts for one window of `aggregates` built-in aggregates (its place in
    // the key's block, its cells beyond the inline ones, its close entry for sliding windows and
    // sessions), and for one key of `key_length` bytes (its key table entry, its calendar entry
    // for grid kinds, its place on the dirty list): stoatflow.estimate's terms (README
    // "Estimating cost").
    static std::size_t window_bytes(WindowKind kind, std::size_t aggregates);
    static std::size_t key_bytes(WindowKind kind, std::size_t key_length);
    // Window places a key's block holds once it held `open` windows (rounded up) at once: it
    // starts at one (hopping: a record's windows and one more), doubles, never shrinks.
    static double window_places(const WindowSpec& spec, double open);

    // ---- windows of a key
    // Index of the first window with start ≥ s / > s.
    static std::size_t lower_index(const Windows& m, Millis s) {
        return static_cast<std::size_t>(
            std::lower_bound(m.begin(), m.end(), s,
                             [](const auto& w, Millis x) { return w.start < x; }) -
            m.begin());
    }
    static std::size_t upper_index(const Windows& m, Millis s) {
        return static_cast<std::size_t>(
            std::upper_bound(m.begin(), m.end(), s,
                             [](Millis x, const auto& w) { return x < w.start; }) -
            m.begin());
    }
    static WindowState* find_window(KeyIt kit, Millis start) {
        Windows& m = kit->second.windows;
        // Records and closes mostly concern the newest or the oldest window.
        // A start past the newest (a record opening a key's next window) is answered by the
        // newest window's line alone, which process_batch prefetched.
        if (m.empty() || start > m.back().start) return nullptr;
        if (m.back().start == start) return &m.back();
        if (m.front().start >= start) return m.front().start == start ? &m.front() : nullptr;
        const std::size_t i = lower_index(m, start);
        return i < m.size() && m[i].start == start ? &m[i] : nullptr;
    }
    // Inserts a window at its place by start; invalidates references into the key's windows.
    // Its external state is a fresh one unless the caller gives it one (fresh_ext = false).
    WindowState& open_window(KeyIt kit, Millis start, Millis end, bool fresh_ext = true);
    // Opens the empty window insert_window made.
    WindowState& init_window(KeyIt kit, WindowState& ws, Millis start, Millis end,
                             bool fresh_ext = true);
    // Inserts an empty window at index (memory accounted); invalidates references.
    WindowState& insert_window(KeyIt kit, std::size_t index);
    // Room for a hopping record's windows in one allocation, once per key block.
    void reserve_hops(KeyIt kit) {
        Windows& m = kit->second.windows;
        if (m.capacity() == 0 && hop_reserve_ > 0) {
            m.reserve(hop_reserve_);
            window_capacity_ += m.capacity();
        }
    }
    void remove_window(KeyIt kit, std::size_t index);
    // Erases a key that holds no windows and no references (memory accounted).
    void erase_key(KeyIt kit);
    void erase_if_unused(KeyIt kit) {
        if (kit->second.refs == 0 && kit->second.windows.empty()) erase_key(kit);
    }

    // ---- folding the record being processed
    void set_record(const void* row) { row_ = row; }
    // Folds the current record into a window's cells and external state.
    void fold(WindowState& ws, const Value* values) {
        layout_.add(ws.cells.data(), values);
        if (ext_) ws.ext.add(row_);
    }
    void add_to(KeyIt kit, WindowState& ws, Millis t, const Value* values) {
        fold(ws, values);
        ws.max_time = std::max(ws.max_time, t);
        touch(kit, ws);
    }
    ExternalState new_external() const {
        return ext_ ? ExternalState::create(*ext_) : ExternalState();
    }
    // Marks a window changed since the last flush.
    void touch(KeyIt kit, WindowState& ws) {
        if (!ws.dirty) {
            ws.dirty = true;
            ++dirty_count_;
            // Consecutive changes mostly fall in one segment: skip the hash set for a repeat.
            const Millis seg = segment_time(ws);
            if (seg != last_dirty_segment_) {
                dirty_segments_.insert(seg);
                last_dirty_segment_ = seg;
            }
            if (!kit->second.dirty_listed) {
                kit->second.dirty_listed = true;
                dirty_keys_.push_back(kit);
                ++kit->second.refs;
            }
        }
    }

    // ---- closing and leaving memory
    // Closed windows that stay in memory: sliding ones until they leave retention (later
    // windows derive from them), sessions until W ≥ end + retention + gap (their start
    // stays reserved, see SessionMerger).
    Millis eviction_time(Millis start, Millis end) const;
    void schedule_eviction(KeyIt kit, const WindowState& ws);
    // A window is closed now: no longer open (the caller wrote what it must).
    void mark_closed(KeyIt kit, WindowState& ws) {
        ws.closed = true;
        --open_windows_;
        --kit->second.open;
    }

    // ---- state rows
    Millis segment_time(const WindowState& ws) const {
        // Sessions live in the segment of their last record, time windows of their start.
        return segments_.segment_of(spec_.kind == WindowKind::Session ? ws.end - 1 : ws.start);
    }
    // A state row in the window's own segment, or in the one given.
    void state_row(const std::string& key, WindowState& ws, CommitOutput& out,
                   Millis segment = kNoTime);
    // A tombstone for the window's state rows (merged away, or its start moved), written
    // at the next commit.
    void tombstone(const std::string& key, const WindowState& ws);
    // A sink row to delete at the next commit (a session merged into another).
    void retract(const std::string& key, Millis start) { retractions_.push_back({key, start}); }

    // ---- one flush, in steps: take_removals, then close_due, evict_due, take_changed in
    // any mix, then end_sweep. Windows only leave (are compacted out of their key) and keys
    // are only released in end_sweep, so the (key, start) names held by pending entries stay
    // valid throughout.
    struct Sweep {
        std::vector<KeyIt> compact;   // keys holding windows marked gone
        std::vector<KeyIt> released;  // one entry per reference to drop
    };
    // The retractions and tombstones since the last flush, into out.
    Sweep take_removals(CommitOutput& out);
    // Calls close(kit, ws) for every open window the watermark closes (each once, by its
    // close point), marks it closed and lets it go: grid windows at once, sliding windows
    // and sessions at their eviction_time.
    template <class F>
    void close_due(Millis watermark, Sweep& sweep, F&& close);
    // Lets closed windows go whose eviction_time W has reached; calls forgotten(kit, start,
    // end) for each.
    template <class F>
    void evict_due(Millis watermark, Sweep& sweep, F&& forgotten);
    // Calls f(kit, ws) for every window changed since the last flush and not closed by it.
    template <class F>
    void take_changed(Sweep& sweep, F&& f);
    void end_sweep(Sweep& sweep);

    // Live (open and retained) windows: calls f(key, state).
    template <class F>
    void for_each_window(F&& f) const {
        keys_.for_each([&](const auto& e) {
            for (const auto& w : e.second.windows) f(e.first, w);
        });
    }

private:
    struct Pending {
        Millis at;  // close point, or eviction time
        KeyIt key;  // alive while referenced (KeyState::refs)
        Millis start;
        Millis end;  // the end the close point was computed for (sessions grow)
    };
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

    void schedule_close(KeyIt kit, const WindowState& ws);
    void file_grid_close(KeyIt kit, Millis at);
    // Marks a window to leave memory once the flush is done with the key.
    void mark_gone(KeyIt kit, WindowState& ws, std::vector<KeyIt>& compact);
    // Drops one reference; erases the key once it has no windows and no references.
    void release(KeyIt kit);
    template <class F>
    void close_one(KeyIt kit, WindowState* ws, Millis end, Sweep& sweep, F& close);

    WindowSpec spec_;
    AggLayout layout_;  // before keys_: the external aggregates outlive every window
    ExternalAggregates* ext_ = nullptr;  // layout_.external(), at hand
    const void* row_ = nullptr;          // the record being processed (for ext_)
    SegmentLayout segments_;
    std::size_t hop_reserve_ = 0;  // hopping: windows per record + 1; otherwise 0

    KeyMap keys_;
    Calendar calendar_;  // grid kinds
    std::vector<GridClose>* last_bucket_ =
        nullptr;  // the bucket filed into last (nodes are stable)
    Millis last_bucket_at_ = kNoTime;
    // Sliding windows and sessions: their close points, and the closed ones kept a while
    // (eviction_time).
    PendingQueue<Pending> closes_;
    PendingQueue<Pending> evictions_;
    // Keys with a window changed since the last flush; the windows carry the dirty flag.
    std::vector<KeyIt> dirty_keys_;
    std::size_t dirty_count_ = 0;                // windows that became dirty since the last flush
    std::unordered_set<Millis> dirty_segments_;  // their segments (cleared by flush)
    Millis last_dirty_segment_ = kNoTime;        // the one inserted last
    std::vector<SinkDelete> retractions_;        // session rows to delete at the next commit
    std::vector<WindowStateRow> tombstones_;     // persisted windows that no longer exist
    std::size_t open_windows_ = 0;
    std::size_t resident_ = 0;          // windows in the keys' blocks
    std::size_t window_capacity_ = 0;   // WindowState slots allocated across the keys' blocks
    std::size_t calendar_entries_ = 0;  // GridClose entries filed in calendar_
};

template <class F>
void WindowStore::close_one(KeyIt kit, WindowState* ws, Millis end, Sweep& sweep, F& close) {
    if (ws && !ws->closed && ws->end == end) {
        close(kit, *ws);
        mark_closed(kit, *ws);
        if (grid_kind())
            mark_gone(kit, *ws, sweep.compact);
        else
            schedule_eviction(kit, *ws);
    }  // else stale: merged away, moved or grown since it was scheduled
}

template <class F>
void WindowStore::close_due(Millis watermark, Sweep& sweep, F&& close) {
    if (watermark == kNoTime) return;
    auto bucket = calendar_.begin();
    for (; bucket != calendar_.end() && bucket->first <= watermark; ++bucket) {
        sweep.released.reserve(sweep.released.size() + bucket->second.size());
        calendar_entries_ -= bucket->second.size();
        for (const GridClose& c : bucket->second) {
            KeyState& ks = c.key->second;
            if (ks.close_at == c.at) {
                ks.close_at = kNoTime;
                Windows& m = ks.windows;
                std::size_t i = 0;
                for (; i < m.size() && spec_.is_closed(m[i].end, watermark); ++i)
                    close_one(c.key, &m[i], m[i].end, sweep, close);
                // Later than this watermark: a bucket the loop does not reach.
                if (i < m.size()) file_grid_close(c.key, spec_.close_point(m[i].end));
            }
            sweep.released.push_back(c.key);
        }
    }
    if (bucket != calendar_.begin()) {
        calendar_.erase(calendar_.begin(), bucket);
        last_bucket_ = nullptr;
    }
    closes_.drain(watermark, [&](const Pending& p) {
        close_one(p.key, find_window(p.key, p.start), p.end, sweep, close);
        sweep.released.push_back(p.key);
    });
}

template <class F>
void WindowStore::evict_due(Millis watermark, Sweep& sweep, F&& forgotten) {
    if (watermark == kNoTime) return;
    evictions_.drain(watermark, [&](const Pending& p) {
        WindowState* ws = find_window(p.key, p.start);
        if (ws && ws->closed && ws->end == p.end) {
            mark_gone(p.key, *ws, sweep.compact);
            forgotten(p.key, p.start, p.end);
        }
        sweep.released.push_back(p.key);
    });
}

template <class F>
void WindowStore::take_changed(Sweep& sweep, F&& f) {
    for (KeyIt kit : dirty_keys_) {
        kit->second.dirty_listed = false;
        for (WindowState& ws : kit->second.windows)
            if (ws.dirty) f(kit, ws);
        sweep.released.push_back(kit);
    }
    dirty_keys_.clear();
    dirty_count_ = 0;
    dirty_segments_.clear();
    last_dirty_segment_ = kNoTime;
}

}  // namespace stoatflow::core
