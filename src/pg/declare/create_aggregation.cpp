// stoatflow.create_aggregation() (README "create_aggregation"): the checks, the route (the
// built-in fast path or PostgreSQL's executor), the sink (checked by the one shape rule, or
// created), and the catalog rows. The SQL function is a shell over this (SECURITY DEFINER with a
// pinned search_path: catalog queries run as the extension's owner; "the caller" is the role
// that called it, GetOuterUserId).
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/metadata_columns.hpp"
#include "stoatflow/core/names.hpp"
#include "stoatflow/core/window_spec.hpp"
#include "stoatflow/flow/rollup.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "stoatflow/pg/declare/analyze.hpp"
#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/declare/declare.hpp"
#include "stoatflow/pg/declare/sink_table.hpp"
#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/border/text.hpp"
#include "stoatflow/pg/worker/worker.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "parser/parse_type.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;
using namespace stoatflow::pg::declare;

namespace {

const std::string kNullText = "<NULL>";

struct SourceRow {
    std::int32_t id = 0;
    Oid owner = InvalidOid;
    std::optional<std::string> columns_json;  // NULL: 0.1's field paths
    std::optional<std::string> key_path, event_time_path;
};

SourceRow load_source_row(const OptText& source) {
    if (source &&
        spi_exec("SELECT s.source_id, s.created_by::oid::bigint, s.columns::text, s.key_path, "
                 "s.event_time_path FROM stoatflow.source s WHERE s.source_name = $1",
                 {arg_text(*source)}) == 1) {
        SourceRow row;
        row.id = static_cast<std::int32_t>(*spi_int64(0, 1));
        row.owner = static_cast<Oid>(*spi_int64(0, 2));
        row.columns_json = spi_text(0, 3);
        row.key_path = spi_text(0, 4);
        row.event_time_path = spi_text(0, 5);
        return row;
    }
    throw Error(sqlstate::kUndefinedObject,
                "source \"" + source.value_or(kNullText) + "\" does not exist",
                "Create it with stoatflow.create_source().");
}

// Aggregating a source reads its records: the caller must own the source (be a member of the
// role that created it; superusers are) or hold SELECT on its view stoatflow_source.<source>
// (README "Security").
void check_may_aggregate(const std::string& source, const SourceRow& src, Oid caller) {
    spi_exec("SELECT pg_catalog.pg_has_role($1::oid, $2::oid, 'MEMBER') OR coalesce("
             "pg_catalog.has_table_privilege($1::oid, pg_catalog.to_regclass("
             "'stoatflow_source.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident($3)), 'SELECT'), "
             "false)",
             {arg_int64(caller), arg_int64(src.owner), arg_text(source)});
    if (spi_bool(0, 1).value_or(false)) return;
    const std::string owner = role_name(src.owner), who = role_name(caller);
    throw Error(sqlstate::kInsufficientPrivilege,
                "permission denied to aggregate source \"" + source + "\"",
                "The owner of source \"" + source + "\" (" + owner +
                    ") can allow it: GRANT USAGE ON SCHEMA stoatflow_source TO " + who +
                    "; GRANT SELECT ON stoatflow_source." + quote_ident(source) + " TO " + who +
                    ";");
}

// The route (README "Expressions and PostgreSQL aggregates"): the built-in fast path takes a 0.1
// aggregate list (count/sum/min/max/avg over number fields) without group_by or filter;
// anything else over a source with columns is PostgreSQL's executor; a source without columns
// has the fast path only (its errors are the user's). Returns the fast path's aggregates, or
// nullopt for the executor.
std::optional<std::vector<core::AggSpec>> fast_path(const std::string& aggregates,
                                                    const AggregationRequest& r,
                                                    const SourceRow& src, const std::string& name) {
    const bool has_columns = src.columns_json.has_value();
    if (r.group_by || r.filter) {
        if (!has_columns)
            throw Error(sqlstate::kFeatureNotSupported,
                        "group_by and filter need a source with columns",
                        "Declare source \"" + name +
                            "\" with columns => 'name type, ...' to use expressions.");
        return std::nullopt;
    }
    if (!has_columns) return parse_aggregates(aggregates);
    // Not a 0.1 list (its syntax, an argument that is no field, a function it does not know, a
    // name too long for it): the executor's. Parsed in a subtransaction, as a PostgreSQL error
    // is caught only where its subtransaction is rolled back.
    std::vector<core::AggSpec> specs;
    const auto not_a_fast_list = [](const Error& e) {
        const std::string& s = e.sqlstate();
        return s == sqlstate::kSyntaxError || s == sqlstate::kInvalidParameterValue ||
               s == sqlstate::kFeatureNotSupported || s == sqlstate::kUndefinedFunction ||
               s == sqlstate::kNameTooLong;
    };
    if (!in_subtransaction(not_a_fast_list, [&] { specs = parse_aggregates(aggregates); }))
        return std::nullopt;
    // With columns, a fast-path aggregate reads a column of a number type (declared or
    // metadata; under domains, the base type).
    spi_exec("SELECT c->>'name', c->>'type' FROM pg_catalog.jsonb_array_elements($1::jsonb) c",
             {arg_text(*src.columns_json)});
    std::vector<std::pair<std::string, std::string>> cols;
    for (std::uint64_t i = 0; i < SPI_processed; ++i)
        cols.emplace_back(spi_text(i, 1).value_or(""), spi_text(i, 2).value_or(""));
    for (const core::AggSpec& spec : specs) {
        if (spec.field.empty()) continue;
        Oid type = InvalidOid;
        for (const auto& [col, col_type] : cols)
            if (col == spec.field) {
                const char* t = col_type.c_str();
                type = pg_call([&] {
                    Oid oid;
                    int32 typmod;
                    parseTypeString(t, &oid, &typmod, false);
                    return getBaseType(oid);
                });
                break;
            }
        if (!OidIsValid(type))
            type = spec.field == "kafka_partition" ? INT4OID
                   : spec.field == "kafka_offset"  ? INT8OID
                                                   : InvalidOid;
        const bool number = type == INT2OID || type == INT4OID || type == INT8OID ||
                            type == NUMERICOID || type == FLOAT4OID || type == FLOAT8OID;
        if (!number) return std::nullopt;
    }
    return specs;
}

// A source's key or event time as the worker reads it from the row: a column's name quoted, an
// expression as stored, NULL: the metadata column.
std::string row_expr(const std::string& columns_json, const std::optional<std::string>& text,
                     const char* metadata) {
    if (!text) return metadata;
    spi_exec("SELECT $2 IN (SELECT c->>'name' FROM pg_catalog.jsonb_array_elements($1::jsonb) c)",
             {arg_text(columns_json), arg_text(*text)});
    bool column = spi_bool(0, 1).value_or(false);
    column = column || core::is_metadata_column(*text);
    return column ? quote_ident(*text) : *text;
}

// The executor's sink columns, from the analysis of the stored texts: the key columns
// (group_by's items, or `key`: the source's key), the window, the aggregate items, event_time
// and final.
std::vector<SinkColumn> executor_sink_columns(const SourceRow& src, core::WindowKind kind,
                                              const DeclarationTexts& stored) {
    DeclarationTexts t;
    t.columns_json = *src.columns_json;
    t.window_kind = kind;
    if (!stored.group_by) t.key = row_expr(t.columns_json, src.key_path, "kafka_key");
    t.event_time = row_expr(t.columns_json, src.event_time_path, "kafka_timestamp");
    t.group_by = stored.group_by;
    t.filter = stored.filter;
    t.aggregates = stored.aggregates;
    const Analysis an = analyze_declaration(t);
    std::vector<SinkColumn> out;
    auto add = [&](const std::string& name, const std::string& type, const std::string& def,
                   bool is_key) {
        out.push_back(SinkColumn{name, type, def, is_key});
    };
    const std::string tz = "timestamp with time zone";
    if (stored.group_by)
        for (const AnalyzedExpr& g : an.group_by)
            add(g.name, g.type_name, g.type_name + " NOT NULL", true);
    else
        add("key", an.key->type_name, an.key->type_name + " NOT NULL", true);
    add("window_start", tz, tz + " NOT NULL", false);
    add("window_end", tz, tz + " NOT NULL", false);
    for (const AnalyzedExpr& a : an.aggregates) add(a.name, a.type_name, a.type_name, false);
    add("event_time", tz, tz + " NOT NULL", false);
    add("final", "boolean", "boolean NOT NULL DEFAULT false", false);
    return out;
}

SpiArg arg_text_array(const std::vector<std::string>& items) {
    std::vector<Datum> elems;
    for (const std::string& item : items) {
        const char* s = item.c_str();
        elems.push_back(pg_call([&] { return CStringGetTextDatum(s); }));
    }
    return SpiArg{TEXTARRAYOID, make_array(elems, {}, TEXTOID)};
}

// Where a new aggregation starts (README "Backfill and start_from"). A source is running once
// its worker committed an offset. On a running source every start but 'latest' (the source's
// position: no backfill) backfills; so does, on a new source, a start other than the source's
// start_offset — it joins the source's worker at the positions that worker commits first, so the
// source needs an aggregation that starts with it.
struct StartFrom {
    std::optional<std::string> declared;  // normalized
    bool backfill = false;
    std::string from;  // the backfill's start
};

StartFrom start_from(const OptText& value, const std::string& name, const std::string& source,
                     std::int32_t source_id) {
    StartFrom out;
    if (value) out.declared = start_position(*value, "start_from");
    const bool running =
        spi_exec("SELECT 1 FROM stoatflow.partition_offset o WHERE o.source_id = $1 LIMIT 1",
                 {arg_int32(source_id)}) > 0;
    spi_exec("SELECT s.start_offset FROM stoatflow.source s WHERE s.source_id = $1",
             {arg_int32(source_id)});
    const std::string source_start = spi_text(0, 1).value_or("earliest");
    if (running) {
        out.from = out.declared.value_or("earliest");
        out.backfill = out.from != "latest";
        return out;
    }
    if (!out.declared || *out.declared == source_start) return out;
    out.backfill = true;
    out.from = *out.declared;
    const bool sibling =
        spi_exec("SELECT 1 FROM stoatflow.aggregation a WHERE a.source_id = $1 AND NOT EXISTS "
                 "(SELECT 1 FROM stoatflow.backfill b WHERE b.aggregation_id = a.aggregation_id)",
                 {arg_int32(source_id)}) > 0;
    if (!sibling)
        throw Error(sqlstate::kObjectNotInPrerequisiteState,
                    "aggregation \"" + name + "\" cannot start from '" + out.from + "': source \"" +
                        source + "\" has not started yet",
                    "A new source starts at its start_offset ('" + source_start +
                        "'), with its first aggregations: declare this one without start_from, or "
                        "once source \"" +
                        source + "\" runs (it then backfills from there).");
    return out;
}

SpiArg arg_opt_text(const OptText& text) { return text ? arg_text(*text) : arg_null(TEXTOID); }

// README "Roll-ups": `source` names an aggregation when no source has that name. Its windows are
// the roll-up's records: the caller must be a member of its owner's role or may read its sink.
std::optional<AggregationDef> upstream_of(const OptText& source, Oid caller) {
    if (!source ||
        spi_exec("SELECT 1 FROM stoatflow.source s WHERE s.source_name = $1", {arg_text(*source)}) >
            0 ||
        spi_exec("SELECT 1 FROM stoatflow.aggregation a WHERE a.aggregation_name = $1",
                 {arg_text(*source)}) == 0)
        return std::nullopt;
    AggregationDef up = load_aggregation(*source);
    spi_exec("SELECT pg_catalog.pg_has_role($1::oid, $2::oid, 'MEMBER') OR coalesce("
             "pg_catalog.has_table_privilege($1::oid, $3::oid, 'SELECT'), false)",
             {arg_int64(caller), arg_int64(up.owner), arg_int64(up.sink)});
    if (!spi_bool(0, 1).value_or(false))
        throw Error(sqlstate::kInsufficientPrivilege,
                    "permission denied to roll up aggregation \"" + *source + "\"",
                    "A roll-up reads the windows of aggregation \"" + *source + "\": its owner (" +
                        role_name(up.owner) +
                        ") can allow it with GRANT "
                        "SELECT on its sink " +
                        up.sink_schema + "." + up.sink_table + ".");
    if (up.executor)
        throw Error(sqlstate::kFeatureNotSupported,
                    "aggregation \"" + *source +
                        "\" runs PostgreSQL's executor: a roll-up reads built-in aggregates only",
                    "Roll up an aggregation of count, sum, min and max over the source's fields "
                    "(without group_by or filter).");
    return up;
}

// The route of a roll-up: the built-in aggregates over the upstream's columns, by the record
// path's own rule (flow::rollup_input).
std::vector<core::AggSpec> rollup_aggregates(const AggregationRequest& r, const AggregationDef& up,
                                             const core::WindowSpec& spec,
                                             const std::string& upstream) {
    if (r.group_by || r.filter)
        throw Error(sqlstate::kFeatureNotSupported, "a roll-up takes no group_by or filter",
                    "Its key is the key of aggregation \"" + upstream +
                        "\"; filter the records there.");
    if (r.start_from)
        throw Error(sqlstate::kFeatureNotSupported, "a roll-up takes no start_from",
                    "It reads the windows of aggregation \"" + upstream +
                        "\" that close after it was created.");
    std::vector<core::AggSpec> specs = parse_aggregates(*r.aggregates);
    flow::rollup_input(0, upstream, up.spec, up.aggregates, 0, spec, specs);
    if (spi_exec("SELECT 1 FROM stoatflow.backfill b WHERE b.aggregation_id = $1",
                 {arg_int32(up.id)}) > 0)
        throw Error(sqlstate::kObjectNotInPrerequisiteState,
                    "aggregation \"" + upstream + "\" is still backfilling",
                    "Create the roll-up once it has joined its source: SELECT "
                    "stoatflow.wait_caught_up(source) waits for that.");
    return specs;
}

}  // namespace

void stoatflow::pg::declare::create_aggregation(const AggregationRequest& r) {
    const Oid owner = GetOuterUserId();
    const std::string lookup = caller_lookup_path();
    const SinkName sink = sink_name_of(r.sink);
    SpiSession spi;

    check_name("aggregation", r.aggregation_name);
    const std::string& name = *r.aggregation_name;
    // PostgreSQL would truncate longer names, and two sinks could become one (README "Limits").
    if (!core::name_fits(sink.schema.size()) || !core::name_fits(sink.table.size()))
        throw Error(sqlstate::kNameTooLong, "sink name \"" + sink.display() + "\" is too long",
                    "Schema and table names may have at most 63 bytes; PostgreSQL would truncate "
                    "them.");
    if (spi_exec("SELECT 1 FROM stoatflow.aggregation a WHERE a.aggregation_name = $1",
                 {arg_text(name)}) > 0)
        throw Error(sqlstate::kDuplicateObject, "aggregation \"" + name + "\" already exists",
                    "Choose another name, or drop it first with stoatflow.drop_aggregation().");
    const std::optional<AggregationDef> upstream = upstream_of(r.source, owner);
    const std::string& source = *r.source;
    SourceRow src;
    if (upstream) {
        spi_exec("SELECT s.source_name FROM stoatflow.source s WHERE s.source_id = $1",
                 {arg_int32(upstream->source_id)});
        src = load_source_row(spi_text(0, 1));
    } else {
        src = load_source_row(r.source);
        check_may_aggregate(source, src, owner);
    }

    // The window, as the core validates it.
    if (r.window.is_null || !r.window.kind)
        throw Error(sqlstate::kNullValueNotAllowed, "window must not be NULL",
                    "Use stoatflow.tumbling(), hopping(), sliding() or session().");
    check_names(r.window.kind, r.emit);
    const ResolvedWindow resolved = resolve_window(r.window, r.retention);
    const std::string& kind = resolved.kind;
    const core::Millis size = resolved.size, advance = resolved.advance, grace = resolved.grace;
    const WindowCheck& window = resolved.check;

    if (!r.aggregates)
        throw Error(sqlstate::kNullValueNotAllowed, "aggregates must not be NULL",
                    "For example: 'count(*) AS views, sum(amount) AS revenue'.");

    // The route, and the texts stored: the fast path's as given; the executor's with names
    // resolved along the caller's search_path, as a view's, and stored qualified so that the
    // worker (pinned path) resolves the same objects. Everything below uses the stored texts.
    const std::optional<std::vector<core::AggSpec>> fast =
        upstream ? rollup_aggregates(r, *upstream, resolved.spec, source)
                 : fast_path(*r.aggregates, r, src, source);
    DeclarationTexts stored;
    std::vector<std::string> fns, fields, cols;
    std::vector<SinkColumn> columns;
    const core::WindowKind window_kind = core::window_kind_from_name(kind);
    if (fast) {
        stored.aggregates = r.aggregates;
        for (const core::AggSpec& s : *fast) {
            fns.push_back(agg_fn_catalog_name(s.fn));
            fields.push_back(s.field);
            cols.push_back(s.column);
        }
        columns = fast_sink_columns(*fast);
    } else {
        DeclarationTexts t;
        t.columns_json = *src.columns_json;
        t.window_kind = window_kind;
        t.group_by = r.group_by;
        t.filter = r.filter;
        t.aggregates = r.aggregates;
        t.search_path = lookup;
        stored = stored_texts(t);
        columns = executor_sink_columns(src, window_kind, stored);
    }

    // The sink: an existing table must be writable by the owner and have the right shape; a
    // new one is created in a schema where the owner may create tables.
    Oid sink_oid = find_relation(sink.schema, sink.table);
    if (OidIsValid(sink_oid)) {
        check_existing_sink(sink_oid, sink, columns, owner);
    } else {
        std::string comment =
            "stoatflow sink of aggregation " + name + ": " + *r.aggregates + " over " + source;
        if (r.group_by) comment += " grouped by " + *r.group_by;
        if (r.filter) comment += " where " + *r.filter;
        sink_oid = create_sink(sink, columns, owner, comment);
    }

    // A roll-up starts with its upstream's next closes and never backfills (README "Roll-ups").
    const StartFrom start = upstream ? StartFrom{} : start_from(r.start_from, name, source, src.id);
    spi_exec(
        "INSERT INTO stoatflow.aggregation (aggregation_name, source_id, kind, size_ms, "
        "advance_ms, grace_ms, aggregates, agg_functions, agg_fields, agg_columns, sink, emit, "
        "retention_ms, segment_interval_ms, owner, sink_schema, sink_table, group_by, filter, "
        "executor, start_from, upstream_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
        "$11::bigint::oid, $12, $13, $14, $15::bigint::oid, $16, $17, $18, $19, "
        "$20::text::boolean, $21, $22)",
        {arg_text(name),
         arg_int32(src.id),
         arg_text(kind),
         arg_int64(size),
         arg_int64(advance),
         arg_int64(grace),
         arg_opt_text(stored.aggregates),
         arg_text_array(fns),
         arg_text_array(fields),
         arg_text_array(cols),
         arg_int64(sink_oid),
         arg_text(*r.emit),
         arg_int64(window.retention),
         arg_int64(window.segment_interval),
         arg_int64(owner),
         arg_text(sink.schema),
         arg_text(sink.table),
         arg_opt_text(stored.group_by),
         arg_opt_text(stored.filter),
         arg_text(fast ? "false" : "true"),
         start.declared ? arg_text(*start.declared) : arg_null(TEXTOID),
         upstream ? arg_int32(upstream->id) : arg_null(INT4OID)});
    spi_exec("INSERT INTO stoatflow.aggregation_progress (aggregation_id) SELECT a.aggregation_id "
             "FROM stoatflow.aggregation a WHERE a.aggregation_name = $1",
             {arg_text(name)});
    if (start.backfill) {
        spi_exec("INSERT INTO stoatflow.backfill (aggregation_id, source_id, start_from) SELECT "
                 "a.aggregation_id, a.source_id, $2 FROM stoatflow.aggregation a WHERE "
                 "a.aggregation_name = $1",
                 {arg_text(name), arg_text(start.from)});
        wake_launcher_at_commit();  // its backfill worker
    }
    spi.finish();
}

namespace {
OptText opt_text_arg(FunctionCallInfo fcinfo, int i) {
    if (PG_ARGISNULL(i)) return std::nullopt;
    return text_to_string(PG_GETARG_DATUM(i));
}

}  // namespace

// A stoatflow.window row's fields (kind, size, advance, grace).
WindowArg declare::window_arg(FunctionCallInfo fcinfo, int i) {
    WindowArg w;
    if (PG_ARGISNULL(i)) return w;
    w.is_null = false;
    const Datum row = PG_GETARG_DATUM(i);
    Datum fields[4];
    bool nulls[4];
    pg_call([&] {
        HeapTupleHeader tuple = DatumGetHeapTupleHeader(row);
        const char* names[4] = {"kind", "size", "advance", "grace"};
        for (int f = 0; f < 4; ++f) fields[f] = GetAttributeByName(tuple, names[f], &nulls[f]);
    });
    if (!nulls[0]) w.kind = text_to_string(fields[0]);
    w.size = nulls[1] ? 0 : fields[1];
    w.advance = nulls[2] ? 0 : fields[2];
    w.grace = nulls[3] ? 0 : fields[3];
    return w;
}

declare::ResolvedWindow declare::resolve_window(const WindowArg& w, Datum retention_iv) {
    if (w.is_null || !w.kind)
        throw Error(sqlstate::kNullValueNotAllowed, "window must not be NULL",
                    "Use stoatflow.tumbling(), hopping(), sliding() or session().");
    ResolvedWindow out;
    out.kind = *w.kind;
    core::window_kind_from_name(out.kind);
    if (w.size == 0 || w.grace == 0)
        throw Error(sqlstate::kInvalidParameterValue,
                    "window kind, size and grace must not be NULL");
    out.size = interval_ms(w.size, "window size");
    out.advance = out.kind == "tumbling"  ? out.size
                  : out.kind == "hopping" ? (w.advance == 0 ? 0 : interval_ms(w.advance, "advance"))
                                          : 0;
    out.grace = interval_ms(w.grace, "grace");
    std::optional<core::Millis> retention;
    if (retention_iv != 0) retention = interval_ms(retention_iv, "retention");
    out.check = check_window(out.kind, out.size, out.advance, out.grace, retention);
    out.spec = window_spec_from(out.kind, out.size, out.advance, out.grace);
    return out;
}

// create_aggregation(aggregation_name, source, "window", aggregates, sink, emit, retention,
// group_by, filter, start_from)
STOATFLOW_FUNCTION(stoatflow_create_aggregation) {
    AggregationRequest r;
    r.aggregation_name = opt_text_arg(fcinfo, 0);
    r.source = opt_text_arg(fcinfo, 1);
    r.window = window_arg(fcinfo, 2);
    r.aggregates = opt_text_arg(fcinfo, 3);
    r.sink = opt_text_arg(fcinfo, 4);
    r.emit = opt_text_arg(fcinfo, 5);
    r.retention = PG_ARGISNULL(6) ? 0 : PG_GETARG_DATUM(6);
    r.group_by = opt_text_arg(fcinfo, 7);
    r.filter = opt_text_arg(fcinfo, 8);
    if (PG_NARGS() > 9) r.start_from = opt_text_arg(fcinfo, 9);
    create_aggregation(r);
    PG_RETURN_VOID();
}
