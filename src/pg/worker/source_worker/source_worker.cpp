// A source worker's lifecycle: start (restore the committed state, seek the consumer), the
// loop with its per-iteration memory and failure backoff, the memory-limit stop, the rebuild
// when partitions are added, and the status row. The step itself is in consume_step.cpp.
#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <optional>
#include <set>

#include <malloc.h>
#include <string>

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/worker/background_step.hpp"
#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/settings.hpp"
#include "stoatflow/pg/worker/source_worker.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/worker/worker_loop.hpp"

extern "C" {
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "utils/memutils.h"
#include "storage/ipc.h"

PGDLLEXPORT void stoatflow_source_worker_main(Datum arg);
PGDLLEXPORT void stoatflow_backfill_worker_main(Datum arg);
}

namespace stoatflow::pg {

std::string megabytes(std::int64_t bytes) {
    return std::to_string((bytes + (1 << 19)) >> 20) + " MB";
}

SourceWorker::SourceWorker(std::int32_t source_id, const flow::Clock& clock, std::int32_t backfill)
    : source_id_(source_id), backfill_(backfill), clock_(clock) {}

void SourceWorker::run() {
    flow::Backoff backoff(kFailureRetryFirstMs, kFailureRetryMaxMs);
    LoopMemory loop;
    while (!got_sigterm && !joined_) {
        loop.next_iteration();
        try {
            if (memory_stopped_at_ != 0) {  // stopped in the middle of a batch: see below
                if (!memory_stop_over()) {
                    wait_ms(kIdleCheckMs);
                    continue;
                }
            }
            // Held for a backfill's join (backfill.cpp): nothing is consumed until it is over.
            if (holding_ && !hold_over()) {
                wait_ms(kHoldLookMs);
                continue;
            }
            if (!pipeline_) {
                const Start st = start();
                if (st == Start::Dropped) return;
                if (st == Start::NoAggregations) {
                    wait_ms(kIdleCheckMs);
                    continue;
                }
            }
            step();
            backoff.succeeded();
        } catch (const MemoryLimitExceeded& e) {
            memory_stop(e);
        } catch (const AggregationRebuild& e) {
            // One aggregation's fold failed: its state cannot be trusted. Start over from the
            // committed state at once (no backoff, not a failure of the source); the failing
            // record is then that aggregation's dead letter (UserCodeLedger).
            start_over(e.what());
        } catch (const Error& e) {
            if (e.sqlstate() != sqlstate::kQueryCanceled) {
                fail(e.what());
                wait_ms(backoff.failed());
                continue;
            }
            // A cancel (pg_cancel_backend, drop_aggregation interrupting an owner's code) or
            // SIGTERM: drop what is uncommitted and start over (or leave); the source did not fail.
            start_over(e.what());
            if (!got_sigterm) wait_ms(kCancelRestartMs);
        } catch (const std::exception& e) {
            // Whatever was consumed since the last commit is discarded with the
            // pipeline; the next start resumes from the committed state.
            fail(e.what());
            wait_ms(backoff.failed());
        }
    }
    if (pipeline_ && !joined_ && !holding_) {  // held: committed at the hand-over's positions
        try {
            commit(true);  // graceful shutdown: make durable what was consumed
        } catch (const std::exception& e) {
            fail(e.what());
        }
    }
}

// Not a failure of the source (no backoff, no status): everything uncommitted is dropped and
// the next iteration starts over from the committed state.
void SourceWorker::start_over(const std::string& why) {
    pg_call([&] {
        ereport(LOG, (errmsg("stoatflow source %d: %s; starting over from the committed state",
                             source_id_, why.c_str())));
    });
    drop_pipeline();
}

void SourceWorker::drop_pipeline() {
    pipeline_.reset();
    consumer_.reset();
    holding_ = false;
}

// A source without aggregations does not consume: records read before the first
// aggregation exists would be committed past and never seen by it.
SourceWorker::Start SourceWorker::start() {
    drop_pipeline();
    // A new library over an old catalog (before ALTER EXTENSION stoatflow UPDATE): wait,
    // touching nothing, until the catalog is the one this library was built for.
    std::string installed;
    in_transaction([&] {
        if (spi_exec(
                "SELECT extversion FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) "
                "'stoatflow'") > 0)
            installed = spi_text(0, 1).value_or("");
    });
    if (installed != STOATFLOW_VERSION) {
        set_status("error", "the stoatflow library is version " STOATFLOW_VERSION
                            " but the extension in this database is version " +
                                installed + ": run ALTER EXTENSION stoatflow UPDATE");
        return Start::NoAggregations;
    }
    std::optional<SourceDef> src;
    std::vector<AggregationDef> aggs;
    bool paused = false;
    bool held = false;
    in_transaction([&] {
        src = load_source_by_id(source_id_);
        if (src) {
            // A source worker runs the aggregations that do not backfill; a backfill worker its
            // one aggregation, while its backfill row exists (README "Backfill and start_from").
            std::set<std::int32_t> backfilling;
            const auto n = spi_exec(
                "SELECT b.aggregation_id, b.start_from, a.aggregation_name FROM stoatflow.backfill "
                "b JOIN stoatflow.aggregation a USING (aggregation_id) WHERE b.source_id "
                "OPERATOR(pg_catalog.=) $1",
                {arg_int32(source_id_)});
            for (std::uint64_t r = 0; r < n; ++r) {
                const auto id = static_cast<std::int32_t>(*spi_int64(r, 1));
                backfilling.insert(id);
                if (id == backfill_) {
                    backfill_from_ = *spi_text(r, 2);
                    backfill_name_ = *spi_text(r, 3);
                }
            }
            if (backfill_ != 0 && !backfilling.count(backfill_)) {
                src.reset();  // joined or dropped: this worker is done
                return;
            }
            // A roll-up runs where its upstream runs, in the source's worker (README "Roll-ups":
            // a backfilling aggregation has none; ordered by id, an upstream comes first).
            std::set<std::int32_t> kept;
            for (auto& a : load_aggregations(source_id_))
                if (a.upstream_id != 0 ? backfill_ == 0 && kept.count(a.upstream_id) != 0
                    : backfill_ != 0   ? a.id == backfill_
                                       : !backfilling.count(a.id)) {
                    kept.insert(a.id);
                    aggs.push_back(std::move(a));
                }
            signature_ = aggregation_signature();
            paused = source_paused();
            if (backfill_ == 0) {
                held = answer_holds() || source_held();
                // Bounded (hold_expired): a backfill that does not join is released.
                if (held && hold_expired()) held = answer_holds() || source_held();
                if (!held) holding_since_ = 0;
            }
        }
    });
    if (!src) return Start::Dropped;
    // Paused (README "Pausing a source"): nothing is consumed, by the source's worker or its
    // backfills; looked at again like an idle source, so resume_source (or drop_source) is seen
    // within kIdleCheckMs.
    if (paused) {
        set_status("paused", status_rule_.last_error());
        quiet_progress();
        return Start::NoAggregations;
    }
    if (held) {  // a backfill joins at the committed positions
        quiet_progress();
        return Start::NoAggregations;
    }
    if (aggs.empty()) {
        set_status("idle", "");
        quiet_progress();
        return Start::NoAggregations;
    }
    const std::string name = src->name;
    const std::string app =
        backfill_ != 0 ? "stoatflow backfill " + backfill_name_ : "stoatflow " + name;
    pg_call([&] { pgstat_report_appname(app.c_str()); });
    std::unique_ptr<CommitCycle> pipeline;
    in_transaction([&] {
        pipeline = std::make_unique<CommitCycle>(*src, std::move(aggs),
                                                 &ledger_);  // resolves a row type
        if (backfill_ != 0) pipeline->set_backfill(backfill_);
        pipeline->restore();
    });

    // A backfill never commits offsets to Kafka: its group holds none to remove.
    auto consumer = std::make_unique<kafka::Consumer>(
        src->brokers, src->kafka_options,
        kafka::source_group_id(database_name, name) +
            (backfill_ != 0 ? "-backfill-" + backfill_name_ : std::string()));
    consumer->want_headers(src->has_columns);  // kafka_headers
    std::vector<kafka::PartitionStart> starts;
    std::vector<std::size_t> counts;
    topics_ = src->topics;              // (note_skip names them)
    if (backfill_ != 0) read_limits();  // (by topic name)
    high_.clear();
    const bool latest = src->start_offset == "latest";
    const bool fresh = pipeline->path().next_offsets().empty();
    std::optional<core::Millis> start_ms;  // a timestamp start_offset
    if (fresh && backfill_ == 0 && !latest && src->start_offset != "earliest")
        in_transaction([&] {
            spi_exec(
                "SELECT pg_catalog.ceil(pg_catalog.date_part('epoch', $1::pg_catalog.timestamptz) "
                "OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8",
                {arg_text(src->start_offset)});
            start_ms = *spi_int64(0, 1);
        });
    const auto stored_offsets = pipeline->path().next_offsets();
    next_admitted_.clear();
    parked_.clear();
    to_park_.clear();
    // Every partition of every topic; the watermark is one over all of them (README "Expressions
    // and PostgreSQL aggregates").
    for (std::size_t t = 0; t < src->topics.size(); ++t) {
        const std::string& topic = src->topics[t];
        const auto parts = consumer->partitions(topic, kKafkaTimeoutMs);
        counts.push_back(parts.size());
        for (std::int32_t p : parts) {
            const core::TopicPartition tp{static_cast<std::int32_t>(t), p};
            const auto stored = stored_offsets.find(tp);
            const auto [lo, hi] = consumer->watermarks(topic, p, kKafkaTimeoutMs);
            std::int64_t from;
            if (stored != stored_offsets.end()) {
                from = stored->second;
                // Retention deleted records while the source was away: skipped, counted,
                // recorded with the next commit (never silently).
                if (from < lo) {
                    note_skip(pipeline->path(), tp, from, lo);
                    from = lo;
                }
            } else if (backfill_ != 0) {
                from = backfill_start(*src, *consumer, tp, lo, hi);
                pipeline->path().restore_offset(tp, from);  // written by the first commit
                offsets_moved_ = true;
            } else {
                // start_offset applies to a new source only; a partition added to a running
                // topic is read from its start.
                from = latest && fresh ? hi
                       : start_ms && fresh
                           ? consumer->offset_for_time(topic, p, *start_ms, kKafkaTimeoutMs)
                           : lo;
            }
            starts.push_back({tp, from});
            next_admitted_[tp] = from;
            // A partition with records left to read holds the watermark until its first one
            // (a backfill's: records it will read, below the source's position).
            const std::int64_t end = backfill_ != 0 ? std::min(hi, limit_of(tp)) : hi;
            pipeline->path().watermark().assign(tp.id(), end > from);
            high_[tp] = hi;
        }
    }
    consumer->assign(src->topics, starts);
    // README "Progress": rates measured afresh, from these positions.
    meter_.start(clock_.now());
    for (const auto& s : starts)
        if (s.offset >= 0) meter_.observe(s.tp, s.offset, high_[s.tp]);
    claim_progress();
    progress_quiet_ = false;
    partitions_ = counts;
    partitions_checked_at_ = clock_.now();
    idle_shown_.clear();
    pipeline_ = std::move(pipeline);
    consumer_ = std::move(consumer);
    commit_timer_.committed(clock_.now());
    committed_w_ = pipeline_->path().watermark().current();
    offsets_moved_ =
        offsets_moved_ ||
        pipeline_->path().skipped_pending();  // a skip found at start is committed soon
    status_moved_ = true;
    status_rule_.progress(clock_.now());
    // After a failure the status stays 'error' until a commit succeeds (no flapping).
    if (!status_rule_.failed()) set_status("running", status_rule_.last_error());
    return Start::Started;
}

// Partitions added to any of the topics while the source runs: librdkafka refreshes its metadata
// only every few minutes, and an explicit assignment never grows by itself. Seen, the worker
// commits and starts over from the committed state with every partition assigned (the new ones
// from their start). A topic that is gone shows as the source's error.
bool SourceWorker::partitions_added(core::Millis now) {
    if (now - partitions_checked_at_ < kPartitionCheckMs) return false;
    partitions_checked_at_ = now;
    std::string msg;
    for (std::size_t t = 0; t < topics_.size(); ++t) {
        std::size_t n = 0;
        try {
            n = consumer_->partitions(topics_[t], kKafkaTimeoutMs).size();
        } catch (const Error& e) {
            // Also the probe for a broker that hangs (port open, no answer): librdkafka's
            // fetches then just wait, and nothing else would show it.
            status_rule_.broker_error(now, e.what());
            return false;
        }
        if (n > partitions_[t])
            msg += (msg.empty() ? "" : ", ") + std::string("topic ") + topics_[t] + " grew from " +
                   std::to_string(partitions_[t]) + " to " + std::to_string(n) + " partitions";
    }
    if (msg.empty()) return false;
    pg_call([&] { elog(LOG, "stoatflow source %d: %s: assigning them", source_id_, msg.c_str()); });
    commit(false);
    drop_pipeline();
    return true;
}

// stoatflow.worker_memory_limit (README "Security"): past it, commit what was consumed and stop
// consuming, with a status naming the limit and the aggregation holding the most state,
// until the limit is raised (SIGHUP) or aggregations change. A bounded stop beats the
// kernel's OOM killer, which would make the postmaster restart every session.
bool SourceWorker::over_memory_limit(core::Millis now) {
    if (now - memory_checked_at_ < kMemoryCheckIntervalMs) return memory_blocked_;
    memory_checked_at_ = now;
    // What grows without bound is window state (keys × open windows); librdkafka's prefetch
    // is bounded by its own settings and would not shrink by stopping, so the limit counts
    // the engines' memory.
    const std::int64_t limit = static_cast<std::int64_t>(worker_memory_limit_kb) * 1024;
    std::int64_t used = 0;
    for (const auto& a : pipeline_->path().aggregation_memory())
        used += static_cast<std::int64_t>(a.second);
    // README "Aligned consumption": near the limit, while some partition runs ahead of the
    // slowest one, only the slowest partitions are read so that the watermark moves and windows
    // close; past the limit consuming stops (below). The decision is flow::memory_action's.
    const bool drain_pauses = !alignment(true).paused.empty();
    const flow::MemoryAction act = flow::memory_action(used, limit, memory_draining_, drain_pauses);
    if (act != flow::MemoryAction::stop) {
        const bool drain = act == flow::MemoryAction::drain;
        if (drain != memory_draining_) show_drain(drain, used, limit, now);
        memory_draining_ = drain;
        if (memory_blocked_) {
            memory_blocked_ = false;
            set_status("running", "");
        }
        return false;
    }
    memory_draining_ = false;
    if (!memory_blocked_) {
        commit(false);
        if (!pipeline_) return true;  // aggregations changed: rebuilt from the committed state
        std::string biggest;
        std::size_t most = 0;
        for (const auto& a : pipeline_->path().aggregation_memory())
            if (a.second >= most) most = a.second, biggest = a.first;
        const std::string msg =
            "window state of " + megabytes(used) + " exceeds stoatflow.worker_memory_limit (" +
            megabytes(limit) + "); consuming stopped. Aggregation \"" + biggest +
            "\" holds the most state (about " + megabytes(static_cast<std::int64_t>(most)) +
            "). Raise the limit and reload, or drop or re-declare that aggregation.";
        memory_blocked_ = true;
        show_memory_stop(msg, biggest);
    }
    // Consume nothing; keep looking for a reload or changed aggregations (wait_ms reloads).
    wait_ms(kIdleCheckMs);
    bool rebuild = false;
    in_transaction([&] { rebuild = aggregation_signature() != signature_ || !source_exists(); });
    if (rebuild) {
        drop_pipeline();
        memory_blocked_ = false;
    }
    return true;
}

// The limit was passed while an executor batch was folded (an aggregate state can grow by a
// lot per record, so the executor checks per record): nothing of the batch can be committed
// half-folded, so everything uncommitted is dropped (its memory given back) and the source
// consumes nothing until the limit or its aggregations change; then it starts over from the
// committed state. Nothing is lost.
void SourceWorker::memory_stop(const MemoryLimitExceeded& e) {
    const std::int64_t used =
        pipeline_ ? static_cast<std::int64_t>(pipeline_->path().memory_bytes()) : 0;
    const std::int64_t limit = static_cast<std::int64_t>(worker_memory_limit_kb) * 1024;
    drop_pipeline();
    malloc_trim(0);
    memory_stopped_at_ = limit > 0 ? limit : 1;
    const std::string msg =
        "window state of " + megabytes(used) + " exceeds stoatflow.worker_memory_limit (" +
        megabytes(limit) + "); consuming stopped. " + e.what() +
        " holds the most state (PostgreSQL aggregate states). Raise the limit and reload, or "
        "drop or re-declare that aggregation.";
    show_memory_stop(msg, e.aggregation_name());
}

// The one way a memory stop shows (both stops above): a warning in the server log, the source's
// status 'error' and that of the aggregation holding the most state, both naming the limit. The
// next commit after consuming resumes writes the aggregation's status again.
void SourceWorker::show_memory_stop(const std::string& msg, const std::string& aggregation) {
    pg_call(
        [&] { ereport(WARNING, (errmsg("stoatflow source %d: %s", source_id_, msg.c_str()))); });
    set_status("error", msg);
    try {
        in_transaction([&] {
            spi_exec(
                "UPDATE stoatflow.aggregation_progress p SET status = 'error', last_error = $3 "
                "FROM stoatflow.aggregation a WHERE a.aggregation_id OPERATOR(pg_catalog.=) "
                "p.aggregation_id AND a.source_id OPERATOR(pg_catalog.=) $1 AND "
                "a.aggregation_name OPERATOR(pg_catalog.=) $2",
                {arg_int32(source_id_), arg_text(aggregation), arg_text(msg)});
        });
    } catch (const std::exception&) {
        // status is best effort
    }
}

// Stopped by memory_stop: true (start over) once the limit or the aggregations changed.
bool SourceWorker::memory_stop_over() {
    const std::int64_t limit = static_cast<std::int64_t>(worker_memory_limit_kb) * 1024;
    bool changed = (limit > 0 ? limit : 1) != memory_stopped_at_;
    if (!changed)
        in_transaction(
            [&] { changed = aggregation_signature() != signature_ || !source_exists(); });
    if (changed) memory_stopped_at_ = 0;
    return changed;
}

void SourceWorker::fail(const std::string& what) {
    memory_blocked_ = false;
    drop_pipeline();
    const std::string msg = what;
    pg_call([&] { elog(LOG, "stoatflow source %d: %s", source_id_, msg.c_str()); });
    status_rule_.worker_failed(msg);
    set_status("error", msg);
}

void SourceWorker::set_status(const std::string& status, const std::string& error) {
    if (!status_board_.change(status, error)) return;
    try {
        in_transaction([&] {
            if (!extension_present()) return;
            // A backfill worker's troubles are its aggregation's, not the source's.
            if (backfill_ != 0) {
                if (!error.empty())
                    spi_exec("UPDATE stoatflow.aggregation_progress SET last_error = $2 WHERE "
                             "aggregation_id OPERATOR(pg_catalog.=) $1",
                             {arg_int32(backfill_), arg_text(error)});
                return;
            }
            write_source_status(source_id_, status, error);
        });
    } catch (const std::exception&) {
        // Status is best effort; the error itself is logged by fail().
    }
}

void SourceWorker::show_status(core::Millis now) {
    flow::StatusRule::Shown shown;
    if (status_rule_.decide(now, &shown)) set_status(shown.status, shown.error);
}

}  // namespace stoatflow::pg

using namespace stoatflow::pg;

namespace {

// Cancels what the workers of backend type `type` run now (SIGINT, as pg_cancel_backend).
void interrupt_workers(const std::string& type) {
    SpiSession spi;
    const auto n = spi_exec("SELECT pid FROM pg_catalog.pg_stat_activity WHERE backend_type "
                            "OPERATOR(pg_catalog.=) $1",
                            {arg_text(type.substr(0, BGW_MAXLEN - 1))});
    std::vector<std::int64_t> pids;
    for (std::uint64_t r = 0; r < n; ++r)
        if (const auto pid = spi_int64(r, 1)) pids.push_back(*pid);
    spi.finish();
    for (const std::int64_t pid : pids) (void)kill(static_cast<pid_t>(pid), SIGINT);
}

}  // namespace

// stoatflow._interrupt_source_worker(source_name): drop_aggregation (and drop_source) cancel what
// the source's worker runs now (SIGINT, as pg_cancel_backend), so that an owner's code that
// loops cannot hold the drop up; the worker starts over from its committed state.
STOATFLOW_FUNCTION(stoatflow__interrupt_source_worker) {
    if (PG_ARGISNULL(0)) PG_RETURN_VOID();
    interrupt_workers("stoatflow source " + text_to_string(PG_GETARG_DATUM(0)));
    PG_RETURN_VOID();
}

// stoatflow._interrupt_backfill_worker(aggregation_name): the same for the backfill worker of an
// aggregation that is dropped (README "Removing a pipeline"): it starts over, finds its backfill
// row gone and leaves.
STOATFLOW_FUNCTION(stoatflow__interrupt_backfill_worker) {
    if (PG_ARGISNULL(0)) PG_RETURN_VOID();
    interrupt_workers("stoatflow backfill " + text_to_string(PG_GETARG_DATUM(0)));
    PG_RETURN_VOID();
}

// A backfill worker (the launcher starts one per row of stoatflow.backfill): the source worker's
// code for that one aggregation (README "Backfill and start_from").
void stoatflow_backfill_worker_main(Datum arg) {
    worker_connect();
    BackgroundStep::join_at_exit();
    const int32 id = DatumGetInt32(arg);
    cpp_call([id] {
        std::int32_t source = 0;
        in_transaction([&] {
            if (!extension_present()) return;
            if (spi_exec("SELECT source_id FROM stoatflow.backfill WHERE aggregation_id "
                         "OPERATOR(pg_catalog.=) $1",
                         {arg_int32(id)}) > 0)
                source = static_cast<std::int32_t>(*spi_int64(0, 1));
        });
        if (source != 0) SourceWorker(source, wall_clock(), id).run();
    });
    proc_exit(0);
}

void stoatflow_source_worker_main(Datum arg) {
    worker_connect();
    BackgroundStep::join_at_exit();
    const int32 id = DatumGetInt32(arg);
    cpp_call([id] { SourceWorker(id, wall_clock()).run(); });
    proc_exit(0);
}
