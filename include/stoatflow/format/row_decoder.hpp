// A source's record format (create_source's `format` and `format_options`, README "Formats") and
// the one seam between the formats and the record path: a RowDecoder reads one message into a
// raw row of the source's declared columns (raw_row.hpp), whatever the format. make_row_decoder
// is the only place that picks a decoder by format (src/README.md, "The record formats").
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/format/csv_decoder.hpp"
#include "stoatflow/format/dead_reason.hpp"
#include "stoatflow/format/protobuf.hpp"
#include "stoatflow/format/raw_row.hpp"
#include "stoatflow/format/schema_source.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stoatflow::format {

enum class FormatKind { Json, Csv, Avro, Protobuf };

// format 'avro' (README "Formats", Avro): exactly one of an inline writer schema (records are
// the bare Avro body) and a schema registry (records are Confluent-framed: magic byte 0, a
// 4-byte big-endian schema id, the body).
struct AvroOptions {
    std::string schema;                            // "schema": the writer schema, JSON text
    std::string registry_url;                      // "schema_registry_url"
    std::string registry_user, registry_password;  // basic auth; the password is a secret
    // "reader_schema" (with a registry): the schema the columns were declared from; writer
    // schemas resolve against it (defaults of fields a writer lacks). create_source stores the
    // subject's latest version here when it derives the columns.
    std::string reader_schema;
    bool registry() const { return !registry_url.empty(); }
};

struct RecordFormat {
    FormatKind kind = FormatKind::Json;
    CsvOptions csv;      // kind Csv
    AvroOptions avro;    // kind Avro
    ProtoOptions proto;  // kind Protobuf
    // Writer schemas by id for a format read through a registry, set by the layer that runs the
    // source (parse_record_format leaves it empty; a decoder without it cannot read framed
    // records: they are bad_schema_id).
    std::shared_ptr<SchemaSource> schemas;
    bool uses_registry() const {
        return (kind == FormatKind::Avro && avro.registry()) ||
               (kind == FormatKind::Protobuf && proto.registry());
    }
    // The registry's URL and basic auth (uses_registry()).
    const std::string& registry_url() const {
        return kind == FormatKind::Protobuf ? proto.registry_url : avro.registry_url;
    }
    const std::string& registry_user() const {
        return kind == FormatKind::Protobuf ? proto.registry_user : avro.registry_user;
    }
    const std::string& registry_password() const {
        return kind == FormatKind::Protobuf ? proto.registry_password : avro.registry_password;
    }
};

// One entry of format_options: its value as text (nullopt: JSON null) and whether it was a JSON
// string or boolean (anything else is refused).
struct FormatOption {
    std::string name;
    std::optional<std::string> value;
    enum class Type { String, Boolean, Other } type = Type::String;
};

// The one check of `format` and `format_options` (declaration and worker alike). Throws
// stoatflow::Error 22023 for an unknown format, an unknown option (naming the key and the valid
// ones) or a bad value.
RecordFormat parse_record_format(const std::string& format,
                                 const std::vector<FormatOption>& options);
// The format's name alone (create_source checks it before its options): 22023 for an unknown one.
FormatKind parse_format_name(const std::string& format);
// 'json', 'csv' ...: the format's name as create_source takes it.
const char* format_name(FormatKind kind);
// A source without `columns` of a format that carries its own schema (protobuf) gets the
// schema's columns: this column list (core/column_list.hpp); nullopt for the formats that keep
// 0.1's field paths (json) or need columns (csv).
std::optional<std::string> schema_column_list(const RecordFormat& format);
// The declared columns' paths checked against the format's schema, if it has one (stoatflow::Error
// naming the column: 42703 for a field the schema does not have).
void check_schema_columns(const RecordFormat& format, const std::vector<std::string>& names,
                          const std::vector<std::vector<std::string>>& paths);

class RowDecoder {
public:
    virtual ~RowDecoder() = default;
    // Fills columns [0, columns) of `row` from one message (the metadata columns after them are
    // the record path's). `first`: the message is its partition's first (offset 0). A record
    // that cannot be read returns its dead-letter reason, with detail(); `skip` is set for a
    // record that is no data (a CSV header), which is then consumed and nothing else.
    virtual DeadReason decode(const char* payload, std::size_t len, bool first, RawRows& rows,
                              std::size_t row, bool& skip) = 0;
    virtual const std::string& detail() const = 0;
    // False while the message cannot be decoded yet: the writer schema its payload's (or its
    // key's) id names is still being fetched (SchemaSource::State::Pending). The worker then
    // holds the record back, and every record after it, and asks again; it is no dead letter.
    // Formats without schema ids: true.
    virtual bool ready(const char* /*payload*/, std::size_t /*len*/, const char* /*key*/,
                       std::size_t /*key_len*/) {
        return true;
    }
    // A message key the format reads itself (a registry-framed Avro key): true with its text in
    // `out` (`null`: the key's value is null, kafka_key NULL); false: the key is taken as it is.
    virtual bool key_text(const char* /*key*/, std::size_t /*len*/, std::string& /*out*/,
                          bool& /*null*/) {
        return false;
    }
};

// names and paths: the declared columns (paths: the JSON member paths; a CSV source's are
// unused: its columns are positional). epoch_ms (per declared column; shorter: false): the
// column takes an integer number as epoch milliseconds (timestamptz), so a format whose values
// are instants (Avro's timestamp-millis/-micros) may hand it that number instead of text.
std::unique_ptr<RowDecoder> make_row_decoder(const RecordFormat& format,
                                             const std::vector<std::string>& names,
                                             const std::vector<std::vector<std::string>>& paths,
                                             const std::vector<bool>& epoch_ms = {});

}  // namespace stoatflow::format
