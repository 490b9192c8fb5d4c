// What a worker reads, published for the views (README "Progress"): about once a second, in a
// transaction of its own outside the commit's, one row per partition of
// stoatflow.worker_progress (the source's worker as worker 0, a backfill worker as its
// aggregation's id). The numbers come from flow::ProgressMeter, fed per step from the positions
// and the consumer's cached high watermarks: nothing is counted per record.
#include "stoatflow/core/error.hpp"

#include <string>
#include <vector>

#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/worker/source_worker.hpp"
#include "stoatflow/pg/worker/worker_loop.hpp"

extern "C" {
#include "catalog/pg_type.h"
}

namespace stoatflow::pg {

void SourceWorker::publish_progress() {
    if (!pipeline_ || topics_.empty()) return;
    const std::int64_t lag = meter_.lag();
    const std::optional<double> rate = meter_.rate();
    const bool behind = flow::ProgressMeter::behind(lag, rate);
    std::vector<Datum> topics, parts, nexts, highs, lags, rates, events;
    std::vector<bool> no_nulls, high_nulls, rate_nulls, event_nulls;
    meter_.each([&](core::TopicPartition tp, const flow::ProgressMeter::Partition& p) {
        if (tp.topic < 0 || static_cast<std::size_t>(tp.topic) >= topics_.size()) return;
        topics.push_back(text_datum(topics_[static_cast<std::size_t>(tp.topic)]));
        parts.push_back(Int32GetDatum(tp.partition));
        nexts.push_back(Int64GetDatum(p.position));
        highs.push_back(Int64GetDatum(p.high));
        high_nulls.push_back(p.high < 0);
        lags.push_back(Int64GetDatum(p.lag()));
        rates.push_back(Float8GetDatum(p.rate.value_or(0.0)));
        rate_nulls.push_back(!p.rate);
        const core::Millis newest = pipeline_->path().watermark().partition_max(tp.id());
        events.push_back(Int64GetDatum(newest));
        event_nulls.push_back(newest == core::kNoTime);
    });
    if (parts.empty()) return;
    try {
        in_transaction([&] {
            spi_exec(
                "INSERT INTO stoatflow.worker_progress (source_id, worker, topic, partition, "
                "next_offset, high_watermark, lag, records_per_second, newest_event_ms, behind, "
                "updated_at) SELECT $1, $2, t, p, n, h, l, r, e, $10, pg_catalog.now() FROM " +
                    unnest_rows(7, 3) +
                    " AS u(t, p, n, h, l, r, e) ON CONFLICT (source_id, worker, topic, partition) "
                    "DO UPDATE SET next_offset = EXCLUDED.next_offset, high_watermark = "
                    "EXCLUDED.high_watermark, lag = EXCLUDED.lag, records_per_second = "
                    "EXCLUDED.records_per_second, newest_event_ms = EXCLUDED.newest_event_ms, "
                    "behind = EXCLUDED.behind, updated_at = EXCLUDED.updated_at",
                {arg_int32(source_id_),
                 arg_int32(backfill_),
                 {TEXTARRAYOID, make_array(topics, {}, TEXTOID)},
                 {INT4ARRAYOID, make_array(parts, {}, INT4OID)},
                 {INT8ARRAYOID, make_array(nexts, {}, INT8OID)},
                 {INT8ARRAYOID, make_array(highs, high_nulls, INT8OID)},
                 {INT8ARRAYOID, make_array(lags, {}, INT8OID)},
                 {FLOAT8ARRAYOID, make_array(rates, rate_nulls, FLOAT8OID)},
                 {INT8ARRAYOID, make_array(events, event_nulls, INT8OID)},
                 {BOOLOID, BoolGetDatum(behind)}});
        });
        progress_quiet_ = false;
    } catch (const Error& e) {
        // Progress is a gauge: a failed write is replaced by the next one a second later. A
        // cancel is not swallowed (drop_aggregation waits for it).
        if (e.sqlstate() == sqlstate::kQueryCanceled) throw;
    }
}

// Not consuming (paused, held for a backfill's join, no aggregations): the rows say so, once.
void SourceWorker::quiet_progress() {
    if (progress_quiet_) return;
    try {
        in_transaction([&] {
            if (!extension_present()) return;
            spi_exec("UPDATE stoatflow.worker_progress SET records_per_second = 0, behind = false, "
                     "updated_at = pg_catalog.now() WHERE source_id OPERATOR(pg_catalog.=) $1 AND "
                     "worker OPERATOR(pg_catalog.=) $2",
                     {arg_int32(source_id_), arg_int32(backfill_)});
        });
        progress_quiet_ = true;
    } catch (const Error& e) {
        if (e.sqlstate() == sqlstate::kQueryCanceled) throw;  // best effort, as above
    }
}

// A backfill that joined (or whose aggregation is gone): its rows go; the source's worker's
// rows show the aggregation from now on.
void SourceWorker::forget_progress() {
    if (backfill_ == 0) return;
    try {
        in_transaction([&] {
            if (!extension_present()) return;
            spi_exec("DELETE FROM stoatflow.worker_progress WHERE source_id "
                     "OPERATOR(pg_catalog.=) $1 AND worker OPERATOR(pg_catalog.=) $2",
                     {arg_int32(source_id_), arg_int32(backfill_)});
        });
    } catch (const Error& e) {
        if (e.sqlstate() == sqlstate::kQueryCanceled) throw;  // best effort, as above
    }
}

}  // namespace stoatflow::pg
