// A backfill worker's part of the source worker (README "Backfill and start_from";
// src/pg/worker/README.md "Backfill"): where it starts, reading up to the source's committed
// positions and never past them, the hold it asks for when it is close, and the join; and the
// source worker's side of the hold.
#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/worker/source_worker.hpp"
#include "stoatflow/pg/worker/worker_loop.hpp"

namespace stoatflow::pg {

// ---- the source worker's side ----

// In the transaction of a commit (or at start, before consuming): the positions it commits are
// the ones a backfill that asked to join reads up to; from here on the worker consumes nothing
// until the backfill row is gone (joined, or its aggregation dropped). True if it held now.
bool SourceWorker::answer_holds() {
    return spi_exec("UPDATE stoatflow.backfill SET held = true WHERE source_id "
                    "OPERATOR(pg_catalog.=) $1 AND hold_requested AND NOT held",
                    {arg_int32(source_id_)}) > 0;
}

bool SourceWorker::source_held() {
    return spi_exec("SELECT 1 FROM stoatflow.backfill WHERE source_id OPERATOR(pg_catalog.=) $1 "
                    "AND held LIMIT 1",
                    {arg_int32(source_id_)}) > 0;
}

// README "Backfill and start_from": a hold the backfill did not join within kBackfillHoldMaxMs
// of the source worker answering it (or, after a restart, seeing it) is released, in the
// caller's transaction. A join in flight holds its row (backfill_row_locked): this waits for
// it, and then finds the row gone. True if it released one.
bool SourceWorker::hold_expired() {
    const core::Millis now = clock_.now();
    if (holding_since_ == 0) holding_since_ = now;
    if (now - holding_since_ < kBackfillHoldMaxMs) return false;
    const auto n =
        spi_exec("UPDATE stoatflow.backfill SET held = false, hold_requested = false WHERE "
                 "source_id OPERATOR(pg_catalog.=) $1 AND held",
                 {arg_int32(source_id_)});
    if (n == 0) return false;
    const double ms = static_cast<double>(now - holding_since_);
    pg_call([&] {
        elog(LOG,
             "stoatflow source %d: released the hold of a backfill that did not join within "
             "%.0f ms; consuming on (the backfill asks again)",
             source_id_, ms);
    });
    holding_since_ = 0;
    return true;
}

bool SourceWorker::hold_pending() {
    return spi_exec("SELECT 1 FROM stoatflow.backfill WHERE source_id OPERATOR(pg_catalog.=) $1 "
                    "AND hold_requested AND NOT held LIMIT 1",
                    {arg_int32(source_id_)}) > 0;
}

// The hold answered at a commit after which nothing was consumed: the pipeline and the consumer
// (assigned, not polled) wait as they are, at the positions the backfill reads up to.
void SourceWorker::begin_hold() {
    holding_ = true;
    quiet_progress();
}

// While holding (every kHoldLookMs): true once no backfill of the source is held any more (it
// joined, or its aggregation was dropped). Then, in the same transaction, a joined aggregation is
// adopted into the running pipeline (adopt_joined); if the aggregations changed otherwise, or
// the pipeline cannot take it, the pipeline is dropped and the next start builds it anew from
// the committed state, as before any change of the aggregations.
bool SourceWorker::hold_over() {
    bool over = false, adopted = false, joined = false;
    std::string sig;
    const double ms = static_cast<double>(clock_.now() - holding_since_);
    in_transaction([&] {
        if (source_held() && !hold_expired()) return;
        over = true;
        sig = aggregation_signature();
        adopted = source_exists() && adopt_joined(sig, &joined);
    });
    if (!over) return false;
    holding_ = false;
    holding_since_ = 0;
    if (!adopted) {
        drop_pipeline();
        return true;
    }
    signature_ = sig;
    claim_progress();
    progress_quiet_ = false;
    status_moved_ = true;
    commit_timer_.committed(clock_.now());
    if (!joined) return true;  // released (hold_expired), or the held aggregation dropped
    pg_call([&] {
        elog(LOG,
             "stoatflow source %d: held %.0f ms for a backfill's join; its other aggregations "
             "ran on without a restart",
             source_id_, ms);
    });
    return true;
}

namespace {

// A signature's entries (aggregation_signature: "id:params,...", then ";paused" when paused).
std::vector<std::string> signature_entries(const std::string& sig, std::string* rest) {
    const auto semi = sig.find(';');
    const std::string list = sig.substr(0, semi);
    *rest = semi == std::string::npos ? std::string() : sig.substr(semi);
    std::vector<std::string> out;
    for (std::size_t at = 0; at < list.size();) {
        const auto comma = std::min(list.find(',', at), list.size());
        out.push_back(list.substr(at, comma - at));
        at = comma + 1;
    }
    return out;
}

}  // namespace

// In hold_over's transaction: the aggregations now are the running ones plus those that joined
// (each unchanged otherwise): the joined ones are added to the running pipeline, restored from
// their state as the backfill committed it (CommitCycle::adopt). True if the pipeline runs on;
// false: it must be built anew (another change, or one the pipeline cannot take: executor mode,
// a field its lane does not read).
bool SourceWorker::adopt_joined(const std::string& signature, bool* adopted) {
    std::string was_rest, now_rest;
    const auto was = signature_entries(signature_, &was_rest);
    const auto now = signature_entries(signature, &now_rest);
    if (was_rest != now_rest) return false;
    std::set<std::string> before(was.begin(), was.end());
    std::set<std::int32_t> joined;
    for (const auto& e : now) {
        if (before.erase(e) != 0) continue;
        joined.insert(static_cast<std::int32_t>(std::stol(e.substr(0, e.find(':')))));
    }
    if (!before.empty()) return false;  // one changed or was dropped meanwhile
    if (joined.empty()) return true;    // the held backfill's aggregation was dropped
    std::vector<AggregationDef> defs;
    for (auto& a : load_aggregations(source_id_))
        if (joined.count(a.id)) defs.push_back(std::move(a));
    if (defs.size() != joined.size()) return false;
    std::string names;
    for (auto& d : defs) {
        names += (names.empty() ? "\"" : ", \"") + d.name + "\"";
        if (!pipeline_->adopt(std::move(d))) return false;
    }
    pg_call([&] {
        elog(LOG, "stoatflow source %d: aggregation %s joined the running pipeline", source_id_,
             names.c_str());
    });
    *adopted = true;
    return true;
}

// ---- the backfill worker ----

// Where a partition's backfill starts when it has no committed position yet. Where that is not
// the position asked for (README "Backfill and start_from"), the server log names the
// aggregation and says why: records deleted by retention, or none at or after the time yet.
std::int64_t SourceWorker::backfill_start(const SourceDef& src, kafka::Consumer& consumer,
                                          core::TopicPartition tp, std::int64_t lo,
                                          std::int64_t hi) {
    const auto say = [&](const std::string& what) {
        const std::string msg = "aggregation \"" + backfill_name_ + "\": start_from " +
                                backfill_from_ + ": " + describe(tp) + " " + what;
        pg_call([&] { elog(LOG, "stoatflow backfill: %s", msg.c_str()); });
    };
    if (backfill_from_ == "earliest") {
        if (lo > 0)
            say("starts at offset " + std::to_string(lo) +
                ", the earliest the topic still holds (records before it were deleted by the "
                "topic's retention)");
        return lo;
    }
    if (backfill_from_ == "latest") return hi;
    core::Millis ms = 0;
    in_transaction([&] {
        spi_exec("SELECT pg_catalog.ceil(pg_catalog.date_part('epoch', $1::pg_catalog.timestamptz) "
                 "OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8",
                 {arg_text(backfill_from_)});
        ms = *spi_int64(0, 1);
    });
    const std::string& topic = src.topics.at(static_cast<std::size_t>(tp.topic));
    const std::int64_t at =
        std::max(lo, consumer.offset_for_time(topic, tp.partition, ms, kKafkaTimeoutMs));
    if (at == lo && lo > 0) {
        // The records before the log start are gone: some may have been at or after the time.
        say("starts at offset " + std::to_string(lo) +
            ", the earliest the topic still holds (records before it were deleted by the "
            "topic's retention)");
    } else if (at >= hi && hi > lo) {
        // Every record the partition holds is older than the time: it starts at the end.
        say("has no record at or after that time yet: starts at its end, offset " +
            std::to_string(at));
    }
    return at;
}

// The source's committed positions, and where the hand-over stands. The backfill row gone (the
// aggregation dropped, or joined by an earlier run of this worker): this worker is done.
void SourceWorker::read_limits() {
    bool gone = false;
    in_transaction([&] {
        // Where the hand-over stands first: each statement sees what was committed when it
        // started, and the source's worker holds in the transaction that commits the positions
        // it holds at, so positions read after `held` are those (or later ones, when the hold
        // was released meanwhile: then the join is refused under its row lock).
        if (spi_exec("SELECT hold_requested, held FROM stoatflow.backfill WHERE aggregation_id "
                     "OPERATOR(pg_catalog.=) $1",
                     {arg_int32(backfill_)}) == 0) {
            gone = true;
            return;
        }
        hold_requested_ = spi_bool(0, 1).value_or(false);
        held_ = spi_bool(0, 2).value_or(false);
        const auto n =
            spi_exec("SELECT topic, partition, next_offset FROM "
                     "stoatflow.partition_offset WHERE source_id OPERATOR(pg_catalog.=) $1",
                     {arg_int32(source_id_)});
        for (std::uint64_t r = 0; r < n; ++r) {
            const auto t = std::find(topics_.begin(), topics_.end(), *spi_text(r, 1));
            if (t == topics_.end()) continue;
            limit_[{static_cast<std::int32_t>(t - topics_.begin()),
                    static_cast<std::int32_t>(*spi_int64(r, 2))}] = *spi_int64(r, 3);
        }
    });
    limits_read_at_ = clock_.now();
    if (gone) forget_progress();
    if (gone && pipeline_) drop_pipeline();  // the next start finds no row and leaves
}

std::int64_t SourceWorker::limit_of(core::TopicPartition tp) const {
    const auto it = limit_.find(tp);
    return it == limit_.end() ? -1 : it->second;
}

std::int64_t SourceWorker::position(core::TopicPartition tp) {
    const auto& next = pipeline_->path().next_offsets();
    const auto it = next.find(tp);
    return it == next.end() ? 0 : it->second;
}

// On the thread that polls: a record is folded only between the backfill's position and the
// source's (never twice: a partition fetched again may hand out records already seen). The
// first record at the source's position stops the partition (parked by the main thread).
bool SourceWorker::backfill_admits(core::TopicPartition tp, std::int64_t offset) {
    std::int64_t& next = next_admitted_[tp];
    if (offset < next) return false;
    if (offset >= limit_of(tp)) {
        to_park_.insert(tp);
        return false;
    }
    next = offset + 1;
    return true;
}

// Nothing is left below the source's position: the backfill is there, or it met a record at or
// past it (offsets between are none: transaction markers, compaction).
bool SourceWorker::reached(core::TopicPartition tp) {
    const std::int64_t limit = limit_of(tp);
    if (limit < 0) return false;  // the source has no position there yet
    if (position(tp) >= limit) return true;
    const auto p = parked_.find(tp);
    return p != parked_.end() && p->second == limit;
}

// A backfill's turn in the step, on the main thread with no consume thread running. True when
// the step is over (joined, or the pipeline dropped).
bool SourceWorker::backfill_step(core::Millis now) {
    for (const core::TopicPartition tp : to_park_)
        if (!parked_.count(tp)) {
            consumer_->park(tp);
            parked_[tp] = limit_of(tp);
        }
    to_park_.clear();
    // Waiting for the hold: looked at as often as the source worker looks for the join.
    if (now - limits_read_at_ >= (hold_requested_ && !held_ ? kHoldLookMs : kBackfillLookMs)) {
        read_limits();
        if (!pipeline_) return true;
    }
    // The source moved on: read the partitions again from where the backfill is.
    for (auto it = parked_.begin(); it != parked_.end();) {
        if (limit_of(it->first) > it->second) {
            const std::int64_t pos = position(it->first);
            consumer_->unpark(it->first, pos);
            next_admitted_[it->first] = pos;
            it = parked_.erase(it);
        } else {
            ++it;
        }
    }
    if (!hold_requested_) {
        // Close enough (and nowhere ahead of the source): ask the source's worker to hold at
        // its committed positions.
        std::int64_t behind = 0;
        bool close = !high_.empty();
        for (const auto& [tp, h] : high_) {
            const std::int64_t limit = limit_of(tp), pos = position(tp);
            if (limit < 0 || limit < pos) {
                close = false;
                break;
            }
            if (!reached(tp)) behind += limit - pos;
        }
        if (close && behind <= kBackfillHoldLag) {
            // What it read so far is committed first (a backfill catching up commits seldom):
            // the join's commit, which the siblings wait for, holds only the last stretch.
            if (pipeline_->path().records_since_commit() > kBackfillHoldLag) {
                commit(false);
                return !pipeline_;
            }
            in_transaction([&] {
                spi_exec("UPDATE stoatflow.backfill SET hold_requested = true WHERE "
                         "aggregation_id OPERATOR(pg_catalog.=) $1",
                         {arg_int32(backfill_)});
            });
            hold_requested_ = true;
        }
        return false;
    }
    if (!held_) return false;
    // Held: the limits are the positions the source's worker committed last and stays at.
    for (const auto& [tp, h] : high_)
        if (!reached(tp)) return false;
    pipeline_->set_joining(true);
    status_moved_ = true;  // a commit even when nothing changed since the last one
    if (!commit(true)) {
        // Nothing joined: the aggregation or its source was dropped since the limits were read
        // (drop_source with cascade, drop_aggregation), or the aggregation was altered. The
        // next start finds no backfill row and leaves, or backfills on from the last commit.
        forget_progress();
        drop_pipeline();
        return true;
    }
    if (pipeline_ && !pipeline_->joining()) {
        // The source's worker released the hold first (hold_expired): this commit was one of
        // the backfill's own; it reads on and asks again.
        pg_call([&] {
            elog(LOG,
                 "stoatflow backfill: aggregation \"%s\": its source's worker released the hold "
                 "before the join; asking again",
                 backfill_name_.c_str());
        });
        return false;
    }
    joined_ = true;
    forget_progress();
    std::string at;
    for (const auto& [tp, h] : high_)
        at += (at.empty() ? "" : ", ") + describe(tp) + " at " + std::to_string(limit_of(tp));
    const std::string msg = "aggregation \"" + backfill_name_ + "\" (start_from " + backfill_from_ +
                            ") joined its source's worker: " + at;
    pg_call([&] { elog(LOG, "stoatflow backfill: %s", msg.c_str()); });
    return true;
}

// In a backfill's commit transaction: its row, locked against a concurrent drop; false if it is
// gone (then nothing is written). Also where the hand-over stands, as of the lock: a join only
// while the hold is in force (the source's worker may have released it: hold_expired).
bool SourceWorker::backfill_row_locked() {
    if (spi_exec("SELECT hold_requested, held FROM stoatflow.backfill WHERE aggregation_id "
                 "OPERATOR(pg_catalog.=) $1 FOR UPDATE",
                 {arg_int32(backfill_)}) == 0)
        return false;
    // Not held (released): no join; asked again when close. Held, the limits stay those
    // read_limits read with it.
    if (!spi_bool(0, 2).value_or(false)) {
        held_ = false;
        hold_requested_ = spi_bool(0, 1).value_or(false);
        pipeline_->set_joining(false);
    }
    return true;
}

}  // namespace stoatflow::pg
