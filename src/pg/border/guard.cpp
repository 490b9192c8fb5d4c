// The non-template halves of the two border guards (see include/stoatflow/pg/border/guard.hpp):
// trapping a PostgreSQL ERROR as a C++ exception, and turning any C++ exception into an ERROR.
#include "stoatflow/pg/border/guard.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/pg/limits.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <setjmp.h>

extern "C" {
#include "miscadmin.h"
#include "utils/elog.h"
#include "utils/memutils.h"
}

namespace stoatflow::pg {
namespace {

constexpr const char* kOutOfMemoryText = "out of memory";
constexpr const char* kUnknownExceptionText = "unknown C++ exception in stoatflow";

// Copies text into palloc'd memory without ever raising: returns fallback when memory is short.
char* copy_text(const char* text, std::size_t len, const char* fallback) noexcept {
    if (len > kMaxReportedTextBytes) {
        len = kMaxReportedTextBytes;
        while (len > 0 && (static_cast<unsigned char>(text[len]) & 0xC0) == 0x80)
            --len;  // do not split a multi-byte character
    }
    auto* copy = static_cast<char*>(palloc_extended(len + 1, MCXT_ALLOC_NO_OOM));
    if (copy == nullptr) return const_cast<char*>(fallback);
    std::memcpy(copy, text, len);
    copy[len] = '\0';
    return copy;
}

char* copy_text(const std::string& text, const char* fallback) noexcept {
    return copy_text(text.data(), text.size(), fallback);
}

char* copy_optional(const std::string& text) noexcept {
    return text.empty() ? nullptr : copy_text(text, nullptr);
}

bool is_sqlstate_char(char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z'); }

// An ERROR needs an error-class SQLSTATE: five [0-9A-Z] characters outside classes 00/01/02
// (success, warning, no data). Anything else is reported as internal_error.
int sqlerrcode_from_text(const std::string& sqlstate) noexcept {
    const char* s = sqlstate.c_str();
    if (sqlstate.size() != 5 || !std::all_of(s, s + 5, is_sqlstate_char) ||
        (s[0] == '0' && (s[1] == '0' || s[1] == '1' || s[1] == '2')))
        return pg_errcode(sqlstate::kInternalError);
    return pg_errcode(s);
}

void report_fixed(ErrorData* report, int sqlerrcode, const char* message) noexcept {
    report->sqlerrcode = sqlerrcode;
    report->message = const_cast<char*>(message);
}

std::string copy_or_empty(const char* text) {
    return text == nullptr ? std::string() : std::string(text);
}

// Turns the ErrorData PostgreSQL just raised into a thrown PgError. Runs after the error stacks
// are restored and the error state is flushed, so nothing here can longjmp.
[[noreturn]] void throw_pg_error(ErrorData* edata) {
    PgError::Fields fields;
    fields.sqlerrcode = edata->sqlerrcode;
    fields.sqlstate = unpack_sql_state(edata->sqlerrcode);  // static buffer, no allocation
    fields.message = copy_or_empty(edata->message);
    fields.detail = copy_or_empty(edata->detail);
    fields.hint = copy_or_empty(edata->hint);
    fields.schema_name = copy_or_empty(edata->schema_name);
    fields.table_name = copy_or_empty(edata->table_name);
    fields.column_name = copy_or_empty(edata->column_name);
    fields.datatype_name = copy_or_empty(edata->datatype_name);
    fields.constraint_name = copy_or_empty(edata->constraint_name);
    fields.cursorpos = edata->cursorpos;
    fields.internalpos = edata->internalpos;
    fields.internalquery = copy_or_empty(edata->internalquery);
    fields.filename = edata->filename;
    fields.lineno = edata->lineno;
    fields.funcname = edata->funcname;
    FreeErrorData(edata);
    throw PgError(std::move(fields));
}

}  // namespace

namespace detail {

void capture_current_exception(ErrorData* report) noexcept {
    std::memset(report, 0, sizeof(*report));
    report->elevel = ERROR;
    report->filename = __FILE__;
    report->lineno = __LINE__;
    report->funcname = "stoatflow::pg::cpp_call";
    try {
        throw;
    } catch (const PgError& e) {
        const PgError::Fields& f = e.fields();
        report->sqlerrcode = f.sqlerrcode;
        report->message = copy_text(f.message, kOutOfMemoryText);
        report->detail = copy_optional(f.detail);
        report->hint = copy_optional(f.hint);
        report->schema_name = copy_optional(f.schema_name);
        report->table_name = copy_optional(f.table_name);
        report->column_name = copy_optional(f.column_name);
        report->datatype_name = copy_optional(f.datatype_name);
        report->constraint_name = copy_optional(f.constraint_name);
        // Positions only when the thrower set them for this error (analyze.cpp): a trapped
        // error's cursor points into whatever text the trapped call parsed, and its internal
        // query may be one an outer error callback named (SPI's), not the user's.
        if (f.raise_positions) {
            report->internalpos = f.internalpos;
            report->internalquery = copy_optional(f.internalquery);
        }
        if (f.filename != nullptr) {
            report->filename = f.filename;
            report->lineno = f.lineno;
            report->funcname = f.funcname;
        }
    } catch (const Error& e) {
        report->sqlerrcode = sqlerrcode_from_text(e.sqlstate());
        report->message = copy_text(e.what(), std::strlen(e.what()), kOutOfMemoryText);
        report->hint = copy_optional(e.hint());
    } catch (const std::bad_alloc&) {
        report_fixed(report, pg_errcode(sqlstate::kOutOfMemory), kOutOfMemoryText);
    } catch (const std::exception& e) {
        report->sqlerrcode = pg_errcode(sqlstate::kInternalError);
        report->message = copy_text(e.what(), std::strlen(e.what()), kOutOfMemoryText);
    } catch (...) {
        report_fixed(report, pg_errcode(sqlstate::kInternalError), kUnknownExceptionText);
    }
}

void raise_report(ErrorData* report) {
    // ThrowErrorData keeps the original ereport location and every field of a PgError; the
    // error context callbacks active here add their CONTEXT lines as for any other error.
    ThrowErrorData(report);
    pg_unreachable();
}

void run_trapped(void (*fn)(void*), void* arg) {
    sigjmp_buf* const saved_exception_stack = PG_exception_stack;
    ErrorContextCallback* const saved_context_stack = error_context_stack;
    const MemoryContext saved_memory_context = CurrentMemoryContext;
    sigjmp_buf local_exception_stack;

    if (sigsetjmp(local_exception_stack, 0) == 0) {
        PG_exception_stack = &local_exception_stack;
        try {
            fn(arg);
        } catch (...) {
            // A C++ exception from inside f (it should hold PG calls only, but be safe).
            PG_exception_stack = saved_exception_stack;
            error_context_stack = saved_context_stack;
            throw;
        }
        PG_exception_stack = saved_exception_stack;
        error_context_stack = saved_context_stack;
        return;
    }

    // Reached by siglongjmp from errfinish: PostgreSQL's ERROR is on its error stack.
    PG_exception_stack = saved_exception_stack;
    error_context_stack = saved_context_stack;
    MemoryContextSwitchTo(saved_memory_context);  // CopyErrorData refuses ErrorContext
    ErrorData* edata = CopyErrorData();
    FlushErrorState();
    throw_pg_error(edata);
}

void refuse_in_restricted_operation() {
    if (InSecurityRestrictedOperation())
        ereport(
            ERROR,
            (errcode(pg_errcode(sqlstate::kInsufficientPrivilege)),
             errmsg("stoatflow functions cannot be called within a security-restricted operation"),
             errdetail("Sink triggers, constraints and defaults run as the aggregation's owner "
                       "in a security-restricted operation; they may not manage stoatflow.")));
}

}  // namespace detail
}  // namespace stoatflow::pg
