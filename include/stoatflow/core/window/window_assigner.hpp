// Grid window assignment for tumbling and hopping windows: the epoch-aligned windows
// [s, s + size) with s = k·advance and t − size < s ≤ t, newest first.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/window_spec.hpp"

namespace stoatflow::core {

struct Window {
    Millis start = 0;
    Millis end = 0;  // exclusive
    bool operator==(const Window& o) const { return start == o.start && end == o.end; }
};

class WindowAssigner {
public:
    explicit WindowAssigner(const WindowSpec& spec) : size_(spec.size), advance_(spec.advance) {}
    // Calls f(Window) for every window of a record at t, newest start first.
    template <class F>
    void for_each(Millis t, F&& f) const {
        for_each_newest_from(floor_to(t, advance_), t, f);
    }
    // The same, given the newest start (floor_to(t, advance), when the caller has it).
    template <class F>
    void for_each_newest_from(Millis newest, Millis t, F&& f) const {
        for (Millis s = newest; s > t - size_; s -= advance_) f(Window{s, s + size_});
    }
    // size / advance (rounded up): how many windows a record lands in at most.
    Millis windows_per_record() const { return (size_ + advance_ - 1) / advance_; }

private:
    Millis size_;
    Millis advance_;
};

}  // namespace stoatflow::core
