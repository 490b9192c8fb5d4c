// Every rule about librdkafka properties, in one place: the consumer's defaults and the settings
// it forces; which properties a source may carry (managed ones are refused, code-loading ones
// are refused for everyone: librdkafka loads a plugin the moment the property is set; file
// names need the privileges PostgreSQL's COPY FROM a file needs); which ones hold secrets.
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

}  // namespace

// What the consumer sets itself: a user value would break exactly-once consumption or point the
// source elsewhere. Kept in this order and applied after the user's options (Consumer).
const std::vector<ManagedOption>& managed_options() {
    static const std::vector<ManagedOption> options = {
        {"bootstrap.servers", nullptr},     // the source's brokers argument
        {"metadata.broker.list", nullptr},  // librdkafka's alias of bootstrap.servers
        {"group.id", nullptr},  // one per source (offsets are stoatflow's, not the group's)
        {"group.instance.id", nullptr},   // no group membership at all: partitions are assigned
        {"enable.auto.commit", "false"},  // offsets are committed with the window state
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "true"},  // a partition caught up is how wait_caught_up knows
        // Positions are always explicit; one that falls out of the log is reported, never
        // silently moved (Consumer::take_out_of_range).
        {"auto.offset.reset", "error"},
        {"isolation.level", "read_committed"},  // aborted transactions are never aggregated
    };
    return options;
}

// Defaults a source's kafka_options may override. librdkafka stops fetching a partition whose
// prefetch queue passes queued.min.messages or queued.max.messages.kbytes and resumes only when
// its broker thread next decides what to fetch, which can be long after the queue drained: a
// worker slower than the fetcher then waits for records most of the time. Measured (2 M events,
// 20 partitions, 0.5 us of work per record): 16 MiB per partition 10.2 s, 32 MiB 3.3 s, 64 MiB
// with a message count that never binds 1.7 s (no work: 0.7 s). So: the count never binds, and
// the byte bound is librdkafka's default (64 MiB per partition; memory only fills while the
// worker is behind). Sources with many partitions can lower it with kafka_options.
const std::vector<std::pair<const char*, const char*>>& consumer_defaults() {
    static const std::vector<std::pair<const char*, const char*>> defaults = {
        {"queued.min.messages", "10000000"},
        {"queued.max.messages.kbytes", "65536"},
        {"fetch.wait.max.ms", "100"},
    };
    return defaults;
}

OptionKind classify_option(const std::string& raw) {
    const std::string n = lower(raw);
    for (const auto& m : managed_options())
        if (n == m.name) return OptionKind::Managed;
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
    case OptionKind::Ordinary: return;
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
