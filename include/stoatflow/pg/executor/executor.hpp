// An aggregation's expressions and PostgreSQL aggregates as the worker runs them (README
// "Expressions and PostgreSQL aggregates"): built from the declaration's analysis (analyze.hpp),
// run on the main thread only, inside a transaction, as the aggregation's owner (the caller sets
// the role; see run_as_owner).
//
// Per record the record path hands the row's values (columns, then the six metadata columns:
// RowType's order, which the analyzed trees' Vars index) to evaluate(), which gives the key,
// whether the record passes the filter, and every aggregate call's arguments; the engine then
// folds those into each window the record joins through aggregates() (ExternalAggregates). At
// a commit the sink writer turns a window's key and serialized states into sink values
// (sink_values()).
#pragma once

#include "stoatflow/core/external_aggregate.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "stoatflow/pg/declare/analyze.hpp"
#include "stoatflow/pg/catalog/row_type.hpp"

namespace stoatflow::pg {

// What ExternalAggregates::add is handed as its `row`: one record's evaluated arguments of
// every aggregate call of the aggregation.
struct CallInputs {
    const Datum* args = nullptr;  // every call's arguments, the calls in order
    const bool* nulls = nullptr;
    const bool* skip = nullptr;  // per call: its FILTER (WHERE ...) was false or NULL
};

// One sink column the executor produces (besides window_start, window_end, event_time, final).
struct ExecColumn {
    std::string name;
    Oid type = InvalidOid;
    int32 typmod = -1;
    std::string type_name;  // as the sink's CREATE TABLE spells it
};

class AggregationExecutor {
public:
    // analysis: analyze_declaration's result for the aggregation. Its key columns are
    // analysis.group_by, or, when that is empty, analysis.key (the source's key expression,
    // giving the column `key`). Prepares every expression (stringToNode, expression_planner,
    // ExecInitExpr: EXECUTE privileges are checked against the current user) and looks up every
    // aggregate call (pg_aggregate, its functions, the transition type for the call's argument
    // types). Needs a transaction; allocates in its own memory context under `parent`.
    AggregationExecutor(const Analysis& analysis, const RowType& row, MemoryContext parent);
    ~AggregationExecutor();
    AggregationExecutor(const AggregationExecutor&) = delete;
    AggregationExecutor& operator=(const AggregationExecutor&) = delete;

    enum class Outcome { Fold, Filtered, NullKey };
    // One record, values/nulls: the row (RowType::width() entries). In per-record memory
    // (reset by the next call): the key columns → `key` (an exact text encoding of their
    // values; a NULL part gives NullKey with `detail` naming it), the filter (false or NULL:
    // Filtered), then every call's FILTER and arguments → `inputs` (valid until the next
    // call). A PostgreSQL error raises PgError (the caller makes the record a dead letter).
    Outcome evaluate(const Datum* values, const bool* nulls, std::string& key, CallInputs& inputs,
                     std::string& detail);
    // After NullKey: the key column that was NULL (its index in key_columns()).
    std::size_t null_column() const;

    // The aggregate support function that ran last (the one that failed, after an error), for
    // messages; empty if none ran.
    std::string failed_function() const;

    // The aggregate states the window engine keeps (lives as long as this executor).
    core::ExternalAggregates& aggregates();

    // The sink's columns: key_columns() (in order) then item_columns() (the aggregate items).
    const std::vector<ExecColumn>& key_columns() const;
    const std::vector<ExecColumn>& item_columns() const;

    // A window's sink values, in CurrentMemoryContext: key_columns().size() values decoded
    // from `key` (evaluate's encoding), then item_columns().size() values finalized from
    // `external` (ExternalAggregates::serialize's bytes; live states are never touched).
    void sink_values(const std::string& key, const std::string& external, Datum* values,
                     bool* nulls);

    // A key's columns as text for display (window_state, errors): the encoded values in order.
    std::vector<std::string> key_texts(const std::string& key) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace stoatflow::pg
