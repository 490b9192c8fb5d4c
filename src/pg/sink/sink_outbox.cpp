// What a failing sink is owed (README "Security" isolation): a SinkWriter writes each commit's sink
// output in a subtransaction; when that fails, the output goes to the outbox
// (stoatflow.sink_outbox, same transaction as the state) and is retried with backoff until the
// sink takes it.
#include "stoatflow/core/error.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/sink/sink_writer.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
}

namespace stoatflow::pg {

namespace {
Columns outbox_columns() {
    Columns c;
    c.add("aggregation_id", INT4OID);
    c.add("key", TEXTOID);
    c.add("window_start", INT8OID);
    c.add("window_end", INT8OID);
    c.add("event_time", INT8OID);
    c.add("state", BYTEAOID);
    c.add("final", BOOLOID);
    c.add("removed", BOOLOID);
    return c;
}
}  // namespace

void outbox_add(std::int32_t aggregation_id, const core::AggLayout& layout,
                const std::vector<core::SinkDelete>& deletes,
                const std::vector<core::SinkRow>& upserts) {
    // The newest operation per window wins: deletes come before upserts within a commit.
    std::map<std::pair<std::string, core::Millis>, const core::SinkRow*> last;
    for (const auto& d : deletes) last[{d.key, d.start}] = nullptr;
    for (const auto& u : upserts) last[{u.key, u.start}] = &u;
    if (last.empty()) return;
    const Columns cols = outbox_columns();
    std::vector<Datum> values;
    std::vector<bool> nulls;
    std::string bytes;
    for (const auto& [id, u] : last) {
        bytes.clear();
        if (u)
            layout.serialize(u->cells.data(), bytes, std::nullopt,
                             layout.external() ? &u->external : nullptr);
        const Datum row[] = {Int32GetDatum(aggregation_id),
                             text_datum(id.first),
                             Int64GetDatum(id.second),
                             Int64GetDatum(u ? u->end : 0),
                             Int64GetDatum(u ? u->event_time : 0),
                             u ? bytea_datum(bytes) : (Datum)0,
                             BoolGetDatum(u && u->final),
                             BoolGetDatum(u == nullptr)};
        for (std::size_t c = 0; c < cols.names.size(); ++c) {
            values.push_back(row[c]);
            nulls.push_back(c == 5 && u == nullptr);
        }
    }
    insert_rows("stoatflow.sink_outbox", cols, values, nulls, "aggregation_id, key, window_start");
}

std::int64_t outbox_size(std::int32_t aggregation_id) {
    spi_exec("SELECT pg_catalog.count(*) FROM stoatflow.sink_outbox WHERE aggregation_id "
             "OPERATOR(pg_catalog.=) $1",
             {arg_int32(aggregation_id)});
    return *spi_int64(0, 1);
}

std::int64_t outbox_flush(const AggregationDef& def, const core::AggLayout& layout, Oid sink) {
    const auto n = spi_exec("SELECT key, window_start, window_end, event_time, state, final, "
                            "removed FROM stoatflow.sink_outbox "
                            "WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
                            {arg_int32(def.id)});
    std::vector<core::SinkDelete> deletes;
    std::vector<core::SinkRow> rows;
    for (std::uint64_t r = 0; r < n; ++r) {
        if (*spi_bool(r, 7)) {
            deletes.push_back({*spi_text(r, 1), *spi_int64(r, 2)});
            continue;
        }
        core::SinkRow row;
        row.key = *spi_text(r, 1);
        row.start = *spi_int64(r, 2);
        row.end = *spi_int64(r, 3);
        row.event_time = *spi_int64(r, 4);
        const auto bytes = spi_bytea(r, 5);
        if (!bytes) throw Error(sqlstate::kDataCorrupted, "sink outbox row without state");
        row.cells = layout.deserialize(bytes->data(), bytes->size(), nullptr,
                                       layout.external() ? &row.external : nullptr);
        row.final = *spi_bool(r, 6);
        rows.push_back(std::move(row));
    }
    std::vector<const core::SinkRow*> upserts;
    for (const auto& r : rows) upserts.push_back(&r);
    write_sink_rows(def, layout, sink, deletes, upserts);
    spi_exec("DELETE FROM stoatflow.sink_outbox WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
             {arg_int32(def.id)});
    return static_cast<std::int64_t>(n);
}

void SinkWriter::restore(std::int32_t aggregation_id) {
    if (outbox_size(aggregation_id) > 0) retry_.owe();  // retried at the first commit
}

std::int64_t SinkWriter::owed_windows(std::int32_t aggregation_id) const {
    return retry_.owed() ? outbox_size(aggregation_id) : 0;
}

// A failing sink stalls only its own aggregation: its writes run in a subtransaction; when
// they fail, what this commit owed the sink goes to the outbox instead (same transaction as
// the state, so nothing is lost or doubled across crashes) and the aggregation retries with
// backoff; once a write succeeds, the outbox drains into the sink in that commit.
void SinkWriter::write(AggregationDef& def, const core::AggLayout& layout,
                       const core::CommitOutput& out, core::Millis now) {
    const bool owed = retry_.owed();
    if (owed) outbox_add(def.id, layout, out.deletes, out.upserts);
    if (!owed && out.deletes.empty() && out.upserts.empty()) return;
    if (retry_.waiting(now)) return;
    Oid sink = InvalidOid;
    const std::string failure = try_in_subtransaction([&] {
        sink = resolve_sink(def);
        if (owed) {
            outbox_flush(def, layout, sink);
        } else {
            std::vector<const core::SinkRow*> upserts;
            upserts.reserve(out.upserts.size());
            for (const auto& u : out.upserts) upserts.push_back(&u);
            write_sink_rows(def, layout, sink, out.deletes, upserts);
        }
    });
    if (failure.empty()) {
        if (sink != def.sink) {  // re-created by name: from now on, this table
            spi_exec(
                "UPDATE stoatflow.aggregation SET sink = $2 WHERE aggregation_id OPERATOR(pg_catalog.=) $1",
                {arg_int32(def.id), {OIDOID, ObjectIdGetDatum(sink)}});
            def.sink = sink;
        }
        retry_.succeeded();
        return;
    }
    if (!owed) outbox_add(def.id, layout, out.deletes, out.upserts);
    retry_.failed(now, failure);
    const std::string name = def.name;
    const long long delay = static_cast<long long>(retry_.delay());
    pg_call([&] {
        ereport(LOG,
                (errmsg("stoatflow aggregation \"%s\": sink write failed, retrying in %lld ms: %s",
                        name.c_str(), delay, failure.c_str())));
    });
}

}  // namespace stoatflow::pg
