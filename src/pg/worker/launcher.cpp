// The launcher: one background worker, registered by _PG_init, that keeps one source worker
// running per source of stoatflow.database — starting missing ones (restarted with backoff after
// a crash), stopping dropped ones, and saying so when no worker slot is free.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/settings.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/worker/progress_board.hpp"
#include "stoatflow/pg/worker/worker.hpp"
#include "stoatflow/pg/worker/worker_loop.hpp"

extern "C" {
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/memutils.h"

PGDLLEXPORT void stoatflow_launcher_main(Datum arg);
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

// A started worker's handle, palloc'd in TopMemoryContext by PostgreSQL: freed when the worker
// is seen stopped, when its source is dropped, and when the launcher itself exits.
class WorkerHandle {
public:
    WorkerHandle() = default;
    WorkerHandle(const WorkerHandle&) = delete;
    WorkerHandle& operator=(const WorkerHandle&) = delete;
    WorkerHandle(WorkerHandle&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
    ~WorkerHandle() { reset(); }
    void reset(BackgroundWorkerHandle* h = nullptr) {
        if (h_) pfree(h_);
        h_ = h;
    }
    BackgroundWorkerHandle* get() const { return h_; }
    explicit operator bool() const { return h_ != nullptr; }

private:
    BackgroundWorkerHandle* h_ = nullptr;
};

struct Running {
    WorkerHandle handle;
    bool waiting = false;  // no worker slot was free (status waiting_for_worker shown)
    core::Millis next_start = 0;
    core::Millis started_at = 0;
    int failures = 0;
};

// backfill: a backfill worker for aggregation `id` (README "Backfill and start_from"), else the
// source worker of source `id`.
void start_worker(std::int32_t id, const std::string& name, Running& r, bool backfill = false) {
    BackgroundWorker w;
    memset(&w, 0, sizeof w);
    w.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    w.bgw_start_time = BgWorkerStart_RecoveryFinished;
    w.bgw_restart_time = BGW_NEVER_RESTART;  // the launcher restarts it, with backoff
    snprintf(w.bgw_library_name, BGW_MAXLEN, "stoatflow");
    const char* kind = backfill ? "backfill" : "source";
    snprintf(w.bgw_function_name, BGW_MAXLEN, "stoatflow_%s_worker_main", kind);
    snprintf(w.bgw_name, BGW_MAXLEN, "stoatflow %s %s", kind, name.c_str());
    snprintf(w.bgw_type, BGW_MAXLEN, "stoatflow %s %s", kind, name.c_str());
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
        r.handle.reset(handle);
        r.started_at = wall_now();
        r.waiting = false;
        return;
    }
    r.next_start = wall_now() + kWorkerSlotRetryMs;
    if (r.waiting || backfill) return;  // said once; looked at again every kWorkerSlotRetryMs
    r.waiting = true;
    const std::string source = name;
    pg_call([&] {
        ereport(WARNING,
                (errmsg("stoatflow: no background worker slot is free for source \"%s\"",
                        source.c_str()),
                 errhint("Each source needs one background worker, the launcher one more: raise "
                         "max_worker_processes (and restart the server).")));
    });
    try {
        in_transaction([&] {
            write_source_status(
                id, "waiting_for_worker",
                "no background worker slot is free: each source needs one, plus one for the "
                "launcher; raise max_worker_processes and restart the server");
        });
    } catch (const std::exception&) {
        // best effort, like every status
    }
}

// One worker per entry of `wanted` (started, restarted with backoff after an exit), none for the
// others (terminated).
void keep_running(std::map<std::int32_t, Running>& workers,
                  const std::map<std::int32_t, std::string>& wanted, core::Millis now,
                  bool backfill) {
    for (auto it = workers.begin(); it != workers.end();) {
        if (!wanted.count(it->first)) {
            // (A backfill worker that joined is leaving anyway: SIGTERM writes nothing then.)
            if (it->second.handle)
                pg_call([&] { TerminateBackgroundWorker(it->second.handle.get()); });
            it = workers.erase(it);  // frees the handle
        } else {
            ++it;
        }
    }
    for (const auto& [id, name] : wanted) {
        Running& r = workers[id];
        if (r.handle) {
            pid_t pid;
            const auto st = pg_call([&] { return GetBackgroundWorkerPid(r.handle.get(), &pid); });
            if (st != BGWH_STOPPED) {
                if (now - r.started_at > kWorkerHealthyMs) r.failures = 0;
                continue;
            }
            r.handle.reset();  // exited or crashed: restart with backoff
            r.failures = std::min(r.failures + 1, kWorkerRestartMaxShift);
            r.next_start = now + std::min<core::Millis>(kWorkerRestartMaxMs, 500LL << r.failures);
        }
        if (now >= r.next_start) start_worker(id, name, r, backfill);
    }
}

void run_launcher() {
    pg_call([] {
        LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
        shared->launcher_latch = MyLatch;
        LWLockRelease(AddinShmemInitLock);
    });
    LoopMemory loop;
    std::map<std::int32_t, Running> workers, backfill_workers;
    while (!got_sigterm) {
        loop.next_iteration();
        std::map<std::int32_t, std::string> sources, backfills;
        try {
            in_transaction([&] {
                if (!extension_present()) return;
                const auto n = spi_exec(
                    "SELECT source_id, source_name FROM stoatflow.source ORDER BY source_id");
                for (std::uint64_t r = 0; r < n; ++r)
                    sources[static_cast<std::int32_t>(*spi_int64(r, 1))] = *spi_text(r, 2);
                // One backfill worker per backfilling aggregation (README "Backfill and
                // start_from"); a catalog from before 0.3 has none.
                if (spi_exec("SELECT 1 FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) "
                             "pg_catalog.to_regclass('stoatflow.backfill')") == 0)
                    return;
                const auto b = spi_exec(
                    "SELECT b.aggregation_id, a.aggregation_name FROM stoatflow.backfill b JOIN "
                    "stoatflow.aggregation a USING (aggregation_id) ORDER BY 1");
                for (std::uint64_t r = 0; r < b; ++r)
                    backfills[static_cast<std::int32_t>(*spi_int64(r, 1))] = *spi_text(r, 2);
            });
        } catch (const std::exception& e) {
            const std::string msg = e.what();
            pg_call([&] { elog(LOG, "stoatflow launcher: %s", msg.c_str()); });
        }
        const core::Millis now = wall_now();
        keep_running(workers, sources, now, false);
        // A backfill worker leaves once it joined: its row is gone, it is not restarted.
        keep_running(backfill_workers, backfills, now, true);
        wait_ms(kLauncherLookMs);
    }
}

void on_shmem_request() {
    if (prev_shmem_request) prev_shmem_request();
    RequestAddinShmemSpace(MAXALIGN(sizeof(SharedState)));
    RequestAddinShmemSpace(MAXALIGN(progress_board::shmem_size()));  // README "Progress"
}

void on_shmem_startup() {
    if (prev_shmem_startup) prev_shmem_startup();
    bool found;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    shared = static_cast<SharedState*>(ShmemInitStruct("stoatflow", sizeof(SharedState), &found));
    if (!found) shared->launcher_latch = nullptr;
    void* board = ShmemInitStruct("stoatflow progress", progress_board::shmem_size(), &found);
    progress_board::shmem_init(board, found);
    LWLockRelease(AddinShmemInitLock);
}

void on_xact(XactEvent event, void*) {
    if (event == XACT_EVENT_COMMIT && wake_on_commit && shared && shared->launcher_latch)
        SetLatch(shared->launcher_latch);
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT) wake_on_commit = false;
}

}  // namespace

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
    worker_connect();
    pgstat_report_appname("stoatflow launcher");
    cpp_call([] { run_launcher(); });
    proc_exit(0);
}

// stoatflow._wake_launcher(): the declaration functions call it so the launcher starts or
// stops workers as soon as their transaction commits.
STOATFLOW_FUNCTION(stoatflow__wake_launcher) {
    wake_launcher_at_commit();
    PG_RETURN_VOID();
}
