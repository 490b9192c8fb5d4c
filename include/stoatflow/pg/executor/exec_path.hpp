// The worker's side of PostgreSQL's executor (README "Expressions and PostgreSQL aggregates"): an
// aggregation's executor built from its declaration, its aggregate states as the window engine sees
// them (every call as the aggregation's owner), and the way back from an engine's layout to its
// executor.
#pragma once

#include "stoatflow/core/aggregate.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/executor/executor.hpp"

namespace stoatflow::pg {

// The aggregation's declaration analyzed again (analyze.hpp: names pinned, so the same objects
// as at declaration, or a clear error if one was dropped) and prepared, as its owner in a
// security-restricted operation. In a transaction.
// `used` (when given, RowType::width() entries): the columns its expressions read are set.
std::unique_ptr<AggregationExecutor> make_executor(const SourceDef& source,
                                                   const AggregationDef& def, const RowType& row,
                                                   MemoryContext parent,
                                                   std::vector<bool>* used = nullptr);

// A source's key and event time (README "Expressions and PostgreSQL aggregates"): a column's name,
// or an expression over its row. Empty means the metadata column (kafka_key, kafka_timestamp), as
// in 0.1.
bool source_names_column(const SourceDef& source, const std::string& name);
std::string source_key_text(const SourceDef& source);   // as an expression over the row
std::string source_time_text(const SourceDef& source);  // as an expression over the row

// The executor of a source whose key or event time is an expression: its key columns are the
// event time (when `time`) then the key (when `key`), as texts (key_texts()).
std::unique_ptr<AggregationExecutor> make_source_executor(const SourceDef& source,
                                                          const RowType& row, MemoryContext parent,
                                                          bool time, bool key,
                                                          std::vector<bool>* used);

// The executor's aggregate states for the window engine: every call must come from inside
// run_as_owner(owner) (checked). The executor must outlive what this returns.
std::shared_ptr<core::ExternalAggregates> owned_aggregates(AggregationExecutor& exec, Oid owner);

// The executor behind a layout whose external aggregates owned_aggregates made; nullptr for
// the built-in fast path.
AggregationExecutor* executor_of(const core::AggLayout& layout);

// An aggregation's layout as its worker builds it (with its executor, when it has one), for
// the SQL functions that read its state in a user's backend (resync_sink, window_state).
class BackendLayout {
public:
    explicit BackendLayout(const AggregationDef& def);  // SPI connected, in a transaction
    ~BackendLayout();
    BackendLayout(const BackendLayout&) = delete;
    BackendLayout& operator=(const BackendLayout&) = delete;
    const core::AggLayout& layout() const { return *layout_; }
    AggregationExecutor* executor() const { return exec_.get(); }

private:
    MemoryContext cxt_ = nullptr;
    std::optional<RowType> row_;
    std::unique_ptr<AggregationExecutor> exec_;
    std::unique_ptr<core::AggLayout> layout_;
};

}  // namespace stoatflow::pg
