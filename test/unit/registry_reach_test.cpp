// Who may point a source where (README "Security"): the hosts and addresses the schema registry
// client counts as the server itself or an internal network, and a client that may not reach
// them refusing to connect whatever a name resolves to.
#include "stoatflow/registry/client.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

using namespace stoatflow::registry;

TEST(RegistryReach, UrlHost) {
    EXPECT_EQ(url_host("http://registry:8081/apis/ccompat/v7"), "registry");
    EXPECT_EQ(url_host("https://10.0.0.1"), "10.0.0.1");
    EXPECT_EQ(url_host("http://[::1]:8081/x"), "[::1]");
}

TEST(RegistryReach, InternalHosts) {
    for (const char* h : {"localhost",
                          "LOCALHOST.",
                          "api.localhost",
                          "127.0.0.1",
                          "127.1",
                          "0x7f000001",
                          "2130706433",
                          "0.0.0.0",
                          "10.1.2.3",
                          "172.16.0.1",
                          "172.31.255.255",
                          "192.168.1.1",
                          "169.254.169.254",
                          "100.64.0.1",
                          "255.255.255.255",
                          "[::1]",
                          "[::]",
                          "[fe80::1]",
                          "[fd00::5]",
                          "[::ffff:127.0.0.1]",
                          "[::ffff:10.0.0.1]"})
        EXPECT_TRUE(internal_host(h)) << h;
    for (const char* h : {"registry.example.com", "8.8.8.8", "172.32.0.1", "192.169.0.1",
                          "100.128.0.1", "[2001:db8::1]", "[::ffff:8.8.8.8]", "localhost.com"})
        EXPECT_FALSE(internal_host(h)) << h;
}

TEST(RegistryReach, InternalAddresses) {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &v4.sin_addr);
    EXPECT_TRUE(internal_address(&v4));
    inet_pton(AF_INET, "93.184.216.34", &v4.sin_addr);
    EXPECT_FALSE(internal_address(&v4));
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "fe80::1", &v6.sin6_addr);
    EXPECT_TRUE(internal_address(&v6));
    inet_pton(AF_INET6, "2606:4700::1", &v6.sin6_addr);
    EXPECT_FALSE(internal_address(&v6));
}

TEST(RegistryReach, ANameResolvingToLoopbackIsRefusedAtConnect) {
    Endpoint e;
    e.url = "http://localhost:9";  // resolves to 127.0.0.1 / ::1; nothing needs to listen
    e.timeout_ms = 2000;
    e.internal_ok = false;
    Client c(e);
    const Fetched f = c.schema_by_id(1);
    EXPECT_EQ(f.outcome, Outcome::Unavailable);
    EXPECT_NE(f.detail.find("internal address"), std::string::npos) << f.detail;
    EXPECT_NE(f.detail.find("http://localhost:9"), std::string::npos);
}
