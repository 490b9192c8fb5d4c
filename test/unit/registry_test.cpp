// The schema registry client and cache (include/stoatflow/registry/) against a small HTTP server
// of the test's own on 127.0.0.1: each test says what it answers (status, body, a delay), and
// what the client sent is kept (path, Authorization header).
#include "stoatflow/registry/client.hpp"
#include "stoatflow/registry/schema_cache.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace stoatflow::registry;
using namespace std::chrono_literals;

struct Reply {
    Reply(int s = 200, std::string b = {},
          std::chrono::milliseconds d = std::chrono::milliseconds(0), std::string h = {})
        : status(s), body(std::move(b)), delay(d), extra_headers(std::move(h)) {}
    int status;
    std::string body;
    std::chrono::milliseconds delay;
    std::string extra_headers;
};

class FakeRegistry {
public:
    explicit FakeRegistry(std::function<Reply(const std::string& path)> handler)
        : handler_(std::move(handler)) {
        fd_ = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = 0;
        if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd_, 16) != 0)
            std::abort();
        socklen_t len = sizeof a;
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~FakeRegistry() {
        stop_ = true;
        shutdown(fd_, SHUT_RDWR);
        close(fd_);
        thread_.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::vector<std::string> requests() {
        std::lock_guard<std::mutex> l(mu_);
        return requests_;
    }

private:
    void serve() {
        while (!stop_) {
            const int c = accept(fd_, nullptr, nullptr);
            if (c < 0) return;
            for (;;) {  // keep-alive: several requests per connection
                std::string req;
                char buf[4096];
                while (req.find("\r\n\r\n") == std::string::npos) {
                    const ssize_t n = read(c, buf, sizeof buf);
                    if (n <= 0) break;
                    req.append(buf, static_cast<std::size_t>(n));
                }
                if (req.find("\r\n\r\n") == std::string::npos) break;
                const auto sp = req.find(' ');
                const std::string path = req.substr(sp + 1, req.find(' ', sp + 1) - sp - 1);
                {
                    std::lock_guard<std::mutex> l(mu_);
                    requests_.push_back(req.substr(0, req.find("\r\n\r\n")));
                }
                const Reply r = handler_(path);
                std::this_thread::sleep_for(r.delay);
                const std::string out = "HTTP/1.1 " + std::to_string(r.status) +
                                        " X\r\nContent-Type: application/json\r\nContent-Length: " +
                                        std::to_string(r.body.size()) + "\r\n" + r.extra_headers +
                                        "\r\n" + r.body;
                if (send(c, out.data(), out.size(), MSG_NOSIGNAL) < 0) break;
            }
            close(c);
        }
    }

    std::function<Reply(const std::string&)> handler_;
    int fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    std::vector<std::string> requests_;
    std::thread thread_;
};

Endpoint at(const std::string& url, long timeout_ms = 2000) {
    Endpoint e;
    e.url = url;
    e.timeout_ms = timeout_ms;
    return e;
}

TEST(RegistryUrl, OnlyHttpAndHttpsWithAHostAndNoCredentials) {
    EXPECT_NO_THROW(check_url("http://127.0.0.1:8081"));
    EXPECT_NO_THROW(check_url("https://registry.internal/apis/ccompat/v7/"));
    EXPECT_NO_THROW(check_url("HTTP://x"));
    for (const char* bad : {"file:///etc/passwd", "gopher://x", "ftp://x/y", "http://",
                            "https:///path", "http://user:pw@x", "http://x/?a=1", "http://x/#f",
                            "http://x /y", "x:8081", "dict://127.0.0.1:11211/"}) {
        EXPECT_THROW(check_url(bad), BadRegistryUrl) << bad;
    }
    EXPECT_THROW(Client(at("file:///etc/passwd")), BadRegistryUrl);
}

TEST(RegistryClient, FetchesASchemaByIdWithBasicAuth) {
    FakeRegistry reg([](const std::string& path) {
        if (path == "/apis/ccompat/v7/schemas/ids/7")
            return Reply{
                200,
                R"({"schema":"{\"type\":\"string\"}","references":[{"name":"a.proto","subject":"a","version":2}]})"};
        return Reply{404, R"({"error_code":40403,"message":"Schema not found"})"};
    });
    Endpoint e = at(reg.url() + "/apis/ccompat/v7/");
    e.user = "reader";
    e.password = "s3cret";
    Client c(e);
    Fetched f = c.schema_by_id(7);
    ASSERT_EQ(f.outcome, Outcome::Found) << f.detail;
    EXPECT_EQ(f.schema.id, 7u);
    EXPECT_EQ(f.schema.type, "AVRO");  // no schemaType: Avro, as Confluent's API says
    EXPECT_EQ(f.schema.text, R"({"type":"string"})");
    ASSERT_EQ(f.schema.references.size(), 1u);
    EXPECT_EQ(f.schema.references[0].subject, "a");
    EXPECT_EQ(f.schema.references[0].version, 2);
    const auto reqs = reg.requests();
    ASSERT_EQ(reqs.size(), 1u);
    EXPECT_NE(reqs[0].find("Authorization: Basic cmVhZGVyOnMzY3JldA=="), std::string::npos)
        << reqs[0];

    f = c.schema_by_id(8);  // the same connection, kept alive
    EXPECT_EQ(f.outcome, Outcome::NotFound);
    EXPECT_NE(f.detail.find("schema id 8"), std::string::npos) << f.detail;
    EXPECT_EQ(f.detail.find("s3cret"), std::string::npos);
}

TEST(RegistryClient, LatestVersionOfASubject) {
    FakeRegistry reg([](const std::string& path) {
        if (path == "/subjects/orders%2Fv-value/versions/latest")
            return Reply{
                200,
                R"({"subject":"orders/v-value","version":3,"id":42,"schemaType":"PROTOBUF","schema":"syntax = \"proto3\";"})"};
        return Reply{404, R"({"error_code":40401})"};
    });
    Client c(at(reg.url()));
    Fetched f = c.latest("orders/v-value");
    ASSERT_EQ(f.outcome, Outcome::Found) << f.detail;
    EXPECT_EQ(f.schema.id, 42u);
    EXPECT_EQ(f.schema.type, "PROTOBUF");
    EXPECT_EQ(c.latest("nope").outcome, Outcome::NotFound);
}

TEST(RegistryClient, WhatIsNotAnAnswerIsUnavailable) {
    std::atomic<int> mode{0};
    FakeRegistry reg([&](const std::string&) {
        switch (mode.load()) {
        case 0: return Reply{500, "boom"};
        case 1: return Reply{503, ""};
        case 2: return Reply{401, R"({"message":"unauthorized"})"};
        case 3: return Reply{302, "", {}, "Location: file:///etc/passwd\r\n"};
        case 4: return Reply{200, "<html>not json</html>"};
        case 5: return Reply{200, R"({"id":1})"};
        default: return Reply{200, R"({"schema":"x"})", std::chrono::milliseconds(1500)};
        }
    });
    Client c(at(reg.url(), 500));
    const std::vector<std::string> expect = {"HTTP 500", "HTTP 503", "schema_registry_user",
                                             "redirect", "not JSON", "without a \"schema\"",
                                             "timed out"};
    for (int m = 0; m < static_cast<int>(expect.size()); ++m) {
        mode = m;
        const Fetched f = c.schema_by_id(1);
        EXPECT_EQ(f.outcome, Outcome::Unavailable) << m;
        EXPECT_NE(f.detail.find(expect[static_cast<std::size_t>(m)]), std::string::npos)
            << m << ": " << f.detail;
        EXPECT_NE(f.detail.find(reg.url()), std::string::npos) << f.detail;  // names the registry
    }
}

TEST(RegistryClient, ARegistryThatIsNotThere) {
    int port = 0;
    {
        FakeRegistry gone([](const std::string&) { return Reply{}; });
        port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
    }
    Client c(at("http://127.0.0.1:" + std::to_string(port), 500));
    const Fetched f = c.schema_by_id(1);
    EXPECT_EQ(f.outcome, Outcome::Unavailable);
    EXPECT_FALSE(f.detail.empty());
}

TEST(SchemaCache, PendingThenReadyAndNotFoundWithoutBlocking) {
    std::atomic<int> calls{0};
    FakeRegistry reg([&](const std::string& path) {
        ++calls;
        if (path == "/schemas/ids/1") return Reply{200, R"({"schema":"one"})", 200ms};
        return Reply{404, "{}"};
    });
    SchemaCache cache(at(reg.url()));
    const auto t0 = std::chrono::steady_clock::now();
    SchemaCache::Answer a = cache.lookup(1);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms);  // the fetch takes 200 ms: not here
    EXPECT_EQ(a.state, SchemaCache::State::Pending);
    EXPECT_EQ(cache.lookup(2).state, SchemaCache::State::Pending);
    ASSERT_TRUE(cache.wait_idle(5s));
    a = cache.lookup(1);
    ASSERT_EQ(a.state, SchemaCache::State::Ready);
    EXPECT_EQ(a.schema->text, "one");
    EXPECT_EQ(cache.lookup(2).state, SchemaCache::State::NotFound);
    EXPECT_EQ(calls.load(), 2);  // each id fetched once
    EXPECT_EQ(cache.unavailable(), "");
}

TEST(SchemaCache, RetriesARegistryThatCannotAnswerAndSaysWhy) {
    std::atomic<int> calls{0};
    Fetched ok;
    ok.outcome = Outcome::Found;
    ok.schema.text = "s";
    SchemaCache cache([&](std::uint32_t) {
        if (calls++ < 2) {
            Fetched down;
            down.detail = "schema registry http://x: HTTP 503";
            return down;
        }
        return ok;
    });
    EXPECT_EQ(cache.lookup(5).state, SchemaCache::State::Pending);
    std::this_thread::sleep_for(300ms);
    EXPECT_NE(cache.unavailable().find("503"), std::string::npos);
    EXPECT_EQ(cache.lookup(5).state, SchemaCache::State::Pending);  // waits, is not a dead letter
    ASSERT_TRUE(cache.wait_idle(10s));                              // retried after 1 s, then 2 s
    EXPECT_EQ(cache.lookup(5).state, SchemaCache::State::Ready);
    EXPECT_EQ(cache.unavailable(), "");
    EXPECT_EQ(calls.load(), 3);
}

TEST(SchemaCache, ARequestInFlightDoesNotHoldTheDestructorUp) {
    // The registry answers after 4 s, the client would wait up to 10 s: destroying the cache
    // (a pipeline rebuilt, the worker stopping) cancels the request instead of waiting for it.
    FakeRegistry reg([](const std::string&) { return Reply{200, R"({"schema":"late"})", 4s}; });
    std::chrono::steady_clock::duration took{};
    {
        auto cache = std::make_unique<SchemaCache>(at(reg.url(), 10000));
        EXPECT_EQ(cache->lookup(1).state, SchemaCache::State::Pending);
        std::this_thread::sleep_for(300ms);  // the request is in flight
        const auto t0 = std::chrono::steady_clock::now();
        cache.reset();
        took = std::chrono::steady_clock::now() - t0;
    }
    EXPECT_LT(took, 2500ms);
}

TEST(RegistryClient, ACancelledClientAsksNothingMore) {
    std::atomic<int> calls{0};
    FakeRegistry reg([&](const std::string&) {
        ++calls;
        return Reply{200, R"({"schema":"s"})"};
    });
    Client c(at(reg.url()));
    EXPECT_EQ(c.schema_by_id(1).outcome, Outcome::Found);
    c.cancel();
    const Fetched f = c.schema_by_id(1);
    EXPECT_EQ(f.outcome, Outcome::Unavailable);
    EXPECT_NE(f.detail.find("cancelled"), std::string::npos) << f.detail;
    EXPECT_EQ(calls.load(), 1);
}

}  // namespace
