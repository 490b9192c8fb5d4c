// A Confluent-compatible schema registry, read over HTTP(S) with libcurl: a schema by its id
// (GET /schemas/ids/{id}) and the latest version of a subject (GET
// /subjects/{subject}/versions/latest), with basic auth, bounded in time and size. The answers
// are sorted the way a source needs them (README "Formats"): a schema, "the registry does not
// know it" (404: the record is a dead letter, bad_schema_id), or "the registry cannot answer
// now" (down, slow, 5xx, refused credentials: a source error, retried). Pure C++: no PostgreSQL.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <atomic>
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

// Who may point a source where (README "Security"): the host of a URL check_url accepts (an
// IPv6 literal with its brackets), and whether a host names the database server itself or an
// internal network without being resolved — localhost and *.localhost, and literal addresses
// (IPv4 in any form the resolver reads, such as 127.1 or 0x7f000001) that are loopback,
// unspecified, private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local (169.254/16,
// fe80::/10: cloud metadata services), shared (100.64/10) or broadcast, IPv4-mapped included.
std::string url_host(std::string_view url);
bool internal_host(std::string_view host);
// The same rule for an address a name resolved to (a sockaddr_in or sockaddr_in6).
bool internal_address(const void* sockaddr);

struct Endpoint {
    std::string url;  // "http://127.0.0.1:8081" or with a path prefix ("…/apis/ccompat/v7")
    std::string user, password;  // basic auth when user is not empty; the password is never shown
    long timeout_ms = 10000;     // per request, connecting included
    // false: the client connects to no internal address (internal_address), whatever the host
    // name resolves to; such a request is Unavailable, saying so.
    bool internal_ok = true;
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

    // From any thread: a request in flight ends within about a second (libcurl's progress
    // callback sees it), and every later one at once, as Unavailable.
    void cancel() { cancelled_.store(true, std::memory_order_relaxed); }

private:
    Fetched get(const std::string& path, bool by_id, std::uint32_t id);

    Endpoint endpoint_;
    std::atomic<bool> cancelled_{false};
    struct Curl;
    std::unique_ptr<Curl> curl_;
};

}  // namespace stoatflow::registry
