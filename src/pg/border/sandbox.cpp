// The one sandbox for code an owner wrote (sandbox.hpp): user switch, security-restricted
// operation, a GUC nest level rolled back on every exit, the pinned settings, and the clock that
// bounds each call of user code (stoatflow.user_code_timeout). The only file that switches users.
#include "stoatflow/pg/border/sandbox.hpp"

#include <atomic>
#include <csignal>
#include <ctime>

#include "stoatflow/pg/limits.hpp"
#include "stoatflow/pg/settings.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

namespace stoatflow::pg {

namespace {

// Shared with the timer's signal handler: plain flags and lock-free atomics only.
volatile sig_atomic_t in_call = 0;          // a UserCall is running
volatile sig_atomic_t call_bounded = 0;     // ... and user_code_timeout applies to it
std::atomic<std::int64_t> call_started{0};  // its start, CLOCK_MONOTONIC ms
std::atomic<std::int64_t> limit_ms{0};
volatile sig_atomic_t timed_out = 0;  // the running call was cancelled for its time
volatile sig_atomic_t shutdown = 0;   // ... for SIGTERM

int depth = 0;       // nested run_as_owner entries (one owner's code inside a sink write)
int call_depth = 0;  // nested UserCalls: the outermost one's clock counts
bool timer_registered = false;
TimeoutId timer_id = USER_TIMEOUT;

std::int64_t monotonic_ms() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
    return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

void cancel_running_call() {
    InterruptPending = true;
    QueryCancelPending = true;
    if (MyLatch != nullptr) SetLatch(MyLatch);
}

// The timer's tick (signal context): a bounded call past its time is cancelled; PostgreSQL
// raises the cancel at the user code's next CHECK_FOR_INTERRUPTS (PL/pgSQL checks per
// statement, pg_sleep while it waits).
void tick() {
    if (!in_call || !call_bounded) return;
    const std::int64_t limit = limit_ms.load(std::memory_order_relaxed);
    if (limit <= 0) return;
    if (monotonic_ms() - call_started.load(std::memory_order_relaxed) < limit) return;
    timed_out = 1;
    cancel_running_call();
}

// How often the timer looks: a tenth of the limit (a call is cancelled within 1.1 x the limit),
// not more often than every 10 ms.
int tick_ms(std::int64_t limit) {
    const std::int64_t t = limit / 10;
    return static_cast<int>(t < 10 ? 10 : (t > 1000 ? 1000 : t));
}

}  // namespace

std::int64_t user_code_timeout_ms() { return user_code_timeout; }

std::string user_code_timeout_message() {
    return "user code ran longer than stoatflow.user_code_timeout (" +
           std::to_string(user_code_timeout) + " ms) and was cancelled";
}

void restart_user_call_clock() { call_started.store(monotonic_ms(), std::memory_order_relaxed); }

UserCall::UserCall() {
    if (call_depth++ > 0) return;
    call_started.store(monotonic_ms(), std::memory_order_relaxed);
    in_call = 1;
}

UserCall::~UserCall() {
    if (--call_depth > 0) return;
    in_call = 0;
    // The timer fired as the call returned by itself: nothing to cancel any more.
    if (timed_out && std::uncaught_exceptions() == 0) {
        timed_out = 0;
        QueryCancelPending = false;
    }
}

void interrupt_user_code_for_shutdown() {
    shutdown = 1;
    if (in_call) cancel_running_call();
}

Interrupt interrupt_of(const Error& e) {
    if (e.sqlstate() != sqlstate::kQueryCanceled) return Interrupt::None;
    if (shutdown) return Interrupt::Shutdown;
    if (timed_out) return Interrupt::Timeout;
    return Interrupt::Cancel;
}

void require_sandbox(Oid owner) {
    if (depth > 0 && GetUserId() == owner && InSecurityRestrictedOperation()) return;
    throw Error(sqlstate::kInternalError,
                "stoatflow: an owner's code was about to run outside its sandbox");
}

void run_as_owner(Oid owner, const std::function<void()>& f, bool bounded) {
    Oid saved_user;
    int saved_ctx;
    GetUserIdAndSecContext(&saved_user, &saved_ctx);
    const bool outermost = depth == 0;
    if (outermost) timed_out = 0;
    const int saved_bounded = call_bounded;
    const std::int64_t limit = user_code_timeout;
    const bool arm = outermost && bounded && limit > 0;
    const int nest = pg_call([&] {
        SetUserIdAndSecContext(owner, saved_ctx | SECURITY_LOCAL_USERID_CHANGE |
                                          SECURITY_RESTRICTED_OPERATION);
        const int level = NewGUCNestLevel();
        (void)set_config_option("search_path", "pg_catalog, pg_temp", PGC_SUSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
        (void)set_config_option("lock_timeout", kOwnerLockTimeout, PGC_SUSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
        // Values' text forms fixed (PostgreSQL's defaults): an aggregation's key is stored as
        // its columns' output text and read back with their input functions, in the worker
        // and in any user's session alike.
        for (const auto& [name, value] : kOwnerTextSettings)
            (void)set_config_option(name, value, PGC_SUSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
                                    false);
        if (arm) {
            if (!timer_registered) {
                timer_id = RegisterTimeout(USER_TIMEOUT, tick);
                timer_registered = true;
            }
            limit_ms.store(limit, std::memory_order_relaxed);
            const int every = tick_ms(limit);
            enable_timeout_every(timer_id,
                                 TimestampTzPlusMilliseconds(GetCurrentTimestamp(), every), every);
        }
        return level;
    });
    ++depth;
    call_bounded = bounded ? 1 : 0;
    const auto restore = [&] {
        --depth;
        call_bounded = saved_bounded;
        pg_call([&] {
            if (arm) disable_timeout(timer_id, false);
            AtEOXact_GUC(false, nest);
            SetUserIdAndSecContext(saved_user, saved_ctx);
        });
    };
    try {
        f();
    } catch (...) {
        restore();
        throw;
    }
    restore();
}

}  // namespace stoatflow::pg
