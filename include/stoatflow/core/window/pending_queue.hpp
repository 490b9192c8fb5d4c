// The queue of pending closes and evictions of sliding windows and sessions: entries due at a
// watermark (`at`), each naming a key (`key`), taken earliest first.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

namespace stoatflow::core {

// Entry: a struct with `Millis at`, a pointer `key` and `Millis start`. A commit that is due a
// few entries pops them off a binary heap; one that is due many at once (a large commit while
// catching up, the first after a restore) would pay a cache miss per heap level for each and
// visit each key once per entry, so past a share of the queue drain takes every due entry in
// one pass and sorts just those, key by key.
template <class Entry>
class PendingQueue {
public:
    void push(const Entry& e) {
        v_.push_back(e);
        std::push_heap(v_.begin(), v_.end(), Later());
    }
    std::size_t size() const { return v_.size(); }
    bool empty() const { return v_.empty(); }
    // Calls f(entry) once for every entry with at <= w and takes it out: each key's entries in
    // order of at (ties in any order), keys in any order. f may push; entries it pushes that
    // are due by w are drained too.
    template <class F>
    void drain(Millis w, F&& f) {
        std::size_t popped = 0;
        const std::size_t one_by_one = std::max(kOneByOne, v_.size() / 16);
        while (!v_.empty() && v_.front().at <= w) {
            if (++popped > one_by_one) {
                drain_all(w, f);
                popped = 0;
                continue;
            }
            std::pop_heap(v_.begin(), v_.end(), Later());
            const Entry e = v_.back();
            v_.pop_back();
            f(e);
        }
    }
    // How many entries drain pops one at a time before it takes the rest in one pass (at
    // least; a sixteenth of the queue when that is more).
    static constexpr std::size_t kOneByOne = 1024;

private:
    // A type, not a function: the heap operations inline it rather than call through a pointer.
    struct Later {
        bool operator()(const Entry& a, const Entry& b) const { return a.at > b.at; }
    };
    template <class F>
    void drain_all(Millis w, F& f) {
        const auto due =
            std::partition(v_.begin(), v_.end(), [w](const Entry& e) { return e.at > w; });
        std::vector<Entry> taken(due, v_.end());
        v_.erase(due, v_.end());
        std::make_heap(v_.begin(), v_.end(), Later());
        std::sort(taken.begin(), taken.end(), [](const Entry& a, const Entry& b) {
            if (a.key != b.key) return std::less<decltype(a.key)>()(a.key, b.key);
            return a.at != b.at ? a.at < b.at : a.start < b.start;
        });
        for (const Entry& e : taken) f(e);
    }
    std::vector<Entry> v_;  // a min-heap by at
};

}  // namespace stoatflow::core
