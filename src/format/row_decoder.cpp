// The record formats' one check and the one choice of a decoder (row_decoder.hpp).
#include "stoatflow/format/row_decoder.hpp"

#include "stoatflow/core/error.hpp"
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
    case FormatKind::Protobuf: return "protobuf";
    }
    return "?";
}

namespace {
RecordFormat read_format(const std::string& format, const std::vector<FormatOption>& options,
                         bool with_options);
}  // namespace

FormatKind parse_format_name(const std::string& format) {
    return read_format(format, {}, false).kind;
}

RecordFormat parse_record_format(const std::string& format,
                                 const std::vector<FormatOption>& options) {
    return read_format(format, options, true);
}

namespace {
// with_options false: the name alone (parse_format_name).
RecordFormat read_format(const std::string& format, const std::vector<FormatOption>& options,
                         bool with_options) {
    RecordFormat f;
    if (format == "json") {
        if (!options.empty())
            bad("unknown format option \"" + options.front().name + "\" for format json",
                "Format 'json' takes no options: pass '{}'.");
        f.kind = FormatKind::Json;
    } else if (format == "csv") {
        f.kind = FormatKind::Csv;
        f.csv = csv_options(options);
    } else if (format == "protobuf") {
        f.kind = FormatKind::Protobuf;
        if (with_options) f.proto = parse_proto_options(options);
    } else {
        bad("unknown format \"" + format + "\"",
            "The supported formats are 'json' (one JSON object per message) and 'csv' (one "
            "CSV record per message, with columns).");
    }
    return f;
}
}  // namespace

std::unique_ptr<RowDecoder> make_row_decoder(const RecordFormat& format,
                                             const std::vector<std::string>& names,
                                             const std::vector<std::vector<std::string>>& paths) {
    switch (format.kind) {
    case FormatKind::Json: return std::make_unique<JsonRows>(paths);
    case FormatKind::Csv: return std::make_unique<CsvRows>(format.csv, names);
    case FormatKind::Protobuf: return make_proto_rows(format.proto, paths);
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
