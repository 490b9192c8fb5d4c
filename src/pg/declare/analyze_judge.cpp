// What a window can run of an analyzed text: the first thing it refuses (subqueries, window
// and set-returning functions, volatile functions, the clock), and each aggregate call judged
// and described for the worker (README "Expressions and PostgreSQL aggregates"). C style, as
// analyze_pg.cpp: everything runs inside pg_call and may ereport.
#include "stoatflow/pg/declare/analyze_internal.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_agg.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
}

namespace stoatflow::pg::analyze_detail {

namespace {

// expression_tree_walker takes its walker as bool (*)() (PostgreSQL 15's C prototype); through
// void (*)() the cast is one -Wcast-function-type accepts.
bool (*walker(bool (*f)(Node*, void*)))() {
    return reinterpret_cast<bool (*)()>(reinterpret_cast<void (*)()>(f));
}

struct Refusal {
    const char* what;
    int location;
    Oid func;
    const char* clock = nullptr;  // a function that reads the clock (clock_reading)
};

bool volatile_func(Oid func, void* context) {
    if (func_volatile(func) != PROVOLATILE_VOLATILE) return false;
    *static_cast<Oid*>(context) = func;
    return true;
}

// The stable functions that read the clock (the volatile ones are refused as volatile): their
// result depends on when a record is processed, not on the record, so a replay would differ
// (README "Expressions and PostgreSQL aggregates").
bool clock_func(Oid func, void* context) {
    if (func != F_NOW && func != F_STATEMENT_TIMESTAMP && func != F_TRANSACTION_TIMESTAMP)
        return false;
    *static_cast<Oid*>(context) = func;
    return true;
}

const char* clock_value(const SQLValueFunction* f) {
    switch (f->op) {
    case SVFOP_CURRENT_DATE: return "CURRENT_DATE";
    case SVFOP_CURRENT_TIME:
    case SVFOP_CURRENT_TIME_N: return "CURRENT_TIME";
    case SVFOP_CURRENT_TIMESTAMP:
    case SVFOP_CURRENT_TIMESTAMP_N: return "CURRENT_TIMESTAMP";
    case SVFOP_LOCALTIME:
    case SVFOP_LOCALTIME_N: return "LOCALTIME";
    case SVFOP_LOCALTIMESTAMP:
    case SVFOP_LOCALTIMESTAMP_N: return "LOCALTIMESTAMP";
    default: return nullptr;
    }
}

// The first thing in an expression a window cannot run: a subquery, a window function, a
// set-returning function, a volatile function (a replay after a restart must compute what the
// first run computed).
bool find_refused(Node* node, void* context) {
    auto* r = static_cast<Refusal*>(context);
    if (node == nullptr) return false;
    if (IsA(node, SubLink)) {
        *r = {"subqueries", exprLocation(node), InvalidOid};
        return true;
    }
    if (IsA(node, WindowFunc)) {
        *r = {"window functions", exprLocation(node), InvalidOid};
        return true;
    }
    if ((IsA(node, FuncExpr) && castNode(FuncExpr, node)->funcretset) ||
        (IsA(node, OpExpr) && castNode(OpExpr, node)->opretset)) {
        *r = {"set-returning functions", exprLocation(node), InvalidOid};
        return true;
    }
    Oid func = InvalidOid;
    if (IsA(node, NextValueExpr) || check_functions_in_node(node, volatile_func, &func)) {
        *r = {"volatile functions", exprLocation(node), func};
        return true;
    }
    if (check_functions_in_node(node, clock_func, &func)) {
        *r = {"clock functions", exprLocation(node), func, format_procedure(func)};
        return true;
    }
    if (IsA(node, SQLValueFunction)) {
        if (const char* name = clock_value(castNode(SQLValueFunction, node))) {
            *r = {"clock functions", exprLocation(node), InvalidOid, name};
            return true;
        }
    }
    return expression_tree_walker(node, walker(find_refused), context);
}

struct AggrefList {
    List* list;
};
bool collect_aggrefs(Node* node, void* context) {
    if (node == nullptr) return false;
    if (IsA(node, Aggref)) {
        auto* l = static_cast<AggrefList*>(context);
        l->list = lappend(l->list, node);
        return false;  // nested aggregates are refused by the parser already
    }
    return expression_tree_walker(node, walker(collect_aggrefs), context);
}

[[noreturn]] void refuse(const TextAnalysis* a, int location, const char* message,
                         const char* hint) {
    ereport(ERROR,
            (errcode(pg_errcode(sqlstate::kFeatureNotSupported)), errmsg_internal("%s", message),
             hint ? errhint("%s", hint) : 0, errposition(char_pos(a->text, location))));
    pg_unreachable();
}

// Judges one aggregate call (README "Expressions and PostgreSQL aggregates") and fills what the
// worker needs to run it.
void judge_call(const TextAnalysis* a, Aggref* ref, CallInfo* out) {
    const char* name = format_procedure(ref->aggfnoid);
    if (ref->aggkind != AGGKIND_NORMAL)
        refuse(a, ref->location,
               psprintf("%s is an ordered-set aggregate: it needs every input of a window kept "
                        "and sorted, which a window's state cannot hold",
                        name),
               "For percentiles use the tdigest extension (schema-qualified): "
               "tdigest_percentile(value, 100, "
               "0.95).");
    if (ref->aggdistinct != NIL)
        refuse(a, ref->location,
               psprintf("%s with DISTINCT needs every distinct input of a window kept", name),
               "For distinct counts use the hll extension (schema-qualified): "
               "hll_cardinality(hll_add_agg(hll_hash_text(value))).");
    if (ref->aggorder != NIL)
        refuse(a, ref->location,
               psprintf("%s with ORDER BY needs every input of a window kept and sorted", name),
               "Drop the ORDER BY inside the call.");
    HeapTuple tuple = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(ref->aggfnoid));
    if (!HeapTupleIsValid(tuple))
        elog(ERROR, "cache lookup failed for aggregate %u", ref->aggfnoid);
    auto* agg = reinterpret_cast<Form_pg_aggregate>(GETSTRUCT(tuple));
    Oid input_types[FUNC_MAX_ARGS];
    const int nargs = get_aggregate_argtypes(ref, input_types);
    const Oid transtype =
        resolve_aggregate_transtype(ref->aggfnoid, agg->aggtranstype, input_types, nargs);
    if (transtype == INTERNALOID) {
        if (!OidIsValid(agg->aggserialfn) || !OidIsValid(agg->aggdeserialfn))
            refuse(a, ref->location,
                   psprintf("%s cannot be used: its state (type internal) has no serialization "
                            "functions, so it cannot be stored with the window",
                            name),
                   "An aggregate qualifies when its state type has send and receive functions, "
                   "or it declares SERIALFUNC and DESERIALFUNC for an internal state.");
    } else {
        HeapTuple t = SearchSysCache1(TYPEOID, ObjectIdGetDatum(transtype));
        if (!HeapTupleIsValid(t)) elog(ERROR, "cache lookup failed for type %u", transtype);
        auto* typ = reinterpret_cast<Form_pg_type>(GETSTRUCT(t));
        const bool binary = OidIsValid(typ->typsend) && OidIsValid(typ->typreceive);
        ReleaseSysCache(t);
        if (!binary)
            refuse(a, ref->location,
                   psprintf("%s cannot be used: its state type %s has no binary send and "
                            "receive functions, so it cannot be stored with the window",
                            name, format_type_be(transtype)),
                   "An aggregate qualifies when its state type has send and receive functions, "
                   "or it declares SERIALFUNC and DESERIALFUNC for an internal state.");
    }
    // Its support functions run per record and again on every replay: a VOLATILE one could
    // give a replay another result, or repeat a side effect (README "Which aggregates qualify").
    // The aggregate's own pg_proc row says nothing about them. An installed extension's own
    // functions are its author's (hll's transition functions are VOLATILE by omission in its
    // install script): the rule judges the functions an owner wrote.
    const struct {
        Oid func;
        const char* role;
    } support[] = {{agg->aggtransfn, "transition function"},
                   {agg->aggfinalfn, "final function"},
                   {agg->aggcombinefn, "combine function"},
                   {agg->aggserialfn, "serialization function"},
                   {agg->aggdeserialfn, "deserialization function"}};
    for (const auto& f : support)
        if (OidIsValid(f.func) && func_volatile(f.func) == PROVOLATILE_VOLATILE &&
            !OidIsValid(getExtensionOfObject(ProcedureRelationId, f.func)))
            ereport(ERROR,
                    (errcode(pg_errcode(sqlstate::kFeatureNotSupported)),
                     errmsg("aggregate %s: its %s %s is VOLATILE", format_procedure(ref->aggfnoid),
                            f.role, format_procedure(f.func)),
                     errdetail("A window runs it for every record and again when records are read "
                               "again after a restart: its results and side effects must not "
                               "depend on when it runs."),
                     errhint("If it gives the same result for the same arguments, mark it so: "
                             "ALTER FUNCTION %s IMMUTABLE (or STABLE).",
                             format_procedure(f.func)),
                     errposition(char_pos(a->text, ref->location))));
    if (a->need_combine && !OidIsValid(agg->aggcombinefn))
        refuse(a, ref->location,
               psprintf("%s has no combine function, which %s windows need to merge and "
                        "derive window states",
                        name, a->window_kind),
               "Use a tumbling or hopping window, or an aggregate with a COMBINEFUNC.");
    bool isnull = false;
    const Datum init = SysCacheGetAttr(AGGFNOID, tuple, Anum_pg_aggregate_agginitval, &isnull);
    *out = CallInfo{ref->aggfnoid,
                    agg->aggtransfn,
                    agg->aggfinalfn,
                    agg->aggcombinefn,
                    agg->aggserialfn,
                    agg->aggdeserialfn,
                    transtype,
                    name,
                    isnull ? nullptr : TextDatumGetCString(init),
                    agg->aggfinalextra,
                    agg->aggfinalmodify,
                    func_strict(agg->aggtransfn),
                    ref->location};
    ReleaseSysCache(tuple);
}

}  // namespace

void refuse_unrunnable(const TextAnalysis* a, Node* items) {
    Refusal r{nullptr, -1, InvalidOid};
    if (find_refused(items, &r) && r.clock != nullptr)
        ereport(ERROR, (errcode(pg_errcode(sqlstate::kFeatureNotSupported)),
                        errmsg("%s cannot be used: it reads the clock, so the result would "
                               "depend on when the record is processed, not on the record",
                               r.clock),
                        errhint("Use the record's own time: its event_time column or "
                                "kafka_timestamp."),
                        errposition(char_pos(a->text, r.location))));
    if (r.what != nullptr)
        ereport(ERROR, (errcode(pg_errcode(sqlstate::kFeatureNotSupported)),
                        OidIsValid(r.func) ? errmsg("%s cannot be used: %s are not allowed",
                                                    format_procedure(r.func), r.what)
                                           : errmsg("%s are not allowed", r.what),
                        strcmp(r.what, "volatile functions") == 0
                            ? errhint("A record read again after a restart must give the same "
                                      "result: use stable or immutable functions.")
                            : 0,
                        errposition(char_pos(a->text, r.location))));
}

void judge_calls(const TextAnalysis* a, Node* expr, ItemInfo* it) {
    AggrefList refs{NIL};
    collect_aggrefs(expr, &refs);
    it->ncalls = list_length(refs.list);
    it->calls = static_cast<CallInfo*>(palloc0(sizeof(CallInfo) * (it->ncalls + 1)));
    for (int c = 0; c < it->ncalls; ++c)
        judge_call(a, list_nth_node(Aggref, refs.list, c), &it->calls[c]);
}

}  // namespace stoatflow::pg::analyze_detail
