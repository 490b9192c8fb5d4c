// Declaration-time analysis (README "Expressions and PostgreSQL aggregates"): a source's key and
// event_time, an aggregation's group_by, filter and aggregate list, parsed and analyzed by
// PostgreSQL's own parser against the source's row (its columns plus the Kafka metadata columns),
// and every aggregate call judged: can its state be stored, combined, run in a window at all.
//
// Names resolve at declaration along the caller's search_path, as a view's do, and the texts
// are stored with every function, operator and type outside pg_catalog schema-qualified
// (stored_texts). The worker analyzes the stored texts again under the pinned search_path =
// pg_catalog, pg_temp, and finds exactly those objects: a function created later in a schema of
// anyone's path never stands in for one the declaration resolved. The analyzed trees hold the
// resolved OIDs.
#pragma once

#include "stoatflow/core/window_spec.hpp"

#include <optional>
#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"

namespace stoatflow::pg {

// One aggregate call of an aggregate item, and what the worker needs to run it
// (pg_aggregate's row, the transition type resolved for the call's argument types).
struct AggregateCall {
    Oid aggfnoid = InvalidOid;
    std::string aggregate;  // regprocedure text: 'sum(integer)'
    Oid transfn = InvalidOid, finalfn = InvalidOid, combinefn = InvalidOid;
    Oid serialfn = InvalidOid, deserialfn = InvalidOid;
    Oid transtype = InvalidOid;
    std::optional<std::string> initval;  // agginitval (text form); nullopt: NULL
    bool finalfn_extra = false;          // aggfinalextra: finalfn takes dummy extra args
    char finalfn_modify = 'r';           // aggfinalmodify: r(ead only), s(hareable), w(rite)
    bool transfn_strict = false;         // first non-null input is the initial state
    int location = -1;                   // byte offset in the aggregates text
};

// One analyzed expression: its sink column (if it has one), type, and the analyzed tree
// (nodeToString; Vars are varno 1, attno = position in the row: columns, then metadata).
struct AnalyzedExpr {
    std::string name;
    Oid type = InvalidOid;
    int32 typmod = -1;
    std::string type_name;  // format_type under the pinned search_path (qualified if needed)
    std::string tree;
    // The item as stored: every name outside pg_catalog qualified; a list item ends in AS its
    // sink column, so its name does not depend on how it is spelled.
    std::string stored;
    std::vector<AggregateCall> calls;  // aggregate items only
};

// The texts of one declaration; nullopt where not given.
struct DeclarationTexts {
    std::string columns_json;  // stoatflow.source.columns: [{"name", "type", "path"}, ...]
    core::WindowKind window_kind = core::WindowKind::Tumbling;
    std::optional<std::string> key, event_time, group_by, filter, aggregates;
    // Names resolved along this search_path (the caller's, at declaration); nullopt: the pinned
    // one (the worker, and texts already stored).
    std::optional<std::string> search_path;
};

struct Analysis {
    std::optional<AnalyzedExpr> key;
    std::optional<AnalyzedExpr> event_time;  // timestamptz, or a number of epoch milliseconds
    bool event_time_epoch_ms = false;
    std::vector<AnalyzedExpr> group_by;  // one: column 'key' (unless named); several: named
    std::optional<AnalyzedExpr> filter;  // boolean
    std::vector<AnalyzedExpr> aggregates;
};

// The Kafka metadata columns every row has after its own: core/metadata_columns.hpp.

// Throws PgError / Error with the position in the offending text (internal query and
// position, as PostgreSQL reports an error in a function body), its message prefixed by the
// argument's name.
Analysis analyze_declaration(const DeclarationTexts& texts);

// The texts as a declaration stores them: analyzed along texts.search_path, each item written
// back qualified (AnalyzedExpr::stored), and the result analyzed again under the pinned path,
// which must give the same trees (else 0A000 naming the text). search_path is nullopt in the
// result.
DeclarationTexts stored_texts(const DeclarationTexts& texts);

}  // namespace stoatflow::pg
