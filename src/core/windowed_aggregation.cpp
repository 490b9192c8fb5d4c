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
    if (name == "on_window_update") return EmitStrategy::OnWindowUpdate;
    if (name == "on_window_close") return EmitStrategy::OnWindowClose;
    throw Error(sqlstate::kInvalidParameterValue, "unknown emit strategy \"" + name + "\"",
                "Use 'on_window_update' (a row per change, final when closed) or "
                "'on_window_close' (one final row per window).");
}

const char* to_string(DropReason r) {
    return r == DropReason::LateWindow ? "late_window" : "late_session";
}

WindowedAggregation::WindowedAggregation(WindowSpec spec, std::vector<AggSpec> aggregates,
                                         EmitStrategy emit, Millis retention)
    : spec_(spec), layout_(normalize_aggregates(std::move(aggregates))), emit_(emit),
      segments_(resolve_retention((spec.validate(), spec), retention), spec.length()),
      grid_(spec) {}

std::size_t WindowedAggregation::keys_with_open_windows() const {
    std::size_t n = 0;
    keys_.for_each([&](const auto& e) { n += e.second.open > 0; });
    return n;
}

std::size_t WindowedAggregation::resident_windows() const {
    std::size_t n = 0;
    keys_.for_each([&](const auto& e) { n += e.second.windows.size(); });
    return n;
}

Millis WindowedAggregation::segment_time(const WindowState& ws) const {
    // Sessions live in the segment of their last record, time windows of their start.
    return segments_.segment_of(spec_.kind == WindowKind::Session ? ws.end - 1 : ws.start);
}

// ---------------------------------------------------------------------------------
// Window bookkeeping

WindowedAggregation::WindowState& WindowedAggregation::open_window(KeyIt kit,
                                                                   Millis start, Millis end) {
    auto [it, inserted] = kit->second.windows.try_emplace(start);
    assert(inserted);
    (void)inserted;
    return init_window(kit, it->second, start, end);
}

WindowedAggregation::WindowState& WindowedAggregation::init_window(KeyIt kit, WindowState& ws,
                                                                   Millis start, Millis end) {
    ws.start = start;
    ws.end = end;
    ws.cells = CellArray(layout_.size());
    ++open_windows_;
    ++kit->second.open;
    schedule_close(kit, ws);
    return ws;
}

void WindowedAggregation::schedule_close(KeyIt kit, const WindowState& ws) {
    closes_.push(Pending{spec_.close_point(ws.end), kit, ws.start, ws.end, const_cast<WindowState*>(&ws)});
    ++kit->second.refs;
}

void WindowedAggregation::schedule_eviction(KeyIt kit, const WindowState& ws) {
    evictions_.push(Pending{ws.start + segments_.retention() + 1, kit, ws.start, ws.end,
                            const_cast<WindowState*>(&ws)});
    ++kit->second.refs;
}

void WindowedAggregation::release(KeyIt kit) {
    if (--kit->second.refs == 0 && kit->second.windows.empty()) keys_.erase(kit);
}

void WindowedAggregation::touch(KeyIt kit, WindowState& ws) {
    if (!ws.dirty) {
        ws.dirty = true;
        dirty_.push_back(Dirty{kit, ws.start, &ws});
        ++kit->second.refs;
    }
}

void WindowedAggregation::remove_window(KeyIt kit,
                                        std::map<Millis, WindowState>::iterator wit) {
    WindowState& ws = wit->second;
    if (kit->second.last == &ws) kit->second.last = nullptr;
    if (!ws.closed) {
        --open_windows_;
        --kit->second.open;
    }
    kit->second.windows.erase(wit);
}

// ---------------------------------------------------------------------------------
// Records in

void WindowedAggregation::process(std::string_view key, Millis t, const Value* values,
                                  Millis watermark) {
    process_one(keys_.find_or_insert(key), t, values, watermark);
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
            // the window most recently touched for that key (grid kinds hit it)
            if (const auto* e = keys_.peek(hashes[i]); e && e->second.last) __builtin_prefetch(e->second.last);
        }
        for (std::size_t i = 0; i < m; ++i) {
            const RecordRef& r = records[base + i];
            process_one(keys_.find_or_insert(r.key, hashes[i]), r.t, r.values, r.watermark);
        }
    }
}

void WindowedAggregation::process_one(KeyIt kit, Millis t, const Value* values, Millis watermark) {
    ++stats_.records_in;
    switch (spec_.kind) {
    case WindowKind::Tumbling:
    case WindowKind::Hopping: process_grid(kit, t, values, watermark); break;
    case WindowKind::Sliding: process_sliding(kit, t, values, watermark); break;
    case WindowKind::Session: process_session(kit, t, values, watermark); break;
    }
    if (kit->second.refs == 0 && kit->second.windows.empty()) keys_.erase(kit);  // all late
}

void WindowedAggregation::process_grid(KeyIt kit, Millis t, const Value* values,
                                       Millis w) {
    KeyState& ks = kit->second;
    if (spec_.advance == spec_.size) {  // tumbling: one window, usually the last one touched
        const Window win{floor_to(t, spec_.size), floor_to(t, spec_.size) + spec_.size};
        if (spec_.is_closed(win.end, w)) {
            ++stats_.dropped_late_window;
            return;
        }
        WindowState* hit = ks.last;
        if (!hit || hit->start != win.start) {
            auto it = ks.windows.find(win.start);
            hit = it != ks.windows.end() ? &it->second : &open_window(kit, win.start, win.end);
            ks.last = hit;
        }
        add_to(kit, *hit, t, values);
        return;
    }
    // Hopping: the record's windows are consecutive in the key's map (starts descending
    // by advance), so one search finds the newest and the rest are neighbours.
    auto pos = ks.windows.upper_bound(floor_to(t, spec_.advance));
    grid_.for_each(t, [&](Window win) {
        if (spec_.is_closed(win.end, w)) {
            ++stats_.dropped_late_window;
            return;
        }
        auto prev = pos;
        if (pos != ks.windows.begin() && (--prev)->first == win.start) {
            pos = prev;
        } else {
            pos = ks.windows.emplace_hint(pos, win.start, WindowState{});
            init_window(kit, pos->second, win.start, win.end);
        }
        add_to(kit, pos->second, t, values);
    });
}

void WindowedAggregation::add_to(KeyIt kit, WindowState& ws, Millis t, const Value* values) {
    layout_.add(ws.cells.data(), values);
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
template <class Map, class Pred>
const typename Map::mapped_type* last_in(const Map& m, Millis lo, Millis hi, Pred pred) {
    if (lo > hi) return nullptr;
    auto it = m.upper_bound(hi);
    while (it != m.begin()) {
        --it;
        if (it->first < lo) break;
        if (pred(it->second)) return &it->second;
    }
    return nullptr;
}
template <class Map, class Pred>
const typename Map::mapped_type* first_in(const Map& m, Millis lo, Millis hi, Pred pred) {
    for (auto it = m.lower_bound(lo); it != m.end() && it->first <= hi; ++it)
        if (pred(it->second)) return &it->second;
    return nullptr;
}
}  // namespace

void WindowedAggregation::process_sliding(KeyIt kit, Millis t, const Value* values,
                                          Millis w) {
    const Millis d = spec_.size;
    if (spec_.is_closed(t + 1, w)) {
        ++stats_.dropped_late_window;
        return;
    }
    auto& m = kit->second.windows;
    const KeyState& ks = kit->second;
    auto any = [](const WindowState&) { return true; };
    auto record = [this](const WindowState& ws) { return is_record_window(ws); };

    std::vector<AggCell> left_base, right_base;
    bool make_left = false, make_right = false, make_prev_right = false;
    Millis right_max = kNoTime, prev_right_start = 0;

    const bool left_exists = m.count(t - d) != 0;
    const bool t_known = left_exists && is_record_window(m.at(t - d));
    if (!t_known) {
        const WindowState* p = last_in(ks.windows, t - 2 * d, t - d - 1, record);
        if (!left_exists) {
            make_left = true;
            if (p) {
                const Millis pt = p->max_time;
                const WindowState* r = last_in(ks.windows, pt - d + 1, t - d, any);
                left_base = r ? r->cells : p->cells;
            } else {
                left_base = layout_.empty_state();
            }
        }
        if (m.count(t + 1) == 0) {
            const WindowState* n = first_in(ks.windows, t - d + 1, t + 1, record);
            if (n) {
                const Millis nt = n->max_time;
                const WindowState* mw = last_in(ks.windows, nt - d, t + 1, record);
                const Millis mt = mw->max_time;
                const WindowState* u = last_in(ks.windows, mt - d + 1, t, any);
                right_base = u ? u->cells : mw->cells;
                right_max = mt;
                make_right = true;
            }
        }
        if (p && m.count(p->max_time + 1) == 0 && p->max_time + 1 != t - d) {
            make_prev_right = true;
            prev_right_start = p->max_time + 1;
        }
    }

    // Existing windows containing t.
    for (auto it = m.lower_bound(t - d); it != m.end() && it->first <= t; ++it) {
        layout_.add(it->second.cells.data(), values);
        it->second.max_time = std::max(it->second.max_time, t);
        touch(kit, it->second);
    }
    auto create = [&](Millis start, std::vector<AggCell>&& cells, Millis max_time, bool add_t) {
        WindowState& ws = open_window(kit, start, start + d + 1);
        ws.cells = std::move(cells);
        ws.max_time = max_time;
        if (add_t) layout_.add(ws.cells.data(), values);
        touch(kit, ws);
    };
    if (make_left) create(t - d, std::move(left_base), t, true);
    if (make_prev_right) create(prev_right_start, layout_.empty_state(), t, true);
    if (make_right) create(t + 1, std::move(right_base), right_max, false);
}

// Sessions: a record joins every open session whose [first−gap, last+gap] holds it;
// they merge into one. A record that joins none starts [t, t] unless that would already
// be closed (dropped, late_session). A late record — its own [t, t] would be closed —
// may still land inside an open session, but never extends one backwards: closed
// sessions before it must stay untouched and keep their sink rows.
void WindowedAggregation::process_session(KeyIt kit, Millis t, const Value* values,
                                          Millis w) {
    const Millis gap = spec_.size;
    auto& m = kit->second.windows;
    std::vector<std::map<Millis, WindowState>::iterator> joined;  // newest first
    for (auto it = m.upper_bound(t + gap); it != m.begin();) {
        --it;
        WindowState& ws = it->second;
        const bool open = !ws.closed && !spec_.is_closed(ws.end, w);
        if (ws.end - 1 + gap < t) {
            if (open) break;  // open sessions are disjoint and ordered: none further back
            continue;
        }
        if (open) joined.push_back(it);
    }
    const bool own_closed = spec_.is_closed(t + 1, w);
    if (joined.empty()) {
        if (own_closed) {
            ++stats_.dropped_late_session;
            return;
        }
        WindowState& ws = open_window(kit, t, t + 1);
        layout_.add(ws.cells.data(), values);
        ws.max_time = t;
        touch(kit, ws);
        return;
    }
    auto keep = joined.back();  // the earliest session survives; the others merge into it
    if (t < keep->first && own_closed) {
        ++stats_.dropped_late_session;
        return;
    }
    WindowState merged = std::move(keep->second);
    for (std::size_t i = 0; i + 1 < joined.size(); ++i) {
        WindowState& other = joined[i]->second;
        layout_.merge(merged.cells.data(), other.cells.data());
        merged.end = std::max(merged.end, other.end);
        if (other.emitted_start != kNoTime) retractions_.push_back({kit->first, other.emitted_start});
        if (other.persisted)
            tombstones_.push_back({kit->first, other.start, other.end, other.max_time, {}, true,
                                   segment_time(other)});
        ++stats_.sessions_merged;
        remove_window(kit, joined[i]);
    }
    remove_window(kit, keep);
    layout_.add(merged.cells.data(), values);
    if (t < merged.start && merged.persisted) {
        // The session's identity (key, first) moves: the old state rows become stale.
        tombstones_.push_back({kit->first, merged.start, merged.end, merged.max_time, {}, true,
                               segment_time(merged)});
        merged.persisted = false;
    }
    merged.start = std::min(merged.start, t);
    merged.end = std::max(merged.end, t + 1);
    merged.max_time = merged.end - 1;
    merged.dirty = false;
    WindowState& ws = open_window(kit, merged.start, merged.end);
    ws = std::move(merged);
    touch(kit, ws);
}

// ---------------------------------------------------------------------------------
// Commit

void WindowedAggregation::emit_row(const std::string& key, WindowState& ws, bool final,
                                   CommitOutput& out) {
    if (ws.emitted_start != kNoTime && ws.emitted_start != ws.start)
        out.deletes.push_back({key, ws.emitted_start});
    out.upserts.push_back(SinkRow{key, ws.start, ws.end, ws.max_time, ws.cells, final, ws.emitted_start == kNoTime});
    ws.emitted_start = ws.start;
    if (ws.ever_emitted) ++stats_.windows_reemitted;
    else ++stats_.windows_emitted;
    ws.ever_emitted = true;
}

void WindowedAggregation::state_row(const std::string& key, WindowState& ws, CommitOutput& out) {
    out.state.push_back(
        WindowStateRow{key, ws.start, ws.end, ws.max_time, ws.cells, false, segment_time(ws)});
    ws.persisted = true;
    ws.dirty = false;
}

void WindowedAggregation::flush(Millis watermark, CommitOutput& out) {
    for (auto& r : retractions_) out.deletes.push_back(std::move(r));
    retractions_.clear();
    for (auto& t : tombstones_) out.state.push_back(std::move(t));
    tombstones_.clear();

    // Windows the watermark has closed: their final row, then they leave memory
    // (sliding windows stay until they leave retention: later windows derive from them).
    // Erasing and releasing keys waits until the end, so the pointers held by pending
    // entries and the dirty list stay valid throughout.
    std::vector<std::pair<KeyIt, Millis>> erase;
    std::vector<KeyIt> released;
    released.reserve(dirty_.size() + 64);
    out.state.reserve(out.state.size() + dirty_.size());
    if (emit_ == EmitStrategy::OnWindowUpdate) out.upserts.reserve(out.upserts.size() + dirty_.size());
    const bool direct = stable_windows();
    while (!closes_.empty() && watermark != kNoTime && closes_.top().at <= watermark) {
        const Pending p = closes_.top();
        closes_.pop();
        KeyIt kit = p.key;
        WindowState* ws = direct ? p.ws : find_window(kit, p.start);
        if (ws && !ws->closed && ws->end == p.end) {
            // A closed window's state is never read again (restore skips windows the
            // committed W has closed), except a sliding window's: later windows derive from it.
            if (ws->dirty && spec_.kind == WindowKind::Sliding) state_row(kit->first, *ws, out);
            ws->dirty = false;
            emit_row(kit->first, *ws, true, out);
            ws->closed = true;
            --open_windows_;
            --kit->second.open;
            if (spec_.kind == WindowKind::Sliding) schedule_eviction(kit, *ws);
            else erase.emplace_back(kit, ws->start);
        }  // else stale: merged away, moved or grown since it was scheduled
        released.push_back(kit);
    }
    while (!evictions_.empty() && watermark != kNoTime && evictions_.top().at <= watermark) {
        const Pending p = evictions_.top();
        evictions_.pop();
        erase.emplace_back(p.key, p.start);
        released.push_back(p.key);
    }

    // Windows changed since the last commit and still open.
    for (const Dirty& d : dirty_) {
        WindowState* ws = direct ? d.ws : find_window(d.key, d.start);
        if (ws && ws->dirty) {
            state_row(d.key->first, *ws, out);
            if (emit_ == EmitStrategy::OnWindowUpdate) emit_row(d.key->first, *ws, false, out);
        }
        released.push_back(d.key);
    }
    dirty_.clear();

    for (const auto& [kit, start] : erase) {
        auto wit = kit->second.windows.find(start);
        if (wit == kit->second.windows.end()) continue;
        if (kit->second.last == &wit->second) kit->second.last = nullptr;
        kit->second.windows.erase(wit);
    }
    for (KeyIt kit : released) release(kit);
}

void WindowedAggregation::restore(const WindowStateRow& row, Millis watermark) {
    if (row.removed) return;
    const bool closed = spec_.is_closed(row.end, watermark);
    if (closed && spec_.kind != WindowKind::Sliding) return;  // final and emitted already
    KeyIt kit = keys_.find_or_insert(row.key);
    if (kit->second.windows.count(row.start)) return;
    if (row.cells.size() != layout_.size())
        throw Error(sqlstate::kDataCorrupted, "restored window state has the wrong aggregates");
    WindowState& ws = open_window(kit, row.start, row.end);
    ws.cells = row.cells;
    ws.max_time = row.event_time;
    ws.persisted = true;
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
