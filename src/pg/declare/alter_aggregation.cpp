// stoatflow.alter_aggregation(): grace, emit or retention of a running aggregation changed in
// place, its state kept (README "Altering an aggregation"). What may change is decided by the
// core (core::plan_alter); the running worker sees the new catalog row in its aggregation
// signature and restores its committed state under it.
#include "stoatflow/core/alter_plan.hpp"
#include "stoatflow/core/error.hpp"

#include <string>

#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/declare/declare.hpp"

extern "C" {
#include "utils/builtins.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

STOATFLOW_FUNCTION(stoatflow_alter_aggregation) {
    if (PG_ARGISNULL(0))
        throw Error(sqlstate::kNullValueNotAllowed, "aggregation_name must not be NULL");
    const std::string name = text_to_string(PG_GETARG_DATUM(0));
    core::AlterRequest request;
    if (!PG_ARGISNULL(1)) request.grace = declare::interval_ms(PG_GETARG_DATUM(1), "grace");
    if (!PG_ARGISNULL(2))
        request.emit = core::emit_strategy_from_name(text_to_string(PG_GETARG_DATUM(2)));
    if (!PG_ARGISNULL(3)) request.retention = declare::interval_ms(PG_GETARG_DATUM(3), "retention");

    SpiSession spi;
    // The one owner check of an aggregation; it locks the catalog row, so a concurrent alter or
    // drop waits for this one.
    spi_exec("SELECT stoatflow._owned_aggregation($1, 'alter')", {arg_text(name)});
    const AggregationDef def = load_aggregation(name);
    core::AggregationParams before{def.spec, def.emit, def.retention, def.segment_interval};
    before.spec.closed_through = core::kNoTime;
    const core::AlterPlan plan = core::plan_alter(before, request);
    // README "Roll-ups": a roll-up's watermark trails its upstream's by the upstream's size +
    // grace; a smaller grace would move it ahead past windows not yet delivered to it.
    if (plan.after.spec.grace < def.spec.grace &&
        spi_exec("SELECT pg_catalog.string_agg(a.aggregation_name, ', ' ORDER BY "
                 "a.aggregation_name) FROM stoatflow.aggregation a WHERE a.upstream_id "
                 "OPERATOR(pg_catalog.=) $1 HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0",
                 {arg_int32(def.id)}) > 0)
        throw Error(sqlstate::kFeatureNotSupported,
                    "the grace of aggregation \"" + name +
                        "\" cannot be lowered: roll-ups read it (" + spi_text(0, 1).value_or("") +
                        ")",
                    "A larger grace is fine. To lower it, drop those roll-ups, alter, and create "
                    "them again.");
    for (const std::string& notice : plan.notices)
        pg_call([&] { ereport(NOTICE, (errmsg("%s", notice.c_str()))); });
    if (plan.changes)
        spi_exec("UPDATE stoatflow.aggregation SET grace_ms = $2, emit = $3, retention_ms = $4 "
                 "WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
                 {arg_int32(def.id), arg_int64(plan.after.spec.grace),
                  arg_text(core::to_string(plan.after.emit)), arg_int64(plan.after.retention)});
    spi.finish();
    PG_RETURN_VOID();
}
