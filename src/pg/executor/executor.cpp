// An aggregation's expressions in the worker (executor.hpp): key, filter and every aggregate
// call's FILTER and arguments evaluated per record against a virtual slot of the row, and the
// items finalized from serialized states (their Aggrefs replaced by PARAM_EXTERN parameters).
//
// Key encoding: one key column is its type's output text (a text key reads as itself, as 0.1's
// keys); several are a JSON array of their output texts (["us","mobile"]). Numeric keys drop
// trailing fractional zeros and float zeros their sign, so values GROUP BY takes as equal are
// one key. Decoding goes through the types' input functions.
#include "stoatflow/pg/executor/executor.hpp"

#include "stoatflow/core/error.hpp"

#include <cstring>

#include "stoatflow/flow/key_text.hpp"
#include "stoatflow/pg/executor/pg_aggregates.hpp"
#include "stoatflow/pg/border/sandbox.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "nodes/nodeFuncs.h"
#include "nodes/params.h"
#include "optimizer/optimizer.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
}

namespace stoatflow::pg {

namespace {

// A key column's text form. Values GROUP BY takes as equal must give one text: numeric
// without trailing fractional zeros (1.0 = 1.00), float zero without its sign (-0 = 0).
enum class KeyForm { Output, Numeric, Float4, Float8 };

struct KeyCodec {
    KeyForm form;
    FmgrInfo out;
    FmgrInfo in;
    Oid ioparam;
    int32 typmod;
};

struct Collect {
    List* aggrefs;
};

// Replaces every Aggref by $n (n: its 1-based position among all calls), collecting them.
Node* replace_aggrefs(Node* node, void* ctx) {
    if (node == nullptr) return nullptr;
    if (IsA(node, Aggref)) {
        auto* c = static_cast<Collect*>(ctx);
        auto* a = reinterpret_cast<Aggref*>(node);
        c->aggrefs = lappend(c->aggrefs, a);
        Param* p = makeNode(Param);
        p->paramkind = PARAM_EXTERN;
        p->paramid = list_length(c->aggrefs);
        p->paramtype = a->aggtype;
        p->paramtypmod = -1;
        p->paramcollid = a->aggcollid;
        p->location = -1;
        return reinterpret_cast<Node*>(p);
    }
    // PostgreSQL 15's C prototype takes Node *(*)(); through void (*)() the cast is accepted.
    return expression_tree_mutator(
        node, reinterpret_cast<Node* (*)()>(reinterpret_cast<void (*)()>(replace_aggrefs)), ctx);
}

// A tree of the analysis, read and planned (constant folding, operator function OIDs) in cxt.
Expr* plan_tree(const std::string& tree, MemoryContext cxt) {
    const char* s = tree.c_str();
    return pg_call([&] {
        const MemoryContext old = MemoryContextSwitchTo(cxt);
        Expr* e = expression_planner(static_cast<Expr*>(stringToNode(s)));
        MemoryContextSwitchTo(old);
        return e;
    });
}

// Everything the executor holds (plain data the per-record function reads).
struct ExecState {
    MemoryContext cxt = nullptr;
    TupleTableSlot* slot = nullptr;
    ExprContext* econtext = nullptr;  // per record
    ExprContext* fcontext = nullptr;  // finalization
    std::vector<ExecColumn> key_cols, item_cols;
    std::vector<std::string> key_labels;  // for NullKey's detail
    std::size_t null_column = 0;          // NullKey's column
    std::vector<ExprState*> key_states;
    std::vector<KeyCodec*> codecs;
    std::vector<const char*> key_texts;
    ExprState* filter = nullptr;
    std::vector<ExprState*> call_filters;  // nullptr: none
    std::vector<ExprState*> arg_states;
    std::vector<ExprState*> items;
    std::vector<int16> item_len;
    std::vector<char> item_byval;
    ParamListInfo params = nullptr;
    std::unique_ptr<PgAggregates> aggs;
    std::unique_ptr<Datum[]> args, finals;
    std::unique_ptr<bool[]> nulls, skip, final_nulls;
    std::size_t width = 0;
};

}  // namespace

struct AggregationExecutor::Impl : ExecState {
    ~Impl() {
        aggs.reset();
        if (cxt) MemoryContextDelete(cxt);  // expression states, slot, expression contexts
    }
};

namespace {

// One record (PostgreSQL calls only): -1 fold, -2 filtered, k >= 0 key part k is NULL.
int eval_record(ExecState* m, const Datum* values, const bool* nulls) {
    ExprContext* ec = m->econtext;
    ResetExprContext(ec);
    TupleTableSlot* slot = m->slot;
    ExecClearTuple(slot);
    memcpy(slot->tts_values, values, sizeof(Datum) * m->width);
    memcpy(slot->tts_isnull, nulls, sizeof(bool) * m->width);
    ExecStoreVirtualTuple(slot);
    // WHERE before GROUP BY: a record the filter skips has no key to judge (a NULL key part of
    // a skipped record is no dead letter)
    if (m->filter) {
        bool isnull = false;
        const Datum v = ExecEvalExprSwitchContext(m->filter, ec, &isnull);
        if (isnull || !DatumGetBool(v)) return -2;
    }
    const std::size_t nkeys = m->key_states.size();
    for (std::size_t i = 0; i < nkeys; ++i) {
        bool isnull = false;
        const Datum v = ExecEvalExprSwitchContext(m->key_states[i], ec, &isnull);
        if (isnull) return static_cast<int>(i);
        const MemoryContext old = MemoryContextSwitchTo(ec->ecxt_per_tuple_memory);
        KeyCodec* c = m->codecs[i];
        if (c->form == KeyForm::Numeric)
            m->key_texts[i] = numeric_normalize(DatumGetNumeric(v));
        else if ((c->form == KeyForm::Float8 && DatumGetFloat8(v) == 0) ||
                 (c->form == KeyForm::Float4 && DatumGetFloat4(v) == 0))
            m->key_texts[i] = pstrdup("0");
        else
            m->key_texts[i] = OutputFunctionCall(&c->out, v);
        MemoryContextSwitchTo(old);
    }
    const std::size_t ncalls = m->call_filters.size();
    PgAggregates* aggs = m->aggs.get();
    for (std::size_t c = 0; c < ncalls; ++c) {
        if (ExprState* f = m->call_filters[c]) {
            bool isnull = false;
            const Datum v = ExecEvalExprSwitchContext(f, ec, &isnull);
            m->skip[c] = isnull || !DatumGetBool(v);
            if (m->skip[c]) continue;
        } else {
            m->skip[c] = false;
        }
        const std::size_t first = aggs->first_arg(c), n = aggs->arg_count(c);
        for (std::size_t j = first; j < first + n; ++j)
            m->args[j] = ExecEvalExprSwitchContext(m->arg_states[j], ec, &m->nulls[j]);
    }
    return -1;
}

}  // namespace

AggregationExecutor::AggregationExecutor(const Analysis& analysis, const RowType& row,
                                         MemoryContext parent)
    : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    m.cxt = pg_call([&] {
        return AllocSetContextCreate(parent, "stoatflow executor", ALLOCSET_DEFAULT_SIZES);
    });
    const MemoryContext cxt = m.cxt;
    m.width = row.width();
    const std::size_t width = m.width;
    const RowType* rt = &row;
    pg_call([&] {
        const MemoryContext old = MemoryContextSwitchTo(cxt);
        TupleDesc desc = CreateTemplateTupleDesc(static_cast<int>(width));
        for (std::size_t i = 0; i < width; ++i) {
            const RowColumn& c = rt->column(i);
            TupleDescInitEntry(desc, static_cast<AttrNumber>(i + 1), c.name.c_str(), c.typid,
                               c.typmod, 0);
        }
        m.slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
        m.econtext = CreateStandaloneExprContext();
        m.econtext->ecxt_scantuple = m.slot;
        m.fcontext = CreateStandaloneExprContext();
        MemoryContextSwitchTo(old);
    });
    auto init = [&](Expr* e) {
        return pg_call([&] {
            const MemoryContext old = MemoryContextSwitchTo(cxt);
            ExprState* s = ExecInitExpr(e, nullptr);
            MemoryContextSwitchTo(old);
            return s;
        });
    };
    auto planned = [&](const std::string& tree) { return plan_tree(tree, cxt); };

    // Key columns.
    std::vector<const AnalyzedExpr*> keys;
    if (!analysis.group_by.empty()) {
        for (const AnalyzedExpr& g : analysis.group_by) keys.push_back(&g);
    } else if (analysis.key) {
        keys.push_back(&*analysis.key);
    } else {
        throw Error(sqlstate::kInvalidParameterValue, "an aggregation needs a key or group_by");
    }
    for (const AnalyzedExpr* k : keys) {
        const bool is_key = analysis.group_by.empty();
        m.key_cols.push_back({is_key ? "key" : k->name, k->type, k->typmod, k->type_name});
        m.key_labels.push_back(is_key ? "key is null"
                                      : "group_by item \"" + k->name + "\" is null");
        m.key_states.push_back(init(planned(k->tree)));
        const Oid type = k->type;
        const int32 typmod = k->typmod;
        m.codecs.push_back(pg_call([&] {
            auto* codec = static_cast<KeyCodec*>(MemoryContextAllocZero(cxt, sizeof(KeyCodec)));
            Oid fn;
            bool varlena;
            getTypeOutputInfo(type, &fn, &varlena);
            fmgr_info_cxt(fn, &codec->out, cxt);
            getTypeInputInfo(type, &fn, &codec->ioparam);
            fmgr_info_cxt(fn, &codec->in, cxt);
            codec->typmod = typmod;
            const Oid base = getBaseType(type);
            codec->form = base == NUMERICOID  ? KeyForm::Numeric
                          : base == FLOAT8OID ? KeyForm::Float8
                          : base == FLOAT4OID ? KeyForm::Float4
                                              : KeyForm::Output;
            return codec;
        }));
    }
    m.key_texts.resize(keys.size());
    if (analysis.filter) m.filter = init(planned(analysis.filter->tree));

    // Items: planned whole (the Aggrefs' arguments and FILTERs with them), then each Aggref
    // becomes a parameter of the finalized expression.
    Collect collect{NIL};
    std::vector<Aggref*> aggrefs;
    for (const AnalyzedExpr& item : analysis.aggregates) {
        m.item_cols.push_back({item.name, item.type, item.typmod, item.type_name});
        Expr* e = planned(item.tree);
        Collect* cp = &collect;
        Expr* fin = pg_call([&] {
            const MemoryContext old = MemoryContextSwitchTo(cxt);
            Node* r = replace_aggrefs(reinterpret_cast<Node*>(e), cp);
            MemoryContextSwitchTo(old);
            return reinterpret_cast<Expr*>(r);
        });
        m.items.push_back(init(fin));
        const Oid type = item.type;
        int16 len = 0;
        bool byval = false;
        pg_call([&] { get_typlenbyval(type, &len, &byval); });
        m.item_len.push_back(len);
        m.item_byval.push_back(byval);
    }
    const int ncalls = pg_call([&] { return list_length(collect.aggrefs); });
    for (int i = 0; i < ncalls; ++i)
        aggrefs.push_back(pg_call([&] { return list_nth_node(Aggref, collect.aggrefs, i); }));
    m.aggs = std::make_unique<PgAggregates>(aggrefs, cxt);
    for (Aggref* a : aggrefs) {
        m.call_filters.push_back(a->aggfilter ? init(a->aggfilter) : nullptr);
        const int nargs = pg_call([&] { return list_length(a->args); });
        for (int j = 0; j < nargs; ++j) {
            auto* te = pg_call([&] { return list_nth_node(TargetEntry, a->args, j); });
            if (te->resjunk) continue;
            m.arg_states.push_back(init(te->expr));
        }
    }
    if (m.arg_states.size() != m.aggs->total_args())
        throw Error(sqlstate::kInternalError, "aggregate arguments do not match their calls");
    const std::size_t n = aggrefs.size(), nargs = m.arg_states.size();
    m.args = std::make_unique<Datum[]>(nargs + 1);
    m.nulls = std::make_unique<bool[]>(nargs + 1);
    m.skip = std::make_unique<bool[]>(n + 1);
    m.finals = std::make_unique<Datum[]>(n + 1);
    m.final_nulls = std::make_unique<bool[]>(n + 1);
    m.params = pg_call([&] {
        const MemoryContext old = MemoryContextSwitchTo(cxt);
        ParamListInfo p = makeParamList(static_cast<int>(n));
        for (std::size_t i = 0; i < n; ++i) {
            p->params[i].ptype = aggrefs[i]->aggtype;
            p->params[i].pflags = PARAM_FLAG_CONST;
            p->params[i].isnull = true;
        }
        MemoryContextSwitchTo(old);
        return p;
    });
    m.fcontext->ecxt_param_list_info = m.params;
}

AggregationExecutor::~AggregationExecutor() = default;

AggregationExecutor::Outcome AggregationExecutor::evaluate(const Datum* values, const bool* nulls,
                                                           std::string& key, CallInputs& inputs,
                                                           std::string& detail) {
    Impl* m = impl_.get();
    const UserCall call;
    const int r = pg_call([&] { return eval_record(m, values, nulls); });
    if (r >= 0) {
        m->null_column = static_cast<std::size_t>(r);
        detail = m->key_labels[m->null_column];
        return Outcome::NullKey;
    }
    if (r == -2) return Outcome::Filtered;
    flow::encode_key(m->key_texts.data(), m->key_texts.size(), key);
    inputs.args = m->args.get();
    inputs.nulls = m->nulls.get();
    inputs.skip = m->skip.get();
    return Outcome::Fold;
}

std::size_t AggregationExecutor::null_column() const { return impl_->null_column; }

core::ExternalAggregates& AggregationExecutor::aggregates() { return *impl_->aggs; }

std::string AggregationExecutor::failed_function() const { return impl_->aggs->running_function(); }

const std::vector<ExecColumn>& AggregationExecutor::key_columns() const { return impl_->key_cols; }
const std::vector<ExecColumn>& AggregationExecutor::item_columns() const {
    return impl_->item_cols;
}

std::vector<std::string> AggregationExecutor::key_texts(const std::string& key) const {
    std::vector<std::string> out;
    if (impl_->key_cols.size() == 1) {
        out.push_back(key);
    } else if (!flow::decode_key(key, out) || out.size() != impl_->key_cols.size()) {
        throw Error(sqlstate::kDataCorrupted, "a window's key is corrupted: " + key);
    }
    return out;
}

void AggregationExecutor::sink_values(const std::string& key, const std::string& external,
                                      Datum* values, bool* nulls) {
    Impl* m = impl_.get();
    const std::vector<std::string> texts = key_texts(key);
    std::vector<const char*> ctexts;
    for (const std::string& t : texts) ctexts.push_back(t.c_str());
    const char* const* kt = ctexts.data();
    m->aggs->finalize(external.data(), external.size(), m->finals.get(), m->final_nulls.get());
    try {
        pg_call([&] {
            const std::size_t nkeys = m->codecs.size();
            for (std::size_t i = 0; i < nkeys; ++i) {
                KeyCodec* c = m->codecs[i];
                values[i] =
                    InputFunctionCall(&c->in, const_cast<char*>(kt[i]), c->ioparam, c->typmod);
                nulls[i] = false;
            }
            ExprContext* ec = m->fcontext;
            ResetExprContext(ec);
            ParamListInfo p = m->params;
            for (int i = 0; i < p->numParams; ++i) {
                p->params[i].value = m->finals[i];
                p->params[i].isnull = m->final_nulls[i];
            }
            const std::size_t nitems = m->items.size();
            for (std::size_t i = 0; i < nitems; ++i) {
                bool isnull = false;
                const Datum v = ExecEvalExprSwitchContext(m->items[i], ec, &isnull);
                nulls[nkeys + i] = isnull;
                values[nkeys + i] =
                    isnull ? 0 : datumCopy(v, m->item_byval[i] != 0, m->item_len[i]);
            }
            ResetExprContext(ec);
        });
    } catch (...) {
        m->aggs->release_final();
        throw;
    }
    m->aggs->release_final();
}

}  // namespace stoatflow::pg
