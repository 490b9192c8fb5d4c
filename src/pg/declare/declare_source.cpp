// SQL helpers behind create_source and the caller-dependent parts of the declarations: the
// broker list and Kafka options (librdkafka's own checks, the managed and secret options), the
// invoking role, and the caller's search_path.
#include "stoatflow/core/error.hpp"
#include "stoatflow/kafka/options.hpp"
#include "stoatflow/registry/client.hpp"

#include <librdkafka/rdkafka.h>

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"
#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/declare/declare.hpp"
#include "stoatflow/pg/catalog/row_type.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/border/text.hpp"
#include "stoatflow/pg/worker/registry_schemas.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc_tables.h"
}

namespace {
bool object_aclcheck_usage(Oid nsp, Oid role) {
    return pg_namespace_aclcheck(nsp, role, ACL_USAGE) == ACLCHECK_OK;
}
}  // namespace

using namespace stoatflow;
using namespace stoatflow::pg;

// ---------------------------------------------------------------------------------
// Kafka configuration: broker list syntax and librdkafka's own option checks.

namespace {

void check_brokers(const std::string& brokers) {
    auto bad = [&](const std::string& why) {
        throw Error(sqlstate::kInvalidParameterValue,
                    "invalid broker list \"" + brokers + "\": " + why,
                    "Give bootstrap servers as host:port, comma-separated, e.g. "
                    "'kafka1:9092,kafka2:9092'.");
    };
    if (brokers.empty()) bad("it is empty");
    std::size_t pos = 0;
    while (pos <= brokers.size()) {
        std::size_t comma = brokers.find(',', pos);
        if (comma == std::string::npos) comma = brokers.size();
        std::string entry = brokers.substr(pos, comma - pos);
        while (!entry.empty() && entry.front() == ' ') entry.erase(0, 1);
        while (!entry.empty() && entry.back() == ' ') entry.pop_back();
        if (entry.empty()) bad("it has an empty entry");
        const auto scheme = entry.find("://");
        if (scheme != std::string::npos) entry = entry.substr(scheme + 3);
        std::string host, port;
        if (!entry.empty() && entry.front() == '[') {
            const auto close = entry.find(']');
            if (close == std::string::npos) bad("unbalanced '[' in \"" + entry + "\"");
            host = entry.substr(1, close - 1);
            if (close + 1 < entry.size()) {
                if (entry[close + 1] != ':') bad("expected ':' after ']' in \"" + entry + "\"");
                port = entry.substr(close + 2);
            }
        } else {
            const auto colon = entry.rfind(':');
            host = entry.substr(0, colon);
            if (colon != std::string::npos) port = entry.substr(colon + 1);
            for (char c : host)
                if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ||
                      c == '_'))
                    bad("host \"" + host + "\" has an invalid character");
        }
        if (host.empty()) bad("an entry has no host");
        if (port.empty() && entry.find(':') != std::string::npos) bad("an entry has an empty port");
        if (!port.empty()) {
            if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
                std::stoi(port) < 1 || std::stoi(port) > 65535)
                bad("port \"" + port + "\" is not a number from 1 to 65535");
        }
        pos = comma + 1;
    }
}

void check_kafka_options(const std::string& brokers, const std::vector<std::string>& names,
                         const std::vector<std::string>& values, bool may_read_files) {
    check_brokers(brokers);
    std::unique_ptr<rd_kafka_conf_t, void (*)(rd_kafka_conf_t*)> conf(rd_kafka_conf_new(),
                                                                      rd_kafka_conf_destroy);
    char err[512];
    for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string& n = names[i];
        // Before librdkafka sees the name: setting plugin.library.paths loads the plugin at once.
        kafka::check_option_allowed(n, may_read_files);
        err[0] = '\0';
        const auto r = rd_kafka_conf_set(conf.get(), n.c_str(), values[i].c_str(), err, sizeof err);
        if (r == RD_KAFKA_CONF_UNKNOWN)
            throw Error(sqlstate::kInvalidParameterValue, "unknown kafka option \"" + n + "\"",
                        "kafka_options takes librdkafka configuration properties, e.g. "
                        "security.protocol, sasl.mechanisms, sasl.username.");
        if (r != RD_KAFKA_CONF_OK) {
            if (kafka::is_secret_option(n))
                throw Error(sqlstate::kInvalidParameterValue, "invalid value for kafka option \"" +
                                                                  n +
                                                                  "\" (value not shown: secret)");
            throw Error(sqlstate::kInvalidParameterValue,
                        "invalid value for kafka option \"" + n + "\": " + err);
        }
    }
}

}  // namespace

void stoatflow::pg::declare::check_kafka_config(const OptText& brokers,
                                                const std::vector<std::string>& names,
                                                const std::vector<std::string>& values) {
    if (!brokers)
        throw Error(sqlstate::kInvalidParameterValue, "brokers must not be NULL",
                    "Give bootstrap servers as host:port, comma-separated.");
    if (names.size() != values.size())
        throw Error(sqlstate::kInvalidParameterValue, "kafka option names and values do not match");
    // The role that called create_source (this runs inside it, as its definer).
    check_kafka_options(*brokers, names, values, may_read_server_files(GetOuterUserId()));
}

// _check_kafka_config(brokers, option_names text[], option_values text[])
STOATFLOW_FUNCTION(stoatflow__check_kafka_config) {
    declare::OptText brokers;
    if (!PG_ARGISNULL(0)) brokers = text_to_string(PG_GETARG_DATUM(0));
    std::vector<std::string> names, values;
    if (!PG_ARGISNULL(1)) names = text_array_to_vector(PG_GETARG_DATUM(1));
    if (!PG_ARGISNULL(2)) values = text_array_to_vector(PG_GETARG_DATUM(2));
    declare::check_kafka_config(brokers, names, values);
    PG_RETURN_VOID();
}

// _is_secret_option(name): the one secret rule (kafka::is_secret_option), for the install script.
STOATFLOW_FUNCTION(stoatflow__is_secret_option) {
    const std::string name = text_to_string(PG_GETARG_DATUM(0));
    PG_RETURN_BOOL(kafka::is_secret_option(name));
}

STOATFLOW_FUNCTION(stoatflow__invoking_role) { return ObjectIdGetDatum(GetOuterUserId()); }

// ---------------------------------------------------------------------------------
// The caller's search_path, for create_aggregation: it is SECURITY DEFINER with a pinned
// search_path (README "Security"), yet an unqualified sink name means what it would mean to its
// caller.

namespace stoatflow::pg {
// The value search_path had when the innermost function with a SET search_path clause was
// entered: the GUC stack entry that clause pushed keeps it.
const char* caller_search_path_value() {
    struct config_generic** vars = get_guc_variables();
    const int n = GetNumConfigOptions();
    for (int i = 0; i < n; ++i) {
        if (strcmp(vars[i]->name, "search_path") != 0) continue;
        auto* conf = reinterpret_cast<struct config_string*>(vars[i]);
        if (conf->gen.stack && conf->gen.stack->prior.val.stringval)
            return conf->gen.stack->prior.val.stringval;
        return *conf->variable;
    }
    return "";
}
}  // namespace stoatflow::pg

// The caller's search_path as schema names, in order: "$user" resolved, schemas that do not
// exist or that the caller may not use left out, pg_temp left out; pg_catalog only if asked for.
std::vector<std::string> stoatflow::pg::declare::caller_schemas(bool keep_catalog) {
    const Oid caller = GetOuterUserId();
    const std::string path = pg_call([] { return caller_search_path_value(); });
    std::vector<std::string> names;
    {
        std::string item;
        bool quoted = false;
        for (std::size_t i = 0; i <= path.size(); ++i) {
            const char c = i < path.size() ? path[i] : ',';
            if (c == '"') {
                if (quoted && i + 1 < path.size() && path[i + 1] == '"') {
                    item += '"';
                    ++i;
                } else {
                    quoted = !quoted;
                }
            } else if (c == ',' && !quoted) {
                names.push_back(item);
                item.clear();
            } else if (quoted || c != ' ') {
                item += quoted ? c : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            }
        }
    }
    std::vector<std::string> schemas;
    for (std::string name : names) {
        if (name == "$user") name = pg_call([&] { return GetUserNameFromId(caller, true); }) ?: "";
        if (name == "pg_catalog" && keep_catalog) {
            schemas.push_back(name);
            continue;
        }
        if (name.empty() || name == "pg_temp" || name == "pg_catalog" ||
            name.rfind("pg_temp_", 0) == 0)
            continue;
        const char* nsp = name.c_str();
        const bool usable = pg_call([&] {
            const Oid oid = get_namespace_oid(nsp, true);
            return OidIsValid(oid) && object_aclcheck_usage(oid, caller);
        });
        if (usable) schemas.push_back(name);
    }
    return schemas;
}

// The caller's search_path as a search_path value that finds, in a SECURITY DEFINER function,
// what it finds for the caller: "$user" resolved, schemas the caller may not use left out,
// pg_catalog where the caller has it (first when not listed, as PostgreSQL does).
std::string stoatflow::pg::declare::caller_lookup_path() {
    std::string value;
    for (const std::string& name : caller_schemas(true))
        value += (value.empty() ? "" : ", ") + quote_ident(name);
    if (value.empty()) value = "pg_catalog";
    return value;
}

bool stoatflow::pg::declare::may_read_server_files(Oid role) {
    return pg_call(
        [&] { return superuser_arg(role) || has_privs_of_role(role, ROLE_PG_READ_SERVER_FILES); });
}

bool stoatflow::pg::declare::check_registry_url(const std::string& url) {
    check_registry_url_syntax(url);
    const bool may = may_read_server_files(GetOuterUserId());
    if (!may && registry::internal_host(registry::url_host(url)))
        throw Error(sqlstate::kInsufficientPrivilege,
                    "format option \"schema_registry_url\": host " + registry::url_host(url) +
                        " is the database server itself or an internal network",
                    "Only superusers and members of pg_read_server_files may point a source at "
                    "such a registry (README \"Security\"); give the registry's public name.");
    return may;
}
