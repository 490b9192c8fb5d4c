// The progress board (README "Progress"): a fixed array of entries in shared memory, one per
// worker and partition, that workers write about once a second and stoatflow._worker_progress()
// reads for the views. An entry is claimed on a worker's main thread (when it starts reading
// its partitions) and then written by whichever of its threads consumes: the main thread in its
// step, the consume thread while a commit is written (src/pg/worker/README.md "The commit
// cycle") — plain atomic stores under a sequence counter, no PostgreSQL call, no lock. An entry
// outlives its worker's restarts (the restarted worker finds it again), so the numbers never go
// back to NULL; a server restart starts the board empty.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stoatflow::pg::progress_board {

// Entries for every worker's partitions together; one past them is not shown (logged once).
constexpr std::size_t kEntries = 4096;
// An entry not written for this long may be taken by another worker when the board is full
// (its source or aggregation is gone, or its worker does not run).
constexpr std::int64_t kStaleMs = 10 * 60 * 1000;

struct Values {
    std::int64_t next_offset = 0;
    std::int64_t high = -1;  // -1: not known
    std::int64_t lag = 0;
    double rate = 0;
    bool has_rate = false;
    std::int64_t newest_event_ms = 0;
    bool has_event = false;
    bool behind = false;
    std::int64_t updated_ms = 0;  // wall clock, epoch ms
};

struct Key {
    std::int32_t source_id, worker, topic, partition;
};

// The launcher's shared-memory hooks (launcher.cpp) call these.
std::size_t shmem_size();
void shmem_init(void* at, bool found);

// On a worker's main thread: the entry of this key (its own from an earlier run, a free one, or
// a stale one); -1 when the board is full.
int claim(const Key& key, std::int64_t now_ms);
// Any thread of the worker that claimed it (the key it claimed it for: an entry taken by
// another worker since is left alone); no PostgreSQL call.
void write(int entry, const Key& key, const Values& v);
// Frees every entry of (source_id, worker) (a backfill that joined).
void release(std::int32_t source_id, std::int32_t worker);
// A consistent copy of every entry in use, in order; f(key, values).
template <class F>
void read_all(F&& f);

// (read_all's parts, for the template)
bool read_entry(std::size_t i, Key* key, Values* v);

template <class F>
void read_all(F&& f) {
    Key k;
    Values v;
    for (std::size_t i = 0; i < kEntries; ++i)
        if (read_entry(i, &k, &v)) f(k, v);
}

}  // namespace stoatflow::pg::progress_board
