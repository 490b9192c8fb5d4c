// format 'avro' behind the one seam (row_decoder.hpp): an inline writer schema compiled once,
// or Confluent-framed records whose writer schemas come by id from a SchemaSource, compiled once
// per id (src/format/README-avro.md). Pure C++.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/format/avro.hpp"
#include "stoatflow/format/row_decoder.hpp"
#include "stoatflow/format/schema_source.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace stoatflow::format {

class AvroRows final : public RowDecoder {
public:
    // Throws stoatflow::Error: 22023 for an inline schema that is none, 42804 when it cannot be
    // read into the columns.
    // epoch_ms: avro::Program's (the columns that take epoch milliseconds).
    AvroRows(const AvroOptions& options, std::shared_ptr<SchemaSource> schemas,
             const avro::ColumnPaths& columns, const std::vector<bool>& epoch_ms = {});
    ~AvroRows() override;

    // bad_avro: no frame (a registry source), a body that does not decode, a writer schema that
    // is not Avro or cannot be read into the columns; bad_schema_id: an id the registry does not
    // know (its answer in the detail).
    DeadReason decode(const char* payload, std::size_t len, bool first, RawRows& rows,
                      std::size_t row, bool& skip) override;
    const std::string& detail() const override { return detail_; }
    // A framed record whose schema id is still Pending at the SchemaSource. A record that is no
    // frame is ready (it is bad_avro).
    bool ready(const char* payload, std::size_t len, const char* key, std::size_t key_len) override;
    // A registry-framed key (magic byte 0, a schema id the registry knows, a body that decodes):
    // its value as text (a primitive's text, a record's JSON text). Any other key is taken as it
    // is, as before: a key of another serializer may begin with a 0 byte too.
    bool key_text(const char* key, std::size_t len, std::string& out, bool& null) override;

private:
    struct Compiled {
        std::unique_ptr<avro::Program> program;  // nullptr: every record with this id is ...
        DeadReason reason = DeadReason::None;    // ... this dead letter
        std::string detail;
    };
    // The id's program, compiled at its first Ready answer; nullptr while Pending.
    const Compiled* compiled(std::uint32_t id);
    // The same for a key schema: one column, the whole value.
    const Compiled* compiled_key(std::uint32_t id);
    const Compiled* compile(std::uint32_t id, const avro::ColumnPaths& columns,
                            const avro::Schema* reader,
                            std::unordered_map<std::uint32_t, Compiled>& into,
                            const std::vector<bool>& epoch_ms);
    // A framed key's schema id (false: the key is no frame).
    static bool key_id(const char* key, std::size_t len, std::uint32_t& id);

    avro::ColumnPaths columns_;
    std::vector<bool> epoch_ms_;
    std::shared_ptr<SchemaSource> schemas_;
    std::unique_ptr<avro::Program> inline_;  // an inline schema
    std::unique_ptr<avro::Schema> reader_;   // reader_schema (registry), nullptr: none
    std::unordered_map<std::uint32_t, Compiled> by_id_, key_by_id_;
    RawRows key_rows_{1};
    std::string detail_;
};

// The columns of a source declared without `columns` (README "Formats", Avro): one per
// top-level field of `schema` (a record), named as the field (quoted: Avro's names keep their
// case), typed by the Avro type mapping: int integer, long bigint, float real, double double
// precision, string text, boolean boolean, bytes and fixed bytea, decimal numeric,
// timestamp-millis/-micros timestamptz, date date, uuid uuid, enum text, array and map jsonb;
// a union with null as its nullable branch. Returns the column list text (core::parse_column_list
// reads it). Throws stoatflow::Error 0A000 for a field it cannot map (a nested record, a union of
// several types: the hint says to declare columns, with PATH for nested fields) and 22023 when
// the schema is no record.
std::string avro_column_list(const avro::Schema& schema);

}  // namespace stoatflow::format
