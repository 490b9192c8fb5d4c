// PostgreSQL aggregate calls as ExternalAggregates: states as bytes (serialize, deserialize;
// the format is in pg_aggregates.hpp) and finalization from bytes.
// Everything inside pg_call lambdas is PostgreSQL calls and plain data only (guard.hpp).
#include "stoatflow/pg/executor/pg_aggregates_internal.hpp"
#include "stoatflow/pg/border/sandbox.hpp"

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

void PgAggregates::serialize(core::ExternalHandle handle, std::string& out) {
    const UserCall call;
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
                running_agg_ = c->aggref->aggfnoid;
                if (c->internal) {
                    running_what_ = "serialization function";
                    running_fn_ = c->serial->flinfo->fn_oid;
                    c->serial->args[0].value = vals(h)[i];
                    c->serial->args[0].isnull = false;
                    c->serial->isnull = false;
                    const Datum d = FunctionCallInvoke(c->serial);
                    if (c->serial->isnull)
                        flag = kNull;
                    else
                        bytes = DatumGetByteaPP(d);
                } else {
                    running_what_ = "send function";
                    running_fn_ = c->send.fn_oid;
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
                running_agg_ = c->aggref->aggfnoid;
                running_what_ = c->internal ? "deserialization function" : "receive function";
                running_fn_ = c->internal ? c->deserial->flinfo->fn_oid : c->recv.fn_oid;
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
                    ereport(ERROR, (errcode(pg_errcode(sqlstate::kDataCorrupted)),
                                    errmsg("aggregate state bytes are corrupted: %s",
                                           "incorrect binary data format")));
                MemoryContextSwitchTo(window);
                vals(h)[i] = datumCopy(d, c->transbyval, c->translen);
                MemoryContextSwitchTo(scratch);
            }
            MemoryContextSwitchTo(old);
        });
    } catch (...) {
        if (h) free_handle(h, calls_.data(), calls_.size());
        throw;
    }
    return h;
}

core::ExternalHandle PgAggregates::deserialize(const char* data, std::size_t len) {
    const UserCall call;
    Handle* h = parse_and_read(data, len);
    account(h);
    return h;
}

void PgAggregates::release_final() noexcept {
    if (final_) free_handle(final_, calls_.data(), calls_.size());
    final_ = nullptr;
}

void PgAggregates::finalize(const char* data, std::size_t len, Datum* values, bool* nulls) {
    const UserCall call;
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
            running_what_ = "final function";
            running_fn_ = fc->flinfo->fn_oid;
            running_agg_ = c->aggref->aggfnoid;
            agg->curperagg = &agg->peragg[i];
            values[i] = FunctionCallInvoke(fc);
            agg->curperagg = nullptr;
            nulls[i] = fc->isnull;
        }
        MemoryContextSwitchTo(old);
    });
}

}  // namespace stoatflow::pg
