// stoatflow.create_source() (README "create_source"): the checks, the row type (columns), the
// catalog row and the source's view. The SQL function is a shell over this (SECURITY DEFINER
// with a pinned search_path; "the caller" is the role that called it, GetOuterUserId).
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/column_list.hpp"
#include "stoatflow/core/metadata_columns.hpp"
#include "stoatflow/format/avro.hpp"
#include "stoatflow/format/avro_rows.hpp"
#include "stoatflow/format/row_decoder.hpp"
#include "stoatflow/kafka/topics.hpp"
#include "stoatflow/registry/client.hpp"

#include <optional>
#include <string>
#include <vector>

#include "stoatflow/pg/declare/analyze.hpp"
#include "stoatflow/pg/declare/declare.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/border/text.hpp"
#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/worker/worker.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;
using namespace stoatflow::pg::declare;

namespace {

SpiArg arg_opt_text(const OptText& text) { return text ? arg_text(*text) : arg_null(TEXTOID); }
SpiArg arg_opt_int64(const OptMillis& v) { return v ? arg_int64(*v) : arg_null(INT8OID); }

[[noreturn]] void bad(const std::string& message, const std::string& hint = {}) {
    throw Error(sqlstate::kInvalidParameterValue, message, hint);
}

// With columns, a source's key or event_time names a column of the row type (declared or
// metadata), or is an expression over the row, analyzed as the worker will run it (errors
// point into the text). Returns it as stored: a column's name as given, an expression with
// its names qualified (resolved along the caller's path, stored_texts); NULL stays NULL.
OptText check_row_column(const std::string& columns_json, const char* what, const OptText& name,
                         bool is_time, const std::string& caller_path) {
    if (!name) return std::nullopt;
    OptText type;
    spi_exec("SELECT c->>'type' FROM pg_catalog.jsonb_array_elements($1::jsonb) c "
             "WHERE c->>'name' = $2",
             {arg_text(columns_json), arg_text(*name)});
    if (SPI_processed > 0) type = spi_text(0, 1);
    if (!type) {
        // The metadata columns (their types as format_type spells them).
        for (const core::MetadataColumn& m : core::kMetadataColumns)
            if (*name == m.name) type = m.sql_type;
    }
    if (!type) {
        DeclarationTexts t;
        t.columns_json = columns_json;
        t.window_kind = core::WindowKind::Tumbling;
        (is_time ? t.event_time : t.key) = *name;
        t.aggregates = "count(*)";
        t.search_path = caller_path;
        const DeclarationTexts stored = stored_texts(t);
        return is_time ? stored.event_time : stored.key;
    }
    if (is_time && *type != "timestamp with time zone" && *type != "bigint" && *type != "integer")
        throw Error(sqlstate::kDatatypeMismatch,
                    std::string(what) + ": column \"" + *name + "\" is of type " + *type,
                    "The event time column must be timestamptz, or bigint/integer epoch "
                    "milliseconds.");
    if (!is_time && (*type == "jsonb" || *type == "json"))
        throw Error(sqlstate::kDatatypeMismatch,
                    std::string(what) + ": column \"" + *name + "\" is of type " + *type,
                    "A key is a scalar column: text, a number, a time ...");
    return name;
}

// kafka_options: a JSON object of strings, numbers and booleans, judged by librdkafka (names in
// order, values as text).
void check_kafka_options(const OptText& brokers, const OptText& options) {
    if (options) spi_exec("SELECT pg_catalog.jsonb_typeof($1::jsonb)", {arg_text(*options)});
    if (!options || spi_text(0, 1) != std::optional<std::string>("object"))
        bad("kafka_options must be a JSON object",
            "For example: '{\"security.protocol\": \"SASL_SSL\"}'.");
    spi_exec("SELECT k, v #>> '{}', pg_catalog.jsonb_typeof(v) IN ('string', 'number', 'boolean') "
             "FROM pg_catalog.jsonb_each($1::jsonb) e(k, v) ORDER BY k",
             {arg_text(*options)});
    std::vector<std::string> names, values;
    for (std::uint64_t i = 0; i < SPI_processed; ++i) {
        if (!spi_bool(i, 3).value_or(false))
            bad("kafka_options values must be strings, numbers or booleans");
        names.push_back(*spi_text(i, 1));
        values.push_back(spi_text(i, 2).value_or(""));
    }
    check_kafka_config(brokers, names, values);
}

// format_options: a JSON object, judged by the format room (format::parse_record_format).
format::RecordFormat check_format_options(const OptText& options, const std::string& format) {
    if (options) spi_exec("SELECT pg_catalog.jsonb_typeof($1::jsonb)", {arg_text(*options)});
    if (!options || spi_text(0, 1) != std::optional<std::string>("object"))
        bad("format_options must be a JSON object");
    return format::parse_record_format(format, read_format_options(*options));
}

// Declaration-time reads of the registry are bounded (README "Formats": the declaration fails
// clearly when the registry cannot answer).
constexpr long kDeclareRegistryTimeoutMs = 5000;

// The latest version of subject <first topic>-value, a source's columns when it has none
// (README "Formats"), of the format's schema type ("AVRO", "PROTOBUF").
registry::Schema latest_value_schema(const format::RecordFormat& f, const std::string& topic,
                                     bool internal_ok, const std::string& type) {
    registry::Endpoint e;
    e.url = f.registry_url();
    e.user = f.registry_user();
    e.password = f.registry_password();
    e.timeout_ms = kDeclareRegistryTimeoutMs;
    e.internal_ok = internal_ok;
    const std::string subject = topic + "-value";
    registry::Fetched got;
    try {
        registry::Client client(std::move(e));
        got = client.latest(subject);
    } catch (const registry::BadRegistryUrl&) {
        check_registry_url(f.registry_url());  // says what is wrong
        throw;
    }
    if (got.outcome == registry::Outcome::NotFound)
        throw Error(sqlstate::kUndefinedObject,
                    "the schema registry has no subject \"" + subject + "\"",
                    "Register the topic's value schema first, or declare the columns (then "
                    "records are read by their writer schemas' ids alone).");
    if (got.outcome != registry::Outcome::Found)
        throw Error(sqlstate::kConnectionFailure,
                    "cannot read the columns from the schema registry: " + got.detail,
                    "A source without columns takes them from subject \"" + subject +
                        "\" when it is declared; check the registry, or declare the columns.");
    if (got.schema.type != type)
        bad("subject \"" + subject + "\" holds a " + got.schema.type + " schema, not " +
                (type == "AVRO" ? "Avro" : "Protobuf"),
            "Use the format of the subject's schema.");
    return got.schema;
}

// A protobuf source with a registry and no columns (README "Formats", Protobuf): the fields of
// the latest version's message ("message", or its first). A schema that imports others
// (registry references) is not read yet.
std::string proto_registry_columns(const format::RecordFormat& f, const std::string& topic,
                                   bool internal_ok) {
    const registry::Schema latest = latest_value_schema(f, topic, internal_ok, "PROTOBUF");
    if (!latest.references.empty())
        throw Error(sqlstate::kFeatureNotSupported,
                    "subject \"" + topic +
                        "-value\" references other schemas, which format "
                        "'protobuf' does not read yet",
                    "Declare the columns; records of such a schema are bad_protobuf.");
    return format::proto_text_column_list(f.proto, latest.text);
}

// An Avro source without columns (README "Formats", Avro): the columns are the writer schema's
// top-level fields — the inline schema's, or with a registry the reader_schema given or the
// latest version of subject <first topic>-value, which is then stored as the reader_schema
// (later versions resolve against it). `options` (format_options as stored) may gain it.
std::string avro_columns(const format::RecordFormat& f, const std::string& topic, bool internal_ok,
                         std::string& options) {
    if (!f.uses_registry())
        return format::avro_column_list(format::avro::Schema::parse(f.avro.schema));
    if (!f.avro.reader_schema.empty())
        return format::avro_column_list(format::avro::Schema::parse(f.avro.reader_schema));
    const registry::Schema latest = latest_value_schema(f, topic, internal_ok, "AVRO");
    const std::string columns = format::avro_column_list(format::avro::Schema::parse(latest.text));
    spi_exec("SELECT ($1::jsonb OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_object("
             "'reader_schema', $2::jsonb))::text",
             {arg_text(options), arg_text(latest.text)});
    options = *spi_text(0, 1);
    return columns;
}

// The column list of a source: the declared one, checked against the format's schema if it
// has one (protobuf: every PATH names fields of the message), or the one the schema gives when
// `columns` is omitted (README "Formats"); NULL for 0.1's field paths.
OptText source_columns(const OptText& declared, const format::RecordFormat& format) {
    if (!declared) return format::schema_column_list(format);
    std::vector<std::string> names;
    std::vector<std::vector<std::string>> paths;
    for (const core::ColumnDecl& c : core::parse_column_list(*declared)) {
        names.push_back(c.name);
        paths.push_back(c.path);
    }
    format::check_schema_columns(format, names, paths);
    return declared;
}

// A CSV source's columns are positional (README "Formats", CSV): they need declaring, and take
// no PATH.
void check_csv_columns(const OptText& columns) {
    if (!columns)
        bad("format 'csv' needs columns",
            "Declare the record's fields in order, e.g. columns => 'page text, ts timestamptz'.");
    for (const core::ColumnDecl& c : core::parse_column_list(*columns))
        if (c.path_given)
            bad("column \"" + c.name + "\": format 'csv' takes no PATH",
                "A CSV record's i-th field is the i-th column; drop the PATH clause.");
}

}  // namespace

void stoatflow::pg::declare::create_source(const SourceRequest& r) {
    const Oid caller = GetOuterUserId();
    auto ms = [](bool given, Datum interval, const char* what) -> OptMillis {
        if (!given) return std::nullopt;
        return interval_ms(interval, what);
    };
    const OptMillis ooo_ms =
        ms(r.has_max_out_of_orderness, r.max_out_of_orderness, "max_out_of_orderness");
    const OptMillis idle_ms = ms(r.has_idle_timeout, r.idle_timeout, "idle_timeout");
    const OptMillis future_ms = ms(r.has_future_limit, r.future_limit, "future_limit");
    const std::string lookup = caller_lookup_path();
    SpiSession spi;

    check_name("source", r.source_name);
    const std::string& name = *r.source_name;
    if (spi_exec("SELECT 1 FROM stoatflow.source s WHERE s.source_name = $1", {arg_text(name)}) > 0)
        throw Error(sqlstate::kDuplicateObject, "source \"" + name + "\" already exists",
                    "Choose another name, or drop it first with stoatflow.drop_source().");
    // 'web_activity, purchases': one source, one watermark over all their partitions
    if (!r.topic)
        bad("topic must not be NULL", "Name a Kafka topic, or several separated by commas.");
    const std::vector<std::string> topics = kafka::parse_topic_list(*r.topic);
    // The format's name first (its options after the Kafka options).
    const format::FormatKind format_kind = format::parse_format_name(r.format.value_or("<NULL>"));
    if (!r.start_offset)
        bad("unknown start_offset \"<NULL>\"",
            "Use 'earliest', 'latest' or a timestamp such as '2026-11-01 00:00:00+00'.");
    const std::string start_offset = start_position(*r.start_offset, "start_offset");
    if (!ooo_ms || *ooo_ms < 0) bad("max_out_of_orderness must be zero or positive");
    if (idle_ms && *idle_ms <= 0) bad("idle_timeout must be positive (or NULL for never)");
    if (future_ms && *future_ms < 0)
        bad("future_limit must be zero or positive (or NULL for no check)");
    check_kafka_options(r.brokers, r.kafka_options);
    const format::RecordFormat record_format = check_format_options(r.format_options, *r.format);
    if (format_kind == format::FormatKind::Csv) check_csv_columns(r.columns);
    OptText column_list = r.columns;
    std::string format_options = *r.format_options;
    const bool internal_ok =
        record_format.uses_registry() && check_registry_url(record_format.registry_url());
    if (format_kind == format::FormatKind::Avro && !column_list)
        column_list = avro_columns(record_format, topics.front(), internal_ok, format_options);
    if (record_format.uses_registry() && format_kind == format::FormatKind::Protobuf &&
        !column_list)
        column_list = proto_registry_columns(record_format, topics.front(), internal_ok);
    column_list = source_columns(column_list, record_format);

    OptText columns, key = r.key, event_time = r.event_time;
    if (column_list) {
        // key and event_time name columns (declared or metadata) of the row type, or are
        // expressions over it; stored as resolved along the caller's search_path.
        columns = columns_json(*column_list);
        key = check_row_column(*columns, "key", key, false, lookup);
        event_time = check_row_column(*columns, "event_time", event_time, true, lookup);
    } else {
        if (key) check_field_path("key", *key);
        if (event_time) check_field_path("event_time", *event_time);
    }

    wake_launcher_at_commit();
    std::string topic_text;
    for (const std::string& t : topics) topic_text += (topic_text.empty() ? "" : ", ") + t;
    std::vector<Datum> topic_elems;
    for (const std::string& t : topics) {
        const char* s = t.c_str();
        topic_elems.push_back(pg_call([&] { return CStringGetTextDatum(s); }));
    }
    spi_exec("INSERT INTO stoatflow.source (source_name, topic, brokers, format, key_path, "
             "event_time_path, max_out_of_orderness_ms, idle_timeout_ms, start_offset, "
             "kafka_options, created_by, future_limit_ms, kafka_options_masked, columns, "
             "format_options, topics) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, "
             "$11::bigint::oid, $12, stoatflow._mask_options($10::jsonb), $13::jsonb, "
             "$14::jsonb, $15)",
             {arg_text(name), arg_text(topic_text), arg_text(*r.brokers), arg_text(*r.format),
              arg_opt_text(key), arg_opt_text(event_time), arg_opt_int64(ooo_ms),
              arg_opt_int64(idle_ms), arg_text(start_offset), arg_text(*r.kafka_options),
              arg_int64(caller), arg_opt_int64(future_ms), arg_opt_text(columns),
              arg_text(format_options),
              SpiArg{TEXTARRAYOID, make_array(topic_elems, {}, TEXTOID)}});
    spi_exec("SELECT stoatflow._create_source_view($1, $2::bigint::oid::regrole)",
             {arg_text(name), arg_int64(caller)});
    spi.finish();
}

namespace {
OptText opt_text_arg(FunctionCallInfo fcinfo, int i) {
    if (PG_ARGISNULL(i)) return std::nullopt;
    return text_to_string(PG_GETARG_DATUM(i));
}
OptText jsonb_arg(FunctionCallInfo fcinfo, int i) {
    if (PG_ARGISNULL(i)) return std::nullopt;
    const Datum value = PG_GETARG_DATUM(i);
    return std::string(
        pg_call([&] { return DatumGetCString(DirectFunctionCall1(jsonb_out, value)); }));
}
}  // namespace

// create_source(source_name, topic, brokers, format, key, event_time, max_out_of_orderness,
// idle_timeout, start_offset, kafka_options, columns, format_options, future_limit)
STOATFLOW_FUNCTION(stoatflow_create_source) {
    SourceRequest r;
    r.source_name = opt_text_arg(fcinfo, 0);
    r.topic = opt_text_arg(fcinfo, 1);
    r.brokers = opt_text_arg(fcinfo, 2);
    r.format = opt_text_arg(fcinfo, 3);
    r.key = opt_text_arg(fcinfo, 4);
    r.event_time = opt_text_arg(fcinfo, 5);
    r.has_max_out_of_orderness = !PG_ARGISNULL(6);
    r.max_out_of_orderness = PG_ARGISNULL(6) ? 0 : PG_GETARG_DATUM(6);
    r.has_idle_timeout = !PG_ARGISNULL(7);
    r.idle_timeout = PG_ARGISNULL(7) ? 0 : PG_GETARG_DATUM(7);
    r.start_offset = opt_text_arg(fcinfo, 8);
    r.kafka_options = jsonb_arg(fcinfo, 9);
    r.columns = opt_text_arg(fcinfo, 10);
    r.format_options = jsonb_arg(fcinfo, 11);
    r.has_future_limit = !PG_ARGISNULL(12);
    r.future_limit = PG_ARGISNULL(12) ? 0 : PG_GETARG_DATUM(12);
    create_source(r);
    PG_RETURN_VOID();
}
