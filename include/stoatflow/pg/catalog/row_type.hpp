// A source's row type in the PostgreSQL layer: the `columns` list resolved with PostgreSQL's
// type-name parser at declaration (_parse_columns), and, in a backend, the conversion of raw
// rows (kafka/raw_row.hpp) into Datums by the rules of README "Semantics" through the types' input
// functions, a batch per subtransaction, record by record only when a batch fails.
#pragma once

#include "stoatflow/core/column_list.hpp"
#include "stoatflow/format/fast_convert.hpp"
#include "stoatflow/format/raw_row.hpp"

#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"

namespace stoatflow::pg {

// search_path as the caller of the innermost function with a SET search_path clause had it.
const char* caller_search_path_value();

// One column of a row type, declared or metadata, resolved in this backend.
struct RowColumn {
    std::string name;
    std::string type_name;          // as format_type() gave it at declaration
    std::vector<std::string> path;  // declared columns only
    Oid typid = InvalidOid;
    int32 typmod = -1;
    Oid base = InvalidOid;  // the type under any domains
    char category = 'X';    // the base type's typcategory
    Oid typioparam = InvalidOid;
    FmgrInfo input;  // the column type's input function (domain_in for a domain)
    format::FastType fast = format::FastType::Other;
};

class RowType {
public:
    // From the columns of stoatflow.source.columns (name, type as format_type() gave it, path).
    // Types are read back with parseTypeString under the backend's search_path (the worker's
    // is pinned); the declared columns are followed by the six metadata columns. Input
    // functions are looked up in `mcxt`, which must outlive the row type.
    RowType(const std::vector<core::ColumnDecl>& columns, MemoryContext mcxt);

    std::size_t width() const { return columns_.size(); }
    std::size_t declared() const { return declared_; }  // metadata columns start here
    const RowColumn& column(std::size_t i) const { return columns_[i]; }
    int index_of(const std::string& name) const;
    std::vector<std::vector<std::string>> paths() const;

    // Converts rows [0, rows.size()) into values/nulls (width() per row, in CurrentMemoryContext).
    // All rows in one subtransaction; if any value fails, each row again in its own, and
    // bad[r] gets the bad_value detail of a row that fails (empty for good rows). Values the
    // fast lane claims are made without the input function (the same value: sql/row_type.sql).
    // With `used`: a column nobody reads is left NULL — a metadata column always, a declared one
    // when the fast lane vouches that it converts (a value that does not is still bad_value).
    void convert(const format::RawRows& rows, std::vector<Datum>& values, std::vector<bool>& nulls,
                 std::vector<std::string>& bad, const std::vector<bool>* used = nullptr) const;

    // One value by the rules of README "Semantics" (PostgreSQL errors raise; call inside pg_call).
    Datum convert_value(std::size_t col, const format::RawValue& raw, bool& isnull) const;

private:
    std::vector<RowColumn> columns_;
    std::size_t declared_ = 0;
};

// Resolves a type name with PostgreSQL's parser (42601 bad syntax, 42704 unknown type) under
// `search_path` (nullptr: the current one).
void resolve_type(const std::string& name, const char* search_path, Oid& typid, int32& typmod);

// A fast-lane value as a Datum of the column's type (Ask and Null excluded).
Datum fast_value_datum(const RowColumn& col, const format::FastValue& v);

}  // namespace stoatflow::pg
