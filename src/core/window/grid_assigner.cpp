// A record into its tumbling or hopping windows.
#include "stoatflow/core/window/grid_assigner.hpp"

namespace stoatflow::core {

void GridAssigner::assign(WindowStore::KeyIt kit, Millis t, const Value* values, Millis w,
                          AggregationStats& stats) {
    const WindowSpec& spec = store_.spec();
    WindowStore::Windows& m = kit->second.windows;
    if (spec.advance == spec.size) {  // tumbling: one window, usually the key's newest
        const Millis start = floor_to(t, spec.size);
        if (spec.is_closed(start + spec.size, w)) {
            ++stats.dropped_late_window;
            return;
        }
        WindowState* hit = WindowStore::find_window(kit, start);
        if (!hit) hit = &store_.open_window(kit, start, start + spec.size);
        store_.add_to(kit, *hit, t, values);
        return;
    }
    // Hopping: the record's windows are consecutive in the key's windows (starts
    // descending by advance), so one search finds the newest and the rest are neighbours.
    const Millis newest = floor_to(t, spec.advance);
    std::size_t pos =
        m.empty() || m.back().start <= newest ? m.size() : WindowStore::upper_index(m, newest);
    grid_.for_each_newest_from(newest, t, [&](Window win) {
        if (spec.is_closed(win.end, w)) {
            ++stats.dropped_late_window;
            return;
        }
        if (pos > 0 && m[pos - 1].start == win.start) {
            --pos;
        } else {
            store_.reserve_hops(kit);
            store_.init_window(kit, store_.insert_window(kit, pos), win.start, win.end);
        }
        store_.add_to(kit, m[pos], t, values);
    });
}

}  // namespace stoatflow::core
