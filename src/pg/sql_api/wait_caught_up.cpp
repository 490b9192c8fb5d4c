// stoatflow.wait_caught_up(source, timeout): reads the end offset of each partition of each of
// the source's topics from the broker when called, then waits until the source's committed
// offsets reach them.
// Honours the timeout (returns false) and query cancel.
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/kafka/consumer.hpp"

#include <chrono>
#include <map>
#include <string>

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

namespace {
using Clock = std::chrono::steady_clock;

long ms_left(Clock::time_point deadline) {
    return static_cast<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
}

void sleep_interruptible(long ms) {
    pg_call([&] {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    });
}
// A paused source does not catch up (README "Pausing a source"): wait_caught_up says so at once.
bool source_is_paused(std::int32_t id) {
    return spi_exec("SELECT 1 FROM stoatflow.source WHERE source_id OPERATOR(pg_catalog.=) $1 "
                    "AND paused",
                    {arg_int32(id)}) > 0;
}

void notice_paused(const std::string& name) {
    pg_call([&] {
        ereport(NOTICE, (errmsg("source \"%s\" is paused: it does not catch up", name.c_str()),
                         errhint("stoatflow.resume_source('%s') resumes it.", name.c_str())));
    });
}
}  // namespace

STOATFLOW_FUNCTION(stoatflow_wait_caught_up) {
    if (PG_ARGISNULL(0))
        throw Error(sqlstate::kInvalidParameterValue, "source name must not be NULL");
    const std::string name = text_to_string(PG_GETARG_DATUM(0));
    long timeout_ms = 60000;
    if (!PG_ARGISNULL(1)) {
        const Interval* iv = PG_GETARG_INTERVAL_P(1);
        if (iv->month != 0)
            throw Error(sqlstate::kInvalidParameterValue, "timeout must not use months or years");
        const core::Millis ms = core::interval_to_ms(iv->day, iv->time);
        if (ms < 0) throw Error(sqlstate::kInvalidParameterValue, "timeout must not be negative");
        timeout_ms = static_cast<long>(std::min<core::Millis>(ms, 86400000LL * 365));
    }
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);

    SourceDef src;
    bool paused = false;
    {
        SpiSession spi;
        src = load_source(name);
        paused = source_is_paused(src.id);
        spi.finish();
    }
    if (paused) {
        notice_paused(name);
        PG_RETURN_BOOL(false);
    }

    // What the topic holds now. An unreachable broker is retried until the deadline.
    std::map<core::TopicPartition, std::int64_t> targets;
    for (;;) {
        try {
            targets = kafka::high_watermarks(
                src.brokers, src.kafka_options, src.topics,
                static_cast<int>(std::max(100L, std::min(ms_left(deadline), 10000L))));
            break;
        } catch (const Error& e) {
            if (ms_left(deadline) <= 0) {
                const std::string msg = e.what();
                pg_call([&] {
                    ereport(WARNING,
                            (errmsg("stoatflow: source \"%s\" could not reach its broker: %s",
                                    name.c_str(), msg.c_str())));
                });
                PG_RETURN_BOOL(false);
            }
            sleep_interruptible(std::min(200L, std::max(1L, ms_left(deadline))));
        }
    }

    for (;;) {
        bool done = true;
        {
            SpiSession spi;
            std::map<core::TopicPartition, std::int64_t> committed;
            const auto n =
                spi_exec("SELECT topic, partition, next_offset FROM stoatflow.partition_offset "
                         "WHERE source_id OPERATOR(pg_catalog.=) $1",
                         {arg_int32(src.id)});
            for (std::uint64_t r = 0; r < n; ++r) {
                const std::int32_t t = topic_index(src, *spi_text(r, 1));
                if (t >= 0)
                    committed[{t, static_cast<std::int32_t>(*spi_int64(r, 2))}] = *spi_int64(r, 3);
            }
            paused = source_is_paused(src.id);
            // An aggregation still backfilling has not caught up (README "Backfill and
            // start_from").
            if (spi_exec("SELECT 1 FROM stoatflow.backfill b WHERE b.source_id "
                         "OPERATOR(pg_catalog.=) $1 LIMIT 1",
                         {arg_int32(src.id)}) > 0)
                done = false;
            spi.finish();
            if (paused) {
                notice_paused(name);
                PG_RETURN_BOOL(false);
            }
            for (const auto& [p, high] : targets) {
                if (high <= 0) continue;
                auto it = committed.find(p);
                if (it == committed.end() || it->second < high) done = false;
            }
        }
        if (done) PG_RETURN_BOOL(true);
        if (ms_left(deadline) <= 0) PG_RETURN_BOOL(false);
        sleep_interruptible(std::min(50L, std::max(1L, ms_left(deadline))));
    }
}
