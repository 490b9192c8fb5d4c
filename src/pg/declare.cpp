// SQL helpers behind the declaration functions: window validation (in the core), the
// aggregate list parsed with PostgreSQL's own parser, Kafka option checks, the caller.
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/segment_layout.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <librdkafka/rdkafka.h>

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "stoatflow/pg/guard.hpp"
#include "stoatflow/pg/catalog.hpp"
#include "stoatflow/pg/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/parser.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

// _check_window(kind, size_ms, advance_ms, grace_ms, retention_ms) → (retention, interval)
STOATFLOW_FUNCTION(stoatflow__check_window) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(3))
        throw Error(sqlstate::kInvalidParameterValue, "window kind, size and grace must not be NULL");
    const std::string kind = text_to_string(PG_GETARG_TEXT_PP(0));
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
            if (!IsA(f, String)) bad_aggregates("an aggregate argument may not use \"*\" as a field");
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

std::vector<core::AggSpec> stoatflow::pg::parse_aggregates(const std::string& list) {
    const std::string sql = "SELECT " + list;
    List* stmts = pg_call([&] { return raw_parser(sql.c_str(), RAW_PARSE_DEFAULT); });
    if (list_length(stmts) != 1) bad_aggregates("the aggregate list must be one list of aggregates");
    Node* stmt = linitial_node(RawStmt, stmts)->stmt;
    if (!IsA(stmt, SelectStmt)) bad_aggregates("the aggregate list is not a list of aggregates");
    auto* select = castNode(SelectStmt, stmt);
    if (select->fromClause || select->whereClause || select->groupClause || select->havingClause ||
        select->sortClause || select->distinctClause || select->limitCount || select->limitOffset ||
        select->windowClause || select->valuesLists || select->op != SETOP_NONE || select->withClause)
        bad_aggregates("the aggregate list must contain aggregates only");

    std::vector<core::AggSpec> specs;
    ListCell* lc;
    foreach (lc, select->targetList) {
        auto* target = lfirst_node(ResTarget, lc);
        if (!IsA(target->val, FuncCall))
            bad_aggregates("each item of the aggregate list must be an aggregate call such as sum(amount)");
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
    return core::normalize_aggregates(std::move(specs));
}

const char* stoatflow::pg::sql_type_name(core::ColumnType t) {
    switch (t) {
    case core::ColumnType::BigInt: return "bigint";
    case core::ColumnType::Double: return "double precision";
    case core::ColumnType::Numeric: return "numeric";
    }
    return "text";
}

// _parse_aggregates(text) → SETOF (fn, field, column_name, column_type)
STOATFLOW_FUNCTION(stoatflow__parse_aggregates) {
    const std::string list = text_to_string(PG_GETARG_TEXT_PP(0));
    const auto specs = parse_aggregates(list);
    pg_call([&] { InitMaterializedSRF(fcinfo, 0); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (const auto& s : specs) {
        const std::string fn = agg_fn_catalog_name(s.fn);
        const char* type = sql_type_name(core::column_type(s.fn));
        pg_call([&] {
            Datum values[4] = {CStringGetTextDatum(fn.c_str()), CStringGetTextDatum(s.field.c_str()),
                               CStringGetTextDatum(s.column.c_str()), CStringGetTextDatum(type)};
            bool nulls[4] = {false, false, false, false};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        });
    }
    return (Datum)0;
}

// ---------------------------------------------------------------------------------
// Kafka configuration: broker list syntax and librdkafka's own option checks.

namespace {

bool is_secret_option(const std::string& name) {
    std::string n;
    for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* w : {"password", "secret", "token", "credential", "jaas", "key.pem", "keystore",
                          "private"})
        if (n.find(w) != std::string::npos) return true;
    return n.size() >= 4 && (n.compare(n.size() - 4, 4, ".key") == 0 || n.find(".key.") != std::string::npos);
}

void check_brokers(const std::string& brokers) {
    auto bad = [&](const std::string& why) {
        throw Error(sqlstate::kInvalidParameterValue, "invalid broker list \"" + brokers + "\": " + why,
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
                if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'))
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

// Options stoatflow sets itself: a user value would break exactly-once consumption.
bool reserved_option(const std::string& n) {
    return n == "bootstrap.servers" || n == "metadata.broker.list" || n == "enable.auto.commit" ||
           n == "enable.auto.offset.store" || n == "auto.offset.reset" || n == "enable.partition.eof" ||
           n == "isolation.level" || n == "group.instance.id";
}

}  // namespace

void check_kafka_config(const std::string& brokers, const std::vector<std::string>& names,
                        const std::vector<std::string>& values) {
    check_brokers(brokers);
    std::unique_ptr<rd_kafka_conf_t, void (*)(rd_kafka_conf_t*)> conf(rd_kafka_conf_new(),
                                                                      rd_kafka_conf_destroy);
    char err[512];
    for (std::size_t i = 0; i < names.size(); ++i) {
        const std::string& n = names[i];
        if (reserved_option(n))
            throw Error(sqlstate::kInvalidParameterValue,
                        "kafka option \"" + n + "\" is managed by stoatflow",
                        "Brokers come from the brokers argument, the start position from "
                        "start_offset; offsets are committed by stoatflow with the window state.");
        err[0] = '\0';
        const auto r = rd_kafka_conf_set(conf.get(), n.c_str(), values[i].c_str(), err, sizeof err);
        if (r == RD_KAFKA_CONF_UNKNOWN)
            throw Error(sqlstate::kInvalidParameterValue, "unknown kafka option \"" + n + "\"",
                        "kafka_options takes librdkafka configuration properties, e.g. "
                        "security.protocol, sasl.mechanisms, sasl.username.");
        if (r != RD_KAFKA_CONF_OK) {
            if (is_secret_option(n))
                throw Error(sqlstate::kInvalidParameterValue,
                            "invalid value for kafka option \"" + n + "\" (value not shown: secret)");
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
    const std::string brokers = text_to_string(PG_GETARG_TEXT_PP(0));
    std::vector<std::string> names, values;
    if (!PG_ARGISNULL(1)) names = text_array_to_vector(PG_GETARG_ARRAYTYPE_P(1));
    if (!PG_ARGISNULL(2)) values = text_array_to_vector(PG_GETARG_ARRAYTYPE_P(2));
    if (names.size() != values.size())
        throw Error(sqlstate::kInvalidParameterValue, "kafka option names and values do not match");
    check_kafka_config(brokers, names, values);
    PG_RETURN_VOID();
}

STOATFLOW_FUNCTION(stoatflow__invoking_role) { return ObjectIdGetDatum(GetOuterUserId()); }
