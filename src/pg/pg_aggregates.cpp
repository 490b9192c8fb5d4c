// PostgreSQL aggregate calls as ExternalAggregates: setup (pg_aggregate, polymorphic
// transition types, support function expressions, privileges) and the per-window operations.
// Everything inside pg_call lambdas is PostgreSQL calls and plain data only (guard.hpp).
#include "stoatflow/pg/pg_aggregates.hpp"

#include "stoatflow/core/error.hpp"

#include <cstring>

#include "stoatflow/pg/executor.hpp"

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

namespace {

constexpr std::uint8_t kFormat = 1;
constexpr std::uint8_t kValue = 0, kNoValue = 1, kNull = 2;
constexpr std::size_t kContextOverhead = 256;  // an AllocSet's header, roughly

Datum* vals(PgAggregates::Handle* h) { return reinterpret_cast<Datum*>(h + 1); }
std::uint8_t* flags(PgAggregates::Handle* h, std::size_t n) {
    return reinterpret_cast<std::uint8_t*>(vals(h) + n);
}

FunctionCallInfo new_fcinfo(Oid fn, Expr* expr, int nargs, Oid collation, AggState* agg,
                            MemoryContext cxt) {
    auto* finfo = static_cast<FmgrInfo*>(MemoryContextAllocZero(cxt, sizeof(FmgrInfo)));
    fmgr_info_cxt(fn, finfo, cxt);
    fmgr_info_set_expr(reinterpret_cast<Node*>(expr), finfo);
    auto fc =
        static_cast<FunctionCallInfo>(MemoryContextAllocZero(cxt, SizeForFunctionCallInfo(nargs)));
    InitFunctionCallInfoData(*fc, finfo, nargs, collation, reinterpret_cast<Node*>(agg), nullptr);
    return fc;
}

void check_function(Oid fn, Oid owner) {
    if (!OidIsValid(fn)) return;
    const AclResult r = pg_proc_aclcheck(fn, owner, ACL_EXECUTE);
    if (r != ACLCHECK_OK) aclcheck_error(r, OBJECT_FUNCTION, get_func_name(fn));
}

// nodeAgg's per-transition setup for one Aggref (build_pertrans_for_aggref and its caller).
void setup_call(PgAggregates::Call* c, Aggref* aggref, AggState* agg, MemoryContext cxt) {
    const MemoryContext old = MemoryContextSwitchTo(cxt);
    const AclResult r = pg_proc_aclcheck(aggref->aggfnoid, GetUserId(), ACL_EXECUTE);
    if (r != ACLCHECK_OK) aclcheck_error(r, OBJECT_AGGREGATE, get_func_name(aggref->aggfnoid));
    HeapTuple tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(aggref->aggfnoid));
    if (!HeapTupleIsValid(tup))
        elog(ERROR, "cache lookup failed for aggregate %u", aggref->aggfnoid);
    auto* form = reinterpret_cast<Form_pg_aggregate>(GETSTRUCT(tup));
    HeapTuple proc = SearchSysCache1(PROCOID, ObjectIdGetDatum(aggref->aggfnoid));
    if (!HeapTupleIsValid(proc))
        elog(ERROR, "cache lookup failed for function %u", aggref->aggfnoid);
    const Oid owner = reinterpret_cast<Form_pg_proc>(GETSTRUCT(proc))->proowner;
    ReleaseSysCache(proc);
    const Oid transfn = form->aggtransfn, finalfn = form->aggfinalfn;
    const Oid combinefn = form->aggcombinefn, serialfn = form->aggserialfn;
    const Oid deserialfn = form->aggdeserialfn;
    check_function(transfn, owner);
    check_function(finalfn, owner);
    check_function(combinefn, owner);
    check_function(serialfn, owner);
    check_function(deserialfn, owner);

    Oid input_types[FUNC_MAX_ARGS];
    const int nargs = get_aggregate_argtypes(aggref, input_types);
    const int ndirect = list_length(aggref->aggdirectargs);
    const Oid transtype =
        resolve_aggregate_transtype(aggref->aggfnoid, form->aggtranstype, input_types, nargs);
    c->aggref = aggref;
    c->nargs = nargs;
    c->transtype = transtype;
    get_typlenbyval(transtype, &c->translen, &c->transbyval);
    c->internal = transtype == INTERNALOID;
    bool init_null = true;
    const Datum init_text =
        SysCacheGetAttr(AGGFNOID, tup, Anum_pg_aggregate_agginitval, &init_null);
    c->init_null = init_null;
    c->init_value = 0;
    if (!init_null) {
        Oid in, ioparam;
        getTypeInputInfo(transtype, &in, &ioparam);
        c->init_value = OidInputFunctionCall(in, TextDatumGetCString(init_text), ioparam, -1);
    }
    const bool final_extra = form->aggfinalextra;
    ReleaseSysCache(tup);

    Expr* expr = nullptr;
    build_aggregate_transfn_expr(input_types, nargs, ndirect, aggref->aggvariadic, transtype,
                                 aggref->inputcollid, transfn, InvalidOid, &expr, nullptr);
    c->trans = new_fcinfo(transfn, expr, nargs + 1, aggref->inputcollid, agg, cxt);
    c->transfn_strict = c->trans->flinfo->fn_strict;
    // A strict transfn with a NULL initval takes its first input as the state (nodeAgg's check).
    if (c->transfn_strict && c->init_null &&
        (nargs <= ndirect || !IsBinaryCoercible(input_types[ndirect], transtype)))
        ereport(ERROR, (errcode(ERRCODE_INVALID_FUNCTION_DEFINITION),
                        errmsg("aggregate %u needs to have compatible input type and transition "
                               "type",
                               aggref->aggfnoid)));
    c->combine = nullptr;
    c->combinefn_strict = false;
    if (OidIsValid(combinefn)) {
        Oid both[2] = {transtype, transtype};
        build_aggregate_transfn_expr(both, 1, 0, false, transtype, aggref->inputcollid, combinefn,
                                     InvalidOid, &expr, nullptr);
        c->combine = new_fcinfo(combinefn, expr, 2, aggref->inputcollid, agg, cxt);
        c->combinefn_strict = c->combine->flinfo->fn_strict;
    }
    c->serial = c->deserial = nullptr;
    if (c->internal) {
        if (!OidIsValid(serialfn) || !OidIsValid(deserialfn))
            ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                            errmsg("aggregate %s has an internal state without serialization",
                                   format_procedure(aggref->aggfnoid))));
        build_aggregate_serialfn_expr(serialfn, &expr);
        c->serial = new_fcinfo(serialfn, expr, 1, InvalidOid, agg, cxt);
        build_aggregate_deserialfn_expr(deserialfn, &expr);
        c->deserial = new_fcinfo(deserialfn, expr, 2, InvalidOid, agg, cxt);
    } else {
        Oid fn;
        bool varlena;
        getTypeBinaryOutputInfo(transtype, &fn, &varlena);
        fmgr_info_cxt(fn, &c->send, cxt);
        getTypeBinaryInputInfo(transtype, &fn, &c->recv_ioparam);
        fmgr_info_cxt(fn, &c->recv, cxt);
    }
    c->final = nullptr;
    c->finalfn_strict = false;
    c->nfinal = 0;
    if (OidIsValid(finalfn)) {
        c->nfinal = final_extra ? nargs + 1 : ndirect + 1;
        build_aggregate_finalfn_expr(input_types, c->nfinal, transtype, aggref->aggtype,
                                     aggref->inputcollid, finalfn, &expr);
        c->final = new_fcinfo(finalfn, expr, c->nfinal, aggref->inputcollid, agg, cxt);
        c->finalfn_strict = c->final->flinfo->fn_strict;
    }
    MemoryContextSwitchTo(old);
}

// ExecAggTransReparent: a new by-reference state into the window's memory, the old one freed.
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

PgAggregates::Handle* new_handle(MemoryContext states, bool own, std::size_t size) {
    MemoryContext cxt = nullptr;
    if (own) cxt = AllocSetContextCreate(states, "stoatflow window state", ALLOCSET_SMALL_SIZES);
    auto* h = static_cast<PgAggregates::Handle*>(MemoryContextAllocZero(own ? cxt : states, size));
    h->cxt = cxt;
    h->accounted = 0;
    return h;
}

void free_handle(PgAggregates::Handle* h) {
    if (h->cxt)
        MemoryContextDelete(h->cxt);
    else
        pfree(h);
}

}  // namespace

PgAggregates::PgAggregates(const std::vector<Aggref*>& aggrefs, MemoryContext parent) {
    cxt_ = pg_call([&] {
        return AllocSetContextCreate(parent, "stoatflow aggregates", ALLOCSET_DEFAULT_SIZES);
    });
    states_ = pg_call([&] {
        return AllocSetContextCreate(cxt_, "stoatflow window states", ALLOCSET_DEFAULT_SIZES);
    });
    scratch_ = pg_call([&] {
        return AllocSetContextCreate(cxt_, "stoatflow aggregate calls", ALLOCSET_DEFAULT_SIZES);
    });
    const int n = static_cast<int>(aggrefs.size());
    aggstate_ = pg_call([&] {
        const MemoryContext old = MemoryContextSwitchTo(cxt_);
        AggState* agg = makeNode(AggState);
        agg->curaggcontext = makeNode(ExprContext);
        agg->tmpcontext = makeNode(ExprContext);
        agg->tmpcontext->ecxt_per_tuple_memory = scratch_;
        agg->numtrans = n;
        agg->numaggs = n;
        agg->pertrans =
            static_cast<AggStatePerTrans>(palloc0(sizeof(AggStatePerTransData) * (n + 1)));
        agg->peragg = static_cast<AggStatePerAgg>(palloc0(sizeof(AggStatePerAggData) * (n + 1)));
        MemoryContextSwitchTo(old);
        return agg;
    });
    for (int i = 0; i < n; ++i) {
        Aggref* a = aggrefs[i];
        Call* c = pg_call([&] {
            auto* call = static_cast<Call*>(MemoryContextAllocZero(cxt_, sizeof(Call)));
            setup_call(call, a, aggstate_, cxt_);
            aggstate_->pertrans[i].aggref = a;
            aggstate_->pertrans[i].aggshared = false;
            aggstate_->peragg[i].aggref = a;
            aggstate_->peragg[i].transno = i;
            return call;
        });
        c->first_arg = static_cast<int>(total_args_);
        total_args_ += static_cast<std::size_t>(c->nargs);
        if (!c->combine) can_merge_ = false;
        if (!c->transbyval || c->internal) needs_context_ = true;
        calls_.push_back(c);
    }
    handle_size_ = MAXALIGN(sizeof(Handle)) + calls_.size() * (sizeof(Datum) + 1);
    pieces_.resize(calls_.size());
}

PgAggregates::~PgAggregates() {
    // Deleting the contexts frees every state still alive (the engine destroys them first).
    if (cxt_) MemoryContextDelete(cxt_);
}

std::size_t PgAggregates::first_arg(std::size_t i) const {
    return static_cast<std::size_t>(calls_[i]->first_arg);
}
std::size_t PgAggregates::arg_count(std::size_t i) const {
    return static_cast<std::size_t>(calls_[i]->nargs);
}

void PgAggregates::account(Handle* h) {
    const std::size_t now =
        h->cxt ? MemoryContextMemAllocated(h->cxt, true) + kContextOverhead : handle_size_ + 16;
    bytes_ = bytes_ - h->accounted + now;
    h->accounted = now;
}

core::ExternalHandle PgAggregates::create() {
    const std::size_t n = calls_.size();
    Handle* h = pg_call([&] {
        Handle* nh = new_handle(states_, needs_context_, handle_size_);
        for (std::size_t i = 0; i < n; ++i) {
            const Call* c = calls_[i];
            if (c->init_null) {
                flags(nh, n)[i] = kNoValue;
            } else {
                const MemoryContext old = MemoryContextSwitchTo(nh->cxt ? nh->cxt : states_);
                vals(nh)[i] = datumCopy(c->init_value, c->transbyval, c->translen);
                MemoryContextSwitchTo(old);
            }
        }
        return nh;
    });
    account(h);
    return h;
}

void PgAggregates::add(core::ExternalHandle handle, const void* row) {
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
            fc->args[0].value = v[i];
            fc->args[0].isnull = f[i] != kValue;
            for (int j = 0; j < c->nargs; ++j) {
                fc->args[j + 1].value = a[j];
                fc->args[j + 1].isnull = an[j];
            }
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
        MemoryContextSwitchTo(old);
    });
    account(h);
}

void PgAggregates::merge(core::ExternalHandle into_h, core::ExternalHandle from_h) {
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
            if (c->combinefn_strict) {
                if (ff[i] != kValue || f[i] == kNull) continue;
                if (f[i] == kNoValue) {
                    MemoryContextSwitchTo(window);
                    v[i] = datumCopy(fv[i], c->transbyval, c->translen);
                    MemoryContextSwitchTo(scratch);
                    f[i] = kValue;
                    continue;
                }
            }
            FunctionCallInfo fc = c->combine;
            fc->args[0].value = v[i];
            fc->args[0].isnull = f[i] != kValue;
            fc->args[1].value = fv[i];
            fc->args[1].isnull = ff[i] != kValue;
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
        MemoryContextSwitchTo(old);
    });
    account(into);
}

core::ExternalHandle PgAggregates::copy(core::ExternalHandle src_h) {
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
        if (h) free_handle(h);
        throw;
    }
    account(h);
    return h;
}

void PgAggregates::destroy(core::ExternalHandle handle) noexcept {
    auto* h = static_cast<Handle*>(handle);
    if (!h) return;
    bytes_ -= h->accounted;
    if (!h->cxt) {  // by-value states only: nothing else to free
        pfree(h);
        return;
    }
    MemoryContextDelete(h->cxt);
}

void PgAggregates::serialize(core::ExternalHandle handle, std::string& out) {
    auto* h = static_cast<Handle*>(handle);
    const std::size_t n = calls_.size();
    Call* const* calls = calls_.data();
    AggState* agg = aggstate_;
    MemoryContext scratch = scratch_;
    StringInfo buf = pg_call([&] {
        MemoryContextReset(scratch);
        const MemoryContext old = MemoryContextSwitchTo(scratch);
        agg->curaggcontext->ecxt_per_tuple_memory = h->cxt ? h->cxt : states_;
        StringInfo b = makeStringInfo();
        appendStringInfoCharMacro(b, static_cast<char>(kFormat));
        for (std::size_t i = 0; i < n; ++i) {
            const Call* c = calls[i];
            std::uint8_t flag = flags(h, n)[i];
            bytea* bytes = nullptr;
            if (flag == kValue) {
                if (c->internal) {
                    c->serial->args[0].value = vals(h)[i];
                    c->serial->args[0].isnull = false;
                    c->serial->isnull = false;
                    const Datum d = FunctionCallInvoke(c->serial);
                    if (c->serial->isnull)
                        flag = kNull;
                    else
                        bytes = DatumGetByteaPP(d);
                } else {
                    bytes = SendFunctionCall(const_cast<FmgrInfo*>(&c->send), vals(h)[i]);
                }
            }
            appendStringInfoCharMacro(b, static_cast<char>(flag));
            if (flag != kValue) continue;
            const uint32 len = VARSIZE_ANY_EXHDR(bytes);
            const char be[4] = {static_cast<char>(len >> 24), static_cast<char>(len >> 16),
                                static_cast<char>(len >> 8), static_cast<char>(len)};
            appendBinaryStringInfo(b, be, 4);
            appendBinaryStringInfo(b, VARDATA_ANY(bytes), static_cast<int>(len));
        }
        MemoryContextSwitchTo(old);
        return b;
    });
    out.append(buf->data, static_cast<std::size_t>(buf->len));
}

// Checks serialize's framing (C++ only), then reads every piece into a new handle.
PgAggregates::Handle* PgAggregates::parse_and_read(const char* data, std::size_t len) {
    const std::size_t n = calls_.size();
    std::size_t at = 0;
    auto corrupt = [&](const char* what) {
        return Error(sqlstate::kDataCorrupted,
                     std::string("aggregate state bytes are corrupted: ") + what);
    };
    if (len < 1 || static_cast<std::uint8_t>(data[0]) != kFormat) throw corrupt("unknown format");
    at = 1;
    for (std::size_t i = 0; i < n; ++i) {
        if (at >= len) throw corrupt("truncated");
        Piece& p = pieces_[i];
        p.flag = static_cast<std::uint8_t>(data[at++]);
        if (p.flag > kNull) throw corrupt("bad flag");
        p.data = nullptr;
        p.len = 0;
        if (p.flag != kValue) continue;
        if (len - at < 4) throw corrupt("truncated");
        const auto* u = reinterpret_cast<const unsigned char*>(data + at);
        p.len = (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) |
                (std::uint32_t{u[2]} << 8) | std::uint32_t{u[3]};
        at += 4;
        if (p.len > len - at || p.len > MaxAllocSize - VARHDRSZ - 1) throw corrupt("truncated");
        p.data = data + at;
        at += p.len;
    }
    if (at != len) throw corrupt("trailing bytes");

    const Piece* pieces = pieces_.data();
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
            agg->curaggcontext->ecxt_per_tuple_memory = window;
            for (std::size_t i = 0; i < n; ++i) {
                const Call* c = calls[i];
                const Piece& p = pieces[i];
                flags(h, n)[i] = p.flag;
                if (p.flag != kValue) continue;
                if (c->internal) {
                    auto* b = static_cast<bytea*>(palloc(VARHDRSZ + p.len));
                    SET_VARSIZE(b, VARHDRSZ + p.len);
                    memcpy(VARDATA(b), p.data, p.len);
                    bool isnull = false;
                    vals(h)[i] =
                        read_internal(c, agg, PointerGetDatum(b), window, scratch, &isnull);
                    if (isnull) flags(h, n)[i] = kNull;
                    continue;
                }
                StringInfoData si;
                si.data = static_cast<char*>(palloc(p.len + 1));
                memcpy(si.data, p.data, p.len);
                si.data[p.len] = '\0';
                si.len = static_cast<int>(p.len);
                si.maxlen = static_cast<int>(p.len) + 1;
                si.cursor = 0;
                const Datum d =
                    ReceiveFunctionCall(const_cast<FmgrInfo*>(&c->recv), &si, c->recv_ioparam, -1);
                if (si.cursor != si.len)
                    ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                                    errmsg("aggregate state bytes are corrupted: %s",
                                           "incorrect binary data format")));
                MemoryContextSwitchTo(window);
                vals(h)[i] = datumCopy(d, c->transbyval, c->translen);
                MemoryContextSwitchTo(scratch);
            }
            MemoryContextSwitchTo(old);
        });
    } catch (...) {
        if (h) free_handle(h);
        throw;
    }
    return h;
}

core::ExternalHandle PgAggregates::deserialize(const char* data, std::size_t len) {
    Handle* h = parse_and_read(data, len);
    account(h);
    return h;
}

void PgAggregates::release_final() noexcept {
    if (final_) free_handle(final_);
    final_ = nullptr;
}

void PgAggregates::finalize(const char* data, std::size_t len, Datum* values, bool* nulls) {
    release_final();
    final_ = parse_and_read(data, len);
    Handle* h = final_;
    const std::size_t n = calls_.size();
    Call* const* calls = calls_.data();
    AggState* agg = aggstate_;
    MemoryContext scratch = scratch_;
    pg_call([&] {
        const MemoryContext old = MemoryContextSwitchTo(scratch);
        agg->curaggcontext->ecxt_per_tuple_memory = h->cxt ? h->cxt : scratch;
        for (std::size_t i = 0; i < n; ++i) {
            const Call* c = calls[i];
            const bool isnull = flags(h, n)[i] != kValue;
            if (!c->final) {
                values[i] = isnull ? 0 : vals(h)[i];
                nulls[i] = isnull;
                continue;
            }
            FunctionCallInfo fc = c->final;
            fc->args[0].value = isnull ? 0 : vals(h)[i];
            fc->args[0].isnull = isnull;
            for (int j = 1; j < c->nfinal; ++j) {  // finalfunc_extra: NULLs of the input types
                fc->args[j].value = 0;
                fc->args[j].isnull = true;
            }
            if (c->finalfn_strict && (isnull || c->nfinal > 1)) {
                values[i] = 0;
                nulls[i] = true;
                continue;
            }
            fc->isnull = false;
            agg->curperagg = &agg->peragg[i];
            values[i] = FunctionCallInvoke(fc);
            agg->curperagg = nullptr;
            nulls[i] = fc->isnull;
        }
        MemoryContextSwitchTo(old);
    });
}

}  // namespace stoatflow::pg
