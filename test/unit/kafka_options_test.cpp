// kafka_options rules (README "Security"): managed properties refused, code-loading properties
// refused for everyone before librdkafka sees them, server file names only with file-reading
// privileges.
#include "stoatflow/core/error.hpp"
#include "stoatflow/kafka/options.hpp"

#include <gtest/gtest.h>

using namespace stoatflow;
using namespace stoatflow::kafka;

namespace {
std::string sqlstate_of(const std::string& name, bool may_read_files) {
    try {
        check_option_allowed(name, may_read_files);
    } catch (const Error& e) {
        return e.sqlstate();
    }
    return "";
}
}  // namespace

TEST(KafkaOptions, CodeLoadingRefusedForEveryone) {
    for (const char* n :
         {"plugin.library.paths", "sasl.kerberos.kinit.cmd", "ssl.engine.location", "ssl.engine.id",
          "ssl.providers", "PLUGIN.LIBRARY.PATHS", "some.future.plugin.dir"}) {
        EXPECT_EQ(classify_option(n), OptionKind::RunsCode) << n;
        EXPECT_EQ(sqlstate_of(n, true), "42501") << n;
        EXPECT_EQ(sqlstate_of(n, false), "42501") << n;
    }
}

TEST(KafkaOptions, ServerFilesNeedFilePrivileges) {
    for (const char* n : {"ssl.key.location", "ssl.certificate.location", "ssl.ca.location",
                          "ssl.crl.location", "ssl.keystore.location", "sasl.kerberos.keytab"}) {
        EXPECT_EQ(classify_option(n), OptionKind::ServerFile) << n;
        EXPECT_EQ(sqlstate_of(n, false), "42501") << n;
        EXPECT_EQ(sqlstate_of(n, true), "") << n;
    }
}

TEST(KafkaOptions, ManagedRefused) {
    for (const char* n : {"bootstrap.servers", "enable.auto.commit", "isolation.level", "group.id"})
        EXPECT_EQ(sqlstate_of(n, true), "22023") << n;
}

TEST(KafkaOptions, OrdinaryAndInlineKeyMaterialAllowed) {
    for (const char* n :
         {"security.protocol", "sasl.mechanisms", "sasl.username", "sasl.password", "client.id",
          "ssl.key.pem", "ssl.ca.pem", "fetch.wait.max.ms", "queued.max.messages.kbytes"})
        EXPECT_EQ(sqlstate_of(n, false), "") << n;
}

TEST(KafkaOptions, Secrets) {
    for (const char* n :
         {"sasl.password", "ssl.key.password", "ssl.key.pem", "ssl_key.key",
          "sasl.oauthbearer.client.secret", "ssl.keystore.password", "sasl.jaas.config"})
        EXPECT_TRUE(is_secret_option(n)) << n;
    for (const char* n : {"security.protocol", "sasl.username", "client.id"})
        EXPECT_FALSE(is_secret_option(n)) << n;
}

// One owner: what the consumer forces is exactly what a source may not give, and what it only
// defaults a source may override.
TEST(KafkaOptions, ForcedSettingsAreManagedDefaultsAreNot) {
    for (const auto& m : managed_options()) {
        EXPECT_EQ(classify_option(m.name), OptionKind::Managed) << m.name;
        EXPECT_EQ(sqlstate_of(m.name, true), "22023") << m.name;
    }
    for (const auto& [name, value] : consumer_defaults())
        EXPECT_EQ(classify_option(name), OptionKind::Ordinary) << name;
}
