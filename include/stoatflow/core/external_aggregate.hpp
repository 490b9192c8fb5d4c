// Aggregates whose state the core does not understand (PostgreSQL's own, run by the pg
// layer on the main thread): the interface the window engine drives, and the owner of one
// window's state, which makes every copy, merge and destruction go through that interface.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstddef>
#include <string>

namespace stoatflow::core {

// One window's states of every external aggregate of an aggregation, in whatever form the
// implementation keeps them. The core never looks inside; never nullptr for a live state.
using ExternalHandle = void*;

// What the window engine needs from aggregates it cannot fold itself. Every method but
// destroy may throw (an Error, or whatever the implementation's error border throws); after
// a throw the engine that called it must only be destroyed (the worker drops everything
// uncommitted and restores from the state tables), and destroying it destroys every state
// it holds exactly once.
class ExternalAggregates {
public:
    virtual ~ExternalAggregates() = default;
    // A fresh state: no record folded (each aggregate's initial value).
    virtual ExternalHandle create() = 0;
    // Folds the record being processed into h; `row` is what process() was handed with it.
    virtual void add(ExternalHandle h, const void* row) = 0;
    // Combines `from` into `into` (each aggregate's combinefunc); `from` is left as it was.
    virtual void merge(ExternalHandle into, ExternalHandle from) = 0;
    // An independent copy (no part shared with h).
    virtual ExternalHandle copy(ExternalHandle h) = 0;
    // Frees h. Never throws: it runs from destructors.
    virtual void destroy(ExternalHandle h) noexcept = 0;
    // The state as bytes (serialfunc, or the state type's send function), appended to out;
    // what the state tables store and the sink writer finalizes from.
    virtual void serialize(ExternalHandle h, std::string& out) = 0;
    // A new state from serialize's bytes; throws Error (XX001) on bytes it cannot read.
    virtual ExternalHandle deserialize(const char* data, std::size_t len) = 0;
    // Whether merge is available (every aggregate has a combinefunc): sessions need it.
    virtual bool can_merge() const = 0;
    // The heap all live states hold (for worker_memory_limit), in O(1): kept up to date as
    // states are made, grown and freed; an estimate is fine.
    virtual std::size_t memory_bytes() const = 0;
};

// Owns one handle: move-only, destroys it exactly once. Empty (no handle) when default
// constructed, moved from, or reset; the engine's windows hold an empty one when their
// aggregation has no external aggregates.
class ExternalState {
public:
    ExternalState() = default;
    ExternalState(ExternalAggregates* impl, ExternalHandle h) noexcept : impl_(impl), h_(h) {}
    ExternalState(const ExternalState&) = delete;
    ExternalState& operator=(const ExternalState&) = delete;
    ExternalState(ExternalState&& o) noexcept : impl_(o.impl_), h_(o.h_) { o.h_ = nullptr; }
    ExternalState& operator=(ExternalState&& o) noexcept {
        if (this != &o) {
            reset();
            impl_ = o.impl_;
            h_ = o.h_;
            o.h_ = nullptr;
        }
        return *this;
    }
    ~ExternalState() { reset(); }
    void reset() noexcept {
        if (h_) impl_->destroy(h_);
        h_ = nullptr;
    }
    explicit operator bool() const { return h_ != nullptr; }
    ExternalHandle get() const { return h_; }

    // The interface's operations on owned states (impl must be the one that made them).
    static ExternalState create(ExternalAggregates& impl) { return {&impl, impl.create()}; }
    ExternalState copy() const { return {impl_, impl_->copy(h_)}; }
    void add(const void* row) { impl_->add(h_, row); }
    void merge(const ExternalState& from) { impl_->merge(h_, from.h_); }
    void serialize(std::string& out) const { impl_->serialize(h_, out); }

private:
    ExternalAggregates* impl_ = nullptr;
    ExternalHandle h_ = nullptr;
};

}  // namespace stoatflow::core
