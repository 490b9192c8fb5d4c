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

int char_pos(const char* text, int location) {
    return location < 0 ? 0 : pg_mbstrlen_with_len(text, location) + 1;
}

namespace {

const char* json_string(JsonbContainer* obj, const char* key) {
    JsonbValue v;
    if (!getKeyJsonValueFromContainer(obj, key, strlen(key), &v) || v.type != jbvString)
        return nullptr;
    return pnstrdup(v.val.string.val, v.val.string.len);
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
        ereport(ERROR, (errcode(pg_errcode(sqlstate::kInvalidParameterValue)),
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
                ereport(ERROR, (errcode(pg_errcode(sqlstate::kInvalidParameterValue)),
                                errmsg("columns[%d] is not a JSON object", i)));
            name = json_string(v->val.binary.data, "name");
            type = json_string(v->val.binary.data, "type");
            if (name == nullptr || type == nullptr || *name == '\0')
                ereport(ERROR, (errcode(pg_errcode(sqlstate::kInvalidParameterValue)),
                                errmsg("columns[%d] needs a \"name\" and a \"type\" string", i)));
        } else {
            name = core::kMetadataColumns[i - n].name;
            type = core::kMetadataColumns[i - n].sql_type;
        }
        for (int j = 0; j < i; ++j)
            if (strcmp(row->cols[j].name, name) == 0)
                ereport(ERROR, (errcode(pg_errcode(sqlstate::kDuplicateColumn)),
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
        ereport(ERROR,
                (errcode(pg_errcode(sqlstate::kNameTooLong)), errmsg("%s", long_name.c_str()),
                 errhint("PostgreSQL would truncate it; use a shorter name."),
                 errposition(char_pos(a->text, too_long))));
    List* raw = raw_parser(a->text, RAW_PARSE_PLPGSQL_EXPR);
    RawStmt* rs = linitial_node(RawStmt, raw);
    auto* sel = reinterpret_cast<SelectStmt*>(rs->stmt);
    if (!IsA(sel, SelectStmt) || sel->op != SETOP_NONE || sel->distinctClause || sel->fromClause ||
        sel->whereClause || sel->groupClause || sel->havingClause || sel->windowClause ||
        sel->sortClause || sel->limitOffset || sel->limitCount || sel->lockingClause ||
        sel->withClause || sel->valuesLists || sel->intoClause)
        ereport(ERROR, (errcode(pg_errcode(sqlstate::kSyntaxError)),
                        errmsg("expected %s", a->role == kGroupBy || a->role == kAggregates
                                                  ? "a list of expressions"
                                                  : "one expression"),
                        errhint("FROM, WHERE, GROUP BY, ORDER BY and the like are no part of it; "
                                "columns of the source's row are in scope.")));
    const int nitems = list_length(sel->targetList);
    const bool list = a->role == kGroupBy || a->role == kAggregates;
    if (nitems == 0)
        ereport(ERROR,
                (errcode(pg_errcode(sqlstate::kSyntaxError)), errmsg("no expression given")));
    if (!list && nitems > 1)
        ereport(ERROR,
                (errcode(pg_errcode(sqlstate::kSyntaxError)),
                 errmsg("expected one expression, not a list"),
                 errposition(char_pos(
                     a->text, exprLocation(list_nth_node(ResTarget, sel->targetList, 1)->val)))));
    const char** as_names = static_cast<const char**>(palloc0(sizeof(char*) * nitems));
    int* locations = static_cast<int*>(palloc0(sizeof(int) * nitems));
    for (int i = 0; i < nitems; ++i) {
        auto* rt = list_nth_node(ResTarget, sel->targetList, i);
        locations[i] = exprLocation(rt->val);
        if (IsA(rt->val, ColumnRef) && IsA(llast(castNode(ColumnRef, rt->val)->fields), A_Star))
            ereport(ERROR, (errcode(pg_errcode(sqlstate::kSyntaxError)), errmsg("* is not allowed"),
                            errposition(char_pos(a->text, locations[i]))));
        if (rt->name && !list)
            ereport(ERROR, (errcode(pg_errcode(sqlstate::kSyntaxError)),
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
                (errcode(pg_errcode(sqlstate::kGroupingError)),
                 errmsg("aggregate functions are not allowed here"),
                 errposition(char_pos(
                     a->text, locate_agg_of_level(reinterpret_cast<Node*>(q->targetList), 0)))));
    refuse_unrunnable(a, reinterpret_cast<Node*>(q->targetList));

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
                ereport(ERROR, (errcode(pg_errcode(sqlstate::kSyntaxError)),
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
            ereport(ERROR, (errcode(pg_errcode(sqlstate::kDatatypeMismatch)),
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
                ereport(ERROR, (errcode(pg_errcode(sqlstate::kDatatypeMismatch)),
                                errmsg("must be of type timestamptz or a number of "
                                       "epoch milliseconds, not %s",
                                       it.type_name),
                                errhint("Convert it: ts::timestamptz, or ts AT TIME ZONE 'UTC' "
                                        "for a timestamp without time zone."),
                                errposition(char_pos(a->text, locations[i]))));
            }
        }
        if (a->role == kAggregates) judge_calls(a, expr, &it);
    }
}

bool same_tree(const char* a, const char* b) { return equal(stringToNode(a), stringToNode(b)); }

}  // namespace stoatflow::pg::analyze_detail
