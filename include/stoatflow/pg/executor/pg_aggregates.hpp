// PostgreSQL's aggregate calls of one aggregation as the window engine's ExternalAggregates
// (src/pg/worker/README.md, "PostgreSQL aggregates in the worker", items 3-7): transition, combine,
// copy, bytes and finalization, with a fake AggState so that transition functions written for
// nodeAgg (AggCheckCallContext) run unchanged. Internal to the executor (executor.hpp).
//
// Memory: a window without internal states is one palloc'd block in a context shared by all
// windows, its by-reference states palloc'd there too (pfree'd, or deleted when an expanded
// object, on destroy); a window with an internal state gets its own small memory context (its
// states, and what the transition functions allocate in the aggregate context), deleted on
// destroy. Every call runs with CurrentMemoryContext = a scratch context reset at the start of
// each operation.
//
// Bytes (serialize/deserialize): a format byte (1), then per call a flag byte (0: a value,
// 1: NULL, no input yet; 2: NULL from a transition) and, for a value, a 4-byte big-endian length
// and the bytes: the serialfunc's bytea payload for an internal state, else the state type's
// send function's output. The bytes come only from stoatflow's own state tables and sink
// writer; still, the framing is checked here before any PostgreSQL call sees it, and the
// receive functions check their input, so garbage raises XX001 (or the receive function's
// error) instead of crashing. An internal state's deserialfunc may trust its payload.
#pragma once

#include "stoatflow/core/external_aggregate.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"

extern "C" {
#include "nodes/execnodes.h"
#include "nodes/primnodes.h"
}

namespace stoatflow::pg {

class PgAggregates final : public core::ExternalAggregates {
public:
    // aggrefs: the aggregation's Aggref nodes in call order (args already planned); they and
    // everything looked up live in a context under `parent`. Checks EXECUTE on each aggregate
    // (current user) and on its support functions (the aggregate's owner), as nodeAgg does.
    PgAggregates(const std::vector<Aggref*>& aggrefs, MemoryContext parent);
    ~PgAggregates() override;
    PgAggregates(const PgAggregates&) = delete;
    PgAggregates& operator=(const PgAggregates&) = delete;

    std::size_t calls() const { return calls_.size(); }
    // Each call's arguments in CallInputs::args: [first_arg(i), first_arg(i) + arg_count(i)).
    std::size_t first_arg(std::size_t i) const;
    std::size_t arg_count(std::size_t i) const;
    std::size_t total_args() const { return total_args_; }

    core::ExternalHandle create() override;
    void add(core::ExternalHandle h, const void* row) override;
    void merge(core::ExternalHandle into, core::ExternalHandle from) override;
    core::ExternalHandle copy(core::ExternalHandle h) override;
    void destroy(core::ExternalHandle h) noexcept override;
    void serialize(core::ExternalHandle h, std::string& out) override;
    core::ExternalHandle deserialize(const char* data, std::size_t len) override;
    bool can_merge() const override { return can_merge_; }
    std::size_t memory_bytes() const override { return bytes_; }

    // Every call's final value from serialize's bytes (a scratch copy: live states are never
    // touched) into values/nulls (calls() entries), valid until the next operation here.
    void finalize(const char* data, std::size_t len, Datum* values, bool* nulls);
    // Frees finalize's scratch copy (its values are gone after this).
    void release_final() noexcept;

    // The support function that ran last (the one that failed, after an error): "transition
    // function public.f(integer,integer) of aggregate public.agg(integer)"; empty before any.
    std::string running_function() const;

    struct Call;  // one aggregate call (pg_aggregates.cpp)
    struct Handle;
    struct Piece {
        std::uint8_t flag = 0;
        const char* data = nullptr;
        std::uint32_t len = 0;
    };

private:
    void account(Handle* h);
    Handle* parse_and_read(const char* data, std::size_t len);

    MemoryContext cxt_ = nullptr;      // lookups, fcinfos, the fake AggState
    MemoryContext states_ = nullptr;   // windows' blocks and contexts
    MemoryContext scratch_ = nullptr;  // CurrentMemoryContext of every call; reset per operation
    AggState* aggstate_ = nullptr;
    std::vector<Call*> calls_;
    std::vector<Piece> pieces_;
    std::size_t total_args_ = 0;
    bool can_merge_ = true;
    bool needs_context_ = false;  // any internal state
    std::size_t handle_size_ = 0;
    std::size_t bytes_ = 0;
    Handle* final_ = nullptr;  // finalize's scratch copy
    // What runs now (set before each support function call, plain stores): for error messages.
    const char* running_what_ = nullptr;
    Oid running_fn_ = InvalidOid;
    Oid running_agg_ = InvalidOid;
};

}  // namespace stoatflow::pg
