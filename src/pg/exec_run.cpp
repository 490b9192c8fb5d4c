// Executor mode on the main thread (SPEC 11): the records the consume thread extracted are
// converted (RowType, as the source's owner), evaluated by each aggregation's executor (as that
// aggregation's owner) and fed to the record path in order. A record whose expressions raise an
// error is a dead letter (expression_error); an error while folding (an aggregate's transition
// function) fails the worker, which starts over from the committed state.
#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "stoatflow/pg/commit_cycle.hpp"
#include "stoatflow/pg/exec_path.hpp"
#include "stoatflow/pg/spi.hpp"

#include "stoatflow/kafka/fast_convert.hpp"

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
        if (!kafka::parse_iso_timestamptz(text, micros)) return false;
        out = core::floor_div(micros, 1000);
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

// One record's verdict per aggregation run by the executor.
struct Verdict {
    std::string reason;  // not empty: a dead letter for this aggregation (the record goes on)
    std::string detail;
};

}  // namespace

void CommitCycle::run_executor() {
    if (!exec_ || path_.exec_waiting() == 0) return;
    const ExecBatch& batch = path_.take_exec_batch();
    const RowType& rt = row_->type();
    const std::size_t width = rt.width(), n = batch.records.size(), naggs = aggs_.size();
    MemoryContext outer = CurrentMemoryContext;
    pg_call([&] {
        MemoryContextReset(exec_->batch_cxt);
        MemoryContextSwitchTo(exec_->batch_cxt);
    });
    std::vector<Datum> values;
    std::vector<bool> nulls;
    std::vector<std::string> bad;
    std::unique_ptr<bool[]> isnull(new bool[width]);
    std::vector<ExecFold> folds(naggs);
    std::vector<std::string> keys(naggs);
    std::vector<CallInputs> inputs(naggs);
    std::vector<Verdict> verdicts(naggs);
    // The record (index) whose evaluation raised an error in these aggregations: evaluated
    // again without them.
    std::size_t failed_at = n;
    std::vector<bool> failed(naggs, false);
    std::size_t evaluating = naggs;  // the aggregation whose expressions run now
    SlowRecord sr;                   // one record's time, fast-path key and values (reused)
    const std::size_t kSourceExpressions = naggs + 1;  // `evaluating`: the source's own
    std::string source_key;
    CallInputs source_inputs;

    // One record; false when it is a dead letter as a whole.
    const auto one = [&](std::size_t i, bool& folding) {
        const ExecRecord& rec = batch.records[i];
        if (!rec.reason.empty()) return path_.exec_dead(rec, rec.reason, rec.detail);
        if (!bad[rec.row].empty()) return path_.exec_dead(rec, "bad_value", bad[rec.row]);
        const Datum* v = values.data() + rec.row * width;
        for (std::size_t c = 0; c < width; ++c) isnull[c] = nulls[rec.row * width + c];
        sr.reason.clear();
        sr.detail.clear();
        sr.key.reset();
        sr.time.reset();
        decode_row(v, isnull.get(), exec_->has_fast, sr);
        if (!sr.reason.empty()) return path_.exec_dead(rec, sr.reason, sr.detail);
        if (exec_->source) {  // the event time or the key is an expression
            std::string detail;
            evaluating = kSourceExpressions;
            const AggregationExecutor::Outcome o =
                exec_->source->evaluate(v, isnull.get(), source_key, source_inputs, detail);
            evaluating = naggs;
            if (o == AggregationExecutor::Outcome::NullKey) {
                const bool time = detail.find("\"source_time\"") != std::string::npos;
                return path_.exec_dead(rec, time ? "missing_time" : "missing_key",
                                       time ? "event_time is null" : "key is null");
            }
            const std::vector<std::string> texts = exec_->source->key_texts(source_key);
            std::size_t at = 0;
            if (exec_->time_expr) {
                core::Millis t = 0;
                if (kafka::is_infinity_text(texts.at(at)))  // README "Columns", Conversion
                    return path_.exec_dead(rec, "bad_value",
                                           "event_time is " + texts.at(0) +
                                               ": an event time must be finite");
                if (!parse_time_text(texts.at(at++), exec_->time_type, t))
                    return path_.exec_dead(rec, "time_out_of_range",
                                           "event_time is " + texts.at(0) +
                                               ", outside the event time range 0001-01-01 .. "
                                               "9999-12-31 (UTC)");
                sr.time = t;
            }
            if (exec_->key_expr) sr.key = texts.at(at);
        }
        if (!sr.time)
            return path_.exec_dead(rec, "missing_time", "column \"" + time_column_ + "\" is null");
        if (exec_->has_fast && !sr.key)
            return path_.exec_dead(rec, "missing_key", "column \"" + key_column_ + "\" is null");
        bool kept = exec_->has_fast;
        for (std::size_t a = 0; a < naggs; ++a) {
            AggregationExecutor* ex = exec_->executors[a].get();
            if (ex == nullptr) continue;
            verdicts[a] = {};
            folds[a] = {};
            if (failed_at == i && failed[a]) continue;  // its dead letter is noted
            AggregationExecutor::Outcome o = AggregationExecutor::Outcome::Fold;
            std::string detail;
            evaluating = a;
            as_role(aggs_[a].def.owner,
                    [&] { o = ex->evaluate(v, isnull.get(), keys[a], inputs[a], detail); });
            evaluating = naggs;
            if (o == AggregationExecutor::Outcome::NullKey) {
                verdicts[a] = {"missing_key",
                               "aggregation \"" + aggs_[a].def.name + "\": " + detail};
                continue;
            }
            kept = true;
            folds[a].fold = o == AggregationExecutor::Outcome::Fold;
            folds[a].filtered = o == AggregationExecutor::Outcome::Filtered;
            folds[a].key = keys[a];
            folds[a].row = &inputs[a];
        }
        // Dead for every aggregation (and none takes the fast path): a dead letter as a whole,
        // as in 0.1 (it does not move the watermark).
        bool first = !kept;
        for (std::size_t a = 0; a < naggs; ++a) {
            if (verdicts[a].reason.empty()) continue;
            if (first)
                path_.exec_dead(rec, verdicts[a].reason, verdicts[a].detail);
            else
                path_.exec_note(rec, verdicts[a].reason, verdicts[a].detail);
            first = false;
        }
        if (!kept) {
            if (first) path_.exec_skip(rec);  // its dead letters were noted when they failed
            return;
        }
        folding = true;
        path_.exec_feed(rec, *sr.time, sr.key ? &*sr.key : nullptr, sr.values.data(), folds.data());
        folding = false;
    };

    try {
        run_as_owner(source_.owner, [&] {
            if (batch.rows.size() > 0) rt.convert(batch.rows, values, nulls, bad, &exec_->used);
            // One subtransaction per run of records: an error in an aggregation's expressions
            // rolls it back (PostgreSQL's own cleanup after any error), becomes that
            // aggregation's dead letter (expression_error), and the record is evaluated again
            // without it.
            std::size_t i = 0;
            while (i < n) {
                bool folding = false;
                const std::string failure = try_in_subtransaction([&] {
                    for (; i < n; ++i) {
                        one(i, folding);
                        if (failed_at == i) {
                            failed_at = n;
                            std::fill(failed.begin(), failed.end(), false);
                        }
                    }
                });
                // An error while folding (a transition function's): the worker starts over.
                if (!failure.empty() && folding) throw Error(sqlstate::kInternalError, failure);
                if (failure.empty()) continue;
                // The source's event time or key raised it: a dead letter as a whole (nothing of
                // the record was fed).
                if (evaluating == kSourceExpressions) {
                    path_.exec_dead(batch.records[i], "expression_error",
                                    "the source's event_time or key: " + failure);
                    evaluating = naggs;
                    ++i;
                    continue;
                }
                // Raised outside the aggregations' expressions: the worker starts over.
                if (evaluating == naggs) throw Error(sqlstate::kInternalError, failure);
                if (failed_at != i) {
                    failed_at = i;
                    std::fill(failed.begin(), failed.end(), false);
                }
                failed[evaluating] = true;
                path_.exec_note(batch.records[i], "expression_error",
                                "aggregation \"" + aggs_[evaluating].def.name + "\": " + failure);
                evaluating = naggs;
            }
        });
    } catch (...) {
        MemoryContextSwitchTo(outer);
        throw;
    }
    MemoryContextSwitchTo(outer);
}

}  // namespace stoatflow::pg
