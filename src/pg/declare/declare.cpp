// SQL helpers behind the declaration functions: window validation (in the core), the
// aggregate list parsed with PostgreSQL's own parser, names and field paths. The source's Kafka
// options and the caller's identity are in declare_source.cpp.
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/names.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"
#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/declare/declare.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/sink/sink_writer.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parse_type.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"
}

#include "stoatflow/pg/limits.hpp"

using namespace stoatflow;
using namespace stoatflow::pg;

declare::WindowCheck declare::check_window(const std::string& kind, core::Millis size,
                                           core::Millis advance, core::Millis grace,
                                           std::optional<core::Millis> retention) {
    const core::WindowSpec spec = window_spec_from(kind, size, advance, grace);
    spec.validate();
    WindowCheck out;
    out.retention = core::resolve_retention(spec, retention.value_or(core::kNoTime));
    out.segment_interval = core::SegmentLayout(out.retention, spec.length()).interval();
    return out;
}

// README "Backfill and start_from": a timestamp is read as a timestamptz literal (the session's
// TimeZone for one without an offset) and kept in UTC, so the worker reads the same instant.
std::string declare::start_position(const std::string& value, const std::string& what) {
    if (value == "earliest" || value == "latest") return value;
    std::string normalized;
    const bool ok =
        in_subtransaction([](const Error& e) { return e.sqlstate().rfind("22", 0) == 0; },
                          [&] {
                              spi_exec("SELECT pg_catalog.to_char(pg_catalog.timezone('UTC', "
                                       "$1::pg_catalog.timestamptz), 'YYYY-MM-DD HH24:MI:SS.US') "
                                       "OPERATOR(pg_catalog.||) '+00'",
                                       {arg_text(value)});
                              normalized = spi_text(0, 1).value_or("");
                          });
    if (!ok || normalized.empty())
        throw Error(sqlstate::kInvalidParameterValue, "unknown " + what + " \"" + value + "\"",
                    "Use 'earliest', 'latest' or a timestamp such as '2026-11-01 00:00:00+00'.");
    return normalized;
}

// Source and aggregation names: identifiers a user can type unquoted.
void declare::check_name(const std::string& what, const OptText& name) {
    bool ok = name && !name->empty() && core::name_fits(name->size());
    for (std::size_t i = 0; ok && i < name->size(); ++i) {
        const char c = (*name)[i];
        ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
             (i > 0 && c >= '0' && c <= '9');
    }
    if (!ok)
        throw Error(sqlstate::kInvalidName,
                    "invalid " + what + " name \"" + name.value_or("<NULL>") + "\"",
                    "Use letters, digits and underscores (at most 63, not starting with a digit).");
}

// _check_window(kind, size_ms, advance_ms, grace_ms, retention_ms) → (retention, interval)
STOATFLOW_FUNCTION(stoatflow__check_window) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(3))
        throw Error(sqlstate::kInvalidParameterValue,
                    "window kind, size and grace must not be NULL");
    const std::string kind = text_to_string(PG_GETARG_DATUM(0));
    const core::Millis size = PG_GETARG_INT64(1);
    const core::Millis advance = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
    const core::Millis grace = PG_GETARG_INT64(3);
    std::optional<core::Millis> retention;
    if (!PG_ARGISNULL(4)) retention = PG_GETARG_INT64(4);
    const declare::WindowCheck checked =
        declare::check_window(kind, size, advance, grace, retention);

    TupleDesc desc;
    if (pg_call([&] { return get_call_result_type(fcinfo, nullptr, &desc); }) != TYPEFUNC_COMPOSITE)
        throw Error(sqlstate::kInternalError, "_check_window must return a record");
    Datum values[2] = {Int64GetDatum(checked.retention), Int64GetDatum(checked.segment_interval)};
    bool nulls[2] = {false, false};
    return pg_call([&] {
        desc = BlessTupleDesc(desc);
        return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
}

// ---------------------------------------------------------------------------------
// Aggregate list: parsed as the target list of "SELECT <aggregates>".

namespace {

[[noreturn]] void bad_aggregates(const std::string& msg, const std::string& hint = {}) {
    throw Error(sqlstate::kSyntaxError, msg,
                hint.empty() ? "Write a list like 'count(*) AS views, sum(amount) AS revenue, "
                               "max(latency_ms)'; nested fields as \"user\".id or 'user.id'."
                             : hint);
}

std::string field_path_of(Node* arg) {
    if (IsA(arg, ColumnRef)) {
        std::string path;
        ListCell* lc;
        foreach (lc, castNode(ColumnRef, arg)->fields) {
            Node* f = static_cast<Node*>(lfirst(lc));
            if (!IsA(f, String))
                bad_aggregates("an aggregate argument may not use \"*\" as a field");
            if (!path.empty()) path += '.';
            path += strVal(f);
        }
        return path;
    }
    if (IsA(arg, A_Const)) {
        auto* c = castNode(A_Const, arg);
        if (!c->isnull && IsA(&c->val, String)) return strVal(&c->val);
    }
    bad_aggregates("an aggregate argument must be a field name or a quoted field path");
}

}  // namespace

namespace {
// PostgreSQL's scanner truncates identifiers longer than NAMEDATALEN - 1 bytes (with a NOTICE);
// two long aliases could become one column. Refuse them before the parser sees them (README
// "Security").
void refuse_long_identifiers(const std::string& text) {
    const auto too_long = [](const std::string& name) {
        core::check_name_length("identifier", name,
                                "PostgreSQL would truncate it; use a shorter name.");
    };
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (i < n) {
        const char c = text[i];
        if (c == '\'') {  // a string literal ('' escapes a quote): not a name
            for (++i; i < n; ++i)
                if (text[i] == '\'') {
                    if (i + 1 < n && text[i + 1] == '\'')
                        ++i;
                    else
                        break;
                }
            ++i;
        } else if (c == '"') {
            std::string name;
            for (++i; i < n; ++i) {
                if (text[i] == '"') {
                    if (i + 1 < n && text[i + 1] == '"')
                        name += text[++i];
                    else
                        break;
                } else {
                    name += text[i];
                }
            }
            ++i;
            if (!core::name_fits(name.size())) too_long(name);
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
                   static_cast<unsigned char>(c) >= 0x80) {
            const std::size_t start = i;
            while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' ||
                             text[i] == '$' || static_cast<unsigned char>(text[i]) >= 0x80))
                ++i;
            if (!core::name_fits(i - start)) too_long(text.substr(start, i - start));
        } else {
            ++i;
        }
    }
}
}  // namespace

std::vector<core::AggSpec> stoatflow::pg::parse_aggregates(const std::string& list) {
    refuse_long_identifiers(list);
    const std::string sql = "SELECT " + list;
    List* stmts = pg_call([&] { return raw_parser(sql.c_str(), RAW_PARSE_DEFAULT); });
    if (list_length(stmts) != 1)
        bad_aggregates("the aggregate list must be one list of aggregates");
    Node* stmt = linitial_node(RawStmt, stmts)->stmt;
    if (!IsA(stmt, SelectStmt)) bad_aggregates("the aggregate list is not a list of aggregates");
    auto* select = castNode(SelectStmt, stmt);
    if (select->fromClause || select->whereClause || select->groupClause || select->havingClause ||
        select->sortClause || select->distinctClause || select->limitCount || select->limitOffset ||
        select->windowClause || select->valuesLists || select->op != SETOP_NONE ||
        select->withClause)
        bad_aggregates("the aggregate list must contain aggregates only");

    std::vector<core::AggSpec> specs;
    ListCell* lc;
    foreach (lc, select->targetList) {
        auto* target = lfirst_node(ResTarget, lc);
        if (!IsA(target->val, FuncCall))
            bad_aggregates(
                "each item of the aggregate list must be an aggregate call such as sum(amount)");
        auto* call = castNode(FuncCall, target->val);
        if (list_length(call->funcname) != 1)
            bad_aggregates("aggregate names must not be schema-qualified");
        const std::string name = strVal(linitial(call->funcname));
        if (call->agg_distinct || call->agg_order || call->agg_filter || call->over ||
            call->func_variadic || call->agg_within_group)
            bad_aggregates("aggregate \"" + name +
                           "\" may not use DISTINCT, ORDER BY, FILTER, OVER or VARIADIC");
        core::AggSpec spec;
        spec.fn = core::agg_fn_from_name(name);
        if (call->agg_star) {
            if (spec.fn != core::AggFn::Count)
                bad_aggregates(name + "(*) is not an aggregate; only count(*) takes \"*\"");
            spec.fn = core::AggFn::CountStar;
        } else {
            if (list_length(call->args) != 1)
                bad_aggregates("aggregate \"" + name + "\" takes exactly one field");
            spec.field = field_path_of(static_cast<Node*>(linitial(call->args)));
        }
        if (target->name) spec.column = target->name;
        specs.push_back(std::move(spec));
    }
    auto normalized = core::normalize_aggregates(std::move(specs));
    // A column name PostgreSQL would truncate could collide with another: refused (README
    // "Security").
    for (const auto& spec : normalized)
        core::check_name_length("column name", spec.column,
                                "Name the aggregate with a shorter AS name.");
    return normalized;
}

// _parse_aggregates(text) → SETOF (fn, field, column_name, column_type)
STOATFLOW_FUNCTION(stoatflow__parse_aggregates) {
    const std::string list = text_to_string(PG_GETARG_DATUM(0));
    const auto specs = parse_aggregates(list);
    pg_call([&] { InitMaterializedSRF(fcinfo, 0); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (const auto& s : specs) {
        const std::string fn = agg_fn_catalog_name(s.fn);
        const char* type = sql_type(core::column_type(s.fn)).name;
        pg_call([&] {
            Datum values[4] = {CStringGetTextDatum(fn.c_str()),
                               CStringGetTextDatum(s.field.c_str()),
                               CStringGetTextDatum(s.column.c_str()), CStringGetTextDatum(type)};
            bool nulls[4] = {false, false, false, false};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        });
    }
    return (Datum)0;
}

// The fast path's sink columns as the worker writes them (sink_columns), for create_aggregation
// to check an existing sink against and to create a missing one from.
std::vector<declare::SinkColumn>
declare::fast_sink_columns(const std::vector<core::AggSpec>& specs) {
    const Columns cols = sink_columns(core::AggLayout(specs));
    std::vector<SinkColumn> out;
    for (std::size_t c = 0; c < cols.names.size(); ++c) {
        const std::string& name = cols.names[c];
        const bool aggregate = std::any_of(
            specs.begin(), specs.end(), [&](const core::AggSpec& s) { return s.column == name; });
        // An aggregate over no value is NULL (min, max, avg); the window's own columns never are.
        const char* constraint = aggregate         ? ""
                                 : name == "final" ? " NOT NULL DEFAULT false"
                                                   : " NOT NULL";
        const Oid type = cols.types[c];
        SinkColumn col;
        col.name = name;
        col.type = pg_call([&] { return format_type_be(type); });
        col.definition = col.type + constraint;
        col.is_key = name == "key";
        out.push_back(std::move(col));
    }
    return out;
}

// _check_field_path(what, path): a source's key or event-time path, judged as the field path it
// is (not as an aggregate's default column name, which could be too long where the path is not).
void declare::check_field_path(const std::string& what, const std::string& path) {
    try {
        core::validate_field_path(path);
    } catch (const Error& e) {
        throw Error(e.sqlstate(), what + ": " + e.what(), e.hint());
    }
}

// _check_names(window_kind, emit): the names the core knows (window_kind_from_name,
// emit_strategy_from_name), so that the declarations never spell them out themselves.
void declare::check_names(const OptText& window_kind, const OptText& emit) {
    core::emit_strategy_from_name(emit.value_or("<NULL>"));
    core::window_kind_from_name(window_kind.value_or("<NULL>"));
}

// _check_sink(sink, sink_name, column_names, column_types, key_columns): an existing sink judged
// at declaration by the rule every write uses (check_sink_shape): column_types as format_type
// spells them (_sink_columns_of), key_columns without window_start.
void declare::check_sink(Oid sink, const std::string& display,
                         const std::vector<SinkColumn>& columns) {
    SinkShape shape;
    for (const SinkColumn& col : columns) {
        const char* type = col.type.c_str();
        const Oid oid = pg_call([&] {
            Oid t;
            int32 typmod;
            parseTypeString(type, &t, &typmod, false);
            return t;
        });
        shape.cols.add(col.name, oid);
        if (col.is_key) shape.key.push_back(col.name);
    }
    shape.key.push_back("window_start");
    check_sink_shape(sink, display, "", shape, SinkCheck::Declaring);
}
