// Which librdkafka properties a source may carry: managed ones are refused, code-loading ones
// are refused for everyone (librdkafka loads a plugin the moment the property is set), file
// names need the privileges PostgreSQL's COPY FROM a file needs.
#include "stoatflow/kafka/options.hpp"

#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <cctype>

namespace stoatflow::kafka {

namespace {

std::string lower(const std::string& s) {
    std::string out = s;
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return out;
}

bool ends_with(const std::string& s, const char* suffix) {
    const std::string t = suffix;
    return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// What the consumer sets itself (consumer.cpp): a user value would break exactly-once
// consumption or point the source elsewhere.
constexpr const char* kManaged[] = {
    "bootstrap.servers",    "metadata.broker.list",     "group.id",
    "enable.auto.commit",   "enable.auto.offset.store", "auto.offset.reset",
    "enable.partition.eof", "isolation.level",          "group.instance.id"};

}  // namespace

OptionKind classify_option(const std::string& raw) {
    const std::string n = lower(raw);
    for (const char* m : kManaged)
        if (n == m) return OptionKind::Managed;
    // plugin.library.paths, sasl.kerberos.kinit.cmd, ssl.engine.location / ssl.engine.id,
    // ssl.providers, and anything later that sounds like them.
    if (contains(n, "plugin") || contains(n, "library") || contains(n, "engine") ||
        contains(n, "provider") || ends_with(n, ".cmd") || contains(n, "command") ||
        contains(n, "exec"))
        return OptionKind::RunsCode;
    // ssl.key.location, ssl.certificate.location, ssl.ca.location, ssl.crl.location,
    // ssl.keystore.location, sasl.kerberos.keytab, ssl.ca.certificate.stores.
    if (ends_with(n, ".location") || contains(n, "keytab") || contains(n, "certificate.stores") ||
        ends_with(n, ".path") || ends_with(n, ".paths") || ends_with(n, ".file"))
        return OptionKind::ServerFile;
    return OptionKind::Ordinary;
}

bool is_secret_option(const std::string& name) {
    const std::string n = lower(name);
    for (const char* w :
         {"password", "secret", "token", "credential", "jaas", "key.pem", "keystore", "private"})
        if (contains(n, w)) return true;
    return ends_with(n, ".key") || contains(n, ".key.");
}

void check_option_allowed(const std::string& name, bool may_read_files) {
    switch (classify_option(name)) {
    case OptionKind::Ordinary:
        return;
    case OptionKind::Managed:
        throw Error(sqlstate::kInvalidParameterValue,
                    "kafka option \"" + name + "\" is managed by stoatflow",
                    "Brokers come from the brokers argument, the start position from start_offset; "
                    "offsets are "
                    "committed by stoatflow with the window state.");
    case OptionKind::RunsCode:
        throw Error(sqlstate::kInsufficientPrivilege,
                    "kafka option \"" + name +
                        "\" is not allowed: it makes librdkafka load code or run a command",
                    "stoatflow never lets a source load plugins, engines or providers, or run "
                    "commands inside "
                    "the database server.");
    case OptionKind::ServerFile:
        if (may_read_files) return;
        throw Error(
            sqlstate::kInsufficientPrivilege,
            "kafka option \"" + name + "\" names a file on the database server",
            "Only superusers and members of pg_read_server_files may give file options (as for "
            "COPY "
            "FROM a file); or give the key material inline (ssl.key.pem, ssl.certificate.pem, "
            "ssl.ca.pem).");
    }
}

}  // namespace stoatflow::kafka
