// Avro (src/format/README-avro.md): writer schemas parsed from their JSON form, the resolution of
// a writer schema against the source's columns compiled once into a small program, and a reader
// that runs it over Avro binary bodies into raw rows (raw_row.hpp), each value in the text the
// column conversion takes. Plus the Confluent wire framing (magic byte 0, schema id, body).
// Pure C++: no PostgreSQL, only core below.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/format/dead_reason.hpp"
#include "stoatflow/format/raw_row.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stoatflow::format::avro {

enum class Type : std::uint8_t {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Record,
    Enum,
    Array,
    Map,
    Union,
    Fixed,
};

// The logical types the reader renders; any other logicalType attribute is ignored (as Avro's
// rules ask), and so is a known one on a type it does not fit.
enum class Logical : std::uint8_t { None, Decimal, TimestampMillis, TimestampMicros, Date, Uuid };

struct Field {
    std::string name;
    std::vector<std::string> aliases;
    int type = -1;             // node index
    bool has_default = false;  // "default" present
    std::string default_json;  // its JSON text
};

struct Node {
    Type type = Type::Null;
    Logical logical = Logical::None;
    int precision = 0, scale = 0;      // decimal
    std::string name;                  // full name of a record, enum or fixed
    std::vector<Field> fields;         // record
    std::vector<std::string> symbols;  // enum
    std::string enum_default;          // enum: "" when none
    int items = -1;                    // array items, map values (node index)
    std::vector<int> branches;         // union (node indexes)
    std::size_t size = 0;              // fixed
};

// A parsed schema: nodes by index, references already resolved (a recursive record points back
// at its own index).
class Schema {
public:
    // Throws stoatflow::Error (22023) naming what is wrong: not JSON, an unknown type or
    // reference, a name defined twice, a union inside a union or with two branches of one
    // type, a fixed or enum without its attributes, nesting beyond limits.hpp.
    static Schema parse(std::string_view json);

    const Node& node(int i) const { return nodes_[static_cast<std::size_t>(i)]; }
    int root() const { return root_; }
    std::size_t size() const { return nodes_.size(); }

private:
    struct Builder;  // avro_schema.cpp
    std::vector<Node> nodes_;
    int root_ = 0;
};

// The reader's side of one column: its path of member names from the record root (the JSON
// source's PATH, core::parse_json_path; [name] without PATH).
using ColumnPaths = std::vector<std::vector<std::string>>;

// The resolution of one writer schema into the columns (optionally through the reader schema
// the columns were declared from, for defaults, aliases, enum symbols, string/bytes and
// compatibility), compiled once. Throws stoatflow::Error (42804) when the writer schema cannot
// be read into a column by Avro's resolution rules (a type that does not promote, a missing
// field without a default in a reader schema that is not nullable); the reader schema is only
// used while compiling. epoch_ms (per column; shorter: false): the column takes an integer
// number as epoch milliseconds (a timestamptz column, fast_convert.hpp); a timestamp-millis or
// -micros value that is a whole millisecond in core::in_event_time_range goes to it as that
// number, not as ISO-8601 text the column would parse back (the same instant either way).
class Program {
public:
    Program(const Schema& writer, const Schema* reader, const ColumnPaths& columns,
            const std::vector<bool>& epoch_ms = {});
    ~Program();
    Program(Program&&) noexcept;
    Program& operator=(Program&&) noexcept;
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;

    std::size_t columns() const;

    // Fills columns [first, first + columns()) of `row` from one Avro binary body. BadAvro (with
    // detail()) when the body does not decode: truncated, a varint longer than 10 bytes or
    // beyond its type, a negative or too large length or count, a union or enum index out of
    // range, bytes left over, nesting or item counts beyond limits.hpp; InvalidText when a
    // string is not UTF-8 or holds NUL. Any bytes are safe input; on an error the row's fields
    // are unspecified (drop_last() it).
    DeadReason read(const std::uint8_t* body, std::size_t len, RawRows& rows, std::size_t row,
                    std::size_t first = 0);
    const std::string& detail() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Programs by writer schema id: a schema id is compiled once per source.
class ProgramCache {
public:
    // nullptr when id is not cached yet.
    Program* find(std::int32_t id);
    Program& put(std::int32_t id, Program program);
    std::size_t size() const { return programs_.size(); }

private:
    std::unordered_map<std::int32_t, std::unique_ptr<Program>> programs_;
};

// The Confluent wire format: magic byte 0, a 4-byte big-endian schema id, the Avro body.
struct Framed {
    std::int32_t schema_id = 0;
    const std::uint8_t* body = nullptr;
    std::size_t body_len = 0;
};
// BadAvro with `detail` when the message is shorter than 5 bytes or its first byte is not 0.
DeadReason split_confluent(const std::uint8_t* msg, std::size_t len, Framed& out,
                           std::string& detail);

}  // namespace stoatflow::format::avro
