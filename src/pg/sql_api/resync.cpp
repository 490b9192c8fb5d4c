// stoatflow.resync_sink(aggregation): rewrites the sink from the state tables — every window
// still within retention — after a TRUNCATE, an accidental DELETE or a re-created table.
#include "stoatflow/core/error.hpp"

#include <string>
#include <vector>

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/worker/commit_cycle.hpp"
#include "stoatflow/pg/executor/exec_path.hpp"
#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/catalog/segment_store.hpp"
#include "stoatflow/pg/sink/sink_writer.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "miscadmin.h"
#include "utils/acl.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

STOATFLOW_FUNCTION(stoatflow_resync_sink) {
    if (PG_ARGISNULL(0))
        throw Error(sqlstate::kInvalidParameterValue, "aggregation name must not be NULL");
    const std::string name = text_to_string(PG_GETARG_DATUM(0));
    SpiSession spi;
    // The one owner check of an aggregation (it locks the catalog row against an alter or drop).
    spi_exec("SELECT stoatflow._owned_aggregation($1, 'resync')", {arg_text(name)});
    const AggregationDef def = load_aggregation(name);
    // The worker updates this row in every commit: holding it makes that commit wait, so what is
    // read below is the newest committed state and nothing newer is overwritten with older values.
    spi_exec("SELECT 1 FROM stoatflow.aggregation_progress WHERE aggregation_id "
             "OPERATOR(pg_catalog.=) $1 FOR UPDATE",
             {arg_int32(def.id)});
    const core::Millis w = committed_watermark(def.id);

    const BackendLayout backend(def);
    const core::AggLayout& layout = backend.layout();
    const bool on_close = def.emit == core::EmitStrategy::OnWindowClose;
    std::vector<core::SinkRow> rows;
    std::vector<core::SinkDelete> deletes;
    SegmentStore segments(def.id, def.segment_interval, def.retention);
    segments.load();
    segments.read_windows(layout, [&](const core::WindowStateRow& r) {
        if (r.removed) {  // a session merged away: its row must not be there
            deletes.push_back({r.key, r.start});
            return;
        }
        const bool closed = def.spec.is_closed(r.end, w);
        if (on_close && !closed) return;  // written once, at close
        core::SinkRow row;
        row.key = r.key;
        row.start = r.start;
        row.end = r.end;
        row.event_time = r.event_time;
        row.cells = r.cells;
        row.external = r.external;
        row.final = closed;
        rows.push_back(std::move(row));
    });
    std::vector<const core::SinkRow*> upserts;
    for (const auto& r : rows) upserts.push_back(&r);
    const Oid sink = resolve_sink(def);
    write_sink_rows(def, layout, sink, deletes, upserts);
    if (sink != def.sink)
        spi_exec("UPDATE stoatflow.aggregation SET sink = $2 WHERE aggregation_id "
                 "OPERATOR(pg_catalog.=) $1",
                 {arg_int32(def.id), {OIDOID, ObjectIdGetDatum(sink)}});
    spi.finish();
    PG_RETURN_INT64(static_cast<std::int64_t>(rows.size()));
}
