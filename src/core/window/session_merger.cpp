// Sessions: a record joins every open session whose [first−gap, last+gap] holds it;
// they merge into one. A record that joins none starts [t, t] unless that would already
// be closed (dropped, late_session). A record within gap of an open session joins it even
// when its own [t, t] would be closed, extending it backwards (README, "tumbling, hopping, sliding,
// session"), also over closed sessions of the key, which it never reopens or changes — within the
// limits of may_start_at.
//
// The sink knows a session by (key, first record), so an extension may not start where a
// closed session starts: that would overwrite its final row. Closed sessions are
// remembered until W ≥ end + retention + gap (WindowStore::eviction_time); below a
// forgotten one's last record an extension is refused outright, since whether a session
// began there is no longer known. Each open session carries that bound as its floor: the
// forgotten zone (forgotten_zone) when it began, raised to the last record of each earlier
// closed session of the key forgotten while it is open (forgotten), and kept in its state
// row (a restart knows it). Both refusals count as late_session.
#include "stoatflow/core/window/session_merger.hpp"

namespace stoatflow::core {

using Windows = WindowStore::Windows;

bool SessionMerger::may_start_at(const Windows& m, std::size_t keep, Millis t, Millis w) const {
    if (t <= m[keep].floor) return false;
    // Sorted by start: only the sessions before keep can start at t. Judged by W, not by
    // whether a flush has let them go (or raised the floor) yet.
    for (std::size_t i = 0; i < keep; ++i) {
        const WindowState& c = m[i];
        if (!(c.closed || store_.spec().is_closed(c.end, w))) continue;
        if (w < store_.eviction_time(c.start, c.end) ? c.start == t : t <= c.end - 1) return false;
    }
    return true;
}

Millis SessionMerger::forgotten_zone(Millis w) const {
    // Closed sessions with last + 1ms + retention + gap ≤ W are forgotten: last ≤ this.
    return w == kNoTime ? kNoTime : w - 1 - store_.segments().retention() - store_.spec().size;
}

void SessionMerger::forgotten(WindowStore::KeyIt kit, Millis start, Millis end, CommitOutput& out) {
    for (WindowState& o : kit->second.windows) {
        if (o.closed || o.gone || o.start <= start || o.floor >= end - 1) continue;
        o.floor = end - 1;
        if (!o.dirty) store_.state_row(kit->first, o, out);
    }
}

void SessionMerger::assign(WindowStore::KeyIt kit, Millis t, const Value* values, Millis w,
                           AggregationStats& stats) {
    const WindowSpec& spec = store_.spec();
    const Millis gap = spec.size;
    Windows& m = kit->second.windows;
    std::vector<std::size_t>& joined = joined_;  // indexes, newest first
    joined.clear();
    for (std::size_t i = WindowStore::upper_index(m, t + gap); i > 0;) {
        --i;
        const WindowState& ws = m[i];
        const bool open = !ws.closed && !spec.is_closed(ws.end, w);
        if (ws.end - 1 + gap < t) {
            if (open) break;  // open sessions are disjoint and ordered: none further back
            continue;
        }
        if (open) joined.push_back(i);
    }
    const bool own_closed = spec.is_closed(t + 1, w);
    if (joined.empty()) {
        if (own_closed) {
            ++stats.dropped_late_session;
            return;
        }
        WindowState& ws = store_.open_window(kit, t, t + 1);
        store_.fold(ws, values);
        ws.max_time = t;
        ws.floor = forgotten_zone(w);
        store_.touch(kit, ws);
        return;
    }
    // The earliest session survives; the others merge into it.
    const std::size_t keep = joined.back();
    if (t < m[keep].start && own_closed && !may_start_at(m, keep, t, w)) {
        ++stats.dropped_late_session;
        return;
    }
    const AggLayout& layout = store_.layout();
    const bool ext = store_.ext() != nullptr;
    WindowState merged = std::move(m[keep]);
    // Newest first: removing a window leaves the indexes of the earlier ones valid.
    for (std::size_t i = 0; i + 1 < joined.size(); ++i) {
        WindowState& other = m[joined[i]];
        layout.merge(merged.cells.data(), other.cells.data());
        if (ext) merged.ext.merge(other.ext);  // other's state goes with its window below
        merged.end = std::max(merged.end, other.end);
        if (other.emitted_start != kNoTime) store_.retract(kit->first, other.emitted_start);
        if (other.persisted) store_.tombstone(kit->first, other);
        ++stats.sessions_merged;
        store_.remove_window(kit, joined[i]);
    }
    store_.remove_window(kit, keep);
    store_.fold(merged, values);
    if (t < merged.start && merged.persisted) {
        // The session's identity (key, first) moves: the old state rows become stale.
        store_.tombstone(kit->first, merged);
        merged.persisted = false;
    }
    merged.start = std::min(merged.start, t);
    merged.end = std::max(merged.end, t + 1);
    merged.max_time = merged.end - 1;
    merged.dirty = false;
    WindowState& ws = store_.open_window(kit, merged.start, merged.end, false);
    ws = std::move(merged);
    store_.touch(kit, ws);
}

}  // namespace stoatflow::core
