// stoatflow.tumbling(), hopping(), sliding(), session(): window definitions, validated by the
// core when built (WindowSpec::validate) and returned as a stoatflow.window row.
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <cctype>
#include <string>

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/declare/declare.hpp"
#include "stoatflow/pg/border/spi.hpp"

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
}  // namespace

// Milliseconds of an interval, floored (as extract(epoch) * 1000 was); months and years refused.
core::Millis declare::interval_ms(Datum value, const std::string& what) {
    const Interval* iv = pg_call([&] { return DatumGetIntervalP(value); });
    if (iv->month != 0)
        throw Error(sqlstate::kInvalidParameterValue,
                    what + " must not use months or years: " + interval_text(value),
                    "Months and years have no fixed length; use days, e.g. '30 days'.");
    return core::interval_to_ms(iv->day, iv->time);
}

namespace {

// A number without a unit, other than zero: PostgreSQL reads '5' as 5 seconds, where the user
// may have meant minutes (README "tumbling, hopping, sliding, session"). Zero is zero in any unit.
bool is_bare_number(const std::string& text) {
    std::size_t i = 0;
    const std::size_t n = text.size();
    auto space = [&](std::size_t at) { return at < n && std::isspace((unsigned char)text[at]); };
    while (space(i)) ++i;
    if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
    bool digits = false, nonzero = false, point = false;
    for (; i < n; ++i) {
        const char c = text[i];
        if (c >= '0' && c <= '9') {
            digits = true;
            nonzero = nonzero || c != '0';
        } else if (c == '.' && !point) {
            point = true;
        } else {
            break;
        }
    }
    while (space(i)) ++i;
    return i == n && digits && nonzero;
}

// An interval argument given as text (an untyped literal picks the text overload): a bare
// number is refused, anything else is read by PostgreSQL's interval input.
Datum interval_from_text(Datum value, const std::string& what) {
    const std::string text = text_to_string(value);
    if (is_bare_number(text)) {
        const auto first = text.find_first_not_of(" \t\n\r\f\v");
        const std::string number =
            text.substr(first, text.find_last_not_of(" \t\n\r\f\v") - first + 1);
        const bool one = number == "1" || number == "+1" || number == "-1";
        throw Error(sqlstate::kInvalidParameterValue, what + " '" + number + "' has no unit",
                    "Write '" + number + (one ? " second" : " seconds") + "' or interval '" +
                        number + (one ? " minute" : " minutes") +
                        "': PostgreSQL would read a number without a unit as seconds.");
    }
    const char* s = text.c_str();
    return pg_call([&] {
        return DirectFunctionCall3(interval_in, CStringGetDatum(s), ObjectIdGetDatum(InvalidOid),
                                   Int32GetDatum(-1));
    });
}

// kind: tumbling | hopping | sliding | session; the arguments of the SQL function in order,
// intervals, or (as_text) texts holding intervals.
Datum make_window(FunctionCallInfo fcinfo, const std::string& kind, bool as_text) {
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
    auto argument = [&](int arg, const std::string& name) {
        return as_text ? interval_from_text(PG_GETARG_DATUM(arg), kind + " window " + name)
                       : PG_GETARG_DATUM(arg);
    };
    const Datum size_iv = argument(0, what);
    const Datum advance_iv = hopping ? argument(1, "advance") : size_iv;
    const Datum grace_iv = argument(grace_arg, "grace");
    const core::Millis size = declare::interval_ms(size_iv, what);
    const core::Millis advance = hopping ? declare::interval_ms(advance_iv, "advance") : size;
    const core::Millis grace = declare::interval_ms(grace_iv, "grace");
    window_spec_from(kind, size, advance, grace).validate();

    TupleDesc desc;
    if (pg_call([&] { return get_call_result_type(fcinfo, nullptr, &desc); }) != TYPEFUNC_COMPOSITE)
        throw Error(sqlstate::kInternalError, "a window constructor must return stoatflow.window");
    const std::string k = kind;
    Datum values[4] = {(Datum)0, size_iv, (Datum)0, grace_iv};
    bool nulls[4] = {false, false, false, false};
    if (kind == "tumbling" || hopping)
        values[2] = advance_iv;
    else
        nulls[2] = true;
    return pg_call([&] {
        values[0] = CStringGetTextDatum(k.c_str());
        desc = BlessTupleDesc(desc);
        return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
}

}  // namespace

STOATFLOW_FUNCTION(stoatflow_tumbling) { return make_window(fcinfo, "tumbling", false); }
STOATFLOW_FUNCTION(stoatflow_hopping) { return make_window(fcinfo, "hopping", false); }
STOATFLOW_FUNCTION(stoatflow_sliding) { return make_window(fcinfo, "sliding", false); }
STOATFLOW_FUNCTION(stoatflow_session) { return make_window(fcinfo, "session", false); }
// The same from texts (an untyped literal such as '5 minutes' resolves to these).
STOATFLOW_FUNCTION(stoatflow_tumbling_text) { return make_window(fcinfo, "tumbling", true); }
STOATFLOW_FUNCTION(stoatflow_hopping_text) { return make_window(fcinfo, "hopping", true); }
STOATFLOW_FUNCTION(stoatflow_sliding_text) { return make_window(fcinfo, "sliding", true); }
STOATFLOW_FUNCTION(stoatflow_session_text) { return make_window(fcinfo, "session", true); }
