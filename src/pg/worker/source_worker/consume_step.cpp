// One step of a source worker (poll a batch → process → watermark and status → maybe commit),
// and the commit cycle's turn: snapshot the pipeline, write it in one transaction while the
// consume thread (background_step.cpp) goes on consuming the next commit's records.
#include "stoatflow/core/commit_policy.hpp"
#include "stoatflow/core/error.hpp"

#include <chrono>
#include <csignal>
#include <functional>
#include <optional>
#include <string>
#include <tuple>

#include <pthread.h>

#include "stoatflow/pg/worker/background_step.hpp"
#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/settings.hpp"
#include "stoatflow/pg/worker/source_worker.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/worker/worker_loop.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "storage/ipc.h"
}

namespace stoatflow::pg {

void SourceWorker::step() {
    const core::Millis now = clock_.now();
    if (over_memory_limit(now)) return;
    pipeline_->set_memory_limit(static_cast<std::int64_t>(worker_memory_limit_kb) * 1024,
                                snapshot_bytes_);
    if (partitions_added(now)) return;
    bool progress = consume(pipeline_->path(), kPollTimeoutMs, now);
    // A record the fast lane left to PostgreSQL (and those behind it): converted here, on the
    // main thread, before anything else sees the path.
    if (pipeline_->path().blocked())
        in_transaction([&] {
            while (pipeline_->path().blocked()) pipeline_->resolve_blocked();
        });
    // Executor mode: every record is converted and evaluated here (README "Expressions and
    // PostgreSQL aggregates").
    if (pipeline_->path().exec_waiting() > 0) in_transaction([&] { pipeline_->run_executor(); });
    // A backfill: stop at the source's positions, ask for the hold, join (backfill.cpp).
    if (backfill_ != 0 && backfill_step(now)) return;
    out_of_range(now);
    // Partitions that have never delivered a record but now have some waiting hold the
    // watermark again, so a burst on one partition cannot make the others late.
    std::int64_t waiting = 0;  // records in the topic not consumed yet
    for (auto& [tp, high] : high_) {
        const std::int64_t h = consumer_->cached_high(tp);
        if (h > high) {
            high = h;
            status_moved_ = true;
        }
        const auto next = pipeline_->path().next_offsets().find(tp);
        const std::int64_t pos = next == pipeline_->path().next_offsets().end() ? 0 : next->second;
        if (h > pos) waiting += h - pos;
        if (h > pos && pipeline_->path().watermark().partition_max(tp.id()) == core::kNoTime)
            pipeline_->path().watermark().data_pending(tp.id());
    }
    align_consumption();                     // README "Aligned consumption"
    meter_progress(pipeline_->path(), now);  // README "Progress"
    pipeline_->path().tick(now);
    // The idle flags are reported with the partitions: a change is worth a commit.
    for (auto& [tp, high] : high_) {
        const bool idle = pipeline_->path().watermark().is_idle(tp.id());
        bool& shown = idle_shown_[tp];
        if (idle != shown) {
            shown = idle;
            status_moved_ = true;
        }
    }
    progress |= eof_seen_;
    eof_seen_ = false;
    const std::string err = consumer_->take_error();
    if (!err.empty()) status_rule_.broker_error(now, err);
    // Records wait for their writer schemas while the schema registry cannot answer: the
    // source shows the registry's error like a broker's (README "Formats"); nothing is a dead
    // letter, and the cache retries with backoff.
    if (const format::RecordFormat* f = pipeline_->path().row_format();
        f != nullptr && f->schemas && consumer_->holding()) {
        const std::string why = f->schemas->unavailable();
        if (!why.empty()) status_rule_.broker_error(now, why);
    }
    if (progress) status_rule_.progress(now);
    show_status(now);

    reload_config_if_pending();
    // A backfill asking to join holds the source at its next commit (backfill.cpp).
    bool hold = false;
    if (backfill_ == 0 && now - holds_checked_at_ >= kBackfillLookMs) {
        holds_checked_at_ = now;
        in_transaction([&] { hold = hold_pending(); });
    }
    const core::CommitPolicy policy{commit_interval_ms, catchup_commit_interval_ms};
    const core::Millis later = clock_.now();
    // A record whose fold failed was passed (its dead letter noted): commit now, so that a
    // second failure starts over after it, not before.
    if (commit_timer_.due(policy, later, pipeline_->path().records_since_commit(),
                          pipeline_->path().pending_changes(), waiting,
                          pipeline_->path().pending_segments()) ||
        pipeline_->sink_retry_due(later) || ledger_.applied || hold) {
        hold_expected_ = hold;  // nothing consumed past the positions it commits
        commit(false);
        hold_expected_ = false;
    }
}

// One batch from the consumer through the record path; true if records came. Also what the
// consume thread runs: it touches the consumer and the record path, nothing of PostgreSQL.
bool SourceWorker::consume(flow::RecordPath& path, int timeout_ms, core::Millis now) {
    // A format with schema ids: a batch waits until the schemas of all its records were fetched
    // (format::RowDecoder::ready); held, it is asked about again at the next poll.
    const format::RecordFormat* f = path.row_format();
    std::function<bool(const kafka::Message&)> ready;
    if (f != nullptr && f->schemas)
        ready = [&path](const kafka::Message& m) {
            return path.ready(m.payload, m.len, m.key, m.key_len);
        };
    return consumer_->poll(
               kPollBatch, timeout_ms,
               [&](const kafka::Message& m) {
                   if (backfill_ != 0 && !backfill_admits({m.topic_index, m.partition}, m.offset))
                       return;
                   path.process(m.topic_index, m.partition, m.offset, m.payload, m.len, m.key,
                                m.key_len, m.timestamp, now, m.headers, m.header_count);
               },
               [&](core::TopicPartition tp, std::int64_t end) {
                   progress_end(tp, end);
                   // A backfill's position never passes the source's (records it skipped).
                   if (backfill_ != 0 && end > limit_of(tp)) return;
                   offsets_moved_ |= path.end_of_partition(tp, end, now);
               },
               ready) > 0;
}

// The background step while a commit is written: consume on, within the bounds of one
// commit (the next one).
bool SourceWorker::consume_while_writing(flow::RecordPath& path) {
    if (path.blocked() ||  // waits for the main thread (PostgreSQL)
        path.records_since_commit() >= core::CommitPolicy::kMaxRecordsCatchingUp ||
        path.exec_waiting() >= kMaxExecWaiting ||
        path.pending_changes() >= core::CommitPolicy::kMaxChangedWindowsCatchingUp ||
        path.pending_segments() >= core::CommitPolicy::kMaxSegmentsPerCommit)
        return false;
    const core::Millis now = clock_.now();
    consume(path, kPollWhileWritingMs, now);
    meter_progress(path, now);  // a long commit does not hide the progress
    return true;
}

void SourceWorker::progress_end(core::TopicPartition tp, std::int64_t end) {
    if (end > high_[tp]) {
        high_[tp] = end;
        status_moved_ = true;
    }
    eof_seen_ = true;
}

// "topic t partition p", or "partition p" for a source of one topic (as in 0.1).
std::string SourceWorker::describe(core::TopicPartition tp) const {
    const std::string part = "partition " + std::to_string(tp.partition);
    if (topics_.size() <= 1 || tp.topic < 0 || static_cast<std::size_t>(tp.topic) >= topics_.size())
        return part;
    return "topic " + topics_[static_cast<std::size_t>(tp.topic)] + " " + part;
}

void SourceWorker::note_skip(flow::RecordPath& path, core::TopicPartition tp, std::int64_t from,
                             std::int64_t to) {
    path.skip_offsets(tp, from, to);
    offsets_moved_ = true;
    const std::string msg =
        describe(tp) + ": offsets " + std::to_string(from) + " to " + std::to_string(to - 1) +
        " (" + std::to_string(to - from) +
        ") were deleted by the topic's retention before they were read; skipped "
        "(see stoatflow.dead_letters, reason offsets_skipped)";
    status_rule_.broker_error(clock_.now(), msg);
    pg_call([&] { elog(WARNING, "stoatflow source %d: %s", source_id_, msg.c_str()); });
}

// Partitions whose position fell out of the log (librdkafka stopped fetching them).
// Below the log start: retention deleted what was not read yet — skip to the start,
// counted. Past the log end (the topic was re-created, or the broker lost records):
// status 'error', the partition waits and is checked again; nothing is guessed.
void SourceWorker::out_of_range(core::Millis now) {
    for (core::TopicPartition tp : consumer_->take_out_of_range()) out_of_range_[tp] = 0;
    for (auto it = out_of_range_.begin(); it != out_of_range_.end();) {
        const core::TopicPartition tp = it->first;
        if (now < it->second) {
            ++it;
            continue;
        }
        const auto next = pipeline_->path().next_offsets().find(tp);
        std::int64_t lo = 0, hi = 0;
        try {
            std::tie(lo, hi) = consumer_->watermarks(topics_.at(static_cast<std::size_t>(tp.topic)),
                                                     tp.partition, kKafkaTimeoutMs);
            std::int64_t pos = next == pipeline_->path().next_offsets().end() ? lo : next->second;
            if (pos < lo) {
                note_skip(pipeline_->path(), tp, pos, lo);
                pos = lo;
            } else if (pos > hi) {
                status_rule_.broker_error(
                    now, describe(tp) + ": the committed position " + std::to_string(pos) +
                             " is past the end of the log (" + std::to_string(hi) +
                             "): the topic was re-created or the broker lost records; this "
                             "partition is not read (drop and re-create the source to start over)");
                it->second = now + kPartitionCheckMs;
                ++it;
                continue;
            }
            consumer_->restart(tp, pos);
        } catch (const Error& e) {
            status_rule_.broker_error(now, e.what());
            it->second = now + kOutOfRangeRetryMs;  // broker trouble
            ++it;
            continue;
        }
        it = out_of_range_.erase(it);
    }
}

// ---------------------------------------------------------------------------------
// The commit cycle

bool SourceWorker::commit(bool final) {
    if (final) {
        // A dropped source has nothing left to commit to.
        bool exists = false;
        in_transaction([&] { exists = source_exists(); });
        if (!exists) return false;
    }
    // Executor mode: what was extracted is evaluated first, so the snapshot holds it.
    if (pipeline_->path().exec_waiting() > 0) in_transaction([&] { pipeline_->run_executor(); });
    const core::Millis w = pipeline_->path().watermark().current();
    const core::Millis now = clock_.now();
    const bool changed = pipeline_->path().records_since_commit() > 0 || offsets_moved_ ||
                         w != committed_w_ || status_moved_ || pipeline_->sink_retry_due(now);
    commit_timer_.committed(clock_.now());
    bool rebuild = false;
    bool written = true;
    bool answered = false;  // a backfill's hold, answered in this commit
    if (changed) {
        // What this commit makes durable is fixed here; while it is written, the next
        // records are already consumed and windowed (not at shutdown: nothing more).
        const auto started = std::chrono::steady_clock::now();
        // Executor mode: the aggregates' states are serialized by PostgreSQL functions.
        flow::CommitSnapshot snap;
        if (pipeline_->executor())
            in_transaction([&] { snap = pipeline_->take_snapshot(commit_timer_.last_commit()); });
        else
            snap = pipeline_->take_snapshot(commit_timer_.last_commit());
        const auto status = partition_status();
        committed_w_ = snap.watermark;
        offsets_moved_ = false;
        status_moved_ = false;
        {
            std::optional<BackgroundStep> consuming;
            if (!final && !hold_expected_)
                consuming.emplace(
                    [this, &path = pipeline_->path()] { return consume_while_writing(path); });
            CommitCounts counts;
            // The aggregations changed since the worker started (alter_aggregation, a drop, a
            // new one, a pause): nothing of this commit is written; the worker starts over from
            // the last commit under the new catalog, so every commit after a change's own runs
            // under it (README "Altering an aggregation"). The rows are locked first: a change
            // waits for this commit.
            struct CatalogChanged {};
            bool aborted = false;
            try {
                in_transaction([&] {
                    if (backfill_ != 0 && !backfill_row_locked()) {
                        rebuild = true;  // joined or dropped meanwhile: nothing to write
                        written = false;
                        return;
                    }
                    // Before anything is written (a backfill's join deletes its backfill row,
                    // which changes its signature). A pause is not a change of the aggregations:
                    // what was consumed is committed, then the worker starts over, paused
                    // (README "Pausing a source").
                    const std::string sig = aggregation_signature(true);
                    const auto unpaused = [](std::string v) {
                        constexpr std::string_view kPaused = ";paused";
                        if (v.size() >= kPaused.size() &&
                            v.compare(v.size() - kPaused.size(), kPaused.size(), kPaused) == 0)
                            v.resize(v.size() - kPaused.size());
                        return v;
                    };
                    if (unpaused(sig) != unpaused(signature_)) throw CatalogChanged{};
                    counts = pipeline_->write(snap);
                    if (backfill_ == 0) write_partition_status(status);
                    if (sig != signature_) rebuild = true;
                    // A backfill asked to join: its positions are these (README "Backfill and
                    // start_from").
                    if (backfill_ == 0 && answer_holds()) answered = true;
                });
            } catch (const CatalogChanged&) {
                aborted = true;
            }
            if (aborted) {
                if (consuming) consuming->finish();
                snapshot_bytes_ = 0;
                if (!final) drop_pipeline();
                return false;
            }
            const double ms = std::chrono::duration<double, std::milli>(
                                  std::chrono::steady_clock::now() - started)
                                  .count();
            if (consuming) consuming->finish();
            if (log_commits) log_commit(snap.seq, counts, ms);
            snapshot_bytes_ = 0;
            give_back_memory(pipeline_->path().memory_bytes());
        }
        if (backfill_ == 0) consumer_->commit_offsets(snap.next_offsets);
        ledger_.committed(snap.next_offsets);
        ledger_.applied = false;
        // Consumed while the commit was written (the hold came unexpected): past the hand-over's
        // positions, so the pipeline is built anew after the join.
        if (answered && (pipeline_->path().records_since_commit() != 0 ||
                         pipeline_->path().dead_letters_since_commit() != 0 ||
                         pipeline_->path().skipped_pending() ||
                         pipeline_->path().next_offsets() != snap.next_offsets))
            rebuild = true;
    } else if (!final) {
        in_transaction([&] {
            rebuild = aggregation_signature() != signature_ || !source_exists();
            if (backfill_ == 0 && answer_holds()) answered = true;
        });
    }
    // A backfill's hold answered (README "Backfill and start_from"): the pipeline and the
    // consumer wait as they are, at the committed positions, for the join (hold_over). Executor
    // mode builds its pipeline anew after it.
    if (answered && !final) {
        holding_since_ = clock_.now();  // bounded: hold_expired
        if (rebuild || pipeline_->executor())
            rebuild = true;
        else
            begin_hold();
    }
    if (status_rule_.committed())
        set_status("running", "");  // a commit went through: the failure is over
    // Aggregations added or dropped (or the source gone): start over from what is committed.
    if (rebuild && !final) drop_pipeline();
    return written;
}

// The aggregations this worker runs (a source worker those that do not backfill, a backfill
// worker its own while it backfills), what alter_aggregation changes of them (README "Altering
// an aggregation"), and whether the source is paused (README "Pausing a source"): a change of
// any is seen at the next commit and makes the worker start over. `lock`: the aggregations'
// rows FOR SHARE, so a change waits for the commit that reads them.
std::string SourceWorker::aggregation_signature(bool lock) {
    const std::string params =
        "SELECT coalesce(pg_catalog.string_agg(pg_catalog.concat_ws(':', aggregation_id, grace_ms, "
        "emit, retention_ms), ',' ORDER BY aggregation_id), '') FROM (SELECT aggregation_id, "
        "grace_ms, emit, retention_ms FROM stoatflow.aggregation a WHERE ";
    const std::string locking = lock ? " FOR SHARE) a" : ") a";
    if (backfill_ != 0) {
        spi_exec(params + "a.aggregation_id OPERATOR(pg_catalog.=) $1" + locking,
                 {arg_int32(backfill_)});
        const std::string mine = *spi_text(0, 1);
        const bool backfilling = spi_exec("SELECT 1 FROM stoatflow.backfill WHERE aggregation_id "
                                          "OPERATOR(pg_catalog.=) $1",
                                          {arg_int32(backfill_)}) > 0;
        return (backfilling ? "backfill;" : ";") + mine + (source_paused() ? ";paused" : "");
    }
    spi_exec(params +
                 "a.source_id OPERATOR(pg_catalog.=) $1 AND NOT EXISTS (SELECT 1 FROM "
                 "stoatflow.backfill b WHERE b.aggregation_id OPERATOR(pg_catalog.=) "
                 "a.aggregation_id)" +
                 locking,
             {arg_int32(source_id_)});
    const std::string ids = *spi_text(0, 1);  // read before the next query replaces the result
    return ids + (source_paused() ? ";paused" : "");
}

bool SourceWorker::source_paused() {
    return spi_exec("SELECT 1 FROM stoatflow.source WHERE source_id OPERATOR(pg_catalog.=) $1 "
                    "AND paused",
                    {arg_int32(source_id_)}) > 0;
}

bool SourceWorker::source_exists() {
    return spi_exec("SELECT 1 FROM stoatflow.source WHERE source_id OPERATOR(pg_catalog.=) $1",
                    {arg_int32(source_id_)}) > 0;
}

void SourceWorker::log_commit(std::int64_t seq, const CommitCounts& c, double ms) {
    const std::string name = pipeline_->source().name;
    pg_call([&] {
        ereport(
            LOG,
            (errmsg("stoatflow commit: source=%s seq=%lld records=%lld state_rows=%lld "
                    "state_bytes=%lld sink_rows=%lld sink_deletes=%lld dead_letters=%lld "
                    "state_ms=%.1f sink_ms=%.1f ms=%.1f",
                    name.c_str(), static_cast<long long>(seq), static_cast<long long>(c.records),
                    static_cast<long long>(c.state_rows), static_cast<long long>(c.state_bytes),
                    static_cast<long long>(c.sink_rows), static_cast<long long>(c.sink_deletes),
                    static_cast<long long>(c.dead_letters), c.state_ms, c.sink_ms, ms)));
    });
}

// Per partition: id, high watermark, idle.
SourceWorker::PartitionStatus SourceWorker::partition_status() {
    PartitionStatus out;
    for (const auto& [tp, h] : high_)
        out.emplace_back(tp, h, pipeline_->path().watermark().is_idle(tp.id()));
    return out;
}

void SourceWorker::write_partition_status(const PartitionStatus& status) {
    std::vector<Datum> topics, parts, highs, idles;
    for (const auto& [tp, h, idle] : status) {
        topics.push_back(text_datum(topics_.at(static_cast<std::size_t>(tp.topic))));
        parts.push_back(Int32GetDatum(tp.partition));
        highs.push_back(Int64GetDatum(h));
        idles.push_back(BoolGetDatum(idle));
    }
    if (parts.empty()) return;
    spi_exec(
        "INSERT INTO stoatflow.partition_status (source_id, topic, partition, high_watermark, idle, updated_at) "
        "SELECT $1, t, p, h, i, pg_catalog.now() FROM " +
            unnest_rows(4, 2) +
            " AS u(t, p, h, i) "
            "ON CONFLICT (source_id, topic, partition) DO UPDATE SET high_watermark = EXCLUDED.high_watermark, "
            "idle = EXCLUDED.idle, updated_at = EXCLUDED.updated_at",
        {arg_int32(source_id_),
         {TEXTARRAYOID, make_array(topics, {}, TEXTOID)},
         {INT4ARRAYOID, make_array(parts, {}, INT4OID)},
         {INT8ARRAYOID, make_array(highs, {}, INT8OID)},
         {BOOLARRAYOID, make_array(idles, {}, BOOLOID)}});
}

}  // namespace stoatflow::pg
