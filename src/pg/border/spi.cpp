// SPI from C++ under pg_call, plus Datum conversions for text, bigint and arrays.
#include <algorithm>
#include <string>
#include <vector>

#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "access/heapam.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/makefuncs.h"
#include "utils/acl.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/guc.h"
#include "utils/resowner.h"
}

namespace stoatflow::pg {

SpiArg arg_text(const std::string& s) {
    text* t =
        pg_call([&] { return cstring_to_text_with_len(s.data(), static_cast<int>(s.size())); });
    return {TEXTOID, PointerGetDatum(t)};
}
SpiArg arg_int64(std::int64_t v) { return {INT8OID, Int64GetDatum(v)}; }
SpiArg arg_int32(std::int32_t v) { return {INT4OID, Int32GetDatum(v)}; }
SpiArg arg_null(Oid type) { return {type, (Datum)0, true}; }

SpiSession::SpiSession() {
    pg_call([] {
        if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
    });
    open_ = true;
}

void SpiSession::finish() {
    if (open_) {
        open_ = false;
        pg_call([] { SPI_finish(); });
    }
}

SpiSession::~SpiSession() {
    // During unwinding for an error the transaction will abort and clean SPI up; calling
    // into PostgreSQL from a destructor could raise, so only finish on the normal path.
    if (open_ && std::uncaught_exceptions() == 0) {
        open_ = false;
        try {
            pg_call([] { SPI_finish(); });
        } catch (...) {
        }
    }
}

namespace {
struct ArgArrays {
    std::vector<Oid> types;
    std::vector<Datum> values;
    std::vector<char> nulls;
    explicit ArgArrays(const std::vector<SpiArg>& args) {
        for (const auto& a : args) {
            types.push_back(a.type);
            values.push_back(a.value);
            nulls.push_back(a.isnull ? 'n' : ' ');
        }
    }
};

std::uint64_t check(int rc, const std::string& sql) {
    if (rc < 0)
        throw Error(sqlstate::kInternalError,
                    "SPI failed (" + std::string(SPI_result_code_string(rc)) + ") for: " + sql);
    return SPI_processed;
}
}  // namespace

std::uint64_t spi_exec(const std::string& sql, const std::vector<SpiArg>& args) {
    ArgArrays a(args);
    const int n = static_cast<int>(args.size());
    const int rc = pg_call([&] {
        return SPI_execute_with_args(sql.c_str(), n, n ? a.types.data() : nullptr,
                                     n ? a.values.data() : nullptr, n ? a.nulls.data() : nullptr,
                                     false, 0);
    });
    return check(rc, sql);
}

Datum spi_datum(std::uint64_t row, int col, bool* isnull) {
    // A row that is not there (a catalog row gone between two statements) is an error, never a
    // read past the result.
    if (SPI_tuptable == nullptr || row >= SPI_tuptable->numvals)
        throw Error(sqlstate::kInternalError,
                    "stoatflow: row " + std::to_string(row) + " of a result with " +
                        std::to_string(SPI_tuptable == nullptr ? 0 : SPI_tuptable->numvals) +
                        " rows was read");
    return pg_call(
        [&] { return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull); });
}

bool spi_isnull(std::uint64_t row, int col) {
    bool isnull;
    spi_datum(row, col, &isnull);
    return isnull;
}

std::optional<std::string> spi_text(std::uint64_t row, int col) {
    bool isnull;
    Datum d = spi_datum(row, col, &isnull);
    if (isnull) return std::nullopt;
    const Oid type = SPI_gettypeid(SPI_tuptable->tupdesc, col);
    if (type == TEXTOID || type == NAMEOID || type == VARCHAROID) {
        if (type == NAMEOID) return std::string(NameStr(*DatumGetName(d)));
        return text_to_string(d);
    }
    char* s =
        pg_call([&] { return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col); });
    return std::string(s);
}

std::optional<std::int64_t> spi_int64(std::uint64_t row, int col) {
    bool isnull;
    Datum d = spi_datum(row, col, &isnull);
    if (isnull) return std::nullopt;
    switch (SPI_gettypeid(SPI_tuptable->tupdesc, col)) {
    case INT8OID: return DatumGetInt64(d);
    case INT4OID: return DatumGetInt32(d);
    case INT2OID: return DatumGetInt16(d);
    case OIDOID:
    case REGROLEOID:
    case REGCLASSOID: return static_cast<std::int64_t>(DatumGetObjectId(d));
    default: throw Error(sqlstate::kInternalError, "spi_int64: unexpected column type");
    }
}

std::optional<bool> spi_bool(std::uint64_t row, int col) {
    bool isnull;
    Datum d = spi_datum(row, col, &isnull);
    if (isnull) return std::nullopt;
    return DatumGetBool(d);
}

std::optional<std::string> spi_bytea(std::uint64_t row, int col) {
    bool isnull;
    Datum d = spi_datum(row, col, &isnull);
    if (isnull) return std::nullopt;
    bytea* b = pg_call([&] { return DatumGetByteaPP(d); });
    return std::string(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
}

std::string text_to_string(Datum value) {
    // Detoasting reads (and may fail on) a TOAST table: inside pg_call, like every call that can
    // raise.
    const text* d = pg_call([&] { return DatumGetTextPP(value); });
    return std::string(VARDATA_ANY(d), VARSIZE_ANY_EXHDR(d));
}

std::vector<std::string> text_array_to_vector(Datum value) {
    Datum* elems;
    bool* nulls;
    int n;
    pg_call([&] {
        ArrayType* a = DatumGetArrayTypeP(value);
        deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
    });
    std::vector<std::string> out;
    out.reserve(n);
    for (int i = 0; i < n; ++i) out.push_back(nulls[i] ? std::string() : text_to_string(elems[i]));
    return out;
}

Datum make_array(const std::vector<Datum>& elems, const std::vector<bool>& nulls, Oid elemtype) {
    const int n = static_cast<int>(elems.size());
    bool* null_flags = nullptr;
    if (!nulls.empty()) {
        null_flags =
            static_cast<bool*>(pg_call([&] { return palloc(sizeof(bool) * (n ? n : 1)); }));
        for (int i = 0; i < n; ++i) null_flags[i] = nulls[i];
    }
    const Datum* data = elems.data();
    return pg_call([&] {
        int16 typlen;
        bool typbyval;
        char typalign;
        get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
        int dims[1] = {n};
        int lbs[1] = {1};
        return PointerGetDatum(construct_md_array(const_cast<Datum*>(data), null_flags, 1, dims,
                                                  lbs, elemtype, typlen, typbyval, typalign));
    });
}

bool append_rows(Oid relid, const std::vector<const char*>& columns,
                 const std::vector<Datum>& values, const std::vector<bool>& nulls,
                 bool with_indexes) {
    const int ncols = static_cast<int>(columns.size());
    const std::size_t nrows = values.size() / columns.size();
    bool written = false;
    // Everything below is PostgreSQL C code: the vectors are only read, nothing with a
    // destructor is created in here (pg_call's rule).
    pg_call([&] {
        Relation rel = table_open(relid, RowExclusiveLock);
        const Form_pg_class c = rel->rd_rel;
        const TupleDesc td = RelationGetDescr(rel);
        // A leaf partition written directly would skip its partition constraint: INSERT checks it.
        bool plain =
            c->relkind == RELKIND_RELATION && !c->relispartition && !c->relhasrules &&
            !c->relrowsecurity && rel->trigdesc == nullptr && (with_indexes || !c->relhasindex) &&
            !(td->constr && (td->constr->num_check > 0 || td->constr->has_generated_stored)) &&
            pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) == ACLCHECK_OK;
        // Every live column is one of ours (none needs a default), and a NOT NULL column
        // gets no NULL. map[attribute] = our column.
        int* map = static_cast<int*>(palloc(sizeof(int) * (td->natts + 1)));
        int matched = 0;
        for (int a = 0; plain && a < td->natts; ++a) {
            const Form_pg_attribute att = TupleDescAttr(td, a);
            map[a] = -1;
            if (att->attisdropped) continue;
            for (int k = 0; k < ncols; ++k)
                if (strcmp(NameStr(att->attname), columns[k]) == 0) map[a] = k;
            if (map[a] < 0) {
                plain = false;
                break;
            }
            ++matched;
            if (att->attnotnull)
                for (std::size_t r = 0; r < nrows; ++r)
                    if (nulls[r * ncols + map[a]]) plain = false;
        }
        if (!plain || matched != ncols) {
            pfree(map);
            table_close(rel, RowExclusiveLock);
            return;
        }
        EState* estate = nullptr;
        ResultRelInfo* rri = nullptr;
        if (c->relhasindex) {
            estate = CreateExecutorState();
            rri = makeNode(ResultRelInfo);
            InitResultRelInfo(rri, rel, 1, nullptr, 0);
            ExecOpenIndices(rri, false);
        }
        const int batch = static_cast<int>(
            std::min<std::size_t>(static_cast<std::size_t>(kBulkInsertBatchRows), nrows));
        const CommandId cid = GetCurrentCommandId(true);
        BulkInsertState bistate = GetBulkInsertState();
        // The slots share one unpinned copy of the descriptor: a slot made on the relation's
        // own descriptor pins it in the resource owner, and a thousand pins of one pointer make
        // each further pin and release walk all the others (PostgreSQL 15 hashes them by
        // pointer), measured as a sixth of a sparse workload's worker time.
        const TupleDesc slot_desc = CreateTupleDescCopy(td);
        const TupleTableSlotOps* ops = table_slot_callbacks(rel);
        TupleTableSlot** slots =
            static_cast<TupleTableSlot**>(palloc(sizeof(TupleTableSlot*) * batch));
        for (int i = 0; i < batch; ++i) slots[i] = MakeSingleTupleTableSlot(slot_desc, ops);
        std::size_t row = 0;
        while (row < nrows) {
            int n = 0;
            for (; n < batch && row < nrows; ++n, ++row) {
                TupleTableSlot* slot = slots[n];
                ExecClearTuple(slot);
                for (int a = 0; a < td->natts; ++a) {
                    if (map[a] < 0) {
                        slot->tts_values[a] = (Datum)0;
                        slot->tts_isnull[a] = true;  // a dropped column
                    } else {
                        slot->tts_values[a] = values[row * ncols + map[a]];
                        slot->tts_isnull[a] = nulls[row * ncols + map[a]];
                    }
                }
                ExecStoreVirtualTuple(slot);
            }
            table_multi_insert(rel, slots, n, cid, 0, bistate);
            // As COPY does after a multi-insert: the index entries, with their uniqueness
            // checks (a duplicate raises 23505 like an INSERT would).
            if (rri && rri->ri_NumIndices > 0)
                for (int i = 0; i < n; ++i) {
                    ResetPerTupleExprContext(estate);
                    (void)ExecInsertIndexTuples(rri, slots[i], estate, false, false, nullptr, NIL);
                }
        }
        for (int i = 0; i < batch; ++i) ExecDropSingleTupleTableSlot(slots[i]);
        FreeTupleDesc(slot_desc);
        pfree(slots);
        pfree(map);
        FreeBulkInsertState(bistate);
        if (rri) {
            ExecCloseIndices(rri);
            FreeExecutorState(estate);
        }
        table_close(rel, NoLock);  // the lock is held until the transaction ends
        written = true;
    });
    return written;
}

bool in_subtransaction(const char* tolerated, const std::function<void()>& f) {
    return in_subtransaction(
        [tolerated](const Error& e) {
            return dynamic_cast<const PgError*>(&e) != nullptr && e.sqlstate() == tolerated;
        },
        f);
}

bool in_subtransaction(const std::function<bool(const Error&)>& tolerated,
                       const std::function<void()>& f) {
    // The PL/pgSQL exception-block pattern: memory context and resource owner of the outer
    // transaction are restored after the subtransaction ends either way.
    MemoryContext cxt = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    pg_call([] { BeginInternalSubTransaction(nullptr); });
    MemoryContextSwitchTo(cxt);
    auto roll_back = [&] {
        pg_call([] { RollbackAndReleaseCurrentSubTransaction(); });
        MemoryContextSwitchTo(cxt);
        CurrentResourceOwner = owner;
    };
    try {
        f();
    } catch (const Error& e) {  // PgError included
        roll_back();
        if (tolerated(e)) return false;
        throw;
    } catch (...) {
        roll_back();
        throw;
    }
    pg_call([] { ReleaseCurrentSubTransaction(); });
    MemoryContextSwitchTo(cxt);
    CurrentResourceOwner = owner;
    return true;
}

std::string try_in_subtransaction(const std::function<void()>& f, Interrupt* why) {
    std::string failure;
    Interrupt interrupt = Interrupt::None;
    MemoryContext cxt = CurrentMemoryContext;
    ResourceOwner owner = CurrentResourceOwner;
    pg_call([] { BeginInternalSubTransaction(nullptr); });
    MemoryContextSwitchTo(cxt);
    try {
        f();
    } catch (const Error& e) {  // PgError included
        failure = e.what();
        if (failure.empty()) failure = "error " + e.sqlstate();
        interrupt = interrupt_of(e);
        if (interrupt == Interrupt::Timeout) failure = user_code_timeout_message();
    }
    if (why != nullptr) *why = interrupt;
    if (failure.empty()) {
        pg_call([] { ReleaseCurrentSubTransaction(); });
    } else {
        pg_call([] { RollbackAndReleaseCurrentSubTransaction(); });
    }
    MemoryContextSwitchTo(cxt);
    CurrentResourceOwner = owner;
    if (interrupt == Interrupt::Shutdown || interrupt == Interrupt::Cancel)
        throw UserCodeInterrupted(interrupt, failure);
    return failure;
}

}  // namespace stoatflow::pg
