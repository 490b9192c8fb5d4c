// The record formats' one check and the one choice of a decoder (row_decoder.hpp).
#include "stoatflow/format/row_decoder.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/format/avro.hpp"
#include "stoatflow/format/avro_rows.hpp"
#include "stoatflow/format/row_extractor.hpp"

#include <utility>

namespace stoatflow::format {
namespace {

[[noreturn]] void bad(const std::string& message, const std::string& hint) {
    throw Error(sqlstate::kInvalidParameterValue, message, hint);
}

constexpr const char* kCsvOptions = "delimiter, quote, null, header";

std::string string_option(const FormatOption& o) {
    if (o.type != FormatOption::Type::String || !o.value)
        bad("format option \"" + o.name + "\" must be a string",
            "For example: '{\"delimiter\": \";\"}'.");
    return *o.value;
}

char byte_option(const FormatOption& o) {
    const std::string v = string_option(o);
    if (v.size() != 1)
        bad("format option \"" + o.name + "\" must be one byte, not \"" + v + "\"",
            "For example: '{\"delimiter\": \"\\t\"}'.");
    if (v[0] == '\n' || v[0] == '\r' || v[0] == '\0')
        bad("format option \"" + o.name + "\" cannot be a line break or NUL",
            "A record is one line; choose another character.");
    return v[0];
}

CsvOptions csv_options(const std::vector<FormatOption>& options) {
    CsvOptions c;
    for (const FormatOption& o : options) {
        if (o.name == "delimiter") {
            c.delimiter = byte_option(o);
        } else if (o.name == "quote") {
            c.quote = byte_option(o);
        } else if (o.name == "null") {
            c.null_marker = string_option(o);
        } else if (o.name == "header") {
            const bool text = o.type == FormatOption::Type::String;
            if ((o.type != FormatOption::Type::Boolean && !text) || !o.value ||
                (*o.value != "true" && *o.value != "false"))
                bad("format option \"header\" must be true or false",
                    "For example: '{\"header\": true}'.");
            c.header = *o.value == "true";
        } else {
            bad("unknown format option \"" + o.name + "\" for format csv",
                std::string("The options of format 'csv' are ") + kCsvOptions + ".");
        }
    }
    if (c.delimiter == c.quote)
        bad("format options \"delimiter\" and \"quote\" must differ",
            "The default delimiter is ',' and the default quote '\"'.");
    if (c.null_marker && (c.null_marker->find(c.delimiter) != std::string::npos ||
                          c.null_marker->find(c.quote) != std::string::npos ||
                          c.null_marker->find_first_of("\r\n") != std::string::npos))
        bad("format option \"null\" cannot hold the delimiter, the quote or a line break",
            "An unquoted field equal to it is NULL: choose a marker such as \\N.");
    return c;
}

constexpr const char* kAvroOptions =
    "schema, or schema_registry_url with schema_registry_user, schema_registry_password and "
    "reader_schema";

// An option's value is never quoted back: schema_registry_password is a secret (README
// "Formats"), and a schema's text is long.
AvroOptions avro_options(const std::vector<FormatOption>& options) {
    AvroOptions a;
    bool user = false, password = false;
    for (const FormatOption& o : options) {
        // The schema as a JSON object (or its text as a string); the registry's options strings.
        const bool is_schema = o.name == "schema" || o.name == "reader_schema";
        const bool schema_json = is_schema && o.type == FormatOption::Type::Other;
        if ((o.type != FormatOption::Type::String && !schema_json) || !o.value) {
            if (is_schema)
                bad("format option \"" + o.name + "\" must be an Avro schema",
                    "For example: '{\"" + o.name +
                        "\": {\"type\": \"record\", \"name\": \"E\", "
                        "\"fields\": [...]}}'.");
            bad("format option \"" + o.name + "\" must be a string",
                "For example: '{\"schema_registry_url\": \"http://registry:8081\"}'.");
        }
        if (o.name == "schema") {
            a.schema = *o.value;
        } else if (o.name == "reader_schema") {
            a.reader_schema = *o.value;
        } else if (o.name == "schema_registry_url") {
            a.registry_url = *o.value;
        } else if (o.name == "schema_registry_user") {
            a.registry_user = *o.value;
            user = true;
        } else if (o.name == "schema_registry_password") {
            a.registry_password = *o.value;
            password = true;
        } else {
            bad("unknown format option \"" + o.name + "\" for format avro",
                std::string("The options of format 'avro' are ") + kAvroOptions + ".");
        }
    }
    if (a.schema.empty() == a.registry_url.empty())
        bad("format 'avro' needs exactly one of the options \"schema\" and "
            "\"schema_registry_url\"",
            "Give the writer schema inline (records are then bare Avro bodies), or a schema "
            "registry's URL (records are then framed with a schema id).");
    if ((user || password) && a.registry_url.empty())
        bad("format options \"schema_registry_user\" and \"schema_registry_password\" need "
            "\"schema_registry_url\"",
            "They are the registry's basic auth credentials.");
    if (!a.reader_schema.empty() && a.registry_url.empty())
        bad("format option \"reader_schema\" needs \"schema_registry_url\"",
            "Without a registry, the inline \"schema\" is the one schema records are read by.");
    if (password && a.registry_user.empty())
        bad("format option \"schema_registry_password\" needs \"schema_registry_user\"",
            "Basic auth sends both; give the user name too.");
    // The inline schema is judged here, once for the declaration and the worker alike.
    if (!a.schema.empty()) (void)avro::Schema::parse(a.schema);
    if (!a.reader_schema.empty()) (void)avro::Schema::parse(a.reader_schema);
    return a;
}

class JsonRows final : public RowDecoder {
public:
    explicit JsonRows(const std::vector<std::vector<std::string>>& paths) : ex_(paths) {}
    DeadReason decode(const char* payload, std::size_t len, bool /*first*/, RawRows& rows,
                      std::size_t row, bool& skip) override {
        skip = false;
        return ex_.extract(payload, len, rows, row);
    }
    const std::string& detail() const override { return ex_.detail(); }

private:
    JsonRowExtractor ex_;
};

class CsvRows final : public RowDecoder {
public:
    CsvRows(const CsvOptions& o, const std::vector<std::string>& names) : dec_(o, names) {}
    DeadReason decode(const char* payload, std::size_t len, bool first, RawRows& rows,
                      std::size_t row, bool& skip) override {
        return dec_.decode(payload, len, first, rows, row, skip);
    }
    const std::string& detail() const override { return dec_.detail(); }

private:
    CsvRowDecoder dec_;
};

}  // namespace

const char* format_name(FormatKind kind) {
    switch (kind) {
    case FormatKind::Json: return "json";
    case FormatKind::Csv: return "csv";
    case FormatKind::Avro: return "avro";
    case FormatKind::Protobuf: return "protobuf";
    }
    return "?";
}

FormatKind parse_format_name(const std::string& format) {
    if (format == "json") return FormatKind::Json;
    if (format == "csv") return FormatKind::Csv;
    if (format == "avro") return FormatKind::Avro;
    if (format == "protobuf") return FormatKind::Protobuf;
    bad("unknown format \"" + format + "\"",
        "The supported formats are 'json' (one JSON object per message), 'csv' (one "
        "CSV record per message, with columns), 'avro' (an Avro record per message, its "
        "schema inline or from a schema registry) and 'protobuf' (a Protocol Buffers message "
        "per message, its descriptor inline or its schema from a schema registry).");
}

RecordFormat parse_record_format(const std::string& format,
                                 const std::vector<FormatOption>& options) {
    RecordFormat f;
    f.kind = parse_format_name(format);
    switch (f.kind) {
    case FormatKind::Json:
        if (!options.empty())
            bad("unknown format option \"" + options.front().name + "\" for format json",
                "Format 'json' takes no options: pass '{}'.");
        break;
    case FormatKind::Csv: f.csv = csv_options(options); break;
    case FormatKind::Avro: f.avro = avro_options(options); break;
    case FormatKind::Protobuf: f.proto = parse_proto_options(options); break;
    }
    return f;
}

std::unique_ptr<RowDecoder> make_row_decoder(const RecordFormat& format,
                                             const std::vector<std::string>& names,
                                             const std::vector<std::vector<std::string>>& paths,
                                             const std::vector<bool>& epoch_ms) {
    switch (format.kind) {
    case FormatKind::Json: return std::make_unique<JsonRows>(paths);
    case FormatKind::Csv: return std::make_unique<CsvRows>(format.csv, names);
    case FormatKind::Avro:
        return std::make_unique<AvroRows>(format.avro, format.schemas, paths, epoch_ms);
    case FormatKind::Protobuf: return make_proto_rows(format.proto, format.schemas, paths);
    }
    throw Error(sqlstate::kInternalError, "unhandled record format");
}

std::optional<std::string> schema_column_list(const RecordFormat& format) {
    if (format.kind == FormatKind::Protobuf) return proto_column_list(format.proto);
    return std::nullopt;
}

void check_schema_columns(const RecordFormat& format, const std::vector<std::string>& names,
                          const std::vector<std::vector<std::string>>& paths) {
    if (format.kind == FormatKind::Protobuf) check_proto_columns(format.proto, paths, names);
}

}  // namespace stoatflow::format
