// TESTING TOOLS ONLY: SQL functions (stoatflow._test_*) that drive both border guards from SQL
// so pg_regress can prove errors keep their SQLSTATE and no C++ destructor is ever skipped.
#include "stoatflow/core/error.hpp"
#include "stoatflow/pg/border/guard.hpp"

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>

extern "C" {
#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
}

namespace {

// Per-backend tallies of DestructorProbe lifetimes; equal counts mean nothing was skipped.
std::int64_t probes_constructed = 0;
std::int64_t probes_destroyed = 0;

// An RAII object whose destructor a longjmp would silently skip.
class DestructorProbe {
public:
    DestructorProbe() { ++probes_constructed; }
    ~DestructorProbe() { ++probes_destroyed; }
    DestructorProbe(const DestructorProbe&) = delete;
    DestructorProbe& operator=(const DestructorProbe&) = delete;
};

const char* text_arg_or_null(FunctionCallInfo fcinfo, int n) {
    if (PG_ARGISNULL(n)) return nullptr;
    const Datum d = PG_GETARG_DATUM(n);
    return stoatflow::pg::pg_call([&] { return TextDatumGetCString(d); });
}

}  // namespace

// _test_raise_cpp(sqlstate, message, hint): throws stoatflow::Error from C++ while a probe is
// alive. The C++->PG guard must report exactly that SQLSTATE, message and hint.
STOATFLOW_FUNCTION(stoatflow__test_raise_cpp) {
    const char* sqlstate = text_arg_or_null(fcinfo, 0);
    const char* message = text_arg_or_null(fcinfo, 1);
    const char* hint = text_arg_or_null(fcinfo, 2);
    DestructorProbe probe;
    if (sqlstate == nullptr || message == nullptr)
        throw stoatflow::Error(stoatflow::sqlstate::kNullValueNotAllowed,
                               "sqlstate and message must not be null");
    throw stoatflow::Error(sqlstate, message, hint == nullptr ? std::string() : hint);
}

// _test_raise_std(kind): throws what is not a stoatflow::Error: 'runtime_error' (-> XX000),
// 'bad_alloc' (-> 53200) or 'non_std' (an int, -> XX000).
STOATFLOW_FUNCTION(stoatflow__test_raise_std) {
    const std::string kind = text_arg_or_null(fcinfo, 0);
    DestructorProbe probe;
    if (kind == "runtime_error")
        throw std::runtime_error("std::runtime_error thrown by stoatflow._test_raise_std");
    if (kind == "bad_alloc") throw std::bad_alloc();
    if (kind == "non_std") throw 42;
    throw stoatflow::Error(stoatflow::sqlstate::kInvalidParameterValue,
                           "unknown kind \"" + kind + "\"",
                           "Use runtime_error, bad_alloc or non_std.");
}

// _test_pg_error_in_cpp(kind): calls a PostgreSQL function through pg_call while probes and a
// std::string are alive. 'invalid_input' (int4in('abc'), 22P02) and 'division_by_zero'
// (int4div(1, 0), 22012) must come back as a PgError after the inner probe's destructor ran, and
// reach SQL with the original SQLSTATE and message; 'none' returns 42 from int4in('42').
STOATFLOW_FUNCTION(stoatflow__test_pg_error_in_cpp) {
    const char* kind_arg = text_arg_or_null(fcinfo, 0);
    DestructorProbe outer;
    const std::string kind(kind_arg);
    const std::int64_t destroyed_before = probes_destroyed;
    try {
        DestructorProbe inner;
        Datum result;
        if (kind == "invalid_input")
            result = stoatflow::pg::pg_call(
                [] { return DirectFunctionCall1(int4in, CStringGetDatum("abc")); });
        else if (kind == "division_by_zero")
            result = stoatflow::pg::pg_call(
                [] { return DirectFunctionCall2(int4div, Int32GetDatum(1), Int32GetDatum(0)); });
        else if (kind == "none")
            result = stoatflow::pg::pg_call(
                [] { return DirectFunctionCall1(int4in, CStringGetDatum("42")); });
        else
            throw stoatflow::Error(stoatflow::sqlstate::kInvalidParameterValue,
                                   "unknown kind \"" + kind + "\"",
                                   "Use invalid_input, division_by_zero or none.");
        return result;
    } catch (const stoatflow::pg::PgError&) {
        if (probes_destroyed != destroyed_before + 1)
            throw stoatflow::Error(stoatflow::sqlstate::kInternalError,
                                   "a C++ destructor was skipped by a PostgreSQL error");
        throw;  // on to the C++->PG guard, which re-raises the original error
    }
}

// _test_guard_counters(): how many probes were constructed and destroyed in this backend.
STOATFLOW_FUNCTION(stoatflow__test_guard_counters) {
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, nullptr, &tupdesc) != TYPEFUNC_COMPOSITE)
        throw stoatflow::Error(stoatflow::sqlstate::kDatatypeMismatch,
                               "_test_guard_counters must return a composite type");
    tupdesc = BlessTupleDesc(tupdesc);
    Datum values[2] = {Int64GetDatum(probes_constructed), Int64GetDatum(probes_destroyed)};
    bool nulls[2] = {false, false};
    return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}
