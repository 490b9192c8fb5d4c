// The window engine for one aggregation: grid (tumbling/hopping), sliding (KIP-450)
// and session assignment, late drops, emission per strategy, and changed state.
#include "stoatflow/core/windowed_aggregation.hpp"

#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <cassert>

namespace stoatflow::core {

const char* to_string(EmitStrategy e) {
    return e == EmitStrategy::OnWindowUpdate ? "on_window_update" : "on_window_close";
}

EmitStrategy emit_strategy_from_name(const std::string& name) {
    for (EmitStrategy e : {EmitStrategy::OnWindowUpdate, EmitStrategy::OnWindowClose})
        if (name == to_string(e)) return e;
    throw Error(sqlstate::kInvalidParameterValue, "unknown emit strategy \"" + name + "\"",
                "Use 'on_window_update' (a row per change, final when closed) or "
                "'on_window_close' (one final row per window).");
}

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
    : spec_(spec), layout_(checked(std::move(aggregates), external != nullptr), external),
      ext_(layout_.external()), emit_(emit),
      segments_(segment_interval > 0
                    ? SegmentLayout::with_interval(
                          resolve_retention((spec.validate(), spec), retention), segment_interval)
                    : SegmentLayout(resolve_retention((spec.validate(), spec), retention),
                                    spec.length())),
      grid_(spec) {
    if (ext_ && spec_.kind == WindowKind::Session && !ext_->can_merge())
        throw Error(sqlstate::kFeatureNotSupported,
                    "session windows need aggregates that can be combined",
                    "Every aggregate of a session window needs a combine function.");
}

std::size_t WindowedAggregation::keys_with_open_windows() const {
    std::size_t n = 0;
    keys_.for_each([&](const auto& e) { n += e.second.open > 0; });
    return n;
}

std::size_t WindowedAggregation::memory_bytes() const {
    // Containers whose capacity is not at hand are counted by size: their slack is at most
    // their size again (growth by doubling), and every term here is an estimate anyway.
    constexpr std::size_t kMapNode = 32;  // red-black tree node header (libstdc++)
    const std::size_t cells =
        layout_.size() > CellArray::kInline ? layout_.size() * sizeof(AggCell) : 0;
    return sizeof(*this) + keys_.memory_bytes() + window_capacity_ * sizeof(WindowState) +
           resident_ * cells + calendar_.size() * (kMapNode + sizeof(Calendar::value_type)) +
           calendar_entries_ * sizeof(GridClose) +
           (closes_.size() + evictions_.size()) * sizeof(Pending) +
           dirty_keys_.capacity() * sizeof(KeyIt) + retractions_.capacity() * sizeof(SinkDelete) +
           tombstones_.capacity() * sizeof(WindowStateRow) + (ext_ ? ext_->memory_bytes() : 0);
}

WindowedAggregation::WindowState& WindowedAggregation::insert_window(KeyIt kit, std::size_t index) {
    Windows& m = kit->second.windows;
    const std::size_t before = m.capacity();
    m.emplace(m.begin() + static_cast<std::ptrdiff_t>(index));
    window_capacity_ += m.capacity() - before;
    ++resident_;
    return m[index];
}

void WindowedAggregation::erase_key(KeyIt kit) {
    window_capacity_ -= kit->second.windows.capacity();
    keys_.erase(kit);
}

Millis WindowedAggregation::segment_time(const WindowState& ws) const {
    // Sessions live in the segment of their last record, time windows of their start.
    return segments_.segment_of(spec_.kind == WindowKind::Session ? ws.end - 1 : ws.start);
}

// ---------------------------------------------------------------------------------
// Window bookkeeping

namespace {
using Windows = std::vector<WindowedAggregation::WindowState>;
// Index of the first window with start ≥ s / > s.
std::size_t lower_index(const Windows& m, Millis s) {
    return static_cast<std::size_t>(
        std::lower_bound(m.begin(), m.end(), s,
                         [](const auto& w, Millis x) { return w.start < x; }) -
        m.begin());
}
std::size_t upper_index(const Windows& m, Millis s) {
    return static_cast<std::size_t>(
        std::upper_bound(m.begin(), m.end(), s,
                         [](Millis x, const auto& w) { return x < w.start; }) -
        m.begin());
}
}  // namespace

WindowedAggregation::WindowState* WindowedAggregation::find_window(KeyIt kit, Millis start) {
    Windows& m = kit->second.windows;
    // Records and closes mostly concern the newest or the oldest window.
    if (m.empty()) return nullptr;
    if (m.back().start == start) return &m.back();
    if (m.front().start == start) return &m.front();
    const std::size_t i = lower_index(m, start);
    return i < m.size() && m[i].start == start ? &m[i] : nullptr;
}

WindowedAggregation::WindowState& WindowedAggregation::open_window(KeyIt kit, Millis start,
                                                                   Millis end, bool fresh_ext) {
    Windows& m = kit->second.windows;
    const std::size_t i = m.empty() || m.back().start < start ? m.size() : lower_index(m, start);
    assert(i == m.size() || m[i].start != start);
    // A hopping record opens several windows at once: room for them in one allocation.
    if (m.capacity() == 0 && spec_.kind == WindowKind::Hopping) {
        m.reserve(static_cast<std::size_t>(grid_.windows_per_record()) + 1);
        window_capacity_ += m.capacity();
    }
    return init_window(kit, insert_window(kit, i), start, end, fresh_ext);
}

WindowedAggregation::WindowState& WindowedAggregation::init_window(KeyIt kit, WindowState& ws,
                                                                   Millis start, Millis end,
                                                                   bool fresh_ext) {
    ws.start = start;
    ws.end = end;
    ws.cells = CellArray(layout_.size());
    if (ext_ && fresh_ext) ws.ext = new_external();
    ++open_windows_;
    ++kit->second.open;
    schedule_close(kit, ws);
    return ws;
}

void WindowedAggregation::schedule_close(KeyIt kit, const WindowState& ws) {
    const Millis at = spec_.close_point(ws.end);
    if (grid_kind()) {
        const Millis filed = kit->second.close_at;
        if (filed == kNoTime || at < filed) file_grid_close(kit, at);
        return;
    }
    closes_.push(Pending{at, kit, ws.start, ws.end});
    ++kit->second.refs;
}

void WindowedAggregation::file_grid_close(KeyIt kit, Millis at) {
    if (at != last_bucket_at_ || !last_bucket_) {
        last_bucket_ = &calendar_[at];
        last_bucket_at_ = at;
    }
    last_bucket_->push_back(GridClose{kit, at});
    ++calendar_entries_;
    kit->second.close_at = at;
    ++kit->second.refs;
}

Millis WindowedAggregation::eviction_time(Millis start, Millis end) const {
    // Sliding: once the window starts at or before W − retention. Sessions: once W ≥ end +
    // retention + gap; their final state row lies in the segment of last + gap (see flush),
    // which is kept at least that long, so a restart remembers exactly the closed sessions
    // an uninterrupted run would.
    return spec_.kind == WindowKind::Session ? end + segments_.retention() + spec_.size
                                             : start + segments_.retention() + 1;
}

void WindowedAggregation::schedule_eviction(KeyIt kit, const WindowState& ws) {
    evictions_.push(Pending{eviction_time(ws.start, ws.end), kit, ws.start, ws.end});
    ++kit->second.refs;
}

void WindowedAggregation::mark_gone(KeyIt kit, WindowState& ws, std::vector<KeyIt>& compact) {
    ws.gone = true;
    if (!kit->second.has_gone) {
        kit->second.has_gone = true;
        compact.push_back(kit);
    }
}

void WindowedAggregation::release(KeyIt kit) {
    if (--kit->second.refs == 0 && kit->second.windows.empty()) erase_key(kit);
}

void WindowedAggregation::touch(KeyIt kit, WindowState& ws) {
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

void WindowedAggregation::remove_window(KeyIt kit, std::size_t index) {
    Windows& m = kit->second.windows;
    if (!m[index].closed) {
        --open_windows_;
        --kit->second.open;
    }
    m.erase(m.begin() + static_cast<std::ptrdiff_t>(index));
    --resident_;
}

// ---------------------------------------------------------------------------------
// Records in

void WindowedAggregation::process(std::string_view key, Millis t, const Value* values,
                                  Millis watermark, const void* row) {
    process_one(keys_.find_or_insert(key), t, values, watermark, row);
}

void WindowedAggregation::process_batch(const RecordRef* records, std::size_t n) {
    constexpr std::size_t kGroup = 16;
    std::uint64_t hashes[kGroup];
    for (std::size_t base = 0; base < n; base += kGroup) {
        const std::size_t m = std::min(kGroup, n - base);
        for (std::size_t i = 0; i < m; ++i) {
            hashes[i] = KeyMap::hash_of(records[base + i].key);
            keys_.prefetch_slot(hashes[i]);
        }
        for (std::size_t i = 0; i < m; ++i) keys_.prefetch_entry(hashes[i]);
        for (std::size_t i = 0; i < m; ++i) {
            // the key's newest window, every line of it (grid kinds mostly hit it; the
            // flags sit at its head, the cells further on)
            if (const auto* e = keys_.peek(hashes[i]); e && !e->second.windows.empty()) {
                const char* w = reinterpret_cast<const char*>(&e->second.windows.back());
                for (std::size_t off = 0; off < sizeof(WindowState); off += 64)
                    __builtin_prefetch(w + off);
            }
        }
        for (std::size_t i = 0; i < m; ++i) {
            const RecordRef& r = records[base + i];
            process_one(keys_.find_or_insert(r.key, hashes[i]), r.t, r.values, r.watermark, r.row);
        }
    }
}

void WindowedAggregation::process_one(KeyIt kit, Millis t, const Value* values, Millis watermark,
                                      const void* row) {
    ++stats_.records_in;
    row_ = row;
    switch (spec_.kind) {
    case WindowKind::Tumbling:
    case WindowKind::Hopping: process_grid(kit, t, values, watermark); break;
    case WindowKind::Sliding: process_sliding(kit, t, values, watermark); break;
    case WindowKind::Session: process_session(kit, t, values, watermark); break;
    }
    if (kit->second.refs == 0 && kit->second.windows.empty()) erase_key(kit);  // all late
}

void WindowedAggregation::process_grid(KeyIt kit, Millis t, const Value* values, Millis w) {
    Windows& m = kit->second.windows;
    if (spec_.advance == spec_.size) {  // tumbling: one window, usually the key's newest
        const Millis start = floor_to(t, spec_.size);
        if (spec_.is_closed(start + spec_.size, w)) {
            ++stats_.dropped_late_window;
            return;
        }
        WindowState* hit = find_window(kit, start);
        if (!hit) hit = &open_window(kit, start, start + spec_.size);
        add_to(kit, *hit, t, values);
        return;
    }
    // Hopping: the record's windows are consecutive in the key's windows (starts
    // descending by advance), so one search finds the newest and the rest are neighbours.
    std::size_t pos = m.empty() || m.back().start <= floor_to(t, spec_.advance)
                          ? m.size()
                          : upper_index(m, floor_to(t, spec_.advance));
    grid_.for_each(t, [&](Window win) {
        if (spec_.is_closed(win.end, w)) {
            ++stats_.dropped_late_window;
            return;
        }
        if (pos > 0 && m[pos - 1].start == win.start) {
            --pos;
        } else {
            if (m.capacity() == 0) {
                m.reserve(static_cast<std::size_t>(grid_.windows_per_record()) + 1);
                window_capacity_ += m.capacity();
            }
            init_window(kit, insert_window(kit, pos), win.start, win.end);
        }
        add_to(kit, m[pos], t, values);
    });
}

void WindowedAggregation::add_to(KeyIt kit, WindowState& ws, Millis t, const Value* values) {
    fold(ws, values);
    ws.max_time = std::max(ws.max_time, t);
    touch(kit, ws);
}

// Sliding windows (KIP-450). Every record time x has a left window [x−D, x]; the
// window starting at x+1 exists while a record lies in (x, x+1+D]. Windows are keyed
// by start; a window is some record's left window iff its latest record is at start+D.
// New windows are derived from existing aggregates, never from stored records:
//  - left window of a new t: the records in [t−D, t) are exactly those of the window
//    with the largest start in (p−D, t−D] (the right window of the last record before
//    t−D), or, if there is none, of the left window of p (p = last record before t).
//  - right window of a new t: the records in [t+1, t+1+D] are exactly those of the
//    window with the largest start in (m−D, t], or else of the left window of m
//    (m = last record at or before t+1+D).
// A record whose own left window is closed is dropped whole: every window containing
// an accepted record is then open, so no closed window is ever changed.
namespace {
template <class Pred>
const WindowedAggregation::WindowState* last_in(const Windows& m, Millis lo, Millis hi, Pred pred) {
    if (lo > hi) return nullptr;
    for (std::size_t i = upper_index(m, hi); i > 0;) {
        --i;
        if (m[i].start < lo) break;
        if (pred(m[i])) return &m[i];
    }
    return nullptr;
}
template <class Pred>
const WindowedAggregation::WindowState* first_in(const Windows& m, Millis lo, Millis hi,
                                                 Pred pred) {
    for (std::size_t i = lower_index(m, lo); i < m.size() && m[i].start <= hi; ++i)
        if (pred(m[i])) return &m[i];
    return nullptr;
}
}  // namespace

void WindowedAggregation::process_sliding(KeyIt kit, Millis t, const Value* values, Millis w) {
    const Millis d = spec_.size;
    if (spec_.is_closed(t + 1, w)) {
        ++stats_.dropped_late_window;
        return;
    }
    Windows& m = kit->second.windows;
    auto any = [](const WindowState&) { return true; };
    auto record = [this](const WindowState& ws) { return is_record_window(ws); };

    std::vector<AggCell> left_base, right_base;
    ExternalState left_ext, right_ext;  // copies, like the cells (empty without ext_)
    bool make_left = false, make_right = false, make_prev_right = false;
    Millis right_max = kNoTime, prev_right_start = 0;

    const WindowState* left = find_window(kit, t - d);
    const bool left_exists = left != nullptr;
    const bool t_known = left_exists && is_record_window(*left);
    if (!t_known) {
        const WindowState* p = last_in(m, t - 2 * d, t - d - 1, record);
        if (!left_exists) {
            make_left = true;
            if (p) {
                const Millis pt = p->max_time;
                const WindowState* r = last_in(m, pt - d + 1, t - d, any);
                left_base = r ? r->cells : p->cells;
                if (ext_) left_ext = (r ? r : p)->ext.copy();
            } else {
                left_base = layout_.empty_state();
                left_ext = new_external();
            }
        }
        if (!find_window(kit, t + 1)) {
            const WindowState* n = first_in(m, t - d + 1, t + 1, record);
            if (n) {
                const Millis nt = n->max_time;
                const WindowState* mw = last_in(m, nt - d, t + 1, record);
                const Millis mt = mw->max_time;
                const WindowState* u = last_in(m, mt - d + 1, t, any);
                right_base = u ? u->cells : mw->cells;
                if (ext_) right_ext = (u ? u : mw)->ext.copy();
                right_max = mt;
                make_right = true;
            }
        }
        if (p && !find_window(kit, p->max_time + 1) && p->max_time + 1 != t - d) {
            make_prev_right = true;
            prev_right_start = p->max_time + 1;
        }
    }

    // Existing windows containing t.
    for (std::size_t i = lower_index(m, t - d); i < m.size() && m[i].start <= t; ++i) {
        fold(m[i], values);
        m[i].max_time = std::max(m[i].max_time, t);
        touch(kit, m[i]);
    }
    auto create = [&](Millis start, std::vector<AggCell>&& cells, ExternalState&& ext,
                      Millis max_time, bool add_t) {
        WindowState& ws = open_window(kit, start, start + d + 1, false);
        ws.cells = std::move(cells);
        ws.ext = std::move(ext);
        ws.max_time = max_time;
        if (add_t) fold(ws, values);
        touch(kit, ws);
    };
    if (make_left) create(t - d, std::move(left_base), std::move(left_ext), t, true);
    if (make_prev_right) create(prev_right_start, layout_.empty_state(), new_external(), t, true);
    if (make_right) create(t + 1, std::move(right_base), std::move(right_ext), right_max, false);
}

// Sessions: a record joins every open session whose [first−gap, last+gap] holds it;
// they merge into one. A record that joins none starts [t, t] unless that would already
// be closed (dropped, late_session). A record within gap of an open session joins it even
// when its own [t, t] would be closed, extending it backwards (README "Window kinds"), also over
// closed sessions of the key, which it never reopens or changes — within the limits of
// may_start_at.
//
// The sink knows a session by (key, first record), so an extension may not start where a
// closed session starts: that would overwrite its final row. Closed sessions are
// remembered until W ≥ end + retention + gap (eviction_time); below a forgotten one's last
// record an extension is refused outright, since whether a session began there is no
// longer known. Each open session carries that bound as its floor: the forgotten zone
// (forgotten_zone) when it began, raised to the last record of each earlier closed session
// of the key forgotten while it is open, and kept in its state row (a restart knows it).
// Both refusals count as late_session.
bool WindowedAggregation::may_start_at(const Windows& m, std::size_t keep, Millis t,
                                       Millis w) const {
    if (t <= m[keep].floor) return false;
    // Sorted by start: only the sessions before keep can start at t. Judged by W, not by
    // whether a flush has let them go (or raised the floor) yet.
    for (std::size_t i = 0; i < keep; ++i) {
        const WindowState& c = m[i];
        if (!(c.closed || spec_.is_closed(c.end, w))) continue;
        if (w < eviction_time(c.start, c.end) ? c.start == t : t <= c.end - 1) return false;
    }
    return true;
}

Millis WindowedAggregation::forgotten_zone(Millis w) const {
    // Closed sessions with last + 1ms + retention + gap ≤ W are forgotten: last ≤ this.
    return w == kNoTime ? kNoTime : w - 1 - segments_.retention() - spec_.size;
}

void WindowedAggregation::process_session(KeyIt kit, Millis t, const Value* values, Millis w) {
    const Millis gap = spec_.size;
    Windows& m = kit->second.windows;
    std::vector<std::size_t> joined;  // indexes, newest first
    for (std::size_t i = upper_index(m, t + gap); i > 0;) {
        --i;
        const WindowState& ws = m[i];
        const bool open = !ws.closed && !spec_.is_closed(ws.end, w);
        if (ws.end - 1 + gap < t) {
            if (open) break;  // open sessions are disjoint and ordered: none further back
            continue;
        }
        if (open) joined.push_back(i);
    }
    const bool own_closed = spec_.is_closed(t + 1, w);
    if (joined.empty()) {
        if (own_closed) {
            ++stats_.dropped_late_session;
            return;
        }
        WindowState& ws = open_window(kit, t, t + 1);
        fold(ws, values);
        ws.max_time = t;
        ws.floor = forgotten_zone(w);
        touch(kit, ws);
        return;
    }
    // The earliest session survives; the others merge into it.
    const std::size_t keep = joined.back();
    if (t < m[keep].start && own_closed && !may_start_at(m, keep, t, w)) {
        ++stats_.dropped_late_session;
        return;
    }
    WindowState merged = std::move(m[keep]);
    // Newest first: removing a window leaves the indexes of the earlier ones valid.
    for (std::size_t i = 0; i + 1 < joined.size(); ++i) {
        WindowState& other = m[joined[i]];
        layout_.merge(merged.cells.data(), other.cells.data());
        if (ext_) merged.ext.merge(other.ext);  // other's state goes with its window below
        merged.end = std::max(merged.end, other.end);
        if (other.emitted_start != kNoTime)
            retractions_.push_back({kit->first, other.emitted_start});
        if (other.persisted) tombstone(kit->first, other);
        ++stats_.sessions_merged;
        remove_window(kit, joined[i]);
    }
    remove_window(kit, keep);
    fold(merged, values);
    if (t < merged.start && merged.persisted) {
        // The session's identity (key, first) moves: the old state rows become stale.
        tombstone(kit->first, merged);
        merged.persisted = false;
    }
    merged.start = std::min(merged.start, t);
    merged.end = std::max(merged.end, t + 1);
    merged.max_time = merged.end - 1;
    merged.dirty = false;
    WindowState& ws = open_window(kit, merged.start, merged.end, false);
    ws = std::move(merged);
    touch(kit, ws);
}

// ---------------------------------------------------------------------------------
// Commit

void WindowedAggregation::emit_row(const std::string& key, WindowState& ws, bool final,
                                   CommitOutput& out) {
    if (ws.emitted_start != kNoTime && ws.emitted_start != ws.start)
        out.deletes.push_back({key, ws.emitted_start});
    // Built in place: no temporary row to move, and the external bytes only when there are.
    SinkRow& row = out.upserts.emplace_back();
    row.key = key;
    row.start = ws.start;
    row.end = ws.end;
    row.event_time = ws.max_time;
    row.cells = ws.cells;
    row.final = final;
    row.fresh = ws.emitted_start == kNoTime;
    if (ext_) ws.ext.serialize(row.external);
    ws.emitted_start = ws.start;
    if (ws.ever_emitted)
        ++stats_.windows_reemitted;
    else
        ++stats_.windows_emitted;
    ws.ever_emitted = true;
}

void WindowedAggregation::tombstone(const std::string& key, const WindowState& ws) {
    WindowStateRow row{key,  ws.start,         ws.end,       ws.max_time, {},
                       true, segment_time(ws), std::nullopt, {}};
    tombstones_.push_back(std::move(row));
}

void WindowedAggregation::state_row(const std::string& key, WindowState& ws, CommitOutput& out,
                                    Millis segment) {
    WindowStateRow& row = out.state.emplace_back();
    row.key = key;
    row.start = ws.start;
    row.end = ws.end;
    row.event_time = ws.max_time;
    row.cells = ws.cells;
    row.segment = segment == kNoTime ? segment_time(ws) : segment;
    if (spec_.kind == WindowKind::Session) row.floor = ws.floor;
    if (ext_) ws.ext.serialize(row.external);
    ws.persisted = true;
    ws.dirty = false;
}

void WindowedAggregation::flush(Millis watermark, CommitOutput& out) {
    for (auto& r : retractions_) out.deletes.push_back(std::move(r));
    retractions_.clear();
    for (auto& t : tombstones_) out.state.push_back(std::move(t));
    tombstones_.clear();

    // Windows the watermark has closed: their final row, then they leave memory (grid
    // windows at once; sliding windows and sessions at their eviction_time).
    // Windows only leave (are compacted out of their key) and keys are only released at
    // the end, so the (key, start) names held by pending entries stay valid throughout.
    std::vector<KeyIt> compact;
    std::vector<KeyIt> released;
    released.reserve(dirty_keys_.size() + 64);
    out.state.reserve(out.state.size() + dirty_count_);
    if (emit_ == EmitStrategy::OnWindowUpdate)
        out.upserts.reserve(out.upserts.size() + dirty_count_);
    auto close = [&](KeyIt kit, WindowState* ws, Millis end) {
        if (ws && !ws->closed && ws->end == end) {
            // Every window the sink receives has its state row, written in the same commit
            // unless an earlier one already holds this very version: the state tables then
            // hold every window within retention, and the sink can be rewritten from them.
            // (Restore still skips closed windows, except sliding ones later windows derive from.)
            if (spec_.kind == WindowKind::Session) {
                // A closed session's final version goes to the segment of last + gap: kept
                // until W ≥ end + retention + gap at least, as long as the session is
                // remembered (eviction_time). Unless W is past that already.
                const Millis later = segments_.segment_of(ws->end - 1 + spec_.size);
                if (!segments_.expired(later, watermark))
                    state_row(kit->first, *ws, out, later);
                else if (ws->dirty || !ws->persisted)
                    state_row(kit->first, *ws, out);
            } else if (ws->dirty || !ws->persisted) {
                state_row(kit->first, *ws, out);
            }
            ws->dirty = false;
            emit_row(kit->first, *ws, true, out);
            ws->closed = true;
            --open_windows_;
            --kit->second.open;
            if (grid_kind())
                mark_gone(kit, *ws, compact);
            else
                schedule_eviction(kit, *ws);
        }  // else stale: merged away, moved or grown since it was scheduled
    };
    if (watermark != kNoTime) {
        auto bucket = calendar_.begin();
        for (; bucket != calendar_.end() && bucket->first <= watermark; ++bucket) {
            released.reserve(released.size() + bucket->second.size());
            calendar_entries_ -= bucket->second.size();
            for (const GridClose& c : bucket->second) {
                KeyState& ks = c.key->second;
                if (ks.close_at == c.at) {
                    ks.close_at = kNoTime;
                    Windows& m = ks.windows;
                    std::size_t i = 0;
                    for (; i < m.size() && spec_.is_closed(m[i].end, watermark); ++i)
                        close(c.key, &m[i], m[i].end);
                    // Later than this watermark: a bucket the loop does not reach.
                    if (i < m.size()) file_grid_close(c.key, spec_.close_point(m[i].end));
                }
                released.push_back(c.key);
            }
        }
        if (bucket != calendar_.begin()) {
            calendar_.erase(calendar_.begin(), bucket);
            last_bucket_ = nullptr;
        }
    }
    while (!closes_.empty() && watermark != kNoTime && closes_.top().at <= watermark) {
        const Pending p = closes_.top();
        closes_.pop();
        close(p.key, find_window(p.key, p.start), p.end);
        released.push_back(p.key);
    }
    while (!evictions_.empty() && watermark != kNoTime && evictions_.top().at <= watermark) {
        const Pending p = evictions_.top();
        evictions_.pop();
        WindowState* ws = find_window(p.key, p.start);
        if (ws && ws->closed && ws->end == p.end) {
            mark_gone(p.key, *ws, compact);
            // A session forgotten: the key's later open sessions may no longer extend back
            // to its last record (their state rows carry the floor).
            if (spec_.kind == WindowKind::Session)
                for (WindowState& o : p.key->second.windows) {
                    if (o.closed || o.gone || o.start <= p.start || o.floor >= p.end - 1) continue;
                    o.floor = p.end - 1;
                    if (!o.dirty) state_row(p.key->first, o, out);
                }
        }
        released.push_back(p.key);
    }

    // Windows changed since the last commit and still open.
    for (KeyIt kit : dirty_keys_) {
        kit->second.dirty_listed = false;
        for (WindowState& ws : kit->second.windows) {
            if (!ws.dirty) continue;
            state_row(kit->first, ws, out);
            if (emit_ == EmitStrategy::OnWindowUpdate) emit_row(kit->first, ws, false, out);
        }
        released.push_back(kit);
    }
    dirty_keys_.clear();
    dirty_count_ = 0;
    dirty_segments_.clear();
    last_dirty_segment_ = kNoTime;

    for (KeyIt kit : compact) {
        Windows& m = kit->second.windows;
        const auto gone =
            std::remove_if(m.begin(), m.end(), [](const WindowState& ws) { return ws.gone; });
        resident_ -= static_cast<std::size_t>(m.end() - gone);
        m.erase(gone, m.end());
        if (m.empty()) {  // the key may stay (pending entries name it): give its block back
            window_capacity_ -= m.capacity();
            Windows().swap(m);
        }
        kit->second.has_gone = false;
    }
    for (KeyIt kit : released) release(kit);
}

void WindowedAggregation::restore(const WindowStateRow& row, Millis watermark) {
    if (row.removed) return;
    const bool closed = spec_.is_closed(row.end, watermark);
    // Closed windows are final and emitted already; sliding windows and sessions come back
    // as closed ones until their eviction_time, as in an uninterrupted run.
    if (closed && (!(spec_.kind == WindowKind::Sliding || spec_.kind == WindowKind::Session) ||
                   watermark >= eviction_time(row.start, row.end)))
        return;
    if (row.cells.size() != layout_.size())
        throw Error(sqlstate::kDataCorrupted, "restored window state has the wrong aggregates");
    if (!ext_ && !row.external.empty())
        throw Error(sqlstate::kDataCorrupted,
                    "restored window state has external aggregates' state the aggregation lacks");
    KeyIt kit = keys_.find_or_insert(row.key);
    if (find_window(kit, row.start)) return;
    ExternalState ext;
    if (ext_) {
        try {
            ext = ExternalState(ext_, ext_->deserialize(row.external.data(), row.external.size()));
        } catch (...) {
            if (kit->second.refs == 0 && kit->second.windows.empty()) erase_key(kit);
            throw;
        }
    }
    WindowState& ws = open_window(kit, row.start, row.end, false);
    ws.cells = row.cells;
    ws.ext = std::move(ext);
    ws.max_time = row.event_time;
    ws.persisted = true;
    // A session's floor comes with its state; rows without one (written by 0.1) get the
    // forgotten zone of now, which may refuse more than an uninterrupted run would.
    if (spec_.kind == WindowKind::Session)
        ws.floor = row.floor ? *row.floor : forgotten_zone(watermark);
    // Under on_window_update every committed state version was upserted in the same
    // transaction; under on_window_close only closed windows were written.
    if (emit_ == EmitStrategy::OnWindowUpdate || closed) {
        ws.emitted_start = ws.start;
        ws.ever_emitted = true;
    }
    if (closed) {
        ws.closed = true;
        --open_windows_;
        --kit->second.open;
        schedule_eviction(kit, ws);
    }
}

}  // namespace stoatflow::core
