// PostgreSQL aggregate calls as ExternalAggregates: setup (pg_aggregate, polymorphic
// transition types, support function expressions, privileges), creating and destroying states.
// Everything inside pg_call lambdas is PostgreSQL calls and plain data only (guard.hpp).
#include "stoatflow/pg/executor/pg_aggregates_internal.hpp"

#include "stoatflow/core/error.hpp"

#include <cstring>

#include "stoatflow/pg/executor/executor.hpp"

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

namespace {

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
    // The analysis refuses these; a tree that has them anyway is not run half-right.
    if (aggref->aggdistinct != NIL || aggref->aggorder != NIL || aggref->aggkind != AGGKIND_NORMAL)
        ereport(ERROR, (errcode(pg_errcode(sqlstate::kFeatureNotSupported)),
                        errmsg("aggregate %s with DISTINCT, ORDER BY or WITHIN GROUP cannot run in "
                               "a window",
                               format_procedure(aggref->aggfnoid))));
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
        ereport(ERROR, (errcode(pg_errcode(sqlstate::kInvalidFunctionDefinition)),
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
            ereport(ERROR, (errcode(pg_errcode(sqlstate::kFeatureNotSupported)),
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

}  // namespace

namespace aggs_detail {

PgAggregates::Handle* new_handle(MemoryContext states, bool own, std::size_t size) {
    MemoryContext cxt = nullptr;
    if (own) cxt = AllocSetContextCreate(states, "stoatflow window state", ALLOCSET_SMALL_SIZES);
    auto* h = static_cast<PgAggregates::Handle*>(MemoryContextAllocZero(own ? cxt : states, size));
    h->cxt = cxt;
    h->accounted = 0;
    return h;
}

namespace {
// A by-reference state living in the shared states context (an expanded object: its own).
bool expanded(const PgAggregates::Call* c, Datum v) {
    return c->translen == -1 && VARATT_IS_EXTERNAL_EXPANDED(DatumGetPointer(v));
}
}  // namespace

void free_handle(PgAggregates::Handle* h, PgAggregates::Call* const* calls, std::size_t n) {
    if (h->cxt) {
        MemoryContextDelete(h->cxt);
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        const PgAggregates::Call* c = calls[i];
        const Datum v = vals(h)[i];
        if (c->transbyval || flags(h, n)[i] != kValue || DatumGetPointer(v) == nullptr) continue;
        if (!expanded(c, v))
            pfree(DatumGetPointer(v));
        else if (VARATT_IS_EXTERNAL_EXPANDED_RW(DatumGetPointer(v)))
            DeleteExpandedObject(v);
    }
    pfree(h);
}

std::size_t handle_bytes(PgAggregates::Handle* h, PgAggregates::Call* const* calls, std::size_t n) {
    if (h->cxt) return MemoryContextMemAllocated(h->cxt, true) + kContextOverhead;
    std::size_t bytes = GetMemoryChunkSpace(h);
    for (std::size_t i = 0; i < n; ++i) {
        const PgAggregates::Call* c = calls[i];
        const Datum v = vals(h)[i];
        if (c->transbyval || flags(h, n)[i] != kValue || DatumGetPointer(v) == nullptr) continue;
        bytes += expanded(c, v) ? MemoryContextMemAllocated(DatumGetEOHP(v)->eoh_context, true)
                                : GetMemoryChunkSpace(DatumGetPointer(v));
    }
    return bytes;
}

}  // namespace aggs_detail

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
        if (c->internal) needs_context_ = true;
        calls_.push_back(c);
    }
    handle_size_ = MAXALIGN(sizeof(Handle)) + calls_.size() * (sizeof(Datum) + 1);
    pieces_.resize(calls_.size());
}

PgAggregates::~PgAggregates() {
    // Deleting the contexts frees every state still alive (the engine destroys them first).
    if (cxt_) MemoryContextDelete(cxt_);
}

std::string PgAggregates::running_function() const {
    if (running_what_ == nullptr || !OidIsValid(running_fn_)) return {};
    const Oid fn = running_fn_, agg = running_agg_;
    const char* what = running_what_;
    try {
        return pg_call([&] {
            return psprintf("%s %s of aggregate %s", what, format_procedure_qualified(fn),
                            format_procedure_qualified(agg));
        });
    } catch (const Error&) {
        return what;
    }
}

std::size_t PgAggregates::first_arg(std::size_t i) const {
    return static_cast<std::size_t>(calls_[i]->first_arg);
}
std::size_t PgAggregates::arg_count(std::size_t i) const {
    return static_cast<std::size_t>(calls_[i]->nargs);
}

void PgAggregates::account(Handle* h) {
    const std::size_t now = handle_bytes(h, calls_.data(), calls_.size());
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

void PgAggregates::destroy(core::ExternalHandle handle) noexcept {
    auto* h = static_cast<Handle*>(handle);
    if (!h) return;
    bytes_ -= h->accounted;
    free_handle(h, calls_.data(), calls_.size());
}

}  // namespace stoatflow::pg
