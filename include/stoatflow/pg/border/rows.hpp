// Bulk row writes into a table stoatflow owns or writes (segment tables, sinks, the outbox):
// one array per column through SPI, or a heap multi-insert where the table allows it.
#pragma once

#include "stoatflow/core/time.hpp"

#include <string>
#include <vector>

#include "stoatflow/pg/border/spi.hpp"

namespace stoatflow::pg {

// The columns written to a table: names and SQL types, in the order of the row-major values.
struct Columns {
    std::vector<std::string> names;
    std::vector<Oid> types;
    void add(const std::string& name, Oid type) {
        names.push_back(name);
        types.push_back(type);
    }
};

// Milliseconds since the epoch as a PostgreSQL timestamptz.
Datum millis_to_timestamptz(core::Millis ms);

// A text / bytea Datum (palloc'd in the current memory context).
Datum text_datum(const std::string& s);
Datum bytea_datum(const std::string& s);

// "ROWS FROM (pg_catalog.unnest($first), ..., pg_catalog.unnest($first + n - 1))": n parameter
// arrays as rows. (Only the unqualified unnest(a, b) is expanded this way by the parser; the
// worker's SQL qualifies every function, README "Security".)
std::string unnest_rows(int n, int first = 1);

// Writes row-major values in one statement: INSERT, or with `conflict_target` (e.g.
// "key, window_start") INSERT … ON CONFLICT (target) DO UPDATE of every other column.
// `table` is already quoted and schema-qualified.
void insert_rows(const std::string& table, const Columns& cols, const std::vector<Datum>& values,
                 const std::vector<bool>& nulls, const std::string& conflict_target = {});

// Appends rows without the executor where the table allows it (append_rows), else INSERTs.
void append_or_insert(Oid relid, const std::string& table, const Columns& cols,
                      const std::vector<Datum>& values, const std::vector<bool>& nulls,
                      bool with_indexes);

}  // namespace stoatflow::pg
