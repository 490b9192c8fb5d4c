// A running source's writer schemas from its schema registry (registry_schemas.hpp).
#include "stoatflow/pg/worker/registry_schemas.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/registry/client.hpp"
#include "stoatflow/registry/schema_cache.hpp"

#include <string>
#include <utility>

namespace stoatflow::pg {
namespace {

class RegistrySchemas final : public format::SchemaSource {
public:
    explicit RegistrySchemas(registry::Endpoint endpoint) : cache_(std::move(endpoint)) {}

    Answer lookup(std::uint32_t id) override {
        registry::SchemaCache::Answer a = cache_.lookup(id);
        Answer out;
        switch (a.state) {
        case registry::SchemaCache::State::Pending: out.state = State::Pending; break;
        case registry::SchemaCache::State::NotFound:
            out.state = State::NotFound;
            out.detail = std::move(a.detail);
            break;
        case registry::SchemaCache::State::Ready:
            out.state = State::Ready;
            out.type = a.schema->type;
            out.text = std::shared_ptr<const std::string>(a.schema, &a.schema->text);
            break;
        }
        return out;
    }
    std::string unavailable() const override { return cache_.unavailable(); }

private:
    registry::SchemaCache cache_;
};

}  // namespace

std::shared_ptr<format::SchemaSource> registry_schemas(const format::RecordFormat& format,
                                                       bool internal_ok) {
    if (!format.uses_registry()) return nullptr;
    registry::Endpoint e;
    e.url = format.registry_url();
    e.user = format.registry_user();
    e.password = format.registry_password();
    e.internal_ok = internal_ok;
    check_registry_url_syntax(e.url);
    return std::make_shared<RegistrySchemas>(std::move(e));
}

void check_registry_url_syntax(const std::string& url) {
    try {
        registry::check_url(url);
    } catch (const registry::BadRegistryUrl& bad) {
        throw Error(sqlstate::kInvalidParameterValue,
                    std::string("format option \"schema_registry_url\": ") + bad.what(),
                    "Give the registry's http:// or https:// URL, e.g. http://registry:8081; "
                    "credentials go in schema_registry_user and schema_registry_password.");
    }
}

}  // namespace stoatflow::pg
