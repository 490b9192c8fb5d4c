// What the launcher and the source workers share: signal handling, transactions, the latch
// wait with interrupts checked, the per-iteration memory context, the source status row.
#include "stoatflow/pg/worker/worker_loop.hpp"

#include <chrono>
#include <cstdio>

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include "stoatflow/pg/limits.hpp"

#include "stoatflow/pg/border/sandbox.hpp"
#include "stoatflow/pg/settings.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"
}

namespace stoatflow::pg {

volatile sig_atomic_t got_sigterm = 0;

namespace {

void handle_sigterm(SIGNAL_ARGS) {
    const int save_errno = errno;
    got_sigterm = 1;
    // Code of an owner running now (a looping transition function) is cancelled: the worker
    // leaves its loop within the timer's tick, never waits for the loop to end.
    interrupt_user_code_for_shutdown();
    SetLatch(MyLatch);
    errno = save_errno;
}

const flow::SystemClock system_clock;

}  // namespace

const flow::Clock& wall_clock() { return system_clock; }

void worker_connect() {
    // Only the largest allocations get pages of their own (mapped and unmapped each time); below
    // kMmapThresholdBytes, a commit's buffers and PostgreSQL's memory-context blocks reuse the
    // heap pages the previous commit faulted in instead of the kernel zeroing fresh ones (sparse
    // benchmark: zeroing 12.8 -> 8.9 % of the worker's samples from 16 kB). The holes that growing
    // aggregate states leave in the heap go back to the kernel through give_back_memory. A fixed
    // threshold also stops glibc from moving it as blocks are freed.
    mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThresholdBytes));
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    pqsignal(SIGTERM, handle_sigterm);
    BackgroundWorkerUnblockSignals();
    BackgroundWorkerInitializeConnection(database_name, nullptr, 0);
    // The worker runs as the bootstrap superuser: right after connecting it pins its own path,
    // so nothing a database or role setting puts on search_path can shadow a function or
    // operator its SQL uses (README "Security"). PGC_S_OVERRIDE also outranks any later SET by code
    // it runs.
    SetConfigOption("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_OVERRIDE);
}

void in_transaction_impl(void (*call)(void*), void* arg) {
    MemoryContext outer = CurrentMemoryContext;
    pg_call([] {
        SetCurrentStatementStartTimestamp();
        StartTransactionCommand();
        PushActiveSnapshot(GetTransactionSnapshot());
    });
    try {
        SpiSession spi;
        call(arg);
        spi.finish();
        pg_call([] {
            PopActiveSnapshot();
            CommitTransactionCommand();
        });
    } catch (...) {
        pg_call([] { AbortCurrentTransaction(); });
        MemoryContextSwitchTo(outer);
        throw;
    }
    MemoryContextSwitchTo(outer);
}

// The worker's private resident memory (RssAnon) in bytes, 0 when unknown.
std::size_t private_resident_bytes() {
    static int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[128];
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    unsigned long size = 0, resident = 0, shared = 0;
    if (sscanf(buf, "%lu %lu %lu", &size, &resident, &shared) != 3 || shared > resident) return 0;
    return static_cast<std::size_t>(resident - shared) * static_cast<std::size_t>(getpagesize());
}

// States that grow record by record leave the C heap full of holes that malloc keeps (a window's
// text state of 10 kB, then 20 kB, ...): when the worker's private memory runs far ahead of what
// the states hold and past half of worker_memory_limit, the free pages go back to the kernel, so
// that RSS stays near the accounted memory the limit bounds. Below half the limit they are kept:
// the next commit reuses them instead of faulting fresh zeroed pages in. Looked at every 64
// records while folding and after each commit, trimmed at most every kTrimEveryMs.
void give_back_memory(std::size_t accounted) {
    static auto last = std::chrono::steady_clock::time_point{};
    const auto now = std::chrono::steady_clock::now();
    if (now - last < std::chrono::milliseconds(kTrimEveryMs)) return;
    const std::size_t rss = private_resident_bytes();
    if (rss == 0 || rss <= accounted + accounted / 16 + kTrimSlackBytes) return;
    const std::size_t limit = static_cast<std::size_t>(worker_memory_limit_kb) * 1024;  // 0: none
    if (limit > 0 && rss < limit / 2) return;
    last = now;
    malloc_trim(0);
}

void reload_config_if_pending() {
    pg_call([] {
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
    });
}

void wait_ms(long ms) {
    pg_call([&] {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    });
    reload_config_if_pending();
}

LoopMemory::LoopMemory()
    : context_(pg_call([&] {
          return AllocSetContextCreate(TopMemoryContext, "stoatflow worker loop",
                                       ALLOCSET_DEFAULT_SIZES);
      })) {}

void LoopMemory::next_iteration() {
    pg_call([&] {
        MemoryContextSwitchTo(context_);
        MemoryContextReset(context_);
    });
}

bool extension_present() {
    spi_exec("SELECT pg_catalog.to_regclass('stoatflow.source') IS NOT NULL");
    return *spi_bool(0, 1);
}

void write_source_status(std::int32_t source_id, const std::string& status,
                         const std::string& error) {
    spi_exec(
        "INSERT INTO stoatflow.source_status (source_id, status, last_error, updated_at) "
        "SELECT $1, $2, CASE WHEN $3 OPERATOR(pg_catalog.=) '' THEN NULL ELSE $3 END, pg_catalog.now() "
        "WHERE EXISTS (SELECT 1 FROM stoatflow.source WHERE source_id OPERATOR(pg_catalog.=) $1) "
        "ON CONFLICT (source_id) DO UPDATE SET status = EXCLUDED.status, "
        "last_error = coalesce(EXCLUDED.last_error, source_status.last_error), "
        "updated_at = EXCLUDED.updated_at",
        {arg_int32(source_id), arg_text(status), arg_text(error)});
}

}  // namespace stoatflow::pg
