// What a commit writes for one aggregation: window state rows (a segment table's rows, also
// what recovery reads back), sink deletes and sink upserts.
#pragma once
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"

#include <optional>
#include <string>
#include <vector>

namespace stoatflow::core {

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

}  // namespace stoatflow::core
