// The source worker's decisions that need no PostgreSQL: when a failing sink is tried again,
// which status a source shows, when to commit. Pure C++ with the time passed in, so each rule
// is unit-tested (test/unit/worker_policy_test.cpp) without a server or a real clock.
#pragma once

#include "stoatflow/core/commit_policy.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/flow/limits.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

namespace stoatflow::flow {

// Doubling backoff: `first` after the first failure, twice the previous delay after each
// further one, never more than `max`; a success starts over.
class Backoff {
public:
    constexpr Backoff(core::Millis first, core::Millis max) : first_(first), max_(max) {}
    // A failure: returns the delay until the next try.
    core::Millis failed() {
        delay_ = delay_ == 0 ? first_ : std::min(delay_ * 2, max_);
        return delay_;
    }
    void succeeded() { delay_ = 0; }
    core::Millis delay() const { return delay_; }

private:
    core::Millis first_, max_;
    core::Millis delay_ = 0;
};

// An aggregation's sink: owed (windows wait in the outbox) from a failed write until one succeeds.
class SinkRetry {
public:
    void failed(core::Millis now, std::string error) {
        owed_ = true;
        error_ = std::move(error);
        retry_at_ = now + backoff_.failed();
    }
    void succeeded() {
        owed_ = false;
        error_.clear();
        backoff_.succeeded();
    }
    // Restored with windows in the outbox: owed, tried again at once.
    void owe() { owed_ = true; }
    bool owed() const { return owed_; }
    // Owed and its backoff has passed: a write may be tried now.
    bool due(core::Millis now) const { return owed_ && now >= retry_at_; }
    // A write is held back: owed and still waiting.
    bool waiting(core::Millis now) const { return owed_ && now < retry_at_; }
    const std::string& error() const { return error_; }
    core::Millis delay() const { return backoff_.delay(); }

private:
    bool owed_ = false;
    std::string error_;
    Backoff backoff_{kSinkRetryFirstMs, kSinkRetryMaxMs};
    core::Millis retry_at_ = 0;
};

// What stoatflow.source_status shows while a worker runs. Broker errors are retried by
// librdkafka: 'error' while they keep coming without progress, 'running' once records flow.
// After a failure of the worker itself, 'error' stays until a commit succeeds (no flapping
// between 'error' and 'running' while it restarts).
class StatusRule {
public:
    struct Shown {
        std::string status, error;
        bool operator==(const Shown& o) const { return status == o.status && error == o.error; }
    };

    void broker_error(core::Millis now, std::string error) {
        last_error_ = std::move(error);
        last_error_at_ = now;
    }
    void progress(core::Millis now) { last_progress_at_ = now; }
    void worker_failed(std::string error) {
        failed_ = true;
        last_error_ = std::move(error);
    }
    // A commit went through: a failure is over. Returns true if it was one.
    bool committed() {
        const bool was = failed_;
        failed_ = false;
        return was;
    }
    bool failed() const { return failed_; }
    const std::string& last_error() const { return last_error_; }

    // The status for this step; false: leave what is shown (a failure not yet over).
    bool decide(core::Millis now, Shown* out) const {
        const bool failing =
            last_error_at_ > last_progress_at_ && now - last_error_at_ < kBrokerErrorShownMs;
        if (failing) {
            *out = {"error", last_error_};
            return true;
        }
        if (failed_) return false;
        *out = {"running", last_error_};
        return true;
    }

private:
    std::string last_error_;
    core::Millis last_error_at_ = 0, last_progress_at_ = 0;
    bool failed_ = false;  // since the last failure, no commit has succeeded yet
};

// The status last written: a write only when it changes (status is one row per source).
class StatusBoard {
public:
    // True if (status, error) differs from what was last shown; remembers it.
    bool change(const std::string& status, const std::string& error) {
        if (status == shown_.status && error == shown_.error) return false;
        shown_ = {status, error};
        return true;
    }

private:
    StatusRule::Shown shown_;
};

// When the worker commits: core::CommitPolicy over the time since the last commit.
class CommitTimer {
public:
    void committed(core::Millis now) { last_commit_ = now; }
    core::Millis last_commit() const { return last_commit_; }
    bool due(const core::CommitPolicy& policy, core::Millis now, std::int64_t records,
             std::size_t changed, std::int64_t waiting, std::size_t segments) const {
        return policy.due(now - last_commit_, records, changed, waiting, segments);
    }

private:
    core::Millis last_commit_ = 0;
};

}  // namespace stoatflow::flow
