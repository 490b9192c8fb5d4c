// What the launcher and the source workers share: signal handling, one transaction at a time,
// the latch wait, the per-iteration memory context (pg_cron's loop), and the status row.
#pragma once

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "stoatflow/flow/clock.hpp"
#include "stoatflow/pg/border/guard.hpp"

namespace stoatflow::pg {

// Set by SIGTERM; every loop ends when it is.
extern volatile sig_atomic_t got_sigterm;

// The standard start of a stoatflow background worker: SIGHUP reloads the configuration,
// SIGTERM sets got_sigterm; connected to stoatflow.database with a pinned search_path.
void worker_connect();

// The wall clock the workers run on.
const flow::Clock& wall_clock();
inline core::Millis wall_now() { return wall_clock().now(); }

// Runs f in its own transaction with SPI connected and a snapshot; any failure aborts the
// transaction and is rethrown as a C++ exception. Leaves the memory context it found.
void in_transaction_impl(void (*call)(void*), void* arg);
template <class F>
void in_transaction(F&& f) {
    using Fn = std::remove_reference_t<F>;
    in_transaction_impl([](void* p) { (*static_cast<Fn*>(p))(); }, &f);
}

// Sleeps on the latch (SIGTERM, postmaster death and config reloads wake it), then checks for
// interrupts and reloads the configuration if asked.
void wait_ms(long ms);
// Reloads the configuration if a SIGHUP asked for it.
void reload_config_if_pending();

// One iteration's scratch memory: whatever PostgreSQL allocates outside a transaction during
// an iteration goes here and is freed when the next one starts (never TopMemoryContext).
class LoopMemory {
public:
    LoopMemory();
    // Frees the previous iteration's allocations and makes this context current.
    void next_iteration();

private:
    MemoryContext context_;
};

// Gives free heap pages back to the kernel when the process's private memory runs far ahead of
// `accounted` (what its window states hold): states that grow record by record, and commits'
// copies of them, leave holes malloc keeps. Cheap to call often (rate-limited).
void give_back_memory(std::size_t accounted);

// Is the extension created in this database (SPI connected)?
bool extension_present();
// stoatflow.source_status: a worker's status, or the launcher's word that it cannot start one.
void write_source_status(std::int32_t source_id, const std::string& status,
                         const std::string& error);

}  // namespace stoatflow::pg
