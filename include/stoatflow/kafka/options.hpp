// The rules for librdkafka properties a user may give a source (kafka_options): which ones
// stoatflow manages itself, which would load code or run commands (refused for everyone),
// which name files on the server (superuser or pg_read_server_files), which hold secrets.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <string>
#include <utility>
#include <vector>

namespace stoatflow::kafka {

// A property the consumer sets itself and a source may not give. value: what the consumer sets it
// to; nullptr when it comes from the source (bootstrap.servers, group.id) or is never set.
struct ManagedOption {
    const char* name;
    const char* value;
};
const std::vector<ManagedOption>& managed_options();

// The consumer's defaults, which a source's kafka_options may override.
const std::vector<std::pair<const char*, const char*>>& consumer_defaults();

enum class OptionKind {
    Ordinary,    // passed to librdkafka as given
    Managed,     // set by stoatflow itself (exactly once, offsets, the broker list): refused
    RunsCode,    // makes librdkafka load a library or run a command: refused before it sees it
    ServerFile,  // names a file on the database server: needs file-reading privileges
};

// Classifies a property name (case-insensitively). Unknown names are Ordinary here: librdkafka
// itself rejects them, and patterns catch code-loading properties added in later versions.
OptionKind classify_option(const std::string& name);

// True for names whose values are secrets (passwords, secrets, tokens, key material): they
// are masked in views and never echoed in messages.
bool is_secret_option(const std::string& name);

// Throws stoatflow::Error (22023 / 42501) if the option may not be given; `may_read_files` says
// whether the declaring role may name server files (superuser or pg_read_server_files).
void check_option_allowed(const std::string& name, bool may_read_files);

}  // namespace stoatflow::kafka
