// Declaration-time analysis (SPEC 11): a source's key and event_time, an aggregation's
// group_by, filter and aggregate list, parsed and analyzed by PostgreSQL's own parser against
// the source's row (its columns plus the Kafka metadata columns), and every aggregate call
// judged: can its state be stored, combined, run in a window at all.
//
// Name lookup is pinned: every text is analyzed under search_path = pg_catalog, pg_temp, so
// built-in functions, operators and types are found unqualified and anything else (an
// extension's hll_add_agg, a user's aggregate) must be schema-qualified. A function or operator
// the caller created in a schema of their own path can never shadow a built-in. The analyzed
// trees hold the resolved OIDs: the worker never looks a name up again.
#pragma once

#include "stoatflow/core/window_spec.hpp"

#include <optional>
#include <string>
#include <vector>

#include "stoatflow/pg/guard.hpp"

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
    std::vector<AggregateCall> calls;  // aggregate items only
};

// The texts of one declaration; nullopt where not given.
struct DeclarationTexts {
    std::string columns_json;  // stoatflow.source.columns: [{"name", "type", "path"}, ...]
    core::WindowKind window_kind = core::WindowKind::Tumbling;
    std::optional<std::string> key, event_time, group_by, filter, aggregates;
};

struct Analysis {
    std::optional<AnalyzedExpr> key;
    std::optional<AnalyzedExpr> event_time;  // timestamptz, or a number of epoch milliseconds
    bool event_time_epoch_ms = false;
    std::vector<AnalyzedExpr> group_by;  // one: column 'key' (unless named); several: named
    std::optional<AnalyzedExpr> filter;  // boolean
    std::vector<AnalyzedExpr> aggregates;
};

// The Kafka metadata columns every row has after its own (SPEC 14), in this order.
struct MetadataColumn {
    const char* name;
    const char* type;
};
inline constexpr MetadataColumn kMetadataColumns[] = {{"kafka_key", "text"},
                                                      {"kafka_topic", "text"},
                                                      {"kafka_partition", "integer"},
                                                      {"kafka_offset", "bigint"},
                                                      {"kafka_timestamp", "timestamptz"},
                                                      {"kafka_headers", "jsonb"}};

// Throws PgError / Error with the position in the offending text (internal query and
// position, as PostgreSQL reports an error in a function body), its message prefixed by the
// argument's name.
Analysis analyze_declaration(const DeclarationTexts& texts);

}  // namespace stoatflow::pg
