// An aggregation's sink: found again by id or, after a re-creation, by name; its shape checked
// against the aggregation before every write; deletes, new windows and rewrites written as the
// aggregation's owner; and the outbox holding what a failing sink is owed (README "Security"
// isolation).
#pragma once

#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/windowed_aggregation.hpp"

#include <cstdint>
#include <string>
#include <vector>

#include "stoatflow/flow/worker_policy.hpp"

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/border/rows.hpp"

namespace stoatflow::pg {

// The SQL type of an aggregate's sink column, and a window's value for it (a Datum of that type).
Oid sink_column_type(core::ColumnType t);
Datum sink_column_value(const core::AggLayout& layout, std::size_t i, const core::AggCell& cell,
                        bool* isnull);
// Every column stoatflow writes into a sink, in the order sink row values are built.
Columns sink_columns(const core::AggLayout& layout);

// What a sink is written as: its columns, and its key (the conflict target: the key columns,
// then window_start).
struct SinkShape {
    Columns cols;
    std::vector<std::string> key;
    std::string conflict_target() const;
};

// Who asks: create_aggregation (its messages name the sink as given), or a write (they name
// the aggregation too).
enum class SinkCheck { Declaring, Writing };

// The one rule for a sink's shape (README "create_aggregation"), at declaration and before every
// write: a table (or partitioned table) with every column of `shape` of exactly its type, a
// unique index on exactly the key, and no other column a write would leave NULL against a NOT
// NULL constraint (one without a default, identity or generation expression). Throws 42809,
// 42804/42703, 42P16. CHECK constraints and triggers judge rows, not the shape: left to the
// write. `display`: the sink's name as shown.
void check_sink_shape(Oid sink, const std::string& display, const std::string& aggregation,
                      const SinkShape& shape, SinkCheck when);

// The sink table now: the recorded id if that table still exists, else the table of the recorded
// name (the user re-created it). Throws 42P01 when neither exists.
Oid resolve_sink(const AggregationDef& def);

// Writes deletes, then upserts, into the sink as the aggregation's owner (run_as_owner): locks the
// sink (bounded by lock_timeout), checks its shape, and inserts rows marked fresh in bulk where the
// sink allows it. Throws on any failure; the caller owns the (sub)transaction.
void write_sink_rows(const AggregationDef& def, const core::AggLayout& layout, Oid sink,
                     const std::vector<core::SinkDelete>& deletes,
                     const std::vector<const core::SinkRow*>& upserts);

// The outbox (stoatflow.sink_outbox): the newest pending operation per window of an aggregation
// whose sink failed, written in the same transaction as its state, until the sink takes it.
void outbox_add(std::int32_t aggregation_id, const core::AggLayout& layout,
                const std::vector<core::SinkDelete>& deletes,
                const std::vector<core::SinkRow>& upserts);
// Writes what the outbox holds into the sink (write_sink_rows) and empties it; returns the windows.
std::int64_t outbox_flush(const AggregationDef& def, const core::AggLayout& layout, Oid sink);
std::int64_t outbox_size(std::int32_t aggregation_id);

// One aggregation's sink as the commit cycle writes it: each commit's output in a
// subtransaction; on failure into the outbox, retried with backoff (SinkRetry) until the sink
// takes it (sink_outbox.cpp). A sink re-created by name is followed (def.sink is updated).
class SinkWriter {
public:
    // Restored: owed (retried at the first commit) if the outbox holds windows.
    void restore(std::int32_t aggregation_id);
    void write(AggregationDef& def, const core::AggLayout& layout, const core::CommitOutput& out,
               core::Millis now);
    bool retry_due(core::Millis now) const { return retry_.due(now); }
    // The last failure while the sink is owed, else empty.
    const std::string& error() const { return retry_.error(); }
    // Windows the outbox holds for the sink (0 unless owed).
    std::int64_t owed_windows(std::int32_t aggregation_id) const;

private:
    flow::SinkRetry retry_;
};

}  // namespace stoatflow::pg
