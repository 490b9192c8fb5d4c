// create_aggregation's sink table: see include/stoatflow/pg/declare/sink_table.hpp.
#include "stoatflow/core/error.hpp"

#include <string>
#include <vector>

#include "stoatflow/pg/declare/sink_table.hpp"
#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/border/text.hpp"

extern "C" {
#include "catalog/namespace.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

std::string declare::role_name(Oid role) {
    const char* name = pg_call([&] { return GetUserNameFromId(role, true); });
    return name ? quote_ident(name) : std::to_string(role);
}

Oid declare::find_relation(const std::string& schema, const std::string& table) {
    const char* nsp = schema.c_str();
    const char* rel = table.c_str();
    return pg_call([&] {
        const Oid ns = get_namespace_oid(nsp, true);
        return OidIsValid(ns) ? get_relname_relid(rel, ns) : InvalidOid;
    });
}

std::string declare::SinkName::display() const {
    return quote_ident(schema) + "." + quote_ident(table);
}

declare::SinkName declare::sink_name_of(const OptText& sink) {
    if (!sink || sink->empty())
        throw Error(sqlstate::kInvalidParameterValue, "sink must name a table");
    const char* s = sink->c_str();
    const Datum parts_datum = pg_call([&] {
        return DirectFunctionCall2(parse_ident, CStringGetTextDatum(s), BoolGetDatum(true));
    });
    const std::vector<std::string> parts = text_array_to_vector(parts_datum);
    if (parts.size() > 2)
        throw Error(sqlstate::kInvalidName, "sink \"" + *sink + "\" has too many dotted names",
                    "Use table or schema.table.");
    SinkName name;
    name.table = parts.back();
    if (parts.size() == 2) {
        name.schema = parts[0];
        return name;
    }
    const std::vector<std::string> path = caller_schemas(false);
    for (const std::string& schema : path)
        if (OidIsValid(find_relation(schema, name.table))) {
            name.schema = schema;
            return name;
        }
    if (path.empty())
        throw Error(sqlstate::kInvalidSchemaName,
                    "no schema has been selected to create the sink \"" + *sink + "\" in",
                    "Schema-qualify the sink name.");
    name.schema = path.front();
    return name;
}

namespace {
bool has_table_privilege(Oid role, Oid table, AclMode mode) {
    return pg_call([&] { return pg_class_aclcheck(table, role, mode) == ACLCHECK_OK; });
}

}  // namespace

void declare::check_existing_sink(Oid sink, const SinkName& name,
                                  const std::vector<SinkColumn>& columns, Oid owner) {
    const std::string display = name.display();
    if (!(has_table_privilege(owner, sink, ACL_SELECT) &&
          has_table_privilege(owner, sink, ACL_INSERT) &&
          has_table_privilege(owner, sink, ACL_UPDATE) &&
          has_table_privilege(owner, sink, ACL_DELETE)))
        throw Error(sqlstate::kInsufficientPrivilege, "permission denied for sink table " + display,
                    "Role " + role_name(owner) +
                        " needs SELECT, INSERT, UPDATE and DELETE on the sink.");
    spi_exec("SELECT pg_catalog.string_agg(a.aggregation_name, ', ') FROM stoatflow.aggregation a "
             "WHERE a.sink = $1::bigint::oid",
             {arg_int64(sink)});
    if (const auto used_by = spi_text(0, 1))
        throw Error(sqlstate::kDuplicateObject,
                    "sink \"" + display + "\" is already written by aggregation " + *used_by,
                    "Give each aggregation a sink of its own.");
    check_sink(sink, display, columns);
}

Oid declare::create_sink(const SinkName& name, const std::vector<SinkColumn>& columns, Oid owner,
                         const std::string& comment) {
    const char* nsp = name.schema.c_str();
    const Oid ns = pg_call([&] { return get_namespace_oid(nsp, true); });
    if (!OidIsValid(ns))
        throw Error(sqlstate::kInvalidSchemaName, "schema \"" + name.schema + "\" does not exist",
                    "create_aggregation creates a missing sink table, never a schema: CREATE "
                    "SCHEMA first.");
    if (!pg_call([&] { return pg_namespace_aclcheck(ns, owner, ACL_CREATE) == ACLCHECK_OK; }))
        throw Error(sqlstate::kInsufficientPrivilege, "permission denied to create sink table " +
                                                          name.display() + " in schema " +
                                                          name.schema);
    std::string defs, key;
    for (const SinkColumn& c : columns) {
        // A text key compares bytewise (COLLATE "C", README "Key collation"): every primary-key
        // step of every write is then a memcmp, not the database collation's strcoll, and the
        // writer's sort (by bytes) is the index's order. Equality is the same in any
        // deterministic collation, so the windows stay what they are.
        const bool bytewise = c.is_key && (c.type == "text" || c.type == "character varying") &&
                              c.definition.compare(0, c.type.size(), c.type) == 0;
        const std::string def = bytewise
                                    ? c.type + " COLLATE \"C\"" + c.definition.substr(c.type.size())
                                    : c.definition;
        defs += quote_ident(c.name) + " " + def + ", ";
        if (c.is_key) key += quote_ident(c.name) + ", ";
    }
    key += "window_start";
    // room on each page, so rewriting a window is a HOT update (no index entry)
    spi_exec("CREATE TABLE " + name.display() + " (" + defs + "PRIMARY KEY (" + key +
             ")) WITH (fillfactor = 70)");
    spi_exec("ALTER TABLE " + name.display() + " OWNER TO " + role_name(owner));
    const char* lit = comment.c_str();
    const std::string quoted = pg_call([&] { return quote_literal_cstr(lit); });
    spi_exec("COMMENT ON TABLE " + name.display() + " IS " + quoted);
    return find_relation(name.schema, name.table);
}
