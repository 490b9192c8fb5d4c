// format 'avro' behind the one seam (avro_rows.hpp).
#include "stoatflow/format/avro_rows.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/format/limits.hpp"

#include <utility>

namespace stoatflow::format {

AvroRows::AvroRows(const AvroOptions& options, std::shared_ptr<SchemaSource> schemas,
                   const avro::ColumnPaths& columns, const std::vector<bool>& epoch_ms)
    : columns_(columns), epoch_ms_(epoch_ms), schemas_(std::move(schemas)) {
    if (!options.registry()) {
        const avro::Schema writer = avro::Schema::parse(options.schema);
        inline_ = std::make_unique<avro::Program>(writer, nullptr, columns_, epoch_ms_);
    } else if (!options.reader_schema.empty()) {
        reader_ = std::make_unique<avro::Schema>(avro::Schema::parse(options.reader_schema));
    }
}

AvroRows::~AvroRows() = default;

const AvroRows::Compiled* AvroRows::compiled(std::uint32_t id) {
    return compile(id, columns_, reader_.get(), by_id_, epoch_ms_);
}

const AvroRows::Compiled* AvroRows::compiled_key(std::uint32_t id) {
    static const avro::ColumnPaths kWhole = {{}};  // the value itself
    return compile(id, kWhole, nullptr, key_by_id_, {});
}

const AvroRows::Compiled* AvroRows::compile(std::uint32_t id, const avro::ColumnPaths& columns,
                                            const avro::Schema* reader,
                                            std::unordered_map<std::uint32_t, Compiled>& into,
                                            const std::vector<bool>& epoch_ms) {
    auto it = into.find(id);
    if (it != into.end()) return &it->second;
    Compiled c;
    const std::string sid = std::to_string(id);
    if (!schemas_) {
        c.reason = DeadReason::BadSchemaId;
        c.detail = "schema id " + sid + ": the source reads no schema registry";
    } else {
        SchemaSource::Answer a = schemas_->lookup(id);
        if (a.state == SchemaSource::State::Pending) return nullptr;
        if (a.state == SchemaSource::State::NotFound) {
            c.reason = DeadReason::BadSchemaId;
            c.detail = "schema id " + sid + ": " + a.detail;
        } else if (a.type != "AVRO") {
            c.reason = DeadReason::BadAvro;
            c.detail = "schema id " + sid + " is a " + a.type + " schema, not Avro";
        } else {
            try {
                const avro::Schema writer = avro::Schema::parse(a.text ? *a.text : "");
                c.program = std::make_unique<avro::Program>(writer, reader, columns, epoch_ms);
            } catch (const Error& e) {
                c.reason = DeadReason::BadAvro;
                c.detail = "schema id " + sid + " cannot be read into the columns: " + e.what();
            }
        }
    }
    if (into.size() >= kAvroMaxPrograms) into.clear();
    return &into.emplace(id, std::move(c)).first->second;
}

bool AvroRows::key_id(const char* key, std::size_t len, std::uint32_t& id) {
    if (key == nullptr) return false;
    avro::Framed f;
    std::string ignored;
    if (avro::split_confluent(reinterpret_cast<const std::uint8_t*>(key), len, f, ignored) !=
        DeadReason::None)
        return false;
    id = static_cast<std::uint32_t>(f.schema_id);
    return true;
}

bool AvroRows::key_text(const char* key, std::size_t len, std::string& out, bool& null) {
    std::uint32_t id = 0;
    if (inline_ || !key_id(key, len, id)) return false;
    const Compiled* c = compiled_key(id);
    if (c == nullptr || !c->program) return false;
    key_rows_.clear();
    const std::size_t r = key_rows_.add_row();
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(key);
    if (c->program->read(bytes + 5, len - 5, key_rows_, r) != DeadReason::None) return false;
    const RawValue v = key_rows_.get(r, 0);
    null = v.kind == RawKind::Null || v.kind == RawKind::Absent;
    out.assign(v.text.data(), v.text.size());
    return true;
}

bool AvroRows::ready(const char* payload, std::size_t len, const char* key, std::size_t key_len) {
    if (inline_) return true;
    std::uint32_t id = 0;
    if (key_id(key, key_len, id) && compiled_key(id) == nullptr) return false;
    return !key_id(payload, len, id) || compiled(id) != nullptr;
}

DeadReason AvroRows::decode(const char* payload, std::size_t len, bool /*first*/, RawRows& rows,
                            std::size_t row, bool& skip) {
    skip = false;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(payload);
    avro::Program* program = inline_.get();
    if (program == nullptr) {
        avro::Framed f;
        if (const DeadReason e = avro::split_confluent(bytes, len, f, detail_);
            e != DeadReason::None)
            return e;
        const Compiled* c = compiled(static_cast<std::uint32_t>(f.schema_id));
        if (c == nullptr) {
            // The worker asks ready() first and holds a Pending record back; only a caller that
            // did not gets here.
            detail_ = "schema id " + std::to_string(f.schema_id) + " is not fetched yet";
            return DeadReason::BadSchemaId;
        }
        if (!c->program) {
            detail_ = c->detail;
            return c->reason;
        }
        program = c->program.get();
        bytes = f.body;
        len = f.body_len;
    }
    const DeadReason e = program->read(bytes, len, rows, row);
    if (e != DeadReason::None) detail_ = program->detail();
    return e;
}

namespace {

// The column type of one field's Avro type ("" for a nested record, a union of several types).
std::string column_type(const avro::Schema& schema, int index, bool in_union = false) {
    const avro::Node& n = schema.node(index);
    using avro::Logical;
    using avro::Type;
    switch (n.logical) {
    case Logical::Decimal: return "numeric";
    case Logical::TimestampMillis:
    case Logical::TimestampMicros: return "timestamptz";
    case Logical::Date: return "date";
    case Logical::Uuid: return "uuid";
    case Logical::None: break;
    }
    switch (n.type) {
    case Type::Null: return "text";
    case Type::Boolean: return "boolean";
    case Type::Int: return "integer";
    case Type::Long: return "bigint";
    case Type::Float: return "real";
    case Type::Double: return "double precision";
    case Type::Bytes:
    case Type::Fixed: return "bytea";
    case Type::String:
    case Type::Enum: return "text";
    case Type::Array:
    case Type::Map: return "jsonb";
    case Type::Record: return "";
    case Type::Union: {
        if (in_union) return "";
        int other = -1, others = 0;
        for (int b : n.branches)
            if (schema.node(b).type != Type::Null) {
                other = b;
                ++others;
            }
        if (others != 1) return "";
        return column_type(schema, other, true);
    }
    }
    return "";
}

}  // namespace

std::string avro_column_list(const avro::Schema& schema) {
    const avro::Node& root = schema.node(schema.root());
    if (root.type != avro::Type::Record)
        throw Error(sqlstate::kInvalidParameterValue,
                    "the Avro schema is no record: its fields are the source's columns",
                    "Declare the columns, or give a record schema.");
    std::string out;
    for (const avro::Field& f : root.fields) {
        const std::string type = column_type(schema, f.type);
        if (type.empty())
            throw Error(sqlstate::kFeatureNotSupported,
                        "Avro field \"" + f.name +
                            "\" is a nested record or a union of several types: it maps to no "
                            "one column",
                        "Declare the columns, reading nested fields with PATH, e.g. columns => '" +
                            f.name + "_id text PATH ''$." + f.name + ".id'''.");
        if (!out.empty()) out += ", ";
        out += "\"" + f.name + "\" " + type;
    }
    if (out.empty())
        throw Error(sqlstate::kInvalidParameterValue, "the Avro record has no fields",
                    "Declare the columns, or give a schema with fields.");
    return out;
}

}  // namespace stoatflow::format
