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
#include "stoatflow/core/window/sliding_assigner.hpp"

namespace stoatflow::core {

namespace {
using Windows = WindowStore::Windows;
template <class Pred>
const WindowState* last_in(const Windows& m, Millis lo, Millis hi, Pred pred) {
    if (lo > hi) return nullptr;
    for (std::size_t i = WindowStore::upper_index(m, hi); i > 0;) {
        --i;
        if (m[i].start < lo) break;
        if (pred(m[i])) return &m[i];
    }
    return nullptr;
}
template <class Pred>
const WindowState* first_in(const Windows& m, Millis lo, Millis hi, Pred pred) {
    for (std::size_t i = WindowStore::lower_index(m, lo); i < m.size() && m[i].start <= hi; ++i)
        if (pred(m[i])) return &m[i];
    return nullptr;
}
}  // namespace

void SlidingAssigner::assign(WindowStore::KeyIt kit, Millis t, const Value* values, Millis w,
                             AggregationStats& stats) {
    const WindowSpec& spec = store_.spec();
    const AggLayout& layout = store_.layout();
    const bool ext = store_.ext() != nullptr;
    const Millis d = spec.size;
    if (spec.is_closed(t + 1, w)) {
        ++stats.dropped_late_window;
        return;
    }
    Windows& m = kit->second.windows;
    auto any = [](const WindowState&) { return true; };
    auto record = [this](const WindowState& ws) { return is_record_window(ws); };

    // CellArray, not std::vector: no heap allocation per record for the usual few aggregates.
    CellArray left_base, right_base;
    ExternalState left_ext, right_ext;  // copies, like the cells (empty without external ones)
    bool make_left = false, make_right = false, make_prev_right = false;
    Millis right_max = kNoTime, prev_right_start = 0;

    const WindowState* left = WindowStore::find_window(kit, t - d);
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
                if (ext) left_ext = (r ? r : p)->ext.copy();
            } else {
                left_base = CellArray(layout.size());
                left_ext = store_.new_external();
            }
        }
        if (!WindowStore::find_window(kit, t + 1)) {
            const WindowState* n = first_in(m, t - d + 1, t + 1, record);
            if (n) {
                const Millis nt = n->max_time;
                const WindowState* mw = last_in(m, nt - d, t + 1, record);
                const Millis mt = mw->max_time;
                const WindowState* u = last_in(m, mt - d + 1, t, any);
                right_base = u ? u->cells : mw->cells;
                if (ext) right_ext = (u ? u : mw)->ext.copy();
                right_max = mt;
                make_right = true;
            }
        }
        if (p && !WindowStore::find_window(kit, p->max_time + 1) && p->max_time + 1 != t - d) {
            make_prev_right = true;
            prev_right_start = p->max_time + 1;
        }
    }

    // Existing windows containing t.
    for (std::size_t i = WindowStore::lower_index(m, t - d); i < m.size() && m[i].start <= t; ++i) {
        store_.fold(m[i], values);
        m[i].max_time = std::max(m[i].max_time, t);
        store_.touch(kit, m[i]);
    }
    auto create = [&](Millis start, CellArray&& cells, ExternalState&& ext_state, Millis max_time,
                      bool add_t) {
        WindowState& ws = store_.open_window(kit, start, start + d + 1, false);
        ws.cells = std::move(cells);
        ws.ext = std::move(ext_state);
        ws.max_time = max_time;
        if (add_t) store_.fold(ws, values);
        store_.touch(kit, ws);
    };
    if (make_left) create(t - d, std::move(left_base), std::move(left_ext), t, true);
    if (make_prev_right)
        create(prev_right_start, CellArray(layout.size()), store_.new_external(), t, true);
    if (make_right) create(t + 1, std::move(right_base), std::move(right_ext), right_max, false);
}

}  // namespace stoatflow::core
