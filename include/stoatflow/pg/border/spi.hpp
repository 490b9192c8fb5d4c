// SPI from C++: every call runs under pg_call, so a PostgreSQL error becomes a C++
// exception and unwinds normally. Values cross as Datums; helpers convert the common types.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"
#include "stoatflow/pg/border/sandbox.hpp"

extern "C" {
#include "executor/spi.h"
#include "miscadmin.h"
}

namespace stoatflow::pg {

struct SpiArg {
    Oid type;
    Datum value;
    bool isnull = false;
};

SpiArg arg_text(const std::string& s);
SpiArg arg_int64(std::int64_t v);
SpiArg arg_int32(std::int32_t v);
SpiArg arg_null(Oid type);

// Connects for the lifetime of the object; SPI_finish on scope exit when no error is in
// flight (an error aborts the transaction, which cleans SPI up itself).
class SpiSession {
public:
    SpiSession();
    ~SpiSession();
    SpiSession(const SpiSession&) = delete;
    SpiSession& operator=(const SpiSession&) = delete;
    void finish();

private:
    bool open_ = false;
};

// Runs one statement; returns SPI_processed. Results stay in SPI_tuptable until the next call.
std::uint64_t spi_exec(const std::string& sql, const std::vector<SpiArg>& args = {});

// Reading the current SPI_tuptable (row, 1-based column).
bool spi_isnull(std::uint64_t row, int col);
std::optional<std::string> spi_text(std::uint64_t row, int col);
std::optional<std::int64_t> spi_int64(std::uint64_t row, int col);
std::optional<bool> spi_bool(std::uint64_t row, int col);
std::optional<std::string> spi_bytea(std::uint64_t row, int col);
Datum spi_datum(std::uint64_t row, int col, bool* isnull);

// Conversions. They take the Datum as it comes (PG_GETARG_DATUM, spi_datum): values are detoasted
// only inside these helpers, under pg_call, never by a PG_GETARG_*_P macro in C++ code.
std::string text_to_string(Datum value);
std::vector<std::string> text_array_to_vector(Datum value);
// Builds a one-dimensional array (palloc'd in the current memory context) of any element type;
// nulls may be empty (no NULLs).
Datum make_array(const std::vector<Datum>& elems, const std::vector<bool>& nulls, Oid elemtype);

// Inserts rows into a plain table without the executor, as COPY does: one heap
// multi-insert per 1,000 rows, then (with_indexes) each row's index entries with their
// uniqueness checks (a duplicate raises 23505). values/nulls are row-major, one value per
// name in `columns`. Only for a table whose live columns are exactly these (no defaults
// needed), without triggers, rules, row security, CHECK constraints or generated columns,
// that the current user may insert into, and (without with_indexes) without indexes:
// otherwise it writes nothing and returns false, so the caller can use SQL instead.
bool append_rows(Oid relid, const std::vector<const char*>& columns,
                 const std::vector<Datum>& values, const std::vector<bool>& nulls,
                 bool with_indexes);

// Runs f in a subtransaction of the current transaction. Returns true when f succeeded
// (the subtransaction is released into the outer one); false when f failed with SQLSTATE
// `tolerated` (the subtransaction is rolled back, the outer transaction goes on). Any
// other error also rolls it back, then propagates.
bool in_subtransaction(const char* tolerated, const std::function<void()>& f);
// The same, tolerating the errors (PostgreSQL's or stoatflow's) for which tolerated is true.
bool in_subtransaction(const std::function<bool(const Error&)>& tolerated,
                       const std::function<void()>& f);

// Like in_subtransaction, but any PostgreSQL or stoatflow error rolls the subtransaction back
// and is returned as its message (empty: f succeeded). Other exceptions (bad_alloc) propagate,
// and so does user code interrupted by a shutdown or a cancel (UserCodeInterrupted): that is
// never the record's fault. A call past stoatflow.user_code_timeout is returned like an error
// (its message says so), with *why = Interrupt::Timeout when why is given.
std::string try_in_subtransaction(const std::function<void()>& f, Interrupt* why = nullptr);

// Running code an owner wrote: run_as_owner in sandbox.hpp (the one sandbox).

}  // namespace stoatflow::pg
