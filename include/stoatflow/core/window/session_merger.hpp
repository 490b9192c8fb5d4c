// Session windows: a record joins every open session of its key within gap and they merge
// into one; a late record may extend an open session back, within limits that keep the
// sink's rows of closed sessions intact (see session_merger.cpp).
#pragma once
#include "stoatflow/core/emit/commit_output.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/window/window_store.hpp"

#include <vector>

namespace stoatflow::core {

class SessionMerger {
public:
    explicit SessionMerger(WindowStore& store) : store_(store) {}
    void assign(WindowStore::KeyIt kit, Millis t, const Value* values, Millis w,
                AggregationStats& stats);
    // The latest last-record time a forgotten closed session can have at W.
    Millis forgotten_zone(Millis w) const;
    // A closed session [start, end) of the key left memory: its later open sessions may no
    // longer extend back to its last record (their state rows, written to out, carry the
    // raised floor).
    void forgotten(WindowStore::KeyIt kit, Millis start, Millis end, CommitOutput& out);

private:
    // May a late record at t extend m[keep] (open) back to start at t?
    bool may_start_at(const WindowStore::Windows& m, std::size_t keep, Millis t, Millis w) const;

    WindowStore& store_;
    // assign's scratch: the sessions a record joins (kept, so no allocation per record)
    std::vector<std::size_t> joined_;
};

}  // namespace stoatflow::core
