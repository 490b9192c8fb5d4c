// create_aggregation's sink table (README "create_aggregation"): the name resolved as the caller
// means it, an existing table checked (privileges, one aggregation per sink, the shape rule every
// write applies), a missing one created and owned by the aggregation's owner.
#pragma once

#include <string>
#include <vector>

#include "stoatflow/pg/declare/declare.hpp"

namespace stoatflow::pg::declare {

// A role's name as SQL shows it (quoted where needed), or its id for a dropped role.
std::string role_name(Oid role);

// The relation schema.table, or InvalidOid (to_regclass of the quoted name).
Oid find_relation(const std::string& schema, const std::string& table);

// The sink as named: its schema (given, or where the caller's search_path finds the table, or
// the path's first schema, as CREATE TABLE would) and its table.
struct SinkName {
    std::string schema, table;
    std::string display() const;
};
SinkName sink_name_of(const OptText& sink);

// An existing sink: writable by the owner, written by no other aggregation, of the right shape.
void check_existing_sink(Oid sink, const SinkName& name, const std::vector<SinkColumn>& columns,
                         Oid owner);

// A missing sink: created in a schema where the owner may create tables, owned by the owner,
// with `comment`. Returns its id.
Oid create_sink(const SinkName& name, const std::vector<SinkColumn>& columns, Oid owner,
                const std::string& comment);

}  // namespace stoatflow::pg::declare
