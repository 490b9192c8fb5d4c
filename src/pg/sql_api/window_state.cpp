// stoatflow.window_state(aggregation, sink_row): the live windows of an aggregation (open
// and retained), read from its segment tables and returned as rows of the sink's type.
#include "stoatflow/core/error.hpp"

#include <string>

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/executor/exec_path.hpp"
#include "stoatflow/pg/worker/commit_cycle.hpp"
#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/catalog/segment_store.hpp"
#include "stoatflow/pg/sink/sink_writer.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/tuplestore.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

STOATFLOW_FUNCTION(stoatflow_window_state) {
    if (PG_ARGISNULL(0))
        throw Error(sqlstate::kInvalidParameterValue, "aggregation name must not be NULL");
    const std::string name = text_to_string(PG_GETARG_DATUM(0));
    const Oid row_type = pg_call([&] { return get_fn_expr_argtype(fcinfo->flinfo, 1); });
    if (!pg_call([&] { return type_is_rowtype(row_type); }))
        throw Error(
            sqlstate::kDatatypeMismatch,
            "window_state needs a row of the sink's type as its second argument",
            "For example: SELECT * FROM stoatflow.window_state('views_5m', NULL::public.views_5m);");

    SpiSession spi;
    const AggregationDef def = load_aggregation(name);
    // The caller is whoever called this SECURITY DEFINER function (never code the worker runs:
    // stoatflow functions refuse to run inside a security-restricted operation).
    const Oid caller = GetOuterUserId();
    const Oid sink = resolve_sink(def);
    if (pg_call([&] { return pg_class_aclcheck(sink, caller, ACL_SELECT); }) != ACLCHECK_OK)
        throw Error(sqlstate::kInsufficientPrivilege,
                    "permission denied for the sink of aggregation \"" + name + "\"",
                    "window_state shows what the sink will hold; it needs SELECT on the sink.");
    // window_state shows what SELECT on the sink shows (README "Security"): where row-level
    // security would filter the caller's rows, it refuses rather than show windows a policy hides.
    if (pg_call([&] { return check_enable_rls(sink, caller, true); }) == RLS_ENABLED)
        throw Error(sqlstate::kInsufficientPrivilege,
                    "window_state is not available for aggregation \"" + name +
                        "\": row-level security applies to its sink for this role",
                    "Query the sink table itself; its policies decide which windows you see.");
    const core::Millis w = committed_watermark(def.id);

    const BackendLayout backend(def);
    const core::AggLayout& layout = backend.layout();
    AggregationExecutor* ex = backend.executor();
    std::vector<core::WindowStateRow> rows;
    SegmentStore segments(def.id, def.segment_interval, def.retention);
    segments.load();
    segments.read_windows(layout, [&](const core::WindowStateRow& r) {
        if (!r.removed) rows.push_back(r);
    });

    pg_call([&] { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    TupleDesc desc = rsinfo->setDesc;
    const int natts = desc->natts;
    // Column → what fills it: -1 key, -2 start, -3 end, -4 event_time, -5 final, i ≥ 0 aggregate i
    // (with an executor: -1000 - j, its sink value j: key columns, then items).
    std::vector<int> source_of(natts, -100);
    std::vector<ExecColumn> exec_cols;
    if (ex != nullptr) {
        exec_cols = ex->key_columns();
        exec_cols.insert(exec_cols.end(), ex->item_columns().begin(), ex->item_columns().end());
    }
    for (int c = 0; c < natts; ++c) {
        Form_pg_attribute att = TupleDescAttr(desc, c);
        if (att->attisdropped) continue;
        const std::string col = NameStr(att->attname);
        Oid want = InvalidOid;
        for (std::size_t j = 0; j < exec_cols.size(); ++j)
            if (exec_cols[j].name == col)
                source_of[c] = -1000 - static_cast<int>(j), want = exec_cols[j].type;
        const bool from_executor = source_of[c] <= -1000;
        if (from_executor) {
            // a key column or an item of the executor
        } else if (col == "key")
            source_of[c] = -1, want = TEXTOID;
        else if (col == "window_start")
            source_of[c] = -2, want = TIMESTAMPTZOID;
        else if (col == "window_end")
            source_of[c] = -3, want = TIMESTAMPTZOID;
        else if (col == "event_time")
            source_of[c] = -4, want = TIMESTAMPTZOID;
        else if (col == "final")
            source_of[c] = -5, want = BOOLOID;
        for (std::size_t i = 0; i < def.aggregates.size(); ++i)
            if (def.aggregates[i].column == col) {
                source_of[c] = static_cast<int>(i);
                want = sink_column_type(core::column_type(def.aggregates[i].fn));
            }
        if (want != InvalidOid && att->atttypid != want)
            throw Error(sqlstate::kDatatypeMismatch,
                        "column \"" + col +
                            "\" of the given row type does not have the sink's type");
    }
    std::vector<Datum> exec_values(exec_cols.size());
    std::unique_ptr<bool[]> exec_nulls(new bool[exec_cols.size() + 1]);
    for (const auto& r : rows) {
        std::vector<Datum> values(natts, (Datum)0);
        std::vector<bool> nulls(natts, true);
        // finalfns of an aggregate of the owner's run as the owner, as in the worker
        if (ex != nullptr)
            run_as_owner(def.owner, [&] {
                ex->sink_values(r.key, r.external, exec_values.data(), exec_nulls.get());
            });
        for (int c = 0; c < natts; ++c) {
            const int s = source_of[c];
            bool isnull = false;
            if (s <= -1000) {
                values[c] = exec_values[static_cast<std::size_t>(-1000 - s)];
                nulls[c] = exec_nulls[static_cast<std::size_t>(-1000 - s)];
                continue;
            }
            switch (s) {
            case -100: continue;
            case -1:
                values[c] = PointerGetDatum(pg_call([&] {
                    return cstring_to_text_with_len(r.key.data(), static_cast<int>(r.key.size()));
                }));
                break;
            case -2: values[c] = millis_to_timestamptz(r.start); break;
            case -3: values[c] = millis_to_timestamptz(r.end); break;
            case -4: values[c] = millis_to_timestamptz(r.event_time); break;
            case -5: values[c] = BoolGetDatum(def.spec.is_closed(r.end, w)); break;
            default:
                values[c] =
                    sink_column_value(layout, static_cast<std::size_t>(s), r.cells[s], &isnull);
            }
            nulls[c] = isnull;
        }
        std::unique_ptr<bool[]> null_flags(new bool[natts > 0 ? natts : 1]);
        for (int c = 0; c < natts; ++c) null_flags[c] = nulls[c];
        bool* nf = null_flags.get();
        Datum* vals = values.data();
        pg_call([&] { tuplestore_putvalues(rsinfo->setResult, desc, vals, nf); });
    }
    spi.finish();
    return (Datum)0;
}
