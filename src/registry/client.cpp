// The registry client over libcurl (client.hpp). One easy handle per client, reused across
// requests (keep-alive); http and https only, for the request and (were redirects followed)
// for redirects, which are not followed: a registry answers where it is configured.
#include "stoatflow/registry/client.hpp"

#include "stoatflow/registry/limits.hpp"

#include <curl/curl.h>
#include <simdjson.h>

#include <algorithm>
#include <mutex>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace stoatflow::registry {

namespace {

std::once_flag curl_init_once;

bool starts_with_ci(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (c != prefix[i]) return false;
    }
    return true;
}

std::string excerpt(std::string_view body) {
    std::string out;
    for (char c : body.substr(0, kExcerptBytes)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    if (body.size() > kExcerptBytes) out += "...";
    return out;
}

// Percent-encodes a subject for the URL path (topics may hold '.', '_', '-'; anything else too).
std::string path_segment(std::string_view s) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    return out;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
    auto* body = static_cast<std::string*>(user);
    const size_t bytes = size * n;
    if (body->size() + bytes > kMaxResponseBytes) return 0;  // libcurl stops: CURLE_WRITE_ERROR
    body->append(data, bytes);
    return bytes;
}

}  // namespace

void check_url(std::string_view url) {
    std::string_view rest;
    if (starts_with_ci(url, "http://")) {
        rest = url.substr(7);
    } else if (starts_with_ci(url, "https://")) {
        rest = url.substr(8);
    } else {
        throw BadRegistryUrl("a schema registry URL must start with http:// or https://");
    }
    const std::size_t end = rest.find('/');
    const std::string_view authority = rest.substr(0, end);
    if (authority.empty()) throw BadRegistryUrl("the schema registry URL has no host");
    if (authority.find('@') != std::string_view::npos)
        throw BadRegistryUrl(
            "the schema registry URL holds credentials: give them as schema_registry_user and "
            "schema_registry_password");
    if (url.find_first_of("?#") != std::string_view::npos)
        throw BadRegistryUrl("the schema registry URL has a query or fragment");
    for (char c : url)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
            throw BadRegistryUrl("the schema registry URL holds a space or control character");
}

namespace {

bool internal_v4(std::uint32_t a) {  // host order
    const unsigned b0 = a >> 24, b1 = (a >> 16) & 0xff;
    return b0 == 0 || b0 == 10 || b0 == 127 || (b0 == 169 && b1 == 254) ||
           (b0 == 172 && (b1 & 0xf0) == 16) || (b0 == 192 && b1 == 168) ||
           (b0 == 100 && (b1 & 0xc0) == 64) || a == 0xffffffffu;
}

bool internal_v6(const unsigned char* a) {
    static const unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::equal(kMapped, kMapped + 12, a))
        return internal_v4((std::uint32_t{a[12]} << 24) | (std::uint32_t{a[13]} << 16) |
                           (std::uint32_t{a[14]} << 8) | a[15]);
    bool zero_prefix = true;  // :: and ::1
    for (int i = 0; i < 15; ++i) zero_prefix = zero_prefix && a[i] == 0;
    if (zero_prefix && a[15] <= 1) return true;
    return (a[0] & 0xfe) == 0xfc || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80);
}

struct ConnectGuard {
    bool refused = false;
};

curl_socket_t open_socket(void* clientp, curlsocktype /*purpose*/, curl_sockaddr* address) {
    if (internal_address(&address->addr)) {
        static_cast<ConnectGuard*>(clientp)->refused = true;
        return CURL_SOCKET_BAD;
    }
    return ::socket(address->family, address->socktype, address->protocol);
}

}  // namespace

std::string url_host(std::string_view url) {
    const std::size_t scheme = url.find("://");
    std::string_view rest = scheme == std::string_view::npos ? url : url.substr(scheme + 3);
    rest = rest.substr(0, rest.find('/'));
    if (!rest.empty() && rest.front() == '[')
        return std::string(rest.substr(0, rest.find(']') + 1));
    return std::string(rest.substr(0, rest.find(':')));
}

bool internal_host(std::string_view host) {
    std::string h;
    for (char c : host) h += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    while (!h.empty() && h.back() == '.') h.pop_back();
    if (h == "localhost" || (h.size() > 10 && h.compare(h.size() - 10, 10, ".localhost") == 0))
        return true;
    if (h.size() > 2 && h.front() == '[' && h.back() == ']') {
        in6_addr a6{};
        const std::string inner = h.substr(1, h.size() - 2);
        return inet_pton(AF_INET6, inner.c_str(), &a6) == 1 && internal_v6(a6.s6_addr);
    }
    in_addr a4{};
    return inet_aton(h.c_str(), &a4) != 0 && internal_v4(ntohl(a4.s_addr));
}

bool internal_address(const void* sockaddr) {
    const auto* sa = static_cast<const struct sockaddr*>(sockaddr);
    if (sa->sa_family == AF_INET)
        return internal_v4(ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr));
    if (sa->sa_family == AF_INET6)
        return internal_v6(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr.s6_addr);
    return true;  // no other family is a registry's
}

// libcurl calls this about once a second and more often while bytes move: nonzero ends the
// transfer (CURLE_ABORTED_BY_CALLBACK).
namespace {
int on_progress(void* cancelled, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<const std::atomic<bool>*>(cancelled)->load(std::memory_order_relaxed) ? 1
                                                                                             : 0;
}
}  // namespace

struct Client::Curl {
    CURL* handle = nullptr;
    curl_slist* headers = nullptr;
    ~Curl() {
        if (headers) curl_slist_free_all(headers);
        if (handle) curl_easy_cleanup(handle);
    }
};

Client::Client(Endpoint endpoint)
    : endpoint_(std::move(endpoint)), curl_(std::make_unique<Curl>()) {
    check_url(endpoint_.url);
    while (!endpoint_.url.empty() && endpoint_.url.back() == '/') endpoint_.url.pop_back();
    std::call_once(curl_init_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    curl_->handle = curl_easy_init();
    if (curl_->handle == nullptr) throw std::bad_alloc();
    curl_->headers = curl_slist_append(
        nullptr, "Accept: application/vnd.schemaregistry.v1+json, application/json");
    if (curl_->headers == nullptr) throw std::bad_alloc();
}

Client::~Client() = default;

Fetched Client::schema_by_id(std::uint32_t id) {
    return get("/schemas/ids/" + std::to_string(id), true, id);
}

Fetched Client::latest(std::string_view subject) {
    return get("/subjects/" + path_segment(subject) + "/versions/latest", false, 0);
}

Fetched Client::get(const std::string& path, bool by_id, std::uint32_t id) {
    Fetched f;
    CURL* h = curl_->handle;
    std::string body;
    char error[CURL_ERROR_SIZE] = {0};
    const std::string url = endpoint_.url + path;
    const std::string where = "schema registry " + endpoint_.url;
    if (cancelled_.load(std::memory_order_relaxed)) {
        f.detail = where + ": the request was cancelled";
        return f;
    }
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // from any thread, no SIGALRM
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, endpoint_.timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, endpoint_.timeout_ms);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(kMaxResponseBytes));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, curl_->headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(h, CURLOPT_NETRC, static_cast<long>(CURL_NETRC_IGNORED));
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &cancelled_);
    if (!endpoint_.user.empty()) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
        curl_easy_setopt(h, CURLOPT_USERNAME, endpoint_.user.c_str());
        curl_easy_setopt(h, CURLOPT_PASSWORD, endpoint_.password.c_str());
    }
    ConnectGuard guard;
    if (!endpoint_.internal_ok) {
        curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, &guard);
    }
    const CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK && guard.refused) {
        f.detail = where + ": its host resolves to an internal address (loopback, private or "
                           "link-local), which this source may not reach (README \"Security\")";
        return f;
    }
    if (rc != CURLE_OK) {
        f.detail =
            where + ": " + (error[0] ? std::string(error) : std::string(curl_easy_strerror(rc)));
        if (rc == CURLE_WRITE_ERROR || rc == CURLE_FILESIZE_EXCEEDED)
            f.detail = where + ": the answer is larger than " +
                       std::to_string(kMaxResponseBytes >> 20) + " MB";
        return f;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status == 404) {
        f.outcome = Outcome::NotFound;
        f.detail = where +
                   (by_id ? " does not know schema id " + std::to_string(id)
                          : " has no subject at " + path) +
                   " (404)";
        return f;
    }
    if (status != 200) {
        f.detail = where + " answered HTTP " + std::to_string(status) +
                   (status == 401 || status == 403
                        ? " (check schema_registry_user and schema_registry_password)"
                    : status >= 300 && status < 400 ? " (a redirect: give the URL it redirects to)"
                                                    : "") +
                   (body.empty() ? "" : ": " + excerpt(body));
        return f;
    }
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(body).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
        f.detail = where + " answered with something that is not JSON: " + excerpt(body);
        return f;
    }
    std::string_view text;
    if (doc["schema"].get(text) != simdjson::SUCCESS) {
        f.detail = where + " answered without a \"schema\": " + excerpt(body);
        return f;
    }
    f.schema.text = std::string(text);
    std::string_view type;
    if (doc["schemaType"].get(type) == simdjson::SUCCESS) f.schema.type = std::string(type);
    std::uint64_t got_id = id;
    if (!by_id && doc["id"].get(got_id) != simdjson::SUCCESS) {
        f.detail = where + " answered without an \"id\": " + excerpt(body);
        return f;
    }
    if (got_id > 0xffffffffu) {
        f.detail = where + " answered with schema id " + std::to_string(got_id);
        return f;
    }
    f.schema.id = static_cast<std::uint32_t>(got_id);
    simdjson::dom::array refs;
    if (doc["references"].get(refs) == simdjson::SUCCESS) {
        for (simdjson::dom::element r : refs) {
            SchemaReference ref;
            std::string_view s;
            if (r["name"].get(s) == simdjson::SUCCESS) ref.name = std::string(s);
            if (r["subject"].get(s) == simdjson::SUCCESS) ref.subject = std::string(s);
            std::int64_t v = 0;
            if (r["version"].get(v) == simdjson::SUCCESS) ref.version = v;
            f.schema.references.push_back(std::move(ref));
        }
    }
    f.outcome = Outcome::Found;
    return f;
}

}  // namespace stoatflow::registry
