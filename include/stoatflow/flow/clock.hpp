// The worker's sense of time, as a seam: the worker asks a Clock, tests hand it a ManualClock
// and move time by hand (TimescaleDB's timer idea). Pure C++: asked once per loop step, never
// per record.
#pragma once

#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"

#include <chrono>

namespace stoatflow::flow {

class Clock {
public:
    virtual ~Clock() = default;
    // Wall time in milliseconds since the Unix epoch.
    virtual core::Millis now() const = 0;
};

class SystemClock final : public Clock {
public:
    core::Millis now() const override {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    }
};

// For tests: time stands still until advanced.
class ManualClock final : public Clock {
public:
    explicit ManualClock(core::Millis start = 0) : now_(start) {}
    core::Millis now() const override { return now_; }
    void advance(core::Millis ms) { now_ += ms; }
    void set(core::Millis t) { now_ = t; }

private:
    core::Millis now_;
};

}  // namespace stoatflow::flow
