// PostgreSQL aggregate calls as ExternalAggregates: the folding operations (add, merge, copy),
// with nodeAgg's rules for strict functions, NULL states and by-reference results.
// Everything inside pg_call lambdas is PostgreSQL calls and plain data only (guard.hpp).
#include "stoatflow/pg/executor/pg_aggregates_internal.hpp"

#include "stoatflow/core/error.hpp"

#include <cstring>

#include "stoatflow/pg/executor/executor.hpp"
#include "stoatflow/pg/border/sandbox.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "executor/nodeAgg.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parse_agg.h"
#include "parser/parse_coerce.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/expandeddatum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
}

namespace stoatflow::pg {

using namespace aggs_detail;

namespace aggs_detail {

Datum reparent(const PgAggregates::Call* c, MemoryContext window, Datum nv, bool nv_null, Datum old,
               bool old_null) {
    if (!nv_null) {
        const MemoryContext prev = MemoryContextSwitchTo(window);
        if (!(DatumIsReadWriteExpandedObject(nv, false, c->translen) &&
              MemoryContextGetParent(DatumGetEOHP(nv)->eoh_context) == window))
            nv = datumCopy(nv, false, c->translen);
        MemoryContextSwitchTo(prev);
    } else {
        nv = 0;
    }
    if (!old_null) {
        if (DatumIsReadWriteExpandedObject(old, false, c->translen))
            DeleteExpandedObject(old);
        else
            pfree(DatumGetPointer(old));
    }
    return nv;
}

// Calls a transition or combine function whose arguments are set and makes its result call
// i's state in `window` (a new by-reference result copied there, the old one freed).
void invoke_into(const PgAggregates::Call* c, AggState* agg, std::size_t i, FunctionCallInfo fc,
                 MemoryContext window, Datum* v, std::uint8_t* f) {
    fc->isnull = false;
    agg->curpertrans = &agg->pertrans[i];
    Datum nv = FunctionCallInvoke(fc);
    agg->curpertrans = nullptr;
    const bool nv_null = fc->isnull;
    if (!c->transbyval && DatumGetPointer(nv) != DatumGetPointer(v[i]))
        nv = reparent(c, window, nv, nv_null, v[i], f[i] != kValue);
    v[i] = nv_null ? 0 : nv;
    f[i] = nv_null ? kNull : kValue;
}

// An internal state from serialfn's bytes, owned by `window`. Deserialization functions
// allocate in CurrentMemoryContext (nodeAgg runs them in per-tuple memory and lets the combine
// function copy the state into the aggregate context): so they run in the scratch context and
// a non-strict combinefn(NULL, state) makes the window's own copy; without one, the
// deserialfn runs in the window's context.
Datum read_internal(const PgAggregates::Call* c, AggState* agg, Datum bytes, MemoryContext window,
                    MemoryContext scratch, bool* isnull) {
    agg->curaggcontext->ecxt_per_tuple_memory = window;
    const bool via_combine = c->combine && !c->combinefn_strict;
    if (!via_combine) MemoryContextSwitchTo(window);
    c->deserial->args[0].value = bytes;
    c->deserial->args[0].isnull = false;
    c->deserial->args[1].value = 0;
    c->deserial->args[1].isnull = false;
    c->deserial->isnull = false;
    Datum state = FunctionCallInvoke(c->deserial);
    MemoryContextSwitchTo(scratch);
    *isnull = c->deserial->isnull;
    if (!via_combine || *isnull) return *isnull ? 0 : state;
    c->combine->args[0].value = 0;
    c->combine->args[0].isnull = true;
    c->combine->args[1].value = state;
    c->combine->args[1].isnull = false;
    c->combine->isnull = false;
    state = FunctionCallInvoke(c->combine);
    *isnull = c->combine->isnull;
    return *isnull ? 0 : state;
}

}  // namespace aggs_detail

void PgAggregates::add(core::ExternalHandle handle, const void* row) {
    const UserCall call;
    auto* h = static_cast<Handle*>(handle);
    const auto* in = static_cast<const CallInputs*>(row);
    const std::size_t n = calls_.size();
    Call* const* calls = calls_.data();
    AggState* agg = aggstate_;
    MemoryContext scratch = scratch_;
    pg_call([&] {
        MemoryContextReset(scratch);
        const MemoryContext window = h->cxt ? h->cxt : states_;
        const MemoryContext old = MemoryContextSwitchTo(scratch);
        agg->curaggcontext->ecxt_per_tuple_memory = window;
        Datum* v = vals(h);
        std::uint8_t* f = flags(h, n);
        for (std::size_t i = 0; i < n; ++i) {
            if (in->skip[i]) continue;
            const Call* c = calls[i];
            const Datum* a = in->args + c->first_arg;
            const bool* an = in->nulls + c->first_arg;
            if (c->transfn_strict) {
                bool anynull = false;
                for (int j = 0; j < c->nargs; ++j) anynull |= an[j];
                if (anynull || f[i] == kNull) continue;
                if (f[i] == kNoValue) {  // the first input is the state
                    MemoryContextSwitchTo(window);
                    v[i] = datumCopy(a[0], c->transbyval, c->translen);
                    MemoryContextSwitchTo(scratch);
                    f[i] = kValue;
                    continue;
                }
            }
            FunctionCallInfo fc = c->trans;
            running_what_ = "transition function";
            running_fn_ = fc->flinfo->fn_oid;
            running_agg_ = c->aggref->aggfnoid;
            fc->args[0].value = v[i];
            fc->args[0].isnull = f[i] != kValue;
            for (int j = 0; j < c->nargs; ++j) {
                fc->args[j + 1].value = a[j];
                fc->args[j + 1].isnull = an[j];
            }
            invoke_into(c, agg, i, fc, window, v, f);
        }
        MemoryContextSwitchTo(old);
    });
    account(h);
}

void PgAggregates::merge(core::ExternalHandle into_h, core::ExternalHandle from_h) {
    const UserCall call;
    if (!can_merge_)
        throw Error(sqlstate::kInternalError, "merge called on aggregates without combinefunc");
    auto* into = static_cast<Handle*>(into_h);
    auto* from = static_cast<Handle*>(from_h);
    const std::size_t n = calls_.size();
    Call* const* calls = calls_.data();
    AggState* agg = aggstate_;
    MemoryContext scratch = scratch_;
    pg_call([&] {
        MemoryContextReset(scratch);
        const MemoryContext window = into->cxt ? into->cxt : states_;
        const MemoryContext old = MemoryContextSwitchTo(scratch);
        agg->curaggcontext->ecxt_per_tuple_memory = window;
        Datum* v = vals(into);
        std::uint8_t* f = flags(into, n);
        const Datum* fv = vals(from);
        const std::uint8_t* ff = flags(from, n);
        for (std::size_t i = 0; i < n; ++i) {
            const Call* c = calls[i];
            // Two windows' states are two partial states, combined as PostgreSQL's combine
            // phase does into a fresh group: a NULL state (no input yet, or a transition's
            // NULL) contributes nothing to a strict combinefn, and the first non-NULL one is
            // taken as it is.
            if (c->combinefn_strict) {
                if (ff[i] != kValue) continue;
                if (f[i] != kValue) {
                    MemoryContextSwitchTo(window);
                    v[i] = datumCopy(fv[i], c->transbyval, c->translen);
                    MemoryContextSwitchTo(scratch);
                    f[i] = kValue;
                    continue;
                }
            }
            FunctionCallInfo fc = c->combine;
            running_what_ = "combine function";
            running_fn_ = fc->flinfo->fn_oid;
            running_agg_ = c->aggref->aggfnoid;
            fc->args[0].value = v[i];
            fc->args[0].isnull = f[i] != kValue;
            fc->args[1].value = fv[i];
            fc->args[1].isnull = ff[i] != kValue;
            invoke_into(c, agg, i, fc, window, v, f);
        }
        MemoryContextSwitchTo(old);
    });
    account(into);
}

core::ExternalHandle PgAggregates::copy(core::ExternalHandle src_h) {
    const UserCall call;
    auto* src = static_cast<Handle*>(src_h);
    const std::size_t n = calls_.size();
    Call* const* calls = calls_.data();
    AggState* agg = aggstate_;
    MemoryContext scratch = scratch_;
    Handle* h = nullptr;
    try {
        pg_call([&] {
            MemoryContextReset(scratch);
            h = new_handle(states_, needs_context_, handle_size_);
            const MemoryContext window = h->cxt ? h->cxt : states_;
            const MemoryContext old = MemoryContextSwitchTo(scratch);
            for (std::size_t i = 0; i < n; ++i) {
                const Call* c = calls[i];
                const std::uint8_t sf = flags(src, n)[i];
                flags(h, n)[i] = sf;
                if (sf != kValue) continue;
                if (c->internal) {  // serialfn, then deserialfn into the new window
                    running_what_ = "serialization functions";
                    running_fn_ = c->serial->flinfo->fn_oid;
                    running_agg_ = c->aggref->aggfnoid;
                    agg->curaggcontext->ecxt_per_tuple_memory = src->cxt;
                    c->serial->args[0].value = vals(src)[i];
                    c->serial->args[0].isnull = false;
                    c->serial->isnull = false;
                    const Datum bytes = FunctionCallInvoke(c->serial);
                    if (c->serial->isnull) {
                        flags(h, n)[i] = kNull;
                        continue;
                    }
                    bool isnull = false;
                    vals(h)[i] = read_internal(c, agg, bytes, window, scratch, &isnull);
                    if (isnull) flags(h, n)[i] = kNull;
                } else {
                    MemoryContextSwitchTo(window);
                    vals(h)[i] = datumCopy(vals(src)[i], c->transbyval, c->translen);
                    MemoryContextSwitchTo(scratch);
                }
            }
            MemoryContextSwitchTo(old);
        });
    } catch (...) {
        if (h) free_handle(h, calls_.data(), calls_.size());
        throw;
    }
    account(h);
    return h;
}

}  // namespace stoatflow::pg
