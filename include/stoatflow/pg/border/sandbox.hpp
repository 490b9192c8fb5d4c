// The one way stoatflow runs code an owner wrote (README "Security": user code is a guest):
// expressions, every aggregate support function, input and output functions and domain checks of
// owner types, sink triggers, constraints and defaults. Nothing else in the tree switches users.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "stoatflow/pg/border/guard.hpp"

namespace stoatflow::pg {

// Runs f as `owner` the way PostgreSQL runs a table owner's code (REFRESH MATERIALIZED VIEW,
// index builds): the owner as current user, SECURITY_RESTRICTED_OPERATION, a GUC nest level that
// is rolled back on every way out (a set_config() of the owner's code never outlives the entry,
// also when it was not local), and inside it the pinned settings: search_path = pg_catalog,
// pg_temp, a bounded lock_timeout, DateStyle, IntervalStyle and extra_float_digits at PostgreSQL's
// defaults (kOwnerTextSettings). The previous user, context and settings are restored also when f
// throws. One entry may span many calls of ONE owner's code (a run of records); code of two
// owners never shares an entry. With `bounded`, each UserCall inside is bounded by
// stoatflow.user_code_timeout.
void run_as_owner(Oid owner, const std::function<void()>& f, bool bounded = true);

// Code of `owner` may run only inside run_as_owner(owner): throws (XX000) otherwise. Cheap; the
// engines' PostgreSQL aggregates check it on every call, so a path that forgot the sandbox fails
// loudly instead of running an owner's code as the worker's superuser.
void require_sandbox(Oid owner);

// Marks one call of user code inside run_as_owner (for stoatflow.user_code_timeout): the clock of
// the call starts when it is constructed. Cheap (a clock read): one per record and aggregation.
class UserCall {
public:
    UserCall();
    ~UserCall();
    UserCall(const UserCall&) = delete;
    UserCall& operator=(const UserCall&) = delete;
};

// Why a call of user code was interrupted, from the error it raised (a PgError with SQLSTATE
// 57014). Cleared by the next run_as_owner.
enum class Interrupt { None, Timeout, Shutdown, Cancel };
Interrupt interrupt_of(const Error& e);

// Thrown instead of a query-cancel error raised inside user code, so the caller can tell a
// timeout (a dead letter of that aggregation) from a shutdown or a cancel (the worker stops its
// step and starts over from the committed state).
class UserCodeInterrupted : public Error {
public:
    UserCodeInterrupted(Interrupt why, const std::string& message)
        : Error(sqlstate::kQueryCanceled, message), why_(why) {}
    Interrupt why() const { return why_; }

private:
    Interrupt why_;
};

// "user code ran longer than stoatflow.user_code_timeout (N ms)": a timeout's message.
std::string user_code_timeout_message();

// Restarts the clock of the running UserCall: one call of user code per row of a batch the caller
// runs inside one UserCall. Plain stores: safe inside pg_call.
void restart_user_call_clock();

// The worker's SIGTERM handler calls this: a call of user code running now is interrupted (the
// worker leaves its loop soon after). Async-signal-safe.
void interrupt_user_code_for_shutdown();

// stoatflow.user_code_timeout's timer, registered once per process (worker or backend) on the
// first bounded entry.
std::int64_t user_code_timeout_ms();

}  // namespace stoatflow::pg
