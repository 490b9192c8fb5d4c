// Background workers. The launcher keeps one worker per source alive (restarting it with
// backoff after a crash, stopping it when the source is dropped); a source worker runs the
// consume → window → commit cycle of SPEC 5, one transaction per commit interval.
//
//   launcher:  every second: list sources; start missing workers; stop dropped ones.
//   worker:    start (restore, seek) → [poll batch → process]* → commit → ... ;
//              SIGTERM: commit what was consumed, exit 0. Any failure: record it, back off,
//              rebuild from the committed state (nothing uncommitted survives a failure).
#include "stoatflow/core/commit_policy.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/kafka/consumer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <pthread.h>

#include "stoatflow/pg/catalog.hpp"
#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/pipeline.hpp"
#include "stoatflow/pg/rows.hpp"
#include "stoatflow/pg/settings.hpp"
#include "stoatflow/pg/spi.hpp"
#include "stoatflow/pg/worker.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

PGDLLEXPORT void stoatflow_launcher_main(Datum arg);
PGDLLEXPORT void stoatflow_source_worker_main(Datum arg);
}

namespace stoatflow::pg {

// Shared memory: where the launcher's latch is, so a committed declaration can wake it
// instead of waiting for its next look (once a second).
struct SharedState {
    Latch* launcher_latch;
};
static SharedState* shared = nullptr;
static shmem_request_hook_type prev_shmem_request = nullptr;
static shmem_startup_hook_type prev_shmem_startup = nullptr;
static bool wake_on_commit = false;
static bool xact_callback_registered = false;

namespace {

constexpr int kPollTimeoutMs = 100;
constexpr long kIdleCheckMs = 200;  // a source without aggregations looks again this often
constexpr std::size_t kPollBatch = 10000;
// Broker calls block the worker (SIGTERM waits for them): keep each one short and let
// the retry loop with backoff do the waiting.
constexpr int kKafkaTimeoutMs = 2000;
constexpr core::Millis kMaxBackoffMs = 30000;
// A broker error shows as status 'error' while it is this recent and nothing was consumed since.
constexpr core::Millis kBrokerErrorShownMs = 30000;
// With no background worker slot free, the launcher tries again this often.
constexpr core::Millis kWorkerSlotRetryMs = 10000;
// How often a running worker asks the broker whether its topic has gained partitions.
constexpr core::Millis kPartitionCheckMs = 10000;

volatile sig_atomic_t got_sigterm = 0;

void handle_sigterm(SIGNAL_ARGS) {
    const int save_errno = errno;
    got_sigterm = 1;
    SetLatch(MyLatch);
    errno = save_errno;
}

core::Millis wall_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// Runs f in its own transaction with SPI connected and a snapshot; any failure aborts
// the transaction and is rethrown as a C++ exception.
template <class F>
void in_transaction(F&& f) {
    pg_call([] {
        SetCurrentStatementStartTimestamp();
        StartTransactionCommand();
        PushActiveSnapshot(GetTransactionSnapshot());
    });
    try {
        SpiSession spi;
        f();
        spi.finish();
        pg_call([] {
            PopActiveSnapshot();
            CommitTransactionCommand();
        });
    } catch (...) {
        pg_call([] { AbortCurrentTransaction(); });
        throw;
    }
    pg_call([] { MemoryContextSwitchTo(TopMemoryContext); });
}

// Sleeps on the latch (SIGTERM, postmaster death and config reloads wake it).
void wait_ms(long ms) {
    pg_call([&] {
        const int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms, PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        (void)rc;
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
    });
}

bool extension_present() {
    spi_exec("SELECT pg_catalog.to_regclass('stoatflow.source') IS NOT NULL");
    return *spi_bool(0, 1);
}

// The worker runs as the bootstrap superuser: right after connecting it pins its own path, so
// nothing a database or role setting puts on search_path can shadow a function or operator its
// SQL uses (SPEC 10). PGC_S_OVERRIDE also outranks any later SET by code it runs.
void pin_search_path() {
    SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
}

// stoatflow.source_status: the worker's status, or the launcher's word that it cannot start one.
void write_source_status(std::int32_t source_id, const std::string& status, const std::string& error) {
    spi_exec("INSERT INTO stoatflow.source_status (source_id, status, last_error, updated_at) "
             "SELECT $1, $2, CASE WHEN $3 OPERATOR(pg_catalog.=) '' THEN NULL ELSE $3 END, pg_catalog.now() "
             "WHERE EXISTS (SELECT 1 FROM stoatflow.source WHERE source_id OPERATOR(pg_catalog.=) $1) "
             "ON CONFLICT (source_id) DO UPDATE SET status = EXCLUDED.status, "
             "last_error = EXCLUDED.last_error, updated_at = EXCLUDED.updated_at",
             {arg_int32(source_id), arg_text(status), arg_text(error)});
}

std::string megabytes(std::int64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MB"; }

// ---------------------------------------------------------------------------------
// Consuming while a commit is written

// Runs `step` on a second thread until finish(), so records are consumed and windowed
// while the main thread writes the previous commit. Every PostgreSQL call stays on the
// main thread; the step touches only the consumer and the pipeline's per-record path
// (SourcePipeline::process and what librdkafka's callbacks feed), which the writing side
// does not read. The thread blocks all signals (PostgreSQL's handlers belong to the main
// thread). The destructor stops and joins it whatever happened; finish() also rethrows
// what the thread threw.
class BackgroundStep {
public:
    explicit BackgroundStep(std::function<bool()> step) : step_(std::move(step)) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        try {
            thread_ = std::thread([this] { run(); });
        } catch (...) {
            pthread_sigmask(SIG_SETMASK, &old, nullptr);
            throw;
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
    ~BackgroundStep() { stop(); }
    BackgroundStep(const BackgroundStep&) = delete;
    BackgroundStep& operator=(const BackgroundStep&) = delete;

    void finish() {
        stop();
        if (error_) std::rethrow_exception(error_);
    }

private:
    void run() {
        try {
            // step() returns false when there is nothing it may do now (bounds reached).
            while (!stop_.load(std::memory_order_acquire))
                if (!step_()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        } catch (...) {
            error_ = std::current_exception();
        }
    }
    void stop() {
        stop_.store(true, std::memory_order_release);
        if (thread_.joinable()) thread_.join();
    }

    std::function<bool()> step_;
    std::atomic<bool> stop_{false};
    std::exception_ptr error_;
    std::thread thread_;
};

// ---------------------------------------------------------------------------------
// Source worker

class SourceWorker {
public:
    explicit SourceWorker(std::int32_t source_id) : source_id_(source_id) {}

    void run() {
        core::Millis backoff = 1000;
        while (!got_sigterm) {
            try {
                if (!pipeline_) {
                    const Start st = start();
                    if (st == Start::Dropped) return;
                    if (st == Start::NoAggregations) {
                        wait_ms(kIdleCheckMs);
                        continue;
                    }
                }
                step();
                backoff = 1000;
            } catch (const std::exception& e) {
                // Whatever was consumed since the last commit is discarded with the
                // pipeline; the next start resumes from the committed state.
                fail(e.what());
                wait_ms(backoff);
                backoff = std::min(backoff * 2, kMaxBackoffMs);
            }
        }
        if (pipeline_) {
            try {
                commit(true);  // graceful shutdown: make durable what was consumed
            } catch (const std::exception& e) {
                fail(e.what());
            }
        }
    }

private:
    enum class Start { Started, NoAggregations, Dropped };

    // A source without aggregations does not consume: records read before the first
    // aggregation exists would be committed past and never seen by it.
    Start start() {
        pipeline_.reset();
        consumer_.reset();
        // A new library over an old catalog (before ALTER EXTENSION stoatflow UPDATE): wait,
        // touching nothing, until the catalog is the one this library was built for.
        std::string installed;
        in_transaction([&] {
            if (spi_exec("SELECT extversion FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) "
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
        in_transaction([&] {
            src = load_source_by_id(source_id_);
            if (src) {
                aggs = load_aggregations(source_id_);
                signature_ = aggregation_signature();
            }
        });
        if (!src) return Start::Dropped;
        if (aggs.empty()) {
            set_status("idle", "");
            return Start::NoAggregations;
        }
        const std::string name = src->name;
        pg_call([&] { pgstat_report_appname(("stoatflow " + name).c_str()); });
        auto pipeline = std::make_unique<SourcePipeline>(*src, std::move(aggs));
        in_transaction([&] { pipeline->restore(); });

        auto consumer = std::make_unique<kafka::Consumer>(src->brokers, src->kafka_options,
                                                          "stoatflow-" + std::string(database_name) + "-" + name);
        const auto parts = consumer->partitions(src->topic, kKafkaTimeoutMs);
        std::vector<kafka::PartitionStart> starts;
        const bool latest = src->start_offset == "latest";
        for (std::int32_t p : parts) {
            const auto stored = pipeline->next_offsets().find(p);
            const auto [lo, hi] = consumer->watermarks(src->topic, p, kKafkaTimeoutMs);
            std::int64_t from;
            if (stored != pipeline->next_offsets().end()) {
                from = stored->second;
                // Retention deleted records while the source was away: skipped, counted,
                // recorded with the next commit (never silently).
                if (from < lo) {
                    note_skip(*pipeline, p, from, lo);
                    from = lo;
                }
            } else {
                // start_offset applies to a new source only; a partition added to a running
                // topic is read from its start.
                from = latest && pipeline->next_offsets().empty() ? hi : lo;
            }
            starts.push_back({p, from});
            // A partition with records left to read holds the watermark until its first one.
            pipeline->watermark().assign(p, hi > from);
            high_[p] = hi;
        }
        consumer->assign(src->topic, starts);
        topic_ = src->topic;
        partitions_ = parts.size();
        partitions_checked_at_ = wall_now();
        idle_shown_.clear();
        pipeline_ = std::move(pipeline);
        consumer_ = std::move(consumer);
        last_commit_ = wall_now();
        committed_w_ = pipeline_->watermark().current();
        offsets_moved_ = pipeline_->skipped_pending();  // a skip found at start is committed soon
        status_moved_ = true;
        last_progress_at_ = wall_now();
        // After a failure the status stays 'error' until a commit succeeds (no flapping).
        if (!failed_) set_status("running", last_kafka_error_);
        return Start::Started;
    }

    void step() {
        const core::Millis now = wall_now();
        if (over_memory_limit(now)) return;
        if (partitions_added(now)) return;
        bool progress = consume(kPollTimeoutMs, now);
        out_of_range(now);
        // Partitions that have never delivered a record but now have some waiting hold the
        // watermark again, so a burst on one partition cannot make the others late.
        std::int64_t waiting = 0;  // records in the topic not consumed yet
        for (auto& [p, high] : high_) {
            const std::int64_t h = consumer_->cached_high(topic_, p);
            if (h > high) {
                high = h;
                status_moved_ = true;
            }
            const auto next = pipeline_->next_offsets().find(p);
            const std::int64_t pos = next == pipeline_->next_offsets().end() ? 0 : next->second;
            if (h > pos) waiting += h - pos;
            if (h > pos && pipeline_->watermark().partition_max(p) == core::kNoTime)
                pipeline_->watermark().data_pending(p);
        }
        pipeline_->tick(now);
        // The idle flags are reported with the partitions: a change is worth a commit.
        for (auto& [p, high] : high_) {
            const bool idle = pipeline_->watermark().is_idle(p);
            bool& shown = idle_shown_[p];
            if (idle != shown) {
                shown = idle;
                status_moved_ = true;
            }
        }
        progress |= eof_seen_;
        eof_seen_ = false;
        // Transport errors are retried by librdkafka; the source shows 'error' while they
        // keep coming without progress, and 'running' again once records flow.
        const std::string err = consumer_->take_error();
        if (!err.empty()) {
            last_kafka_error_ = err;
            last_error_at_ = now;
        }
        if (progress) last_progress_at_ = now;
        const bool failing = last_error_at_ > last_progress_at_ && now - last_error_at_ < kBrokerErrorShownMs;
        if (failing) set_status("error", last_kafka_error_);
        else if (!failed_) set_status("running", last_kafka_error_);

        pg_call([] {
            if (ConfigReloadPending) {
                ConfigReloadPending = false;
                ProcessConfigFile(PGC_SIGHUP);
            }
        });
        const core::CommitPolicy policy{commit_interval_ms, catchup_commit_interval_ms};
        if (policy.due(wall_now() - last_commit_, pipeline_->records_since_commit(), pipeline_->pending_changes(),
                       waiting, pipeline_->pending_segments()) ||
            pipeline_->sink_retry_due(wall_now()))
            commit(false);
    }

    // One batch from the consumer through the pipeline; true if records came.
    bool consume(int timeout_ms, core::Millis now) {
        return consumer_->poll(
                   kPollBatch, timeout_ms,
                   [&](const kafka::Message& m) {
                       pipeline_->process(m.partition, m.offset, m.payload, m.len, m.key, m.key_len,
                                          m.timestamp, now);
                   },
                   [&](std::int32_t p, std::int64_t end) {
                       progress_end(p, end);
                       pipeline_->watermark().caught_up(p, now);
                       offsets_moved_ |= pipeline_->note_end_of_partition(p, end);
                   }) > 0;
    }

    // The background step while a commit is written: consume on, within the bounds of one
    // commit (the next one).
    bool consume_while_writing() {
        if (pipeline_->records_since_commit() >= core::CommitPolicy::kMaxRecordsCatchingUp ||
            pipeline_->pending_changes() >= core::CommitPolicy::kMaxChangedWindowsCatchingUp ||
            pipeline_->pending_segments() >= core::CommitPolicy::kMaxSegmentsPerCommit)
            return false;
        consume(20, wall_now());
        return true;
    }

    void progress_end(std::int32_t p, std::int64_t end) {
        if (end > high_[p]) {
            high_[p] = end;
            status_moved_ = true;
        }
        eof_seen_ = true;
    }

    void commit(bool final) {
        if (final) {
            // A dropped source has nothing left to commit to.
            bool exists = false;
            in_transaction([&] { exists = source_exists(); });
            if (!exists) return;
        }
        const core::Millis w = pipeline_->watermark().current();
        const bool changed = pipeline_->records_since_commit() > 0 || offsets_moved_ || w != committed_w_ ||
                             status_moved_ || pipeline_->sink_retry_due(wall_now());
        last_commit_ = wall_now();
        bool rebuild = false;
        if (changed) {
            // What this commit makes durable is fixed here; while it is written, the next
            // records are already consumed and windowed (not at shutdown: nothing more).
            const auto started = std::chrono::steady_clock::now();
            const CommitSnapshot snap = pipeline_->take_snapshot(last_commit_);
            const auto status = partition_status();
            committed_w_ = snap.watermark;
            offsets_moved_ = false;
            status_moved_ = false;
            {
                std::optional<BackgroundStep> consuming;
                if (!final) consuming.emplace([this] { return consume_while_writing(); });
                CommitCounts counts;
                in_transaction([&] {
                    counts = pipeline_->write(snap);
                    write_partition_status(status);
                    rebuild = aggregation_signature() != signature_;
                });
                const double ms =
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
                if (consuming) consuming->finish();
                if (log_commits) log_commit(snap.seq, counts, ms);
            }
            consumer_->commit_offsets(topic_, snap.next_offsets);
        } else if (!final) {
            in_transaction([&] { rebuild = aggregation_signature() != signature_ || !source_exists(); });
        }
        if (failed_) {  // a commit went through: the failure is over
            failed_ = false;
            set_status("running", "");
        }
        // Aggregations added or dropped (or the source gone): start over from what is committed.
        if (rebuild && !final) {
            pipeline_.reset();
            consumer_.reset();
        }
    }

    std::string aggregation_signature() {
        spi_exec("SELECT coalesce(pg_catalog.string_agg(aggregation_id::pg_catalog.text, ',' ORDER BY aggregation_id), '') "
                 "FROM stoatflow.aggregation WHERE source_id OPERATOR(pg_catalog.=) $1",
                 {arg_int32(source_id_)});
        return *spi_text(0, 1);
    }
    bool source_exists() {
        return spi_exec("SELECT 1 FROM stoatflow.source WHERE source_id OPERATOR(pg_catalog.=) $1",
                        {arg_int32(source_id_)}) > 0;
    }

    void log_commit(std::int64_t seq, const CommitCounts& c, double ms) {
        const std::string name = pipeline_->source().name;
        pg_call([&] {
            ereport(LOG, (errmsg("stoatflow commit: source=%s seq=%lld records=%lld state_rows=%lld "
                                 "state_bytes=%lld sink_rows=%lld sink_deletes=%lld dead_letters=%lld "
                                 "state_ms=%.1f sink_ms=%.1f ms=%.1f",
                                 name.c_str(), static_cast<long long>(seq), static_cast<long long>(c.records),
                                 static_cast<long long>(c.state_rows), static_cast<long long>(c.state_bytes),
                                 static_cast<long long>(c.sink_rows), static_cast<long long>(c.sink_deletes),
                                 static_cast<long long>(c.dead_letters), c.state_ms, c.sink_ms, ms)));
        });
    }

    // Per partition: id, high watermark, idle.
    using PartitionStatus = std::vector<std::tuple<std::int32_t, std::int64_t, bool>>;
    PartitionStatus partition_status() {
        PartitionStatus out;
        for (const auto& [p, h] : high_) out.emplace_back(p, h, pipeline_->watermark().is_idle(p));
        return out;
    }

    void write_partition_status(const PartitionStatus& status) {
        std::vector<Datum> parts, highs, idles;
        for (const auto& [p, h, idle] : status) {
            parts.push_back(Int32GetDatum(p));
            highs.push_back(Int64GetDatum(h));
            idles.push_back(BoolGetDatum(idle));
        }
        if (parts.empty()) return;
        spi_exec("INSERT INTO stoatflow.partition_status (source_id, partition, high_watermark, idle, updated_at) "
                 "SELECT $1, p, h, i, pg_catalog.now() FROM " + unnest_rows(3, 2) + " AS u(p, h, i) "
                 "ON CONFLICT (source_id, partition) DO UPDATE SET high_watermark = EXCLUDED.high_watermark, "
                 "idle = EXCLUDED.idle, updated_at = EXCLUDED.updated_at",
                 {arg_int32(source_id_), {INT4ARRAYOID, make_array(parts, {}, INT4OID)},
                  {INT8ARRAYOID, make_array(highs, {}, INT8OID)}, {BOOLARRAYOID, make_array(idles, {}, BOOLOID)}});
    }

    void set_status(const std::string& status, const std::string& error) {
        if (status == status_ && error == error_) return;
        status_ = status;
        error_ = error;
        try {
            in_transaction([&] {
                if (!extension_present()) return;
                write_source_status(source_id_, status, error);
            });
        } catch (const std::exception&) {
            // Status is best effort; the error itself is logged by fail().
        }
    }

    // Partitions added to the topic while the source runs: librdkafka refreshes its metadata
    // only every few minutes, and an explicit assignment never grows by itself. Seen, the worker
    // commits and starts over from the committed state with every partition assigned.
    void note_skip(SourcePipeline& pipeline, std::int32_t p, std::int64_t from, std::int64_t to) {
        pipeline.skip_offsets(p, from, to);
        offsets_moved_ = true;
        const std::string msg = "partition " + std::to_string(p) + ": offsets " + std::to_string(from) + " to " +
                                std::to_string(to - 1) + " (" + std::to_string(to - from) +
                                ") were deleted by the topic's retention before they were read; skipped "
                                "(see stoatflow.dead_letters, reason offsets_skipped)";
        last_kafka_error_ = msg;
        last_error_at_ = wall_now();
        pg_call([&] { elog(WARNING, "stoatflow source %d: %s", source_id_, msg.c_str()); });
    }

    // Partitions whose position fell out of the log (librdkafka stopped fetching them).
    // Below the log start: retention deleted what was not read yet — skip to the start,
    // counted. Past the log end (the topic was re-created, or the broker lost records):
    // status 'error', the partition waits and is checked again; nothing is guessed.
    void out_of_range(core::Millis now) {
        for (std::int32_t p : consumer_->take_out_of_range()) out_of_range_[p] = 0;
        for (auto it = out_of_range_.begin(); it != out_of_range_.end();) {
            const std::int32_t p = it->first;
            if (now < it->second) {
                ++it;
                continue;
            }
            const auto next = pipeline_->next_offsets().find(p);
            std::int64_t lo = 0, hi = 0;
            try {
                std::tie(lo, hi) = consumer_->watermarks(topic_, p, kKafkaTimeoutMs);
                std::int64_t pos = next == pipeline_->next_offsets().end() ? lo : next->second;
                if (pos < lo) {
                    note_skip(*pipeline_, p, pos, lo);
                    pos = lo;
                } else if (pos > hi) {
                    const std::string msg = "partition " + std::to_string(p) + ": the committed position " +
                                            std::to_string(pos) + " is past the end of the log (" +
                                            std::to_string(hi) +
                                            "): the topic was re-created or the broker lost records; this "
                                            "partition is not read (drop and re-create the source to start over)";
                    last_kafka_error_ = msg;
                    last_error_at_ = now;
                    it->second = now + kPartitionCheckMs;
                    ++it;
                    continue;
                }
                consumer_->restart(topic_, p, pos);
            } catch (const Error& e) {
                last_kafka_error_ = e.what();
                last_error_at_ = now;
                it->second = now + 1000;  // broker trouble: again in a second
                ++it;
                continue;
            }
            it = out_of_range_.erase(it);
        }
    }

    bool partitions_added(core::Millis now) {
        if (now - partitions_checked_at_ < kPartitionCheckMs) return false;
        partitions_checked_at_ = now;
        std::size_t n = 0;
        try {
            n = consumer_->partitions(topic_, kKafkaTimeoutMs).size();
        } catch (const Error& e) {
            // Also the probe for a broker that hangs (port open, no answer): librdkafka's
            // fetches then just wait, and nothing else would show it.
            last_kafka_error_ = e.what();
            last_error_at_ = now;
            return false;
        }
        if (n <= partitions_) return false;
        const std::string msg = "topic " + topic_ + " grew from " + std::to_string(partitions_) + " to " +
                                std::to_string(n) + " partitions";
        pg_call([&] { elog(LOG, "stoatflow source %d: %s: assigning them", source_id_, msg.c_str()); });
        commit(false);
        pipeline_.reset();
        consumer_.reset();
        return true;
    }

    // stoatflow.worker_memory_limit (SPEC 10): past it, commit what was consumed and stop
    // consuming, with a status naming the limit and the aggregation holding the most state,
    // until the limit is raised (SIGHUP) or aggregations change. A bounded stop beats the
    // kernel's OOM killer, which would make the postmaster restart every session.
    bool over_memory_limit(core::Millis now) {
        if (now - memory_checked_at_ < kMemoryCheckIntervalMs) return memory_blocked_;
        memory_checked_at_ = now;
        // What grows without bound is window state (keys × open windows); librdkafka's prefetch
        // is bounded by its own settings and would not shrink by stopping, so the limit counts
        // the engines' memory.
        const std::int64_t limit = static_cast<std::int64_t>(worker_memory_limit_kb) * 1024;
        std::int64_t used = 0;
        for (const auto& a : pipeline_->aggregation_memory()) used += static_cast<std::int64_t>(a.second);
        if (limit <= 0 || used <= limit) {
            if (memory_blocked_) {
                memory_blocked_ = false;
                set_status("running", "");
            }
            return false;
        }
        if (!memory_blocked_) {
            commit(false);
            if (!pipeline_) return true;  // aggregations changed: rebuilt from the committed state
            std::string biggest;
            std::size_t most = 0;
            for (const auto& a : pipeline_->aggregation_memory())
                if (a.second >= most) most = a.second, biggest = a.first;
            const std::string msg = "window state of " + megabytes(used) + " exceeds stoatflow.worker_memory_limit (" +
                                    megabytes(limit) + "); consuming stopped. Aggregation \"" + biggest +
                                    "\" holds the most state (about " + megabytes(static_cast<std::int64_t>(most)) +
                                    "). Raise the limit and reload, or drop or re-declare that aggregation.";
            pg_call([&] { ereport(WARNING, (errmsg("stoatflow source %d: %s", source_id_, msg.c_str()))); });
            memory_blocked_ = true;
            set_status("error", msg);
        }
        // Consume nothing; keep looking for a reload or changed aggregations.
        wait_ms(kIdleCheckMs);
        pg_call([] {
            if (ConfigReloadPending) {
                ConfigReloadPending = false;
                ProcessConfigFile(PGC_SIGHUP);
            }
        });
        bool rebuild = false;
        in_transaction([&] { rebuild = aggregation_signature() != signature_ || !source_exists(); });
        if (rebuild) {
            pipeline_.reset();
            consumer_.reset();
            memory_blocked_ = false;
        }
        return true;
    }

    void fail(const std::string& what) {
        failed_ = true;
        memory_blocked_ = false;
        pipeline_.reset();
        consumer_.reset();
        const std::string msg = what;
        pg_call([&] { elog(LOG, "stoatflow source %d: %s", source_id_, msg.c_str()); });
        last_kafka_error_ = msg;
        set_status("error", msg);
    }

    std::int32_t source_id_;
    std::unique_ptr<SourcePipeline> pipeline_;
    std::unique_ptr<kafka::Consumer> consumer_;
    std::string topic_;
    std::size_t partitions_ = 0;
    std::map<std::int32_t, std::int64_t> high_;
    std::map<std::int32_t, bool> idle_shown_;
    std::string signature_;
    std::string status_, error_;
    core::Millis last_commit_ = 0;
    core::Millis committed_w_ = core::kNoTime;
    bool offsets_moved_ = false;
    std::map<std::int32_t, core::Millis> out_of_range_;  // partition → when to look again
    bool status_moved_ = false;
    bool eof_seen_ = false;
    bool failed_ = false;          // since the last failure, no commit has succeeded yet
    bool memory_blocked_ = false;  // over stoatflow.worker_memory_limit: not consuming
    core::Millis memory_checked_at_ = 0;
    core::Millis partitions_checked_at_ = 0;
    std::string last_kafka_error_;
    core::Millis last_error_at_ = 0, last_progress_at_ = 0;
};

// ---------------------------------------------------------------------------------
// Launcher

struct Running {
    BackgroundWorkerHandle* handle = nullptr;
    bool waiting = false;  // no worker slot was free (status waiting_for_worker shown)
    core::Millis next_start = 0;
    core::Millis started_at = 0;
    int failures = 0;
};

void start_worker(std::int32_t id, const std::string& name, Running& r) {
    BackgroundWorker w;
    memset(&w, 0, sizeof w);
    w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    w.bgw_start_time = BgWorkerStart_RecoveryFinished;
    w.bgw_restart_time = BGW_NEVER_RESTART;  // the launcher restarts it, with backoff
    snprintf(w.bgw_library_name, BGW_MAXLEN, "stoatflow");
    snprintf(w.bgw_function_name, BGW_MAXLEN, "stoatflow_source_worker_main");
    snprintf(w.bgw_name, BGW_MAXLEN, "stoatflow source %s", name.c_str());
    snprintf(w.bgw_type, BGW_MAXLEN, "stoatflow source %s", name.c_str());
    w.bgw_main_arg = Int32GetDatum(id);
    w.bgw_notify_pid = MyProcPid;
    BackgroundWorkerHandle* handle = nullptr;
    const bool ok = pg_call([&] {
        MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
        const bool registered = RegisterDynamicBackgroundWorker(&w, &handle);
        MemoryContextSwitchTo(old);
        return registered;
    });
    if (ok) {
        r.handle = handle;
        r.started_at = wall_now();
        r.waiting = false;
        return;
    }
    r.next_start = wall_now() + kWorkerSlotRetryMs;
    if (r.waiting) return;  // said once; looked at again every kWorkerSlotRetryMs
    r.waiting = true;
    const std::string source = name;
    pg_call([&] {
        ereport(WARNING, (errmsg("stoatflow: no background worker slot is free for source \"%s\"", source.c_str()),
                          errhint("Each source needs one background worker, the launcher one more: raise "
                                  "max_worker_processes (and restart the server).")));
    });
    try {
        in_transaction([&] {
            write_source_status(id, "waiting_for_worker",
                                "no background worker slot is free: each source needs one, plus one for the "
                                "launcher; raise max_worker_processes and restart the server");
        });
    } catch (const std::exception&) {
        // best effort, like every status
    }
}

void run_launcher() {
    pg_call([] {
        LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
        shared->launcher_latch = MyLatch;
        LWLockRelease(AddinShmemInitLock);
    });
    std::map<std::int32_t, Running> workers;
    while (!got_sigterm) {
        std::map<std::int32_t, std::string> sources;
        try {
            in_transaction([&] {
                if (!extension_present()) return;
                const auto n = spi_exec("SELECT source_id, source_name FROM stoatflow.source ORDER BY source_id");
                for (std::uint64_t r = 0; r < n; ++r)
                    sources[static_cast<std::int32_t>(*spi_int64(r, 1))] = *spi_text(r, 2);
            });
        } catch (const std::exception& e) {
            const std::string msg = e.what();
            pg_call([&] { elog(LOG, "stoatflow launcher: %s", msg.c_str()); });
        }
        const core::Millis now = wall_now();
        for (auto it = workers.begin(); it != workers.end();) {
            if (!sources.count(it->first)) {
                if (it->second.handle)
                    pg_call([&] {
                        TerminateBackgroundWorker(it->second.handle);
                        pfree(it->second.handle);
                    });
                it = workers.erase(it);
            } else {
                ++it;
            }
        }
        for (const auto& [id, name] : sources) {
            Running& r = workers[id];
            if (r.handle) {
                pid_t pid;
                const auto st = pg_call([&] { return GetBackgroundWorkerPid(r.handle, &pid); });
                if (st != BGWH_STOPPED) {
                    if (now - r.started_at > 60000) r.failures = 0;
                    continue;
                }
                pg_call([&] { pfree(r.handle); });
                r.handle = nullptr;  // exited or crashed: restart with backoff
                r.failures = std::min(r.failures + 1, 6);
                r.next_start = now + std::min<core::Millis>(kMaxBackoffMs, 500LL << r.failures);
            }
            if (now >= r.next_start) start_worker(id, name, r);
        }
        wait_ms(1000);
    }
}

}  // namespace

void on_shmem_request() {
    if (prev_shmem_request) prev_shmem_request();
    RequestAddinShmemSpace(MAXALIGN(sizeof(SharedState)));
}

void on_shmem_startup() {
    if (prev_shmem_startup) prev_shmem_startup();
    bool found;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    shared = static_cast<SharedState*>(ShmemInitStruct("stoatflow", sizeof(SharedState), &found));
    if (!found) shared->launcher_latch = nullptr;
    LWLockRelease(AddinShmemInitLock);
}

void on_xact(XactEvent event, void*) {
    if (event == XACT_EVENT_COMMIT && wake_on_commit && shared && shared->launcher_latch)
        SetLatch(shared->launcher_latch);
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT) wake_on_commit = false;
}

void wake_launcher_at_commit() {
    if (!xact_callback_registered) {
        RegisterXactCallback(on_xact, nullptr);
        xact_callback_registered = true;
    }
    wake_on_commit = true;
}

void register_launcher() {
    prev_shmem_request = shmem_request_hook;
    shmem_request_hook = on_shmem_request;
    prev_shmem_startup = shmem_startup_hook;
    shmem_startup_hook = on_shmem_startup;
    BackgroundWorker w;
    memset(&w, 0, sizeof w);
    w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    w.bgw_start_time = BgWorkerStart_RecoveryFinished;
    w.bgw_restart_time = 1;
    snprintf(w.bgw_library_name, BGW_MAXLEN, "stoatflow");
    snprintf(w.bgw_function_name, BGW_MAXLEN, "stoatflow_launcher_main");
    snprintf(w.bgw_name, BGW_MAXLEN, "stoatflow launcher");
    snprintf(w.bgw_type, BGW_MAXLEN, "stoatflow launcher");
    RegisterBackgroundWorker(&w);
}

}  // namespace stoatflow::pg

using namespace stoatflow::pg;

void stoatflow_launcher_main(Datum) {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, handle_sigterm);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(database_name, nullptr, 0);
    pin_search_path();
    pgstat_report_appname("stoatflow launcher");
    cpp_call([] { run_launcher(); });
    proc_exit(0);
}

void stoatflow_source_worker_main(Datum arg) {
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, handle_sigterm);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(database_name, nullptr, 0);
    pin_search_path();
    const int32 id = DatumGetInt32(arg);
    cpp_call([id] { SourceWorker(id).run(); });
    proc_exit(0);
}

// stoatflow._wake_launcher(): the declaration functions call it so the launcher starts or
// stops workers as soon as their transaction commits.
STOATFLOW_FUNCTION(stoatflow__wake_launcher) {
    wake_launcher_at_commit();
    PG_RETURN_VOID();
}
