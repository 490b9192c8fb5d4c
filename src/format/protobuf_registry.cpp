// format 'protobuf' with a schema registry (README "Formats", Protobuf): Confluent-framed records
// (magic byte, schema id, message indexes) whose schemas, .proto text, come by id from a
// SchemaSource; each id's text is read once (proto_text_descriptor_set), and one reader is
// compiled per (id, message) the records name.
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/limits.hpp"
#include "stoatflow/format/protobuf.hpp"
#include "stoatflow/format/row_decoder.hpp"
#include "stoatflow/format/schema_source.hpp"

#include <map>
#include <unordered_map>
#include <utility>

namespace stoatflow::format {
namespace {

// The readers a source keeps (per schema id and message); past it they are compiled again.
constexpr std::size_t kMaxProtoReaders = 1024;

std::string index_text(const std::vector<std::int32_t>& indexes) {
    std::string s = "[";
    for (std::size_t i = 0; i < indexes.size(); ++i)
        s += (i ? ", " : "") + std::to_string(indexes[i]);
    return s + "]";
}

class ProtoRegistryRows final : public RowDecoder {
public:
    ProtoRegistryRows(const ProtoOptions& o, std::shared_ptr<SchemaSource> schemas,
                      const std::vector<std::vector<std::string>>& paths)
        : message_(o.message_name), schemas_(std::move(schemas)), paths_(paths) {}

    bool ready(const char* payload, std::size_t len, const char* /*key*/,
               std::size_t /*key_len*/) override {
        ConfluentProto f;
        std::string ignored;
        if (!split_confluent_proto(std::string_view(payload, len), f, ignored)) return true;
        return parsed(f.schema_id) != nullptr;
    }

    DeadReason decode(const char* payload, std::size_t len, bool /*first*/, RawRows& rows,
                      std::size_t row, bool& skip) override {
        skip = false;
        ConfluentProto f;
        if (!split_confluent_proto(std::string_view(payload, len), f, detail_))
            return DeadReason::BadProtobuf;
        const Parsed* p = parsed(f.schema_id);
        const std::string sid = "schema id " + std::to_string(f.schema_id);
        if (p == nullptr) {
            // The worker asks ready() first and holds a Pending record back.
            detail_ = sid + " is not fetched yet";
            return DeadReason::BadSchemaId;
        }
        if (!p->schema) {
            detail_ = p->detail;
            return p->reason;
        }
        const ProtoMessage* m =
            message_.empty() ? p->schema->message_at(f.indexes) : p->schema->message(message_);
        if (m == nullptr) {
            detail_ = message_.empty()
                          ? sid + " has no message at the indexes " + index_text(f.indexes)
                          : sid + " declares no message " + message_;
            return DeadReason::BadProtobuf;
        }
        Reader& r = reader(f.schema_id, *p, *m);
        if (!r.extractor) {
            detail_ = r.detail;
            return DeadReason::BadProtobuf;
        }
        const DeadReason e = r.extractor->extract(f.body.data(), f.body.size(), rows, row);
        if (e != DeadReason::None) detail_ = r.extractor->detail();
        return e;
    }
    const std::string& detail() const override { return detail_; }

private:
    struct Parsed {
        std::shared_ptr<const ProtoSchema> schema;  // nullptr: every record with this id is ...
        DeadReason reason = DeadReason::None;       // ... this dead letter
        std::string detail;
    };
    struct Reader {
        std::unique_ptr<ProtoRowExtractor> extractor;  // nullptr: the columns do not resolve
        std::string detail;
    };

    // The id's schema, read at its first Ready answer; nullptr while Pending.
    const Parsed* parsed(std::uint32_t id) {
        auto it = by_id_.find(id);
        if (it != by_id_.end()) return &it->second;
        Parsed p;
        const std::string sid = "schema id " + std::to_string(id);
        if (!schemas_) {
            p.reason = DeadReason::BadSchemaId;
            p.detail = sid + ": the source reads no schema registry";
        } else {
            SchemaSource::Answer a = schemas_->lookup(id);
            if (a.state == SchemaSource::State::Pending) return nullptr;
            if (a.state == SchemaSource::State::NotFound) {
                p.reason = DeadReason::BadSchemaId;
                p.detail = sid + ": " + a.detail;
            } else if (a.type != "PROTOBUF") {
                p.reason = DeadReason::BadProtobuf;
                p.detail = sid + " is a " + a.type + " schema, not Protobuf";
            } else {
                try {
                    p.schema = ProtoSchema::parse(proto_text_descriptor_set(
                        {{"schema-" + std::to_string(id) + ".proto", a.text ? *a.text : ""}}));
                } catch (const ProtoSchemaError& e) {
                    p.reason = DeadReason::BadProtobuf;
                    p.detail = sid + ": " + e.what();
                }
            }
        }
        if (by_id_.size() >= kMaxProtoReaders) {
            by_id_.clear();
            readers_.clear();
        }
        return &by_id_.emplace(id, std::move(p)).first->second;
    }

    Reader& reader(std::uint32_t id, const Parsed& p, const ProtoMessage& m) {
        const auto key = std::make_pair(id, &m);
        auto it = readers_.find(key);
        if (it != readers_.end()) return it->second;
        if (readers_.size() >= kMaxProtoReaders) readers_.clear();
        Reader r;
        try {
            r.extractor = std::make_unique<ProtoRowExtractor>(p.schema, m, paths_);
        } catch (const ProtoSchemaError& e) {
            r.detail =
                "schema id " + std::to_string(id) + " cannot be read into the columns: " + e.what();
        }
        return readers_.emplace(key, std::move(r)).first->second;
    }

    std::string message_;
    std::shared_ptr<SchemaSource> schemas_;
    std::vector<std::vector<std::string>> paths_;
    std::unordered_map<std::uint32_t, Parsed> by_id_;
    std::map<std::pair<std::uint32_t, const ProtoMessage*>, Reader> readers_;
    std::string detail_;
};

}  // namespace

std::unique_ptr<RowDecoder>
make_proto_registry_rows(const ProtoOptions& proto, std::shared_ptr<SchemaSource> schemas,
                         const std::vector<std::vector<std::string>>& paths) {
    return std::make_unique<ProtoRegistryRows>(proto, std::move(schemas), paths);
}

}  // namespace stoatflow::format
