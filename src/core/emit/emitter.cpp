// A window's sink row, built into the commit's output.
#include "stoatflow/core/emit/emitter.hpp"

namespace stoatflow::core {

void Emitter::emit_row(const std::string& key, WindowState& ws, bool final, CommitOutput& out,
                       AggregationStats& stats) const {
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
        ++stats.windows_reemitted;
    else
        ++stats.windows_emitted;
    ws.ever_emitted = true;
}

}  // namespace stoatflow::core
