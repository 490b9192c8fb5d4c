// stoatflow.tumbling(), hopping(), sliding(), session(): window definitions, validated by the
// core when built (WindowSpec::validate) and returned as a stoatflow.window row.
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <string>

#include "stoatflow/pg/catalog/catalog.hpp"

extern "C" {
#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

namespace {

std::string interval_text(Datum iv) {
    const char* s = pg_call([&] { return DatumGetCString(DirectFunctionCall1(interval_out, iv)); });
    return s;
}

core::Millis argument_ms(FunctionCallInfo fcinfo, int arg, const std::string& what) {
    const Interval* iv = PG_GETARG_INTERVAL_P(arg);
    if (iv->month != 0)
        throw Error(sqlstate::kInvalidParameterValue,
                    what + " must not use months or years: " + interval_text(PG_GETARG_DATUM(arg)),
                    "Months and years have no fixed length; use days, e.g. '30 days'.");
    return core::interval_to_ms(iv->day, iv->time);
}

// kind: tumbling | hopping | sliding | session; the arguments of the SQL function in order.
Datum make_window(FunctionCallInfo fcinfo, const std::string& kind) {
    const bool hopping = kind == "hopping";
    const int grace_arg = hopping ? 2 : 1;
    const std::string what = kind == "sliding"   ? "time_difference"
                             : kind == "session" ? "inactivity_gap"
                                                 : "size";
    if (PG_ARGISNULL(0))
        throw Error(sqlstate::kNullValueNotAllowed, kind + " window " + what + " must not be NULL");
    if (hopping && PG_ARGISNULL(1))
        throw Error(sqlstate::kNullValueNotAllowed, "hopping window advance must not be NULL");
    if (PG_ARGISNULL(grace_arg))
        throw Error(sqlstate::kNullValueNotAllowed, kind + " window grace must not be NULL",
                    "Use '0' for no grace.");
    const core::Millis size = argument_ms(fcinfo, 0, what);
    const core::Millis advance = hopping ? argument_ms(fcinfo, 1, "advance") : size;
    const core::Millis grace = argument_ms(fcinfo, grace_arg, "grace");
    window_spec_from(kind, size, advance, grace).validate();

    TupleDesc desc;
    if (pg_call([&] { return get_call_result_type(fcinfo, nullptr, &desc); }) != TYPEFUNC_COMPOSITE)
        throw Error(sqlstate::kInternalError, "a window constructor must return stoatflow.window");
    const std::string k = kind;
    Datum values[4] = {(Datum)0, PG_GETARG_DATUM(0), (Datum)0, PG_GETARG_DATUM(grace_arg)};
    bool nulls[4] = {false, false, false, false};
    if (kind == "tumbling")
        values[2] = PG_GETARG_DATUM(0);
    else if (hopping)
        values[2] = PG_GETARG_DATUM(1);
    else
        nulls[2] = true;
    return pg_call([&] {
        values[0] = CStringGetTextDatum(k.c_str());
        desc = BlessTupleDesc(desc);
        return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
}

}  // namespace

STOATFLOW_FUNCTION(stoatflow_tumbling) { return make_window(fcinfo, "tumbling"); }
STOATFLOW_FUNCTION(stoatflow_hopping) { return make_window(fcinfo, "hopping"); }
STOATFLOW_FUNCTION(stoatflow_sliding) { return make_window(fcinfo, "sliding"); }
STOATFLOW_FUNCTION(stoatflow_session) { return make_window(fcinfo, "session"); }
