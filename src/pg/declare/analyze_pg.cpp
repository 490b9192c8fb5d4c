// The PostgreSQL half of the declaration analysis, in C style (no C++ object with a destructor
// lives here: everything runs inside pg_call and may ereport): the row from its jsonb, each
// text parsed as a SELECT list over that row alone, analyzed, and its aggregates judged.
#include <cctype>

#include "stoatflow/core/metadata_columns.hpp"
#include "stoatflow/core/names.hpp"
#include "stoatflow/pg/declare/analyze_internal.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/dependency.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "nodes/readfuncs.h"
#include "optimizer/optimizer.h"
#include "parser/analyze.h"
#include "parser/parse_agg.h"
#include "parser/parse_type.h"
#include "parser/parser.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
}

#include "stoatflow/pg/declare/analyze.hpp"

namespace stoatflow::pg::analyze_detail {

namespace {

// parser_errposition's rule: a byte offset in the text as a 1-based character position.
int char_pos(const char* text, int location) {
    return location < 0 ? 0 : pg_mbstrlen_with_len(text, location) + 1;
}

const char* json_string(JsonbContainer* obj, const char* key) {
    JsonbValue v;
    if (!getKeyJsonValueFromContainer(obj, key, strlen(key), &v) || v.type != jbvString)
        return nullptr;
    return pnstrdup(v.val.string.val, v.val.string.len);
}

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
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg_internal("%s", message),
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
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
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

// The sink column of an item without AS (README "Semantics"): 'count' for count(*), fn_column
// for one aggregate over one column, 'key' for a lone group_by item, the column for a column.
const char* default_name(const TextAnalysis* a, Node* expr, int nitems) {
    if (a->role == kGroupBy) {
        if (IsA(expr, Var) && castNode(Var, expr)->varattno > 0)
            return nitems == 1 ? "key" : a->row->cols[castNode(Var, expr)->varattno - 1].name;
        return nitems == 1 ? "key" : nullptr;
    }
    if (!IsA(expr, Aggref)) return nullptr;
    auto* ref = castNode(Aggref, expr);
    if (ref->aggfilter || ref->aggdirectargs != NIL) return nullptr;
    const char* fn = get_func_name(ref->aggfnoid);
    if (ref->aggstar) return fn;
    if (list_length(ref->args) != 1) return nullptr;
    Node* arg = reinterpret_cast<Node*>(castNode(TargetEntry, linitial(ref->args))->expr);
    if (!IsA(arg, Var) || castNode(Var, arg)->varattno <= 0) return nullptr;
    char* name = psprintf("%s_%s", fn, a->row->cols[castNode(Var, arg)->varattno - 1].name);
    for (char* p = name; *p; ++p) {
        const unsigned char c = static_cast<unsigned char>(*p);
        *p = (isalnum(c) || c == '_' || c >= 0x80) ? static_cast<char>(pg_tolower(c)) : '_';
    }
    return name;
}

}  // namespace

int pin_search_path() {
    const int nest = NewGUCNestLevel();
    (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
                            GUC_ACTION_SAVE, true, 0, false);
    return nest;
}

void unpin_search_path(int nest) { AtEOXact_GUC(true, nest); }

const RowDesc* row_from_json(const char* json) {
    Jsonb* jb = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(json)));
    if (!JB_ROOT_IS_ARRAY(jb) || JB_ROOT_IS_SCALAR(jb))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("columns must be a JSON array of {\"name\", \"type\"} objects")));
    const int n = static_cast<int>(JsonContainerSize(&jb->root));
    const int nmeta = static_cast<int>(core::kMetadataColumnCount);
    static const std::string meta_hint =
        "The metadata columns " + core::metadata_column_names() + " are part of every row.";
    auto* row = static_cast<RowDesc*>(palloc0(sizeof(RowDesc)));
    row->cols = static_cast<RowColumn*>(palloc0(sizeof(RowColumn) * (n + nmeta)));
    for (int i = 0; i < n + nmeta; ++i) {
        const char* name;
        const char* type;
        if (i < n) {
            JsonbValue* v = getIthJsonbValueFromContainer(&jb->root, i);
            if (v == nullptr || v->type != jbvBinary || !JsonContainerIsObject(v->val.binary.data))
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("columns[%d] is not a JSON object", i)));
            name = json_string(v->val.binary.data, "name");
            type = json_string(v->val.binary.data, "type");
            if (name == nullptr || type == nullptr || *name == '\0')
                ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                                errmsg("columns[%d] needs a \"name\" and a \"type\" string", i)));
        } else {
            name = core::kMetadataColumns[i - n].name;
            type = core::kMetadataColumns[i - n].sql_type;
        }
        for (int j = 0; j < i; ++j)
            if (strcmp(row->cols[j].name, name) == 0)
                ereport(ERROR, (errcode(ERRCODE_DUPLICATE_COLUMN),
                                errmsg("column \"%s\" is defined twice", name),
                                errhint("%s", meta_hint.c_str())));
        RowColumn& c = row->cols[i];
        c.name = name;
        parseTypeString(type, &c.type, &c.typmod, false);
        row->n = i + 1;
    }
    return row;
}

void analyze_text(TextAnalysis* a) {
    // A name PostgreSQL would truncate is refused, never truncated (README "Limits").
    const int too_long = long_identifier(a->text);
    static const std::string long_name = core::name_too_long_message("a name");
    if (too_long >= 0)
        ereport(ERROR, (errcode(ERRCODE_NAME_TOO_LONG), errmsg("%s", long_name.c_str()),
                        errhint("PostgreSQL would truncate it; use a shorter name."),
                        errposition(char_pos(a->text, too_long))));
    List* raw = raw_parser(a->text, RAW_PARSE_PLPGSQL_EXPR);
    RawStmt* rs = linitial_node(RawStmt, raw);
    auto* sel = reinterpret_cast<SelectStmt*>(rs->stmt);
    if (!IsA(sel, SelectStmt) || sel->op != SETOP_NONE || sel->distinctClause || sel->fromClause ||
        sel->whereClause || sel->groupClause || sel->havingClause || sel->windowClause ||
        sel->sortClause || sel->limitOffset || sel->limitCount || sel->lockingClause ||
        sel->withClause || sel->valuesLists || sel->intoClause)
        ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                        errmsg("expected %s", a->role == kGroupBy || a->role == kAggregates
                                                  ? "a list of expressions"
                                                  : "one expression"),
                        errhint("FROM, WHERE, GROUP BY, ORDER BY and the like are no part of it; "
                                "columns of the source's row are in scope.")));
    const int nitems = list_length(sel->targetList);
    const bool list = a->role == kGroupBy || a->role == kAggregates;
    if (nitems == 0) ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR), errmsg("no expression given")));
    if (!list && nitems > 1)
        ereport(ERROR,
                (errcode(ERRCODE_SYNTAX_ERROR), errmsg("expected one expression, not a list"),
                 errposition(char_pos(
                     a->text, exprLocation(list_nth_node(ResTarget, sel->targetList, 1)->val)))));
    const char** as_names = static_cast<const char**>(palloc0(sizeof(char*) * nitems));
    int* locations = static_cast<int*>(palloc0(sizeof(int) * nitems));
    for (int i = 0; i < nitems; ++i) {
        auto* rt = list_nth_node(ResTarget, sel->targetList, i);
        locations[i] = exprLocation(rt->val);
        if (IsA(rt->val, ColumnRef) && IsA(llast(castNode(ColumnRef, rt->val)->fields), A_Star))
            ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR), errmsg("* is not allowed"),
                            errposition(char_pos(a->text, locations[i]))));
        if (rt->name && !list)
            ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                            errmsg("AS is not allowed here: the expression has no column"),
                            errposition(char_pos(a->text, rt->location))));
        as_names[i] = rt->name;
    }
    // FROM (VALUES (NULL::t1, ...)) AS r(c1, ...): the row, and nothing else, in scope.
    List* nulls = NIL;
    List* names = NIL;
    for (int i = 0; i < a->row->n; ++i) {
        A_Const* c = makeNode(A_Const);
        c->isnull = true;
        c->location = -1;
        TypeCast* cast = makeNode(TypeCast);
        cast->arg = reinterpret_cast<Node*>(c);
        cast->typeName = makeTypeNameFromOid(a->row->cols[i].type, a->row->cols[i].typmod);
        cast->location = -1;
        nulls = lappend(nulls, cast);
        names = lappend(names, makeString(pstrdup(a->row->cols[i].name)));
    }
    SelectStmt* values = makeNode(SelectStmt);
    values->valuesLists = list_make1(nulls);
    RangeSubselect* from = makeNode(RangeSubselect);
    from->subquery = reinterpret_cast<Node*>(values);
    from->alias = makeAlias("r", names);
    sel->fromClause = list_make1(from);
    // Names resolve along the caller's path, as a view's do (README "Expressions and
    // PostgreSQL aggregates"); everything else here runs under the pinned path.
    Query* q;
    if (a->parse_path != nullptr) {
        const int nest = NewGUCNestLevel();
        (void)set_config_option("search_path", a->parse_path, PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
        q = parse_analyze_fixedparams(rs, a->text, nullptr, 0, nullptr);
        AtEOXact_GUC(true, nest);
    } else {
        q = parse_analyze_fixedparams(rs, a->text, nullptr, 0, nullptr);
    }

    if (q->hasAggs && a->role != kAggregates)
        ereport(ERROR,
                (errcode(ERRCODE_GROUPING_ERROR),
                 errmsg("aggregate functions are not allowed here"),
                 errposition(char_pos(
                     a->text, locate_agg_of_level(reinterpret_cast<Node*>(q->targetList), 0)))));
    Refusal r{nullptr, -1, InvalidOid};
    if (find_refused(reinterpret_cast<Node*>(q->targetList), &r) && r.clock != nullptr)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s cannot be used: it reads the clock, so the result would "
                               "depend on when the record is processed, not on the record",
                               r.clock),
                        errhint("Use the record's own time: its event_time column or "
                                "kafka_timestamp."),
                        errposition(char_pos(a->text, r.location))));
    if (r.what != nullptr)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        OidIsValid(r.func) ? errmsg("%s cannot be used: %s are not allowed",
                                                    format_procedure(r.func), r.what)
                                           : errmsg("%s are not allowed", r.what),
                        strcmp(r.what, "volatile functions") == 0
                            ? errhint("A record read again after a restart must give the same "
                                      "result: use stable or immutable functions.")
                            : 0,
                        errposition(char_pos(a->text, r.location))));

    // Deparsed as ruleutils deparses a view, the row's columns by name: a function, operator
    // or type the pinned path would not find as written is schema-qualified.
    PlannedStmt* plan = makeNode(PlannedStmt);
    plan->rtable = q->rtable;
    List* dpcontext = deparse_context_for_plan_tree(
        plan, select_rtable_names_for_explain(q->rtable, bms_make_singleton(1)));

    a->nitems = nitems;
    a->items = static_cast<ItemInfo*>(palloc0(sizeof(ItemInfo) * nitems));
    for (int i = 0; i < nitems; ++i) {
        auto* te = list_nth_node(TargetEntry, q->targetList, i);
        Node* expr = reinterpret_cast<Node*>(te->expr);
        ItemInfo& it = a->items[i];
        it.type = exprType(expr);
        it.typmod = exprTypmod(expr);
        it.type_name = format_type_with_typemod(it.type, it.typmod);
        it.tree = nodeToString(expr);
        if (list) {
            it.name = as_names[i] ? as_names[i] : default_name(a, expr, nitems);
            if (it.name == nullptr)
                ereport(ERROR, (errcode(ERRCODE_SYNTAX_ERROR),
                                errmsg("this item needs a name: add AS name"),
                                errhint(a->role == kAggregates
                                            ? "Only a single aggregate call over one column, or "
                                              "count(*), gets a name of its own (sum_amount, "
                                              "count)."
                                            : "Only a plain column gets a name of its own."),
                                errposition(char_pos(a->text, locations[i]))));
        }
        it.stored = deparse_expression(expr, dpcontext, false, false);
        if (list) it.stored = psprintf("%s AS %s", it.stored, quote_identifier(it.name));
        if (a->role == kFilter && it.type != BOOLOID)
            ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                            errmsg("must be of type boolean, not %s", it.type_name),
                            errposition(char_pos(a->text, locations[i]))));
        if (a->role == kEventTime) {
            switch (it.type) {
            case TIMESTAMPTZOID: break;
            case INT2OID:
            case INT4OID:
            case INT8OID:
            case NUMERICOID:
            case FLOAT4OID:
            case FLOAT8OID: a->epoch_ms = true; break;
            default:
                ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
                                errmsg("must be of type timestamptz or a number of "
                                       "epoch milliseconds, not %s",
                                       it.type_name),
                                errhint("Convert it: ts::timestamptz, or ts AT TIME ZONE 'UTC' "
                                        "for a timestamp without time zone."),
                                errposition(char_pos(a->text, locations[i]))));
            }
        }
        if (a->role == kAggregates) {
            AggrefList refs{NIL};
            collect_aggrefs(expr, &refs);
            it.ncalls = list_length(refs.list);
            it.calls = static_cast<CallInfo*>(palloc0(sizeof(CallInfo) * (it.ncalls + 1)));
            for (int c = 0; c < it.ncalls; ++c)
                judge_call(a, list_nth_node(Aggref, refs.list, c), &it.calls[c]);
        }
    }
}

bool same_tree(const char* a, const char* b) { return equal(stringToNode(a), stringToNode(b)); }

}  // namespace stoatflow::pg::analyze_detail
