// A source's executors, as the commit cycle keeps them (commit_cycle/exec_run.cpp builds them).
#pragma once

#include <memory>
#include <vector>

#include "stoatflow/core/external_aggregate.hpp"
#include "stoatflow/pg/executor/executor.hpp"

extern "C" {
#include "utils/palloc.h"
}

namespace stoatflow::pg {

// A source's executors (README "Expressions and PostgreSQL aggregates"): per aggregation, the
// executor that runs it and the aggregate states its engine keeps (nullptr for the built-in fast
// path). Destroyed after the engines.
struct ExecSet {
    MemoryContext cxt = nullptr;        // the executors' contexts live under this one
    MemoryContext batch_cxt = nullptr;  // one executor batch's converted rows
    std::vector<std::unique_ptr<AggregationExecutor>> executors;
    std::vector<std::shared_ptr<core::ExternalAggregates>> external;
    bool has_fast = false;   // some aggregation of the source takes the fast path
    std::vector<bool> used;  // per column of the row: read by some aggregation (or the source)
    // A source whose event time or key is an expression (README "Expressions and PostgreSQL
    // aggregates"): its executor gives them as texts (the event time first); nullptr when both are
    // columns.
    std::unique_ptr<AggregationExecutor> source;
    bool time_expr = false, key_expr = false;
    Oid time_type = InvalidOid;
    bool any() const {
        if (source) return true;
        for (const auto& e : executors)
            if (e) return true;
        return false;
    }
    ExecSet() = default;
    ExecSet(const ExecSet&) = delete;
    ExecSet& operator=(const ExecSet&) = delete;
    ~ExecSet();
};

}  // namespace stoatflow::pg
