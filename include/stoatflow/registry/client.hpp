// A Confluent-compatible schema registry, read over HTTP(S) with libcurl: a schema by its id
// (GET /schemas/ids/{id}) and the latest version of a subject (GET
// /subjects/{subject}/versions/latest), with basic auth, bounded in time and size. The answers
// are sorted the way a source needs them (README "Formats"): a schema, "the registry does not
// know it" (404: the record is a dead letter, bad_schema_id), or "the registry cannot answer
// now" (down, slow, 5xx, refused credentials: a source error, retried). Pure C++: no PostgreSQL.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace stoatflow::registry {

// A registry URL stoatflow will not use: only http:// and https:// with a host, no credentials
// in the URL (they go in schema_registry_user / schema_registry_password), no query or fragment.
class BadRegistryUrl : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// Throws BadRegistryUrl naming what is wrong.
void check_url(std::string_view url);

struct Endpoint {
    std::string url;  // "http://127.0.0.1:8081" or with a path prefix ("…/apis/ccompat/v7")
    std::string user, password;  // basic auth when user is not empty; the password is never shown
    long timeout_ms = 10000;     // per request, connecting included
};

struct SchemaReference {
    std::string name, subject;
    std::int64_t version = 0;
};

struct Schema {
    std::uint32_t id = 0;
    std::string type =
        "AVRO";        // schemaType: AVRO (the default when the registry omits it), PROTOBUF, JSON
    std::string text;  // the schema as the registry holds it
    std::vector<SchemaReference> references;
};

enum class Outcome {
    Found,
    NotFound,     // 404: the registry does not know the id or subject
    Unavailable,  // no answer in time, a connection that failed, 5xx, 401/403, a redirect, a
                  // body that is not a registry answer: try again later
};

struct Fetched {
    Outcome outcome = Outcome::Unavailable;
    Schema schema;
    std::string detail;  // what went wrong, naming the registry (its URL) and never the password
};

// One connection's worth of state (a libcurl easy handle): not shared between threads.
class Client {
public:
    explicit Client(Endpoint endpoint);  // throws BadRegistryUrl
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    Fetched schema_by_id(std::uint32_t id);
    Fetched latest(std::string_view subject);

    const Endpoint& endpoint() const { return endpoint_; }

private:
    Fetched get(const std::string& path, bool by_id, std::uint32_t id);

    Endpoint endpoint_;
    struct Curl;
    std::unique_ptr<Curl> curl_;
};

}  // namespace stoatflow::registry
