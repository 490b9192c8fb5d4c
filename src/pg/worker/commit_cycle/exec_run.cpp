// Executor mode on the main thread (README "Expressions and PostgreSQL aggregates"): the records
// the consume thread extracted are converted (RowType, as the source's owner), evaluated by each
// aggregation's executor (as that aggregation's owner) and fed to the record path in order. A
// record whose expressions raise an error is a dead letter (expression_error); an error while
// folding (an aggregate's transition function) fails the worker, which starts over from the
// committed state.
#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "stoatflow/pg/worker/commit_cycle.hpp"
#include "stoatflow/pg/executor/exec_path.hpp"
#include "stoatflow/pg/border/sandbox.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/worker/worker_loop.hpp"

#include "stoatflow/core/event_time.hpp"
#include "stoatflow/format/fast_convert.hpp"
#include "stoatflow/pg/limits.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/memutils.h"
}

namespace stoatflow::pg {

ExecSet::~ExecSet() {
    // Every executor before the context their memory lives under.
    source.reset();
    executors.clear();
    external.clear();
    if (cxt != nullptr) MemoryContextDelete(cxt);
}

std::unique_ptr<ExecSet> CommitCycle::make_exec(const SourceDef& source,
                                                const std::vector<AggregationDef>& aggregations,
                                                const Row* row) {
    if (row == nullptr) return nullptr;
    const bool time_expr = !source_names_column(source, source.event_time_path);
    const bool key_expr = !source_names_column(source, source.key_path);
    bool any = time_expr || key_expr;
    for (const auto& a : aggregations) any |= a.executor;
    if (!any) return nullptr;
    auto set = std::make_unique<ExecSet>();
    set->cxt = pg_call([] {
        return AllocSetContextCreate(TopMemoryContext, "stoatflow executors",
                                     ALLOCSET_DEFAULT_SIZES);
    });
    set->batch_cxt = pg_call([&] {
        return AllocSetContextCreate(set->cxt, "stoatflow executor batch", ALLOCSET_DEFAULT_SIZES);
    });
    for (const auto& a : aggregations) {
        if (!a.executor) {
            set->has_fast = true;
            set->executors.emplace_back();
            set->external.emplace_back();
            continue;
        }
        set->executors.push_back(make_executor(source, a, row->type(), set->cxt, &set->used));
        set->external.push_back(owned_aggregates(*set->executors.back(), a.owner));
    }
    // The source's own expressions: the event time always, the key when a fast-path
    // aggregation keys by it.
    set->time_expr = time_expr;
    set->key_expr = key_expr && set->has_fast;
    if (set->time_expr || set->key_expr) {
        set->source = make_source_executor(source, row->type(), set->cxt, set->time_expr,
                                           set->key_expr, &set->used);
        if (set->time_expr) set->time_type = set->source->key_columns().front().type;
    }
    return set;
}

namespace {

// An event time the source's executor gave as text: timestamptz's ISO output (run_as_owner pins
// DateStyle), or a number of epoch milliseconds. False when it is neither (infinity, a year
// beyond 9999): the record's time is out of range.
bool parse_time_text(const std::string& text, Oid type, core::Millis& out) {
    if (type == TIMESTAMPTZOID) {
        std::int64_t micros = 0;
        if (!format::parse_iso_timestamptz(text, micros)) return false;
        out = core::unix_micros_to_ms(micros);
        return true;
    }
    const char* end = text.data() + text.size();
    std::int64_t ms = 0;
    const auto r = std::from_chars(text.data(), end, ms);
    if (r.ec == std::errc() && r.ptr == end) {
        out = ms;
        return true;
    }
    char* stop = nullptr;
    const double d = std::strtod(text.c_str(), &stop);  // a numeric with a fraction
    if (stop != text.c_str() + text.size() || !(d > -9.2e18 && d < 9.2e18)) return false;
    out = static_cast<core::Millis>(std::floor(d));
    return true;
}

// What one record is for one aggregation run by the executor, after its expressions ran.
struct Verdict {
    enum Kind { Fold, Filtered, Dead } kind = Dead;
    std::string key;
    flow::DeadReason reason = flow::DeadReason::None;  // Dead: its dead letter (the record goes on)
    std::string detail;
};

// A record after the source's own checks (phase 1).
struct Admitted {
    bool live = false;              // false: a dead letter as a whole, written already
    flow::SlowRecord rec;           // its event time, fast-path key and values
    std::optional<core::Millis> w;  // phase 3: the watermark it is folded with
};

}  // namespace

// Executor mode, one batch, in four phases so that code of one owner never shares a sandbox
// entry with code of another (README "User code is a guest"):
//  1. as the source's owner: convert the rows, the source's own checks and expressions;
//  2. per aggregation, as its owner: its expressions per record (errors: its dead letters);
//  3. no user code: the verdicts noted, each record judged, counted and the watermark observed;
//     fast-path aggregations fold;
//  4. per aggregation, as its owner: its records folded in order, with the watermark of phase 3.
//     A fold that fails leaves that aggregation's state untrusted: the record becomes its dead
//     letter and the pipeline is rebuilt from the committed state (AggregationRebuild).
void CommitCycle::memory_exceeded() const {
    const auto memory = path_.aggregation_memory();
    std::size_t most = 0;
    for (std::size_t i = 1; i < memory.size(); ++i)
        if (memory[i].second > memory[most].second) most = i;
    throw MemoryLimitExceeded(aggs_.at(most).def.name);
}

void CommitCycle::run_executor() {
    if (!exec_ || path_.exec_waiting() == 0) return;
    const flow::ExecBatch& batch = path_.take_exec_batch();
    const RowType& rt = row_->type();
    const std::size_t width = rt.width(), n = batch.records.size(), naggs = aggs_.size();
    const core::Millis now = batch.records.empty() ? 0 : batch.records.back().now;
    MemoryContext outer = CurrentMemoryContext;
    pg_call([&] {
        MemoryContextReset(exec_->batch_cxt);
        MemoryContextSwitchTo(exec_->batch_cxt);
    });
    std::vector<Datum> values;
    std::vector<bool> nulls;
    std::vector<std::string> bad;
    std::unique_ptr<bool[]> isnull(new bool[width]);
    std::vector<Admitted> recs(n);
    const auto row_nulls = [&](std::size_t row) {
        for (std::size_t c = 0; c < width; ++c) isnull[c] = nulls[row * width + c];
        return isnull.get();
    };

    // Records are counted by phase, not in offset order: partition ends wait for the batch.
    path_.hold_ends(true);
    try {
        // Phase 1: the source's owner.
        run_as_owner(source_.owner, [&] {
            {
                UserCall call;  // input functions of the owner's types: one call per row
                if (batch.rows.size() > 0) rt.convert(batch.rows, values, nulls, bad, &exec_->used);
            }
            std::string source_key;
            CallInputs source_inputs;
            std::size_t i = 0;
            const auto one = [&](std::size_t k) {
                const flow::ExecRecord& r = batch.records[k];
                Admitted& a = recs[k];
                if (r.reason != flow::DeadReason::None)
                    return path_.exec_dead(r, r.reason, r.detail);
                if (!bad[r.row].empty())
                    return path_.exec_dead(r, flow::DeadReason::BadValue, bad[r.row]);
                const Datum* v = values.data() + r.row * width;
                flow::SlowRecord& sr = a.rec;
                decode_row(v, row_nulls(r.row), exec_->has_fast, sr);
                if (sr.reason != flow::DeadReason::None)
                    return path_.exec_dead(r, sr.reason, sr.detail);
                if (exec_->source) {  // the event time or the key is an expression
                    std::string detail;
                    const AggregationExecutor::Outcome o =
                        exec_->source->evaluate(v, isnull.get(), source_key, source_inputs, detail);
                    if (o == AggregationExecutor::Outcome::NullKey) {
                        // Its key columns: the event time first (when an expression), the key.
                        const bool time = exec_->time_expr && exec_->source->null_column() == 0;
                        return path_.exec_dead(
                            r, time ? flow::DeadReason::MissingTime : flow::DeadReason::MissingKey,
                            flow::RecordJudge::expression_is_null(time));
                    }
                    const std::vector<std::string> texts = exec_->source->key_texts(source_key);
                    std::size_t at = 0;
                    if (exec_->time_expr) {
                        core::Millis t = 0;
                        if (format::is_infinity_text(texts.at(at)))  // README "Columns", Conversion
                            return path_.exec_dead(
                                r, flow::DeadReason::BadValue,
                                flow::RecordJudge::not_finite("event_time is " + texts.at(0)));
                        if (!parse_time_text(texts.at(at++), exec_->time_type, t))
                            return path_.exec_dead(
                                r, flow::DeadReason::TimeOutOfRange,
                                core::outside_event_time_range("event_time = " + texts.at(0)));
                        sr.time = t;
                    }
                    if (exec_->key_expr) sr.key = texts.at(at);
                }
                if (!sr.time)
                    return path_.exec_dead(r, flow::DeadReason::MissingTime,
                                           flow::RecordJudge::column_is_null(time_column_));
                if (exec_->has_fast && !sr.key)
                    return path_.exec_dead(r, flow::DeadReason::MissingKey,
                                           flow::RecordJudge::column_is_null(key_column_));
                a.live = true;
            };
            // One subtransaction per run of records: an error in the source's expressions makes
            // that record a dead letter as a whole (nothing of it was fed).
            while (i < n) {
                Interrupt why = Interrupt::None;
                const std::string failure = try_in_subtransaction(
                    [&] {
                        for (; i < n; ++i) one(i);
                    },
                    &why);
                if (failure.empty()) break;
                recs[i].live = false;
                path_.exec_dead(batch.records[i],
                                why == Interrupt::Timeout ? flow::DeadReason::UserCodeTimeout
                                                          : flow::DeadReason::ExpressionError,
                                "the source's event_time or key: " + failure);
                ++i;
            }
        });

        // Phase 2: each aggregation's expressions, as its owner.
        std::vector<std::vector<Verdict>> verdicts(naggs);
        for (std::size_t a = 0; a < naggs; ++a) {
            AggregationExecutor* ex = exec_->executors[a].get();
            if (ex == nullptr) continue;
            const AggregationDef& def = aggs_[a].def;
            std::vector<Verdict>& vs = verdicts[a];
            vs.resize(n);
            if (const flow::UserCodeLedger::Stall* st = ledger_->resting(def.id, now)) {
                for (std::size_t k = 0; k < n; ++k)
                    vs[k] = {Verdict::Dead,
                             {},
                             flow::DeadReason::UserCodeTimeout,
                             "aggregation \"" + def.name + "\" rests after its code timed out (" +
                                 st->error + "); records are not run through it until it resumes"};
                continue;
            }
            run_as_owner(def.owner, [&] {
                std::string detail;
                CallInputs inputs;
                std::size_t i = 0;
                while (i < n) {
                    Interrupt why = Interrupt::None;
                    const std::string failure = try_in_subtransaction(
                        [&] {
                            for (; i < n; ++i) {
                                if (!recs[i].live) continue;
                                const flow::ExecRecord& r = batch.records[i];
                                const auto p = ledger_->poisoned.find({def.id, r.tp, r.offset});
                                if (p != ledger_->poisoned.end()) {
                                    vs[i] = {Verdict::Dead, {}, p->second.reason, p->second.detail};
                                    ledger_->applied = true;
                                    continue;
                                }
                                Verdict& v = vs[i];
                                const AggregationExecutor::Outcome o =
                                    ex->evaluate(values.data() + r.row * width, row_nulls(r.row),
                                                 v.key, inputs, detail);
                                if (o == AggregationExecutor::Outcome::NullKey) {
                                    v.kind = Verdict::Dead;
                                    v.reason = flow::DeadReason::MissingKey;
                                    v.detail = flow::RecordJudge::of_aggregation(def.name, detail);
                                } else {
                                    v.kind = o == AggregationExecutor::Outcome::Fold
                                                 ? Verdict::Fold
                                                 : Verdict::Filtered;
                                }
                            }
                        },
                        &why);
                    if (failure.empty()) break;
                    const std::string message = "aggregation \"" + def.name + "\": " + failure;
                    vs[i] = {Verdict::Dead,
                             {},
                             why == Interrupt::Timeout ? flow::DeadReason::UserCodeTimeout
                                                       : flow::DeadReason::ExpressionError,
                             message};
                    ++i;
                    if (why == Interrupt::Timeout) {  // it rests: the rest of the batch too
                        ledger_->timed_out(def.id, now, message);
                        for (; i < n; ++i)
                            vs[i] = {Verdict::Dead,
                                     {},
                                     flow::DeadReason::UserCodeTimeout,
                                     "aggregation \"" + def.name +
                                         "\" rests after its code timed out (" + message + ")"};
                    }
                }
            });
        }

        // Phase 3: verdicts, judgement, watermark (no user code).
        std::vector<flow::ExecFold> folds(n * naggs);
        for (std::size_t i = 0; i < n; ++i) {
            Admitted& r = recs[i];
            if (!r.live) continue;
            const flow::ExecRecord& rec = batch.records[i];
            flow::ExecFold* f = folds.data() + i * naggs;
            // (a value a fast-path aggregation cannot use is its dead letter only)
            bool kept = exec_->has_fast && (r.rec.bad.empty() || path_.exec_fast_usable(r.rec.bad));
            for (std::size_t a = 0; a < naggs; ++a) {
                if (verdicts[a].empty()) continue;
                const Verdict& v = verdicts[a][i];
                f[a].fold = v.kind == Verdict::Fold;
                f[a].filtered = v.kind == Verdict::Filtered;
                f[a].key = v.key;
                kept |= v.kind != Verdict::Dead;
            }
            // Dead for every aggregation (and none takes the fast path): a dead letter as a
            // whole (it does not move the watermark).
            bool first = !kept;
            for (std::size_t a = 0; a < naggs; ++a) {
                if (verdicts[a].empty() || verdicts[a][i].kind != Verdict::Dead) continue;
                const Verdict& v = verdicts[a][i];
                if (first)
                    path_.exec_dead(rec, v.reason, v.detail);
                else
                    path_.exec_note(rec, v.reason, v.detail);
                first = false;
            }
            if (!kept) {
                if (!r.rec.bad.empty())
                    path_.exec_bad_values(rec, r.rec.bad, first);
                else if (first)
                    path_.exec_skip(rec);
                continue;
            }
            r.w = path_.exec_admit(rec, *r.rec.time, r.rec.key ? &*r.rec.key : nullptr,
                                   r.rec.values.data(), f, &r.rec.bad);
        }

        // Phase 4: each aggregation folds its records, as its owner.
        for (std::size_t a = 0; a < naggs; ++a) {
            AggregationExecutor* ex = exec_->executors[a].get();
            if (ex == nullptr) continue;
            const AggregationDef& def = aggs_[a].def;
            std::size_t i = 0;
            try {
                run_as_owner(def.owner, [&] {
                    std::string key, detail;
                    CallInputs inputs;
                    for (; i < n; ++i) {
                        if (!recs[i].w) continue;
                        const flow::ExecRecord& r = batch.records[i];
                        flow::ExecFold f = folds[i * naggs + a];
                        if (f.fold) {
                            // its inputs again (phase 2 kept only the verdict): deterministic
                            ex->evaluate(values.data() + r.row * width, row_nulls(r.row), key,
                                         inputs, detail);
                            f.row = &inputs;
                        }
                        path_.exec_fold(a, f, *recs[i].rec.time, *recs[i].w);
                        if (memory_limit_ > 0 && (i & 63) == 0) {
                            const std::size_t used = path_.memory_bytes();
                            // the live states, plus what the next commit copies of them (the
                            // snapshot, the rows written: about twice the changed windows)
                            const std::size_t pending = 2 * path_.pending_state_bytes();
                            if (static_cast<std::int64_t>(used + pending) + memory_reserve_ >
                                memory_limit_)
                                memory_exceeded();
                            give_back_memory(used);
                        }
                    }
                });
            } catch (const MemoryLimitExceeded&) {
                throw;
            } catch (const Error& e) {
                const Interrupt why = interrupt_of(e);
                if (why == Interrupt::Shutdown || why == Interrupt::Cancel) throw;
                const flow::ExecRecord& r = batch.records[i];
                const std::string fn = ex->failed_function();
                const std::string message =
                    "aggregation \"" + def.name + "\"" + (fn.empty() ? "" : ", " + fn) + ": " +
                    (why == Interrupt::Timeout ? user_code_timeout_message() : e.what());
                ledger_->poisoned[{def.id, r.tp, r.offset}] = {
                    why == Interrupt::Timeout ? flow::DeadReason::UserCodeTimeout
                                              : flow::DeadReason::AggregateError,
                    message};
                ledger_->last_error[def.id] = message;
                if (why == Interrupt::Timeout) ledger_->timed_out(def.id, now, message);
                throw AggregationRebuild(message);
            }
        }
    } catch (...) {
        path_.hold_ends(false);
        MemoryContextSwitchTo(outer);
        throw;
    }
    path_.hold_ends(false);
    MemoryContextSwitchTo(outer);
}

}  // namespace stoatflow::pg
