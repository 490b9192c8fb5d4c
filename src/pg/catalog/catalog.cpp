// Loading sources and aggregations from the catalog tables into C++ definitions.
#include "stoatflow/core/error.hpp"

#include <string>

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/settings.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
}

namespace stoatflow::pg {

core::WindowSpec window_spec_from(const std::string& kind, core::Millis size, core::Millis advance,
                                  core::Millis grace) {
    switch (core::window_kind_from_name(kind)) {
    case core::WindowKind::Tumbling: return core::WindowSpec::tumbling(size, grace);
    case core::WindowKind::Hopping: return core::WindowSpec::hopping(size, advance, grace);
    case core::WindowKind::Sliding: return core::WindowSpec::sliding(size, grace);
    case core::WindowKind::Session: return core::WindowSpec::session(size, grace);
    }
    throw Error(sqlstate::kInternalError, "unhandled window kind");
}

SqlType sql_type(core::ColumnType t) {
    // The one ColumnType -> SQL type table: sink columns, the declarations' shape checks and
    // window_state all read it. Names as format_type() spells them.
    switch (t) {
    case core::ColumnType::BigInt: return {INT8OID, "bigint"};
    case core::ColumnType::Double: return {FLOAT8OID, "double precision"};
    case core::ColumnType::Numeric: return {NUMERICOID, "numeric"};
    }
    throw Error(sqlstate::kInternalError, "unhandled column type");
}

const char* agg_fn_catalog_name(core::AggFn fn) {
    return fn == core::AggFn::CountStar ? "count_star" : core::to_string(fn);
}

core::AggFn agg_fn_from_catalog(const std::string& name) {
    if (name == "count_star") return core::AggFn::CountStar;
    return core::agg_fn_from_name(name);
}

namespace {
// The worker's SQL names every function and operator with its schema (README "Security"): it runs
// as the bootstrap superuser, and nothing a database owner puts on a search_path may reach it.
const char* kSourceColumns =
    "SELECT source_id, source_name, topic, brokers, format, coalesce(key_path, ''), "
    "coalesce(event_time_path, ''), max_out_of_orderness_ms, coalesce(idle_timeout_ms, 0), "
    "start_offset, "
    "(SELECT pg_catalog.array_agg(k ORDER BY k) FROM pg_catalog.jsonb_each(kafka_options) e(k, v)), "
    "(SELECT pg_catalog.array_agg(v OPERATOR(pg_catalog.#>>) '{}' ORDER BY k) "
    "FROM pg_catalog.jsonb_each(kafka_options) e(k, v)), future_limit_ms, "
    "columns IS NOT NULL, created_by::oid, topics "
    "FROM stoatflow.source ";

SourceDef source_from_row(std::uint64_t r) {
    SourceDef s;
    s.id = static_cast<std::int32_t>(*spi_int64(r, 1));
    s.name = *spi_text(r, 2);
    s.topic = *spi_text(r, 3);
    s.brokers = *spi_text(r, 4);
    s.format = *spi_text(r, 5);
    s.key_path = *spi_text(r, 6);
    s.event_time_path = *spi_text(r, 7);
    s.max_out_of_orderness = *spi_int64(r, 8);
    s.idle_timeout = *spi_int64(r, 9);
    s.start_offset = *spi_text(r, 10);
    bool null_names, null_values;
    Datum names = spi_datum(r, 11, &null_names);
    Datum values = spi_datum(r, 12, &null_values);
    if (!null_names && !null_values) {
        auto n = text_array_to_vector(names);
        auto v = text_array_to_vector(values);
        for (std::size_t i = 0; i < n.size() && i < v.size(); ++i)
            s.kafka_options.emplace_back(n[i], v[i]);
    }
    if (const auto limit = spi_int64(r, 13)) s.future_limit = *limit;
    s.max_key_bytes = static_cast<std::size_t>(max_key_bytes);
    s.has_columns = *spi_bool(r, 14);
    s.owner = static_cast<Oid>(*spi_int64(r, 15));
    bool null_topics;
    const Datum topics = spi_datum(r, 16, &null_topics);
    if (!null_topics) s.topics = text_array_to_vector(topics);
    if (s.topics.empty()) s.topics.push_back(s.topic);
    return s;
}

// The declared columns of a source with columns, as stored by _parse_columns.
void load_columns(SourceDef& s) {
    if (!s.has_columns) return;
    const auto n = spi_exec(
        "SELECT c OPERATOR(pg_catalog.->>) 'name', c OPERATOR(pg_catalog.->>) 'type', "
        "ARRAY(SELECT pg_catalog.jsonb_array_elements_text(c OPERATOR(pg_catalog.->) 'path')) "
        "FROM stoatflow.source s, pg_catalog.jsonb_array_elements(s.columns) WITH ORDINALITY e(c, o) "
        "WHERE s.source_id OPERATOR(pg_catalog.=) $1 ORDER BY o",
        {arg_int32(s.id)});
    for (std::uint64_t r = 0; r < n; ++r) {
        bool isnull;
        core::ColumnDecl c;
        c.name = *spi_text(r, 1);
        c.type = *spi_text(r, 2);
        c.path = text_array_to_vector(spi_datum(r, 3, &isnull));
        c.position = r + 1;
        s.columns.push_back(std::move(c));
    }
    // (the source may be gone meanwhile: then no row, and nothing runs from it)
    if (spi_exec("SELECT columns::pg_catalog.text, format_options::pg_catalog.text FROM "
                 "stoatflow.source WHERE source_id OPERATOR(pg_catalog.=) $1",
                 {arg_int32(s.id)}) > 0) {
        s.columns_json = spi_text(0, 1).value_or("[]");
        const std::string options = spi_text(0, 2).value_or("{}");
        s.format_options = read_format_options(options);
    }
}

const char* kAggregationColumns =
    "SELECT aggregation_id, aggregation_name, kind, size_ms, advance_ms, grace_ms, agg_functions, "
    "agg_fields, agg_columns, emit, retention_ms, segment_interval_ms, sink::oid, owner::oid, "
    "sink_schema, sink_table, executor, aggregates, group_by, filter, source_id, "
    "(SELECT p.closed_through_ms FROM stoatflow.aggregation_progress p WHERE p.aggregation_id "
    "OPERATOR(pg_catalog.=) aggregation.aggregation_id), "
    "(SELECT p.state_emit FROM stoatflow.aggregation_progress p WHERE p.aggregation_id "
    "OPERATOR(pg_catalog.=) aggregation.aggregation_id), upstream_id "
    "FROM stoatflow.aggregation ";

AggregationDef aggregation_from_row(std::uint64_t r) {
    AggregationDef a;
    a.id = static_cast<std::int32_t>(*spi_int64(r, 1));
    a.name = *spi_text(r, 2);
    a.spec =
        window_spec_from(*spi_text(r, 3), *spi_int64(r, 4), *spi_int64(r, 5), *spi_int64(r, 6));
    bool isnull;
    auto fns = text_array_to_vector(spi_datum(r, 7, &isnull));
    auto fields = text_array_to_vector(spi_datum(r, 8, &isnull));
    auto columns = text_array_to_vector(spi_datum(r, 9, &isnull));
    for (std::size_t i = 0; i < fns.size(); ++i)
        a.aggregates.push_back({agg_fn_from_catalog(fns[i]), fields.at(i), columns.at(i)});
    a.emit = core::emit_strategy_from_name(*spi_text(r, 10));
    a.retention = *spi_int64(r, 11);
    a.segment_interval = *spi_int64(r, 12);
    a.sink = static_cast<Oid>(*spi_int64(r, 13));
    a.owner = static_cast<Oid>(*spi_int64(r, 14));
    a.sink_schema = *spi_text(r, 15);
    a.sink_table = *spi_text(r, 16);
    a.executor = *spi_bool(r, 17);
    a.aggregates_text = *spi_text(r, 18);
    a.group_by = spi_text(r, 19);
    a.filter = spi_text(r, 20);
    a.source_id = static_cast<std::int32_t>(*spi_int64(r, 21));
    if (const auto closed = spi_int64(r, 22)) a.spec.closed_through = *closed;
    if (const auto emit = spi_text(r, 23)) a.committed_emit = core::emit_strategy_from_name(*emit);
    if (const auto up = spi_int64(r, 24)) a.upstream_id = static_cast<std::int32_t>(*up);
    return a;
}
}  // namespace

std::int32_t topic_index(const SourceDef& source, const std::string& topic) {
    for (std::size_t i = 0; i < source.topics.size(); ++i)
        if (source.topics[i] == topic) return static_cast<std::int32_t>(i);
    return -1;
}

std::vector<format::FormatOption> read_format_options(const std::string& options_json) {
    using Type = format::FormatOption::Type;
    std::vector<format::FormatOption> out;
    spi_exec("SELECT pg_catalog.jsonb_typeof($1::pg_catalog.jsonb)", {arg_text(options_json)});
    if (spi_text(0, 1) != std::optional<std::string>("object"))
        return {{"", std::nullopt, Type::Other}};
    const auto n = spi_exec("SELECT k, v OPERATOR(pg_catalog.#>>) '{}', pg_catalog.jsonb_typeof(v) "
                            "FROM pg_catalog.jsonb_each($1::pg_catalog.jsonb) e(k, v) ORDER BY k",
                            {arg_text(options_json)});
    for (std::uint64_t r = 0; r < n; ++r) {
        const std::string type = spi_text(r, 3).value_or("");
        out.push_back({*spi_text(r, 1), spi_text(r, 2),
                       type == "string"    ? Type::String
                       : type == "boolean" ? Type::Boolean
                                           : Type::Other});
    }
    return out;
}

SourceDef load_source(const std::string& name) {
    if (spi_exec(std::string(kSourceColumns) + "WHERE source_name OPERATOR(pg_catalog.=) $1",
                 {arg_text(name)}) == 0)
        throw Error(sqlstate::kUndefinedObject, "source \"" + name + "\" does not exist",
                    "Create it with stoatflow.create_source().");
    SourceDef s = source_from_row(0);
    load_columns(s);
    return s;
}

std::optional<SourceDef> load_source_by_id(std::int32_t id) {
    if (spi_exec(std::string(kSourceColumns) + "WHERE source_id OPERATOR(pg_catalog.=) $1",
                 {arg_int32(id)}) == 0)
        return std::nullopt;
    SourceDef s = source_from_row(0);
    load_columns(s);
    return s;
}

std::vector<AggregationDef> load_aggregations(std::int32_t source_id) {
    const auto n = spi_exec(std::string(kAggregationColumns) +
                                "WHERE source_id OPERATOR(pg_catalog.=) $1 ORDER BY aggregation_id",
                            {arg_int32(source_id)});
    std::vector<AggregationDef> out;
    for (std::uint64_t r = 0; r < n; ++r) out.push_back(aggregation_from_row(r));
    return out;
}

AggregationDef load_aggregation(const std::string& name) {
    if (spi_exec(std::string(kAggregationColumns) +
                     "WHERE aggregation_name OPERATOR(pg_catalog.=) $1",
                 {arg_text(name)}) == 0)
        throw Error(sqlstate::kUndefinedObject, "aggregation \"" + name + "\" does not exist");
    return aggregation_from_row(0);
}

}  // namespace stoatflow::pg
