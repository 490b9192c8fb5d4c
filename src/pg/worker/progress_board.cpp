// The progress board in shared memory (include/stoatflow/pg/worker/progress_board.hpp, README
// "Progress") and its SQL reader stoatflow._worker_progress(), which the views stoatflow.sources
// and stoatflow.stats call.
#include "stoatflow/pg/worker/progress_board.hpp"

#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <sched.h>

#include "stoatflow/pg/border/guard.hpp"
#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/worker/worker_loop.hpp"

extern "C" {
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
}

namespace stoatflow::pg::progress_board {

namespace {

constexpr std::int32_t kBehind = 1, kHasRate = 2, kHasEvent = 4;

// One worker's partition. seq is odd while the entry is written (a reader retries); the key's
// source_id is 0 when the entry is free.
struct Entry {
    std::atomic<std::uint32_t> seq;
    std::atomic<std::int32_t> source_id, worker, topic, partition;
    std::atomic<std::int64_t> next_offset, high, lag, newest_event_ms, updated_ms;
    std::atomic<double> rate;
    std::atomic<std::int32_t> flags;
};

struct Board {
    std::atomic<bool> claiming;  // held while a main thread looks for an entry to claim
    Entry entries[kEntries];
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free &&
                  std::atomic<double>::is_always_lock_free &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the board is shared between processes: its atomics must be lock-free");

Board* board = nullptr;

void put(Entry& e, const Key& k, const Values& v) {
    const std::uint32_t s = e.seq.load(std::memory_order_relaxed);
    e.seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    e.worker.store(k.worker, std::memory_order_relaxed);
    e.topic.store(k.topic, std::memory_order_relaxed);
    e.partition.store(k.partition, std::memory_order_relaxed);
    e.source_id.store(k.source_id, std::memory_order_relaxed);
    e.next_offset.store(v.next_offset, std::memory_order_relaxed);
    e.high.store(v.high, std::memory_order_relaxed);
    e.lag.store(v.lag, std::memory_order_relaxed);
    e.newest_event_ms.store(v.newest_event_ms, std::memory_order_relaxed);
    e.updated_ms.store(v.updated_ms, std::memory_order_relaxed);
    e.rate.store(v.rate, std::memory_order_relaxed);
    e.flags.store((v.behind ? kBehind : 0) | (v.has_rate ? kHasRate : 0) |
                      (v.has_event ? kHasEvent : 0),
                  std::memory_order_relaxed);
    e.seq.store(s + 2, std::memory_order_release);
}

class ClaimLock {
public:
    ClaimLock() {
        while (board->claiming.exchange(true, std::memory_order_acquire)) sched_yield();
    }
    ~ClaimLock() { board->claiming.store(false, std::memory_order_release); }
    ClaimLock(const ClaimLock&) = delete;
    ClaimLock& operator=(const ClaimLock&) = delete;
};

bool same(const Entry& e, const Key& k) {
    return e.source_id.load(std::memory_order_relaxed) == k.source_id &&
           e.worker.load(std::memory_order_relaxed) == k.worker &&
           e.topic.load(std::memory_order_relaxed) == k.topic &&
           e.partition.load(std::memory_order_relaxed) == k.partition;
}

}  // namespace

std::size_t shmem_size() { return sizeof(Board); }

void shmem_init(void* at, bool found) {
    board = static_cast<Board*>(at);
    if (found) return;
    std::memset(at, 0, sizeof(Board));  // lock-free atomics of zero: free, nobody claiming
}

int claim(const Key& key, std::int64_t now_ms) {
    if (board == nullptr) return -1;
    const ClaimLock lock;
    int free = -1, stale = -1;
    for (std::size_t i = 0; i < kEntries; ++i) {
        const Entry& e = board->entries[i];
        if (same(e, key)) return static_cast<int>(i);  // its own, from an earlier run
        if (e.source_id.load(std::memory_order_relaxed) == 0) {
            if (free < 0) free = static_cast<int>(i);
        } else if (stale < 0 && now_ms - e.updated_ms.load(std::memory_order_relaxed) > kStaleMs) {
            stale = static_cast<int>(i);
        }
    }
    const int at = free >= 0 ? free : stale;
    if (at < 0) return -1;
    Values none;
    none.next_offset = -1;  // claimed, not shown until the worker writes numbers
    none.updated_ms = now_ms;
    put(board->entries[at], key, none);
    return at;
}

void write(int entry, const Key& key, const Values& v) {
    if (board == nullptr || entry < 0 || static_cast<std::size_t>(entry) >= kEntries) return;
    Entry& e = board->entries[entry];
    if (!same(e, key)) return;  // released, or taken by another worker as stale: not ours
    put(e, key, v);
}

void release(std::int32_t source_id, std::int32_t worker) {
    if (board == nullptr) return;
    const ClaimLock lock;
    for (Entry& e : board->entries)
        if (e.source_id.load(std::memory_order_relaxed) == source_id &&
            e.worker.load(std::memory_order_relaxed) == worker) {
            const std::uint32_t s = e.seq.load(std::memory_order_relaxed);
            e.seq.store(s + 1, std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_release);
            e.source_id.store(0, std::memory_order_relaxed);
            e.seq.store(s + 2, std::memory_order_release);
        }
}

bool read_entry(std::size_t i, Key* key, Values* v) {
    if (board == nullptr) return false;
    const Entry& e = board->entries[i];
    for (;;) {
        const std::uint32_t s1 = e.seq.load(std::memory_order_acquire);
        if (s1 & 1U) {
            sched_yield();
            continue;
        }
        *key = {e.source_id.load(std::memory_order_relaxed),
                e.worker.load(std::memory_order_relaxed), e.topic.load(std::memory_order_relaxed),
                e.partition.load(std::memory_order_relaxed)};
        v->next_offset = e.next_offset.load(std::memory_order_relaxed);
        v->high = e.high.load(std::memory_order_relaxed);
        v->lag = e.lag.load(std::memory_order_relaxed);
        v->newest_event_ms = e.newest_event_ms.load(std::memory_order_relaxed);
        v->updated_ms = e.updated_ms.load(std::memory_order_relaxed);
        v->rate = e.rate.load(std::memory_order_relaxed);
        const std::int32_t f = e.flags.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (e.seq.load(std::memory_order_relaxed) != s1) continue;
        v->behind = (f & kBehind) != 0;
        v->has_rate = (f & kHasRate) != 0;
        v->has_event = (f & kHasEvent) != 0;
        return key->source_id != 0 && v->next_offset >= 0;
    }
}

}  // namespace stoatflow::pg::progress_board

using namespace stoatflow;
using namespace stoatflow::pg;

// stoatflow._worker_progress(): every entry of the board in use, for the views (README
// "Progress"). Columns: source_id, worker (0: the source's worker, else the backfilling
// aggregation's id), topic (the ordinal in the source's topics, from 0), partition, next_offset,
// high_watermark, lag, records_per_second, newest_event_ms, behind, updated_at.
STOATFLOW_FUNCTION(stoatflow__worker_progress) {
    pg_call([&] { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    TupleDesc desc = rsinfo->setDesc;
    if (desc->natts != 11)
        throw Error(sqlstate::kInternalError, "_worker_progress must return 11 columns");
    progress_board::read_all([&](const progress_board::Key& k, const progress_board::Values& v) {
        Datum values[11];
        bool nulls[11] = {};
        values[0] = Int32GetDatum(k.source_id);
        values[1] = Int32GetDatum(k.worker);
        values[2] = Int32GetDatum(k.topic);
        values[3] = Int32GetDatum(k.partition);
        values[4] = Int64GetDatum(v.next_offset);
        values[5] = Int64GetDatum(v.high);
        nulls[5] = v.high < 0;
        values[6] = Int64GetDatum(v.lag);
        values[7] = Float8GetDatum(v.rate);
        nulls[7] = !v.has_rate;
        values[8] = Int64GetDatum(v.newest_event_ms);
        nulls[8] = !v.has_event;
        values[9] = BoolGetDatum(v.behind);
        values[10] = millis_to_timestamptz(v.updated_ms);
        pg_call([&] { tuplestore_putvalues(rsinfo->setResult, desc, values, nulls); });
    });
    return (Datum)0;
}

// stoatflow._test_worker_progress(source_id, worker, topic, partition, next_offset, high, rate,
// newest_event_ms, behind): writes one entry as a worker would (superusers only, sql/progress.sql);
// next_offset NULL releases every entry of (source_id, worker).
STOATFLOW_FUNCTION(stoatflow__test_worker_progress) {
    for (int i = 0; i < 4; ++i)
        if (PG_ARGISNULL(i))
            throw Error(sqlstate::kNullValueNotAllowed, "the key must not be NULL");
    const progress_board::Key k{PG_GETARG_INT32(0), PG_GETARG_INT32(1), PG_GETARG_INT32(2),
                                PG_GETARG_INT32(3)};
    if (k.source_id == 0) throw Error(sqlstate::kInvalidParameterValue, "source_id must not be 0");
    if (PG_ARGISNULL(4)) {
        progress_board::release(k.source_id, k.worker);
        PG_RETURN_VOID();
    }
    const std::int64_t now_ms = wall_clock().now();
    const int at = progress_board::claim(k, now_ms);
    if (at < 0) throw Error(sqlstate::kProgramLimitExceeded, "the progress board is full");
    progress_board::Values v;
    v.next_offset = PG_GETARG_INT64(4);
    v.high = PG_ARGISNULL(5) ? -1 : PG_GETARG_INT64(5);
    v.lag = v.high < 0 ? 0 : std::max<std::int64_t>(v.high - v.next_offset, 0);
    v.has_rate = !PG_ARGISNULL(6);
    v.rate = v.has_rate ? PG_GETARG_FLOAT8(6) : 0.0;
    v.has_event = !PG_ARGISNULL(7);
    v.newest_event_ms = v.has_event ? PG_GETARG_INT64(7) : 0;
    v.behind = !PG_ARGISNULL(8) && PG_GETARG_BOOL(8);
    v.updated_ms = now_ms;
    progress_board::write(at, k, v);
    PG_RETURN_VOID();
}
