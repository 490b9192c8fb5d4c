// Internal to the PgAggregates implementation (pg_aggregates*.cpp): one aggregate call as
// looked up, one window's block of states, and the helpers the operations share.
#pragma once

#include <cstddef>
#include <cstdint>

#include "stoatflow/pg/executor/pg_aggregates.hpp"

namespace stoatflow::pg {

struct PgAggregates::Call {
    Aggref* aggref;
    int nargs;
    int first_arg;
    Oid transtype;
    int16 translen;
    bool transbyval;
    bool internal;
    bool transfn_strict;
    bool combinefn_strict;
    bool finalfn_strict;
    bool init_null;
    Datum init_value;
    FunctionCallInfo trans;     // nargs + 1 arguments
    FunctionCallInfo combine;   // 2, or nullptr
    FunctionCallInfo serial;    // internal only
    FunctionCallInfo deserial;  // internal only
    FunctionCallInfo final;     // nfinal arguments, or nullptr
    int nfinal;
    FmgrInfo send;  // not internal
    FmgrInfo recv;
    Oid recv_ioparam;
};

// A window's states: the block is followed by Datum values[n] and uint8 flags[n].
struct PgAggregates::Handle {
    MemoryContext cxt;  // nullptr: by-value states only, the block lives in states_
    std::size_t accounted;
};

namespace aggs_detail {

inline constexpr std::uint8_t kFormat = 1;
inline constexpr std::uint8_t kValue = 0, kNoValue = 1, kNull = 2;
inline constexpr std::size_t kContextOverhead = 256;  // an AllocSet's header, roughly

inline Datum* vals(PgAggregates::Handle* h) { return reinterpret_cast<Datum*>(h + 1); }
inline std::uint8_t* flags(PgAggregates::Handle* h, std::size_t n) {
    return reinterpret_cast<std::uint8_t*>(vals(h) + n);
}

// A new window block (its own small context when `own`), its release (with its by-reference
// states when it has no context of its own), and the heap it holds (O(calls)).
PgAggregates::Handle* new_handle(MemoryContext states, bool own, std::size_t size);
void free_handle(PgAggregates::Handle* h, PgAggregates::Call* const* calls, std::size_t n);
std::size_t handle_bytes(PgAggregates::Handle* h, PgAggregates::Call* const* calls, std::size_t n);

// ExecAggTransReparent: a new by-reference state into the window's memory, the old one freed.
Datum reparent(const PgAggregates::Call* c, MemoryContext window, Datum nv, bool nv_null, Datum old,
               bool old_null);

// An internal state from serialfunc's bytes, owned by `window` (see pg_aggregates_fold.cpp).
Datum read_internal(const PgAggregates::Call* c, AggState* agg, Datum bytes, MemoryContext window,
                    MemoryContext scratch, bool* isnull);

}  // namespace aggs_detail
}  // namespace stoatflow::pg
