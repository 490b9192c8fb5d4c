// Bulk row writes: one array per column through SPI (INSERT, optionally ON CONFLICT DO
// UPDATE), or a heap multi-insert where the table allows it (append_rows in spi.cpp).
#include <algorithm>
#include <string>
#include <vector>

#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/pg/border/text.hpp"

extern "C" {
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

namespace stoatflow::pg {

Datum millis_to_timestamptz(core::Millis ms) {
    return TimestampTzGetDatum(core::ms_to_pg_timestamp(ms));
}

Datum text_datum(const std::string& s) {
    return PointerGetDatum(
        pg_call([&] { return cstring_to_text_with_len(s.data(), static_cast<int>(s.size())); }));
}

Datum bytea_datum(const std::string& s) {
    return PointerGetDatum(pg_call([&] {
        bytea* b = static_cast<bytea*>(palloc(VARHDRSZ + s.size()));
        SET_VARSIZE(b, VARHDRSZ + s.size());
        memcpy(VARDATA(b), s.data(), s.size());
        return b;
    }));
}

std::string unnest_rows(int n, int first) {
    std::string sql = "ROWS FROM (";
    for (int i = 0; i < n; ++i)
        sql +=
            (i ? ", pg_catalog.unnest($" : "pg_catalog.unnest($") + std::to_string(first + i) + ")";
    return sql + ")";
}

void insert_rows(const std::string& table, const Columns& cols, const std::vector<Datum>& values,
                 const std::vector<bool>& nulls, const std::string& conflict_target) {
    if (values.empty()) return;
    const std::size_t ncols = cols.names.size(), nrows = values.size() / ncols;
    // The conflict target's columns keep their values; every other column is updated.
    std::vector<std::string> target;
    for (std::size_t pos = 0; pos < conflict_target.size();) {
        std::size_t comma = conflict_target.find(',', pos);
        if (comma == std::string::npos) comma = conflict_target.size();
        std::string name = conflict_target.substr(pos, comma - pos);
        while (!name.empty() && name.front() == ' ') name.erase(0, 1);
        target.push_back(name);
        pos = comma + 1;
    }
    std::string names, updates;
    std::vector<SpiArg> args;
    std::vector<Datum> column;
    std::vector<bool> column_nulls;
    for (std::size_t c = 0; c < ncols; ++c) {
        column.clear();
        column_nulls.clear();
        for (std::size_t r = 0; r < nrows; ++r) {
            column.push_back(values[r * ncols + c]);
            column_nulls.push_back(nulls[r * ncols + c]);
        }
        const Oid elem = cols.types[c];
        const Oid array = pg_call([&] { return get_array_type(elem); });
        args.push_back({array, make_array(column, column_nulls, elem)});
        const std::string col = quote_ident(cols.names[c]);
        names += (c ? ", " : "") + col;
        if (std::find(target.begin(), target.end(), cols.names[c]) == target.end())
            updates += (updates.empty() ? "" : ", ") + col + " = EXCLUDED." + col;
    }
    std::string sql = "INSERT INTO " + table + " AS t (" + names + ") SELECT * FROM " +
                      unnest_rows(static_cast<int>(ncols));
    if (!conflict_target.empty())
        sql += " ON CONFLICT (" + conflict_target + ") DO UPDATE SET " + updates;
    spi_exec(sql, args);
}

void append_or_insert(Oid relid, const std::string& table, const Columns& cols,
                      const std::vector<Datum>& values, const std::vector<bool>& nulls,
                      bool with_indexes) {
    std::vector<const char*> names;
    for (const auto& n : cols.names) names.push_back(n.c_str());
    if (!OidIsValid(relid) || !append_rows(relid, names, values, nulls, with_indexes))
        insert_rows(table, cols, values, nulls);
}

}  // namespace stoatflow::pg
