// stoatflow.estimate(): what an aggregation will cost before it is created (README "Estimating
// cost"). The window is read and resolved as create_aggregation takes it, the aggregates by the
// built-in list's parser; the arithmetic is the core's (core::estimate_cost over SegmentLayout and
// WindowStore), the disk term the segment tables' (SegmentStore::table_bytes).
#include "stoatflow/core/aggregate/agg_layout.hpp"
#include "stoatflow/core/cost_estimate.hpp"
#include "stoatflow/core/error.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/catalog/segment_store.hpp"
#include "stoatflow/pg/declare/declare.hpp"
#include "stoatflow/pg/settings.hpp"

extern "C" {
#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

// estimate("window", keys, retention, aggregates, max_out_of_orderness, records_per_second,
//          commit_interval)
STOATFLOW_FUNCTION(stoatflow_estimate) {
    const declare::WindowArg window = declare::window_arg(fcinfo, 0);
    if (PG_ARGISNULL(1))
        throw Error(sqlstate::kNullValueNotAllowed, "keys must not be NULL",
                    "Give the number of distinct keys, e.g. keys => 1000000.");
    const std::int64_t keys = PG_GETARG_INT64(1);
    if (keys < 0) throw Error(sqlstate::kInvalidParameterValue, "keys must not be negative");
    const declare::ResolvedWindow w =
        declare::resolve_window(window, PG_ARGISNULL(2) ? 0 : PG_GETARG_DATUM(2));
    if (PG_ARGISNULL(3))
        throw Error(sqlstate::kNullValueNotAllowed, "aggregates must not be NULL",
                    "For example: 'count(*), sum(amount)'.");
    std::vector<core::AggSpec> specs;
    try {
        specs = core::normalize_aggregates(parse_aggregates(text_to_string(PG_GETARG_DATUM(3))));
    } catch (const Error& e) {
        throw Error(sqlstate::kFeatureNotSupported,
                    std::string("estimate knows the built-in aggregates only: ") + e.what(),
                    "Give a list of count(*), count, sum, min, max and avg over fields; a "
                    "PostgreSQL aggregate's state grows with what it folds.");
    }
    const core::Millis ooo =
        PG_ARGISNULL(4) ? 0 : declare::interval_ms(PG_GETARG_DATUM(4), "max_out_of_orderness");
    if (ooo < 0)
        throw Error(sqlstate::kInvalidParameterValue, "max_out_of_orderness must not be negative");

    double rps = 0;
    if (!PG_ARGISNULL(5)) {
        rps = PG_GETARG_FLOAT8(5);
        if (!(rps > 0) || std::isinf(rps))
            throw Error(sqlstate::kInvalidParameterValue, "records_per_second must be positive",
                        "Give the source's records per second over all keys, or NULL.");
    }
    // NULL: the worker's commit interval of a live stream (stoatflow.commit_interval).
    const core::Millis commit_interval =
        PG_ARGISNULL(6) ? static_cast<core::Millis>(commit_interval_ms)
                        : declare::interval_ms(PG_GETARG_DATUM(6), "commit_interval");
    if (commit_interval <= 0)
        throw Error(sqlstate::kInvalidParameterValue, "commit_interval must be positive",
                    "Give the worker's commit interval, or NULL for stoatflow.commit_interval.");

    core::CostInputs in;
    in.spec = w.spec;
    in.keys = keys;
    in.retention = w.check.retention;
    in.max_out_of_orderness = ooo;
    in.aggregates = specs.size();
    in.records_per_second = rps;
    in.commit_interval = commit_interval;
    const core::CostEstimate e = core::estimate_cost(in);
    // A state row holds the 0.1 form of the cells (sessions add their floor: a tag and 8 bytes).
    const core::AggLayout layout(specs);
    const std::size_t state_bytes =
        layout.state_v01_size() + (w.spec.kind == core::WindowKind::Session ? 9 : 0);
    const std::int64_t disk =
        SegmentStore::table_bytes(e.state_rows, core::kEstimateKeyBytes, state_bytes);

    TupleDesc desc;
    if (pg_call([&] { return get_call_result_type(fcinfo, nullptr, &desc); }) != TYPEFUNC_COMPOSITE)
        throw Error(sqlstate::kInternalError, "estimate must return a row");
    return pg_call([&] {
        Interval* interval = static_cast<Interval*>(palloc0(sizeof(Interval)));
        interval->time = static_cast<TimeOffset>(e.segment_interval) * 1000;
        Datum values[6] = {
            DirectFunctionCall1(float8_numeric, Float8GetDatum(e.open_windows_per_key)),
            IntervalPGetDatum(interval),
            Int32GetDatum(static_cast<int32>(e.live_segments_max)),
            Int32GetDatum(static_cast<int32>(e.state_bytes_per_window)),
            Int64GetDatum(e.memory_bytes),
            Int64GetDatum(disk)};
        bool nulls[6] = {false, false, false, false, false, false};
        desc = BlessTupleDesc(desc);
        return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
}
