// The border between C++ exceptions and PostgreSQL's ereport/longjmp: the one pair of guards
// every crossing goes through (README "Repository layout"). No exception leaves C++, no longjmp
// skips a destructor.
//
// Two directions, two guards:
//
//   C++ -> PG   Every SQL-callable function (and every callback PostgreSQL makes into C++) runs
//               its body inside cpp_call(). Any exception is caught, its text copied into palloc'd
//               memory, the catch scope is left, and only then is ERROR raised:
//                 stoatflow::Error     -> its SQLSTATE, message and hint
//                 pg::PgError          -> the original PostgreSQL error, SQLSTATE/detail/hint
//                 intact std::bad_alloc       -> 53200 out_of_memory std::exception / ... -> XX000
//                 internal_error
//               STOATFLOW_FUNCTION(name) declares such a function in one line.
//
//   PG -> C++   Every PostgreSQL call that can ereport, made while any C++ object with a
//               destructor is alive on the stack, goes through pg_call(). A PostgreSQL ERROR
//               inside it is trapped with sigsetjmp, copied (CopyErrorData), cleared
//               (FlushErrorState) and rethrown as pg::PgError, so the stack unwinds the C++ way.
//               pg_call must sit deeper than every RAII object it protects: the lambda passed
//               to it holds PostgreSQL calls only, never a C++ object with a destructor.
//
// A PgError must travel up to cpp_call (which re-raises it); swallowing it is only safe where
// the caller rolls back a subtransaction, exactly as with PG_TRY/PG_CATCH.
//
// Include order in src/pg files: C++ and stoatflow/core headers first, then stoatflow/pg headers
// (this one pulls in postgres.h), then other PostgreSQL headers. Core headers refuse to compile
// after postgres.h (core/no_postgres.hpp), and port.h's printf macros must not leak into <cstdio>.
#pragma once

#include "stoatflow/core/error.hpp"

#include <string>
#include <type_traits>
#include <utility>

extern "C" {
#include "postgres.h"

#include "fmgr.h"
}

namespace stoatflow::pg {

// A sqlstate:: constant (core/error.hpp, where every SQLSTATE the extension raises is spelled)
// as the code errcode() takes.
constexpr int pg_errcode(const char* s) { return MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4]); }

// A PostgreSQL ERROR caught by pg_call(), carried as a C++ exception until cpp_call() raises it
// again. filename/funcname point at the __FILE__/__func__ literals of the original ereport, which
// live as long as the server binary or the library; everything else is owned here.
class PgError : public Error {
public:
    struct Fields {
        int sqlerrcode = 0;
        std::string sqlstate;
        std::string message;
        std::string detail;
        std::string hint;
        std::string schema_name;
        std::string table_name;
        std::string column_name;
        std::string datatype_name;
        std::string constraint_name;
        // Positions in the text the trapped call parsed (cursorpos; not raised again by
        // cpp_call) or in an internal query (internalpos, with that query's text): 1-based
        // characters, 0 for none.
        int cursorpos = 0;
        int internalpos = 0;
        std::string internalquery;
        // cpp_call raises internalpos/internalquery again only when this is set (by code that
        // knows which text the position is in); never the cursor position.
        bool raise_positions = false;
        const char* filename = nullptr;
        int lineno = 0;
        const char* funcname = nullptr;
    };

    explicit PgError(Fields fields)
        : Error(fields.sqlstate, fields.message, fields.hint), fields_(std::move(fields)) {}

    int sqlerrcode() const noexcept { return fields_.sqlerrcode; }
    const std::string& detail() const noexcept { return fields_.detail; }
    const Fields& fields() const noexcept { return fields_; }

private:
    Fields fields_;
};

namespace detail {

// Called only from inside a catch block: classifies the in-flight exception and copies its text
// into *report (palloc'd, never raising: an allocation failure degrades to a fixed message).
void capture_current_exception(ErrorData* report) noexcept;

// Raises ERROR from a report filled by capture_current_exception. Never returns.
[[noreturn]] void raise_report(ErrorData* report);

// Runs fn(arg) with PostgreSQL errors trapped; an ERROR becomes a thrown PgError.
void run_trapped(void (*fn)(void*), void* arg);

// Raises ERROR (42501) inside a security-restricted operation: user code the worker runs as
// an aggregation's owner (sink triggers, constraints, defaults) must not reach stoatflow's
// functions, whose idea of "the caller" would be the worker's superuser (README "Security"). Called
// before any C++ object exists, so the longjmp skips nothing.
void refuse_in_restricted_operation();

}  // namespace detail

// C++ -> PG guard. Returns what f returns; every exception becomes a PostgreSQL ERROR raised
// after the catch scope has been left (a longjmp out of a catch block would leak the exception
// and corrupt the C++ runtime's record of caught exceptions).
template <typename F>
auto cpp_call(F&& f) noexcept -> decltype(std::forward<F>(f)()) {
    ErrorData report;  // plain C struct: safe to longjmp over
    try {
        return std::forward<F>(f)();
    } catch (...) {
        detail::capture_current_exception(&report);
    }
    detail::raise_report(&report);
}

// PG -> C++ guard. Runs f (PostgreSQL calls only) and returns its result; a PostgreSQL ERROR
// raised inside f is thrown as PgError. The result type must be a plain value (Datum, pointer,
// number): it is produced after f returns, so nothing about it can be skipped by a longjmp.
template <typename F>
auto pg_call(F&& f) -> decltype(f()) {
    using Result = decltype(f());
    using Fn = std::remove_reference_t<F>;
    if constexpr (std::is_void_v<Result>) {
        detail::run_trapped([](void* p) { (*static_cast<Fn*>(p))(); }, &f);
    } else {
        static_assert(std::is_trivially_copyable_v<Result> &&
                          std::is_trivially_destructible_v<Result> &&
                          std::is_default_constructible_v<Result>,
                      "pg_call returns plain values only (Datum, pointers, numbers)");
        struct Call {
            Fn* f;
            Result result;
        } call{&f, Result{}};
        detail::run_trapped(
            [](void* p) {
                auto* c = static_cast<Call*>(p);
                c->result = (*c->f)();
            },
            &call);
        return call.result;
    }
}

}  // namespace stoatflow::pg

// Declares a SQL-callable function `name` (C linkage, V1 calling convention) whose body, written
// right after the macro, runs as C++ inside cpp_call (and never inside a security-restricted
// operation):
//
//   STOATFLOW_FUNCTION(stoatflow_version) { return CStringGetTextDatum(...); }
//
// PG_GETARG_* and other PostgreSQL calls made before the first C++ object with a destructor is
// created may be called directly; after that, through pg_call.
#define STOATFLOW_FUNCTION(name)                                                                   \
    static Datum name##_body(FunctionCallInfo fcinfo);                                             \
    extern "C" {                                                                                   \
    PG_FUNCTION_INFO_V1(name);                                                                     \
    Datum name(PG_FUNCTION_ARGS) {                                                                 \
        ::stoatflow::pg::detail::refuse_in_restricted_operation();                                 \
        return ::stoatflow::pg::cpp_call([fcinfo]() -> Datum { return name##_body(fcinfo); });     \
    }                                                                                              \
    }                                                                                              \
    static Datum name##_body([[maybe_unused]] FunctionCallInfo fcinfo)
