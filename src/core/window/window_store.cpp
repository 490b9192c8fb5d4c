// The books of an aggregation's windows: opening and removing them with their memory
// accounted, close and eviction scheduling, state rows and tombstones, the end of a flush.
#include "stoatflow/core/window/window_store.hpp"

#include "stoatflow/core/window/window_assigner.hpp"

#include <cassert>
#include <cmath>

namespace stoatflow::core {

namespace {
SegmentLayout segments_of(const WindowSpec& spec, Millis retention, Millis segment_interval) {
    spec.validate();
    const Millis r = resolve_retention(spec, retention);
    return segment_interval > 0 ? SegmentLayout::with_interval(r, segment_interval)
                                : SegmentLayout(r, spec.length());
}
}  // namespace

WindowStore::WindowStore(const WindowSpec& spec, AggLayout layout, Millis retention,
                         Millis segment_interval)
    : spec_(spec), layout_(std::move(layout)), ext_(layout_.external()),
      segments_(segments_of(spec, retention, segment_interval)),
      hop_reserve_(spec.kind == WindowKind::Hopping
                       ? static_cast<std::size_t>(WindowAssigner(spec).windows_per_record()) + 1
                       : 0) {}

std::size_t WindowStore::keys_with_open_windows() const {
    std::size_t n = 0;
    keys_.for_each([&](const auto& e) { n += e.second.open > 0; });
    return n;
}

namespace {
std::size_t extra_cell_bytes(std::size_t aggregates) {
    return aggregates > CellArray::kInline ? aggregates * sizeof(AggCell) : 0;
}
bool is_grid(WindowKind kind) {
    return kind == WindowKind::Tumbling || kind == WindowKind::Hopping;
}
}  // namespace

std::size_t WindowStore::window_bytes(WindowKind kind, std::size_t aggregates) {
    return sizeof(WindowState) + extra_cell_bytes(aggregates) +
           (is_grid(kind) ? 0 : sizeof(Pending));
}

std::size_t WindowStore::key_bytes(WindowKind kind, std::size_t key_length) {
    return KeyMap::average_bytes_per_entry(key_length) + (is_grid(kind) ? sizeof(GridClose) : 0) +
           sizeof(KeyIt);
}

double WindowStore::window_places(const WindowSpec& spec, double open) {
    // The block is a vector: it starts at one place (hopping: the reserve), doubles when full and
    // never shrinks, so it ends at the first such capacity that held the most windows at once.
    std::size_t places =
        spec.kind == WindowKind::Hopping
            ? static_cast<std::size_t>(WindowAssigner(spec).windows_per_record() + 1)
            : 1;
    while (static_cast<double>(places) < std::ceil(open)) places *= 2;
    return static_cast<double>(places);
}

std::size_t WindowStore::heap_bytes() const {
    // Containers whose capacity is not at hand are counted by size: their slack is at most
    // their size again (growth by doubling), and every term here is an estimate anyway.
    constexpr std::size_t kMapNode = 32;  // red-black tree node header (libstdc++)
    const std::size_t cells = extra_cell_bytes(layout_.size());
    return keys_.memory_bytes() + window_capacity_ * sizeof(WindowState) + resident_ * cells +
           calendar_.size() * (kMapNode + sizeof(Calendar::value_type)) +
           calendar_entries_ * sizeof(GridClose) +
           (closes_.size() + evictions_.size()) * sizeof(Pending) +
           dirty_keys_.capacity() * sizeof(KeyIt) + retractions_.capacity() * sizeof(SinkDelete) +
           tombstones_.capacity() * sizeof(WindowStateRow) + (ext_ ? ext_->memory_bytes() : 0);
}

WindowState& WindowStore::insert_window(KeyIt kit, std::size_t index) {
    Windows& m = kit->second.windows;
    const std::size_t before = m.capacity();
    m.emplace(m.begin() + static_cast<std::ptrdiff_t>(index));
    window_capacity_ += m.capacity() - before;
    ++resident_;
    return m[index];
}

void WindowStore::erase_key(KeyIt kit) {
    window_capacity_ -= kit->second.windows.capacity();
    keys_.erase(kit);
}

WindowState& WindowStore::open_window(KeyIt kit, Millis start, Millis end, bool fresh_ext) {
    Windows& m = kit->second.windows;
    const std::size_t i = m.empty() || m.back().start < start ? m.size() : lower_index(m, start);
    assert(i == m.size() || m[i].start != start);
    // A hopping record opens several windows at once: room for them in one allocation.
    reserve_hops(kit);
    return init_window(kit, insert_window(kit, i), start, end, fresh_ext);
}

WindowState& WindowStore::init_window(KeyIt kit, WindowState& ws, Millis start, Millis end,
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

void WindowStore::remove_window(KeyIt kit, std::size_t index) {
    Windows& m = kit->second.windows;
    if (!m[index].closed) {
        --open_windows_;
        --kit->second.open;
    }
    m.erase(m.begin() + static_cast<std::ptrdiff_t>(index));
    --resident_;
}

void WindowStore::schedule_close(KeyIt kit, const WindowState& ws) {
    const Millis at = spec_.close_point(ws.end);
    if (grid_kind()) {
        const Millis filed = kit->second.close_at;
        if (filed == kNoTime || at < filed) file_grid_close(kit, at);
        return;
    }
    closes_.push(Pending{at, kit, ws.start, ws.end});
    ++kit->second.refs;
}

void WindowStore::file_grid_close(KeyIt kit, Millis at) {
    if (at != last_bucket_at_ || !last_bucket_) {
        last_bucket_ = &calendar_[at];
        last_bucket_at_ = at;
    }
    last_bucket_->push_back(GridClose{kit, at});
    ++calendar_entries_;
    kit->second.close_at = at;
    ++kit->second.refs;
}

Millis WindowStore::eviction_time(Millis start, Millis end) const {
    // Sliding: once the window starts at or before W − retention. Sessions: once W ≥ end +
    // retention + gap; their final state row lies in the segment of last + gap (see
    // WindowedAggregation::flush), which is kept at least that long, so a restart remembers
    // exactly the closed sessions an uninterrupted run would.
    return spec_.kind == WindowKind::Session ? end + segments_.retention() + spec_.size
                                             : start + segments_.retention() + 1;
}

void WindowStore::schedule_eviction(KeyIt kit, const WindowState& ws) {
    evictions_.push(Pending{eviction_time(ws.start, ws.end), kit, ws.start, ws.end});
    ++kit->second.refs;
}

void WindowStore::mark_gone(KeyIt kit, WindowState& ws, std::vector<KeyIt>& compact) {
    ws.gone = true;
    if (!kit->second.has_gone) {
        kit->second.has_gone = true;
        compact.push_back(kit);
    }
}

void WindowStore::release(KeyIt kit) {
    if (--kit->second.refs == 0 && kit->second.windows.empty()) erase_key(kit);
}

void WindowStore::tombstone(const std::string& key, const WindowState& ws) {
    WindowStateRow row{key,  ws.start,         ws.end,       ws.max_time, {},
                       true, segment_time(ws), std::nullopt, {}};
    tombstones_.push_back(std::move(row));
}

void WindowStore::state_row(const std::string& key, WindowState& ws, CommitOutput& out,
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

WindowStore::Sweep WindowStore::take_removals(CommitOutput& out) {
    for (auto& r : retractions_) out.deletes.push_back(std::move(r));
    retractions_.clear();
    for (auto& t : tombstones_) out.state.push_back(std::move(t));
    tombstones_.clear();
    Sweep sweep;
    sweep.released.reserve(dirty_keys_.size() + 64);
    return sweep;
}

void WindowStore::end_sweep(Sweep& sweep) {
    for (KeyIt kit : sweep.compact) {
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
    for (KeyIt kit : sweep.released) release(kit);
}

}  // namespace stoatflow::core
