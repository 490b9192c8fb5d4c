// _parse_columns(columns text) → jsonb: create_source's column list, split by the core and each
// type resolved with PostgreSQL's type-name parser along the caller's search_path, stored as
// [{"name", "type" (format_type, schema-qualified unless in pg_catalog), "path"}].
#include "stoatflow/core/column_list.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/json_text.hpp"

#include <string>
#include <vector>

#include "stoatflow/pg/declare/declare.hpp"
#include "stoatflow/pg/catalog/row_type.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

namespace {
Oid type_namespace(Oid typid) {
    HeapTuple tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
    if (!HeapTupleIsValid(tup)) elog(ERROR, "cache lookup failed for type %u", typid);
    const Oid nsp = reinterpret_cast<Form_pg_type>(GETSTRUCT(tup))->typnamespace;
    ReleaseSysCache(tup);
    return nsp;
}
}  // namespace

std::string stoatflow::pg::declare::columns_json(const std::string& list) {
    const std::vector<core::ColumnDecl> decls = core::parse_column_list(list);
    const Oid caller = GetOuterUserId();
    const std::string search_path = pg_call([] { return caller_search_path_value(); });
    std::string json = "[";
    for (const auto& d : decls) {
        Oid typid = InvalidOid;
        int32 typmod = -1;
        try {
            resolve_type(d.type, search_path.c_str(), typid, typmod);
        } catch (const PgError& e) {
            throw Error(e.sqlstate(), "column \"" + d.name + "\": " + e.what(), e.hint());
        }
        char typtype = 0;
        bool temp = false, usable = false;
        const char* formatted = pg_call([&] {
            typtype = get_typtype(typid);
            temp = isAnyTempNamespace(type_namespace(typid));
            usable = pg_type_aclcheck(typid, caller, ACL_USAGE) == ACLCHECK_OK;
            // Formatted under the function's pinned search_path: anything outside pg_catalog
            // comes out schema-qualified, so the worker reads back this very type.
            return format_type_with_typemod(typid, typmod);
        });
        if (typtype == TYPTYPE_PSEUDO)
            throw Error(sqlstate::kInvalidTableDefinition,
                        "column \"" + d.name + "\" has pseudo-type " + formatted);
        if (temp)
            throw Error(sqlstate::kInvalidTableDefinition,
                        "column \"" + d.name + "\" has a temporary type, " + formatted,
                        "A source outlives the session; use a type of a permanent schema.");
        if (!usable)
            throw Error(sqlstate::kInsufficientPrivilege,
                        std::string("permission denied for type ") + formatted);
        if (json.size() > 1) json += ", ";
        json += "{\"name\": ";
        format::append_json_string(json, d.name);
        json += ", \"type\": ";
        format::append_json_string(json, formatted);
        json += ", \"path\": [";
        for (std::size_t i = 0; i < d.path.size(); ++i) {
            if (i > 0) json += ", ";
            format::append_json_string(json, d.path[i]);
        }
        json += "]}";
    }
    json += "]";
    return json;
}
