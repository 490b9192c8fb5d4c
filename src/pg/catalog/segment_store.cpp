// Segment tables: DDL and registration, the bulk append of window versions, the restore read
// (newest version per window across segments), and whole-table expiry.
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/segment_layout.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/catalog/segment_store.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/border/text.hpp"
#include "stoatflow/pg/limits.hpp"

extern "C" {
#include "utils/memutils.h"
#include "access/htup_details.h"
#include "storage/bufpage.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/lsyscache.h"
}

namespace stoatflow::pg {

namespace {

std::string segment_relname(std::int32_t agg_id, core::Millis start) {
    return "a" + std::to_string(agg_id) + "_" +
           (start < 0 ? "m" + std::to_string(-start) : std::to_string(start));
}

Oid state_relid(const std::string& relname) {
    const char* name = relname.c_str();
    return pg_call(
        [&] { return get_relname_relid(name, get_namespace_oid("stoatflow_state", false)); });
}

Columns state_columns() {
    Columns c;
    c.add("key", TEXTOID);
    c.add("window_start", INT8OID);
    c.add("window_end", INT8OID);
    c.add("event_time", INT8OID);
    c.add("state", BYTEAOID);
    c.add("removed", BOOLOID);
    c.add("commit_seq", INT8OID);
    return c;
}

// A segment table was read and its rows copied: its read lock can go now, not at commit.
// Restoring an aggregation with thousands of live segments would otherwise hold thousands of
// locks in one transaction, more than PostgreSQL's shared lock table may have room for.
void release_read_lock(Oid relid) {
    pg_call([&] {
        LOCKTAG tag;
        SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
        while (LockHeldByMe(&tag, AccessShareLock)) LockRelease(&tag, AccessShareLock, false);
    });
}

}  // namespace

void SegmentStore::load() {
    segments_.clear();
    const auto n = spi_exec("SELECT segment_start, span_ms, relname, relid FROM stoatflow.segment "
                            "WHERE aggregation_id OPERATOR(pg_catalog.=) $1 ORDER BY segment_start",
                            {arg_int32(aggregation_id_)});
    for (std::uint64_t r = 0; r < n; ++r) {
        Segment s{*spi_int64(r, 1), *spi_int64(r, 2), *spi_text(r, 3),
                  static_cast<Oid>(spi_int64(r, 4).value_or(InvalidOid))};
        segments_[s.start] = std::move(s);
    }
}

void SegmentStore::read_windows(const core::AggLayout& layout,
                                const std::function<void(const core::WindowStateRow&)>& f) const {
    // Each segment is an append-only log of window versions; the newest version per window
    // (highest commit) wins, across segments (a session moves as it grows). One segment at a
    // time, so that each one's lock is held only while it is read.
    struct Newest {
        core::WindowStateRow row;
        std::int64_t seq = 0;
    };
    std::map<std::pair<std::string, core::Millis>, Newest> newest;
    for (const auto& [start, seg] : segments_) {
        const auto n = spi_exec(
            "SELECT DISTINCT ON (key, window_start) key, window_start, window_end, event_time, state, removed, "
            "commit_seq FROM stoatflow_state." +
            quote_ident(seg.relname) + " ORDER BY key, window_start, commit_seq DESC");
        for (std::uint64_t r = 0; r < n; ++r) {
            const std::int64_t seq = *spi_int64(r, 7);
            auto key = std::make_pair(*spi_text(r, 1), *spi_int64(r, 2));
            auto it = newest.find(key);
            if (it != newest.end() && it->second.seq >= seq) continue;
            core::WindowStateRow row;
            row.key = key.first;
            row.start = key.second;
            row.end = *spi_int64(r, 3);
            row.event_time = *spi_int64(r, 4);
            row.removed = *spi_bool(r, 6);
            if (!row.removed) {
                const auto bytes = spi_bytea(r, 5);
                if (!bytes) throw Error(sqlstate::kDataCorrupted, "window state row without state");
                row.cells = layout.deserialize(bytes->data(), bytes->size(), &row.floor,
                                               layout.external() ? &row.external : nullptr);
            }
            newest[std::move(key)] = {std::move(row), seq};
        }
        const Oid relid = OidIsValid(seg.relid) ? seg.relid : state_relid(seg.relname);
        if (OidIsValid(relid)) release_read_lock(relid);
    }
    for (const auto& [id, n] : newest) f(n.row);
}

std::int64_t SegmentStore::table_bytes(std::int64_t rows, std::size_t key_length,
                                       std::size_t state_bytes) {
    // One row of the table segment_for creates: tuple header, then key text, window_start,
    // window_end, event_time (bigint), state bytea, removed boolean, commit_seq bigint; short
    // varlena headers (1 byte) below 127 bytes, bigints aligned to 8.
    auto varlena = [](std::size_t n) { return n + (n < 127 ? 1 : 4); };
    std::size_t off = MAXALIGN(SizeofHeapTupleHeader);
    off += varlena(key_length);
    off = TYPEALIGN(8, off) + 3 * 8;
    off += varlena(state_bytes) + 1;
    off = TYPEALIGN(8, off) + 8;
    const std::size_t tuple = MAXALIGN(off) + sizeof(ItemIdData);
    const std::size_t per_page = (BLCKSZ - SizeOfPageHeaderData) / tuple;
    const std::int64_t pages =
        (rows + static_cast<std::int64_t>(per_page) - 1) / static_cast<std::int64_t>(per_page);
    return pages * BLCKSZ;
}

Segment& SegmentStore::segment_for(core::Millis start) {
    auto it = segments_.find(start);
    if (it != segments_.end()) return it->second;
    Segment seg{start, interval_, segment_relname(aggregation_id_, start)};
    // Index-free append-only log of window versions, tagged with the commit that wrote them.
    // The key compares bytewise (the restore's sort), whatever the database's collation.
    spi_exec(
        "CREATE TABLE stoatflow_state." + quote_ident(seg.relname) +
        " (key text COLLATE \"C\" NOT NULL, window_start bigint NOT NULL, window_end bigint NOT NULL, "
        "event_time bigint NOT NULL, state bytea, removed boolean NOT NULL, "
        "commit_seq bigint NOT NULL)");
    seg.relid = state_relid(seg.relname);
    // relid: stoatflow.stats sizes segments by id, so a segment dropped meanwhile is just gone.
    spi_exec(
        "INSERT INTO stoatflow.segment (aggregation_id, segment_start, span_ms, relname, relid) "
        "VALUES ($1, $2, $3, $4, $5)",
        {arg_int32(aggregation_id_),
         arg_int64(seg.start),
         arg_int64(seg.span),
         arg_text(seg.relname),
         {OIDOID, ObjectIdGetDatum(seg.relid)}});
    return segments_.emplace(start, seg).first->second;
}

SegmentStore::Written SegmentStore::write(const core::AggLayout& layout,
                                          const std::vector<core::WindowStateRow>& rows,
                                          std::int64_t seq) {
    Written written;
    if (rows.empty()) return written;
    // Group by segment: one multi-row append per segment table.
    std::map<core::Millis, std::vector<const core::WindowStateRow*>> by_segment;
    for (const auto& r : rows) by_segment[r.segment].push_back(&r);
    std::string bytes;
    // Rows are built and appended a chunk at a time in a context of their own, so that a commit
    // holds at most one chunk of serialized states beside the snapshot (large states: the
    // memory a commit needs, see worker_memory_limit in the README).
    const MemoryContext outer = CurrentMemoryContext;
    const MemoryContext chunk_cxt = pg_call([&] {
        return AllocSetContextCreate(outer, "stoatflow state rows", ALLOCSET_DEFAULT_SIZES);
    });
    for (const auto& [seg_start, group] : by_segment) {
        Segment& seg = segment_for(seg_start);
        if (!OidIsValid(seg.relid)) seg.relid = state_relid(seg.relname);
        // Row-major values of the 7 columns, appended without the executor; should the table
        // have been changed by hand (an index, a trigger, a column), by INSERT instead.
        constexpr int kCols = 7;
        std::vector<Datum> values;
        std::vector<bool> nulls;
        for (std::size_t from = 0; from < group.size(); from += kStateWriteChunkRows) {
            const std::size_t to = std::min(group.size(), from + kStateWriteChunkRows);
            values.clear();
            nulls.clear();
            MemoryContextSwitchTo(chunk_cxt);
            try {
                for (std::size_t k = from; k < to; ++k) {
                    const core::WindowStateRow* r = group[k];
                    if (!r->removed) {
                        bytes.clear();
                        layout.serialize(r->cells.data(), bytes, r->floor,
                                         layout.external() ? &r->external : nullptr);
                        written.bytes += static_cast<std::int64_t>(bytes.size());
                    }
                    const Datum row[kCols] = {text_datum(r->key),
                                              Int64GetDatum(r->start),
                                              Int64GetDatum(r->end),
                                              Int64GetDatum(r->event_time),
                                              r->removed ? (Datum)0 : bytea_datum(bytes),
                                              BoolGetDatum(r->removed),
                                              Int64GetDatum(seq)};
                    for (int c = 0; c < kCols; ++c) {
                        values.push_back(row[c]);
                        nulls.push_back(c == 4 && r->removed);
                    }
                }
                append_or_insert(seg.relid, "stoatflow_state." + quote_ident(seg.relname),
                                 state_columns(), values, nulls, false);
            } catch (...) {
                MemoryContextSwitchTo(outer);
                throw;
            }
            MemoryContextSwitchTo(outer);
            pg_call([&] { MemoryContextReset(chunk_cxt); });
        }
        spi_exec(
            "UPDATE stoatflow.segment SET rows_written = rows_written OPERATOR(pg_catalog.+) $3 "
            "WHERE aggregation_id OPERATOR(pg_catalog.=) $1 AND segment_start OPERATOR(pg_catalog.=) $2",
            {arg_int32(aggregation_id_), arg_int64(seg.start),
             arg_int64(static_cast<std::int64_t>(group.size()))});
        written.rows += static_cast<std::int64_t>(group.size());
    }
    pg_call([&] { MemoryContextDelete(chunk_cxt); });
    return written;
}

void SegmentStore::expire(core::Millis frontier) {
    // Whole-segment drops only; sink tables are never touched by expiry.
    for (auto it = segments_.begin(); it != segments_.end();) {
        const Segment& s = it->second;
        if (!core::SegmentLayout::expired(s.start, s.span, frontier, retention_)) break;
        spi_exec("DROP TABLE IF EXISTS stoatflow_state." + quote_ident(s.relname));
        spi_exec("DELETE FROM stoatflow.segment WHERE aggregation_id OPERATOR(pg_catalog.=) $1 "
                 "AND segment_start OPERATOR(pg_catalog.=) $2",
                 {arg_int32(aggregation_id_), arg_int64(s.start)});
        it = segments_.erase(it);
    }
}

}  // namespace stoatflow::pg
