// SQL helpers behind the declaration functions: window validation (in the core), the
// aggregate list parsed with PostgreSQL's own parser, Kafka option checks, the caller.
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window_spec.hpp"

#include "stoatflow/kafka/options.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "stoatflow/pg/guard.hpp"
#include "stoatflow/pg/catalog.hpp"
#include "stoatflow/pg/spi.hpp"
#include "stoatflow/pg/sink_writer.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/guc_tables.h"
#include "utils/tuplestore.h"
}

#include "stoatflow/pg/limits.hpp"

namespace {
bool object_aclcheck_usage(Oid nsp, Oid role) {
    return pg_namespace_aclcheck(nsp, role, ACL_USAGE) == ACLCHECK_OK;
}
}  // namespace

using namespace stoatflow;
using namespace stoatflow::pg;

// _check_window(kind, size_ms, advance_ms, grace_ms, retention_ms) → (retention, interval)
STOATFLOW_FUNCTION(stoatflow__check_window) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(3))
        throw Error(sqlstate::kInvalidParameterValue,
                    "window kind, size and grace must not be NULL");
    const std::string kind = text_to_string(PG_GETARG_DATUM(0));
    const core::Millis size = PG_GETARG_INT64(1);
    const core::Millis advance = PG_ARGISNULL(2) ? 0 : PG_GETARG_INT64(2);
    const core::Millis grace = PG_GETARG_INT64(3);
    const core::Millis retention = PG_ARGISNULL(4) ? core::kNoTime : PG_GETARG_INT64(4);

    const core::WindowSpec spec = window_spec_from(kind, size, advance, grace);
    spec.validate();
    const core::Millis resolved = core::resolve_retention(spec, retention);
    const core::SegmentLayout layout(resolved, spec.length());

    TupleDesc desc;
    if (pg_call([&] { return get_call_result_type(fcinfo, nullptr, &desc); }) != TYPEFUNC_COMPOSITE)
        throw Error(sqlstate::kInternalError, "_check_window must return a record");
    Datum values[2] = {Int64GetDatum(resolved), Int64GetDatum(layout.interval())};
    bool nulls[2] = {false, false};
    return pg_call([&] {
        desc = BlessTupleDesc(desc);
        return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
}

// ---------------------------------------------------------------------------------
// Aggregate list: parsed as the target list of "SELECT <aggregates>".

namespace {

[[noreturn]] void bad_aggregates(const std::string& msg, const std::string& hint = {}) {
    throw Error(sqlstate::kSyntaxError, msg,
                hint.empty() ? "Write a list like 'count(*) AS views, sum(amount) AS revenue, "
                               "max(latency_ms)'; nested fields as \"user\".id or 'user.id'."
                             : hint);
}

std::string field_path_of(Node* arg) {
    if (IsA(arg, ColumnRef)) {
        std::string path;
        ListCell* lc;
        foreach (lc, castNode(ColumnRef, arg)->fields) {
            Node* f = static_cast<Node*>(lfirst(lc));
            if (!IsA(f, String))
                bad_aggregates("an aggregate argument may not use \"*\" as a field");
            if (!path.empty()) path += '.';
            path += strVal(f);
        }
        return path;
    }
    if (IsA(arg, A_Const)) {
        auto* c = castNode(A_Const, arg);
        if (!c->isnull && IsA(&c->val, String)) return strVal(&c->val);
    }
    bad_aggregates("an aggregate argument must be a field name or a quoted field path");
}

}  // namespace

namespace {
// PostgreSQL's scanner truncates identifiers longer than NAMEDATALEN - 1 bytes (with a NOTICE);
// two long aliases could become one column. Refuse them before the parser sees them (SPEC 10).
void refuse_long_identifiers(const std::string& text) {
    const auto too_long = [](const std::string& name) {
        throw Error(sqlstate::kNameTooLong,
                    "identifier \"" + name + "\" is longer than " + std::to_string(kMaxNameBytes) +
                        " bytes",
                    "PostgreSQL would truncate it; use a shorter name.");
    };
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (i < n) {
        const char c = text[i];
        if (c == '\'') {  // a string literal ('' escapes a quote): not a name
            for (++i; i < n; ++i)
                if (text[i] == '\'') {
                    if (i + 1 < n && text[i + 1] == '\'')
                        ++i;
                    else
                        break;
                }
            ++i;
        } else if (c == '"') {
            std::string name;
            for (++i; i < n; ++i) {
                if (text[i] == '"') {
                    if (i + 1 < n && text[i + 1] == '"')
                        name += text[++i];
                    else
                        break;
                } else {
                    name += text[i];
                }
            }
            ++i;
            if (name.size() > kMaxNameBytes) too_long(name);
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' ||
                   static_cast<unsigned char>(c) >= 0x80) {
            const std::size_t start = i;
            while (i < n && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_' ||
                             text[i] == '$' || static_cast<unsigned char>(text[i]) >= 0x80))
                ++i;
            if (i - start > kMaxNameBytes) too_long(text.substr(start, i - start));
        } else {
            ++i;
        }
    }
}
}  // namespace

std::vector<core::AggSpec> stoatflow::pg::parse_aggregates(const std::string& list) {
    refuse_long_identifiers(list);
    const std::string sql = "SELECT " + list;
    List* stmts = pg_call([&] { return raw_parser(sql.c_str(), RAW_PARSE_DEFAULT); });
    if (list_length(stmts) != 1)
        bad_aggregates("the aggregate list must be one list of aggregates");
    Node* stmt = linitial_node(RawStmt, stmts)->stmt;
    if (!IsA(stmt, SelectStmt)) bad_aggregates("the aggregate list is not a list of aggregates");
    auto* select = castNode(SelectStmt, stmt);
    if (select->fromClause || select->whereClause || select->groupClause || select->havingClause ||
        select->sortClause || select->distinctClause || select->limitCount || select->limitOffset ||
        select->windowClause || select->valuesLists || select->op != SETOP_NONE ||
        select->withClause)
        bad_aggregates("the aggregate list must contain aggregates only");

    std::vector<core::AggSpec> specs;
    ListCell* lc;
    foreach (lc, select->targetList) {
        auto* target = lfirst_node(ResTarget, lc);
        if (!IsA(target->val, FuncCall))
            bad_aggregates(
                "each item of the aggregate list must be an aggregate call such as sum(amount)");
        auto* call = castNode(FuncCall, target->val);
        if (list_length(call->funcname) != 1)
            bad_aggregates("aggregate names must not be schema-qualified");
        const std::string name = strVal(linitial(call->funcname));
        if (call->agg_distinct || call->agg_order || call->agg_filter || call->over ||
            call->func_variadic || call->agg_within_group)
            bad_aggregates("aggregate \"" + name +
                           "\" may not use DISTINCT, ORDER BY, FILTER, OVER or VARIADIC");
        core::AggSpec spec;
        spec.fn = core::agg_fn_from_name(name);
        if (call->agg_star) {
            if (spec.fn != core::AggFn::Count)
                bad_aggregates(name + "(*) is not an aggregate; only count(*) takes \"*\"");
            spec.fn = core::AggFn::CountStar;
        } else {
            if (list_length(call->args) != 1)
                bad_aggregates("aggregate \"" + name + "\" takes exactly one field");
            spec.field = field_path_of(static_cast<Node*>(linitial(call->args)));
        }
        if (target->name) spec.column = target->name;
        specs.push_back(std::move(spec));
    }
    auto normalized = core::normalize_aggregates(std::move(specs));
    // A column name PostgreSQL would truncate could collide with another: refused (SPEC 10).
    for (const auto& spec : normalized)
        if (spec.column.size() > kMaxNameBytes)
            throw Error(sqlstate::kNameTooLong,
                        "column name \"" + spec.column + "\" is longer than " +
                            std::to_string(kMaxNameBytes) + " bytes",
                        "Name the aggregate with a shorter AS name.");
    return normalized;
}

// _parse_aggregates(text) → SETOF (fn, field, column_name, column_type)
STOATFLOW_FUNCTION(stoatflow__parse_aggregates) {
    const std::string list = text_to_string(PG_GETARG_DATUM(0));
    const auto specs = parse_aggregates(list);
    pg_call([&] { InitMaterializedSRF(fcinfo, 0); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (const auto& s : specs) {
        const std::string fn = agg_fn_catalog_name(s.fn);
        const char* type = sql_type(core::column_type(s.fn)).name;
        pg_call([&] {
            Datum values[4] = {CStringGetTextDatum(fn.c_str()),
                               CStringGetTextDatum(s.field.c_str()),
                               CStringGetTextDatum(s.column.c_str()), CStringGetTextDatum(type)};
            bool nulls[4] = {false, false, false, false};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        });
    }
    return (Datum)0;
}

// _sink_columns(aggregates) → SETOF (column_name, column_type, definition): the sink's shape as the
// worker writes it (sink_columns), for create_aggregation to check an existing sink against and to
// create a missing one from. column_type as format_type() spells it.
STOATFLOW_FUNCTION(stoatflow__sink_columns) {
    const std::string list = text_to_string(PG_GETARG_DATUM(0));
    const auto specs = parse_aggregates(list);
    const Columns cols = sink_columns(core::AggLayout(specs));
    pg_call([&] { InitMaterializedSRF(fcinfo, 0); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (std::size_t c = 0; c < cols.names.size(); ++c) {
        const std::string& name = cols.names[c];
        const bool aggregate = std::any_of(
            specs.begin(), specs.end(), [&](const core::AggSpec& s) { return s.column == name; });
        // An aggregate over no value is NULL (min, max, avg); the window's own columns never are.
        const char* constraint = aggregate         ? ""
                                 : name == "final" ? " NOT NULL DEFAULT false"
                                                   : " NOT NULL";
        const Oid type = cols.types[c];
        pg_call([&] {
            const char* type_name = format_type_be(type);
            const std::string definition = std::string(type_name) + constraint;
            Datum values[3] = {CStringGetTextDatum(name.c_str()), CStringGetTextDatum(type_name),
                               CStringGetTextDatum(definition.c_str())};
            bool nulls[3] = {false, false, false};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        });
    }
    return (Datum)0;
}

// _check_field_path(what, path): a source's key or event-time path, judged as the field path it
// is (not as an aggregate's default column name, which could be too long where the path is not).
STOATFLOW_FUNCTION(stoatflow__check_field_path) {
    const std::string what = text_to_string(PG_GETARG_DATUM(0));
    const std::string path = text_to_string(PG_GETARG_DATUM(1));
    try {
        core::validate_field_path(path);
    } catch (const Error& e) {
        throw Error(e.sqlstate(), what + ": " + e.what(), e.hint());
    }
    PG_RETURN_VOID();
}

// _check_names(window_kind, emit): the names the core knows (window_kind_from_name,
// emit_strategy_from_name), so that the declarations never spell them out themselves.
STOATFLOW_FUNCTION(stoatflow__check_names) {
    if (PG_ARGISNULL(1)) core::emit_strategy_from_name("<NULL>");
    core::emit_strategy_from_name(text_to_string(PG_GETARG_DATUM(1)));
    if (PG_ARGISNULL(0)) core::window_kind_from_name("<NULL>");
    core::window_kind_from_name(text_to_string(PG_GETARG_DATUM(0)));
    PG_RETURN_VOID();
}

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

}  // namespace

void check_kafka_config(const std::string& brokers, const std::vector<std::string>& names,
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

// _check_kafka_config(brokers, option_names text[], option_values text[])
STOATFLOW_FUNCTION(stoatflow__check_kafka_config) {
    if (PG_ARGISNULL(0))
        throw Error(sqlstate::kInvalidParameterValue, "brokers must not be NULL",
                    "Give bootstrap servers as host:port, comma-separated.");
    const std::string brokers = text_to_string(PG_GETARG_DATUM(0));
    std::vector<std::string> names, values;
    if (!PG_ARGISNULL(1)) names = text_array_to_vector(PG_GETARG_DATUM(1));
    if (!PG_ARGISNULL(2)) values = text_array_to_vector(PG_GETARG_DATUM(2));
    if (names.size() != values.size())
        throw Error(sqlstate::kInvalidParameterValue, "kafka option names and values do not match");
    // The role that called create_source (this runs inside it, as its definer).
    const Oid caller = GetOuterUserId();
    const bool may_read_files = pg_call([&] {
        return superuser_arg(caller) || has_privs_of_role(caller, ROLE_PG_READ_SERVER_FILES);
    });
    check_kafka_config(brokers, names, values, may_read_files);
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
// search_path (SPEC 10), yet an unqualified sink name means what it would mean to its caller.

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

// _caller_search_path() → text[]: the schemas of the caller's search_path that exist and that the
// caller may use, in order ("$user" resolved; pg_temp and pg_catalog left out: no sink lives
// there).
STOATFLOW_FUNCTION(stoatflow__caller_search_path) {
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
    std::vector<Datum> schemas;
    for (std::string name : names) {
        if (name == "$user") name = pg_call([&] { return GetUserNameFromId(caller, true); }) ?: "";
        if (name.empty() || name == "pg_temp" || name == "pg_catalog" ||
            name.rfind("pg_temp_", 0) == 0)
            continue;
        const char* nsp = name.c_str();
        const bool usable = pg_call([&] {
            const Oid oid = get_namespace_oid(nsp, true);
            return OidIsValid(oid) && object_aclcheck_usage(oid, caller);
        });
        if (usable)
            schemas.push_back(PointerGetDatum(pg_call([&] { return cstring_to_text(nsp); })));
    }
    return make_array(schemas, {}, TEXTOID);
}
