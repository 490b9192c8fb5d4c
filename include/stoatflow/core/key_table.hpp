// A hash table from grouping key to per-key state, built for the per-record path: lookup
// by string_view without allocating, open addressing with the hash kept in the slot (one
// probe touches one cache line), entries that never move while they exist.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace stoatflow::core {

template <class V>
class KeyTable {
public:
    struct Entry {
        std::string first;  // the key
        V second;
        std::uint64_t hash;
    };

    KeyTable() : slots_(16) {}
    ~KeyTable() {
        for (auto& s : slots_) delete s.entry;
    }
    KeyTable(const KeyTable&) = delete;
    KeyTable& operator=(const KeyTable&) = delete;

    std::size_t size() const { return size_; }
    // Heap held by the table itself: the slot array and every entry with its key's bytes
    // (not what V owns). O(1): entry bytes are counted as entries come and go.
    std::size_t memory_bytes() const { return slots_.capacity() * sizeof(Slot) + entry_bytes_; }

    // What one entry costs on average with a key of `key_length` bytes: entry_bytes, and the
    // slots (the load stays between 3/8 and 3/4: two slots per entry on average). For
    // stoatflow.estimate (README "Estimating cost").
    static std::size_t average_bytes_per_entry(std::size_t key_length) {
        const bool heap_key = key_length > std::string().capacity();
        return sizeof(Entry) + (heap_key ? key_length + 1 : 0) + 2 * sizeof(Slot);
    }

    static std::uint64_t hash_of(std::string_view key) {
        return std::hash<std::string_view>{}(key)*0x9E3779B97F4A7C15ull;
    }
    // Batch lookups: touch the slot a hash lands on (and the entry found there) early, so
    // the cache misses of several records overlap instead of queueing.
    void prefetch_slot(std::uint64_t h) const { __builtin_prefetch(&slots_[h & mask()]); }
    void prefetch_entry(std::uint64_t h) const {
        const Slot& s = slots_[h & mask()];
        if (s.entry) __builtin_prefetch(s.entry);
    }

    // The entry in the hash's home slot, if any (a hint for prefetching; may be another key).
    const Entry* peek(std::uint64_t h) const { return slots_[h & mask()].entry; }

    Entry* find(std::string_view key) const {
        const std::uint64_t h = hash_of(key);
        for (std::size_t i = h & mask(); slots_[i].entry; i = (i + 1) & mask())
            if (slots_[i].hash == h && slots_[i].entry->first == key) return slots_[i].entry;
        return nullptr;
    }

    Entry* find_or_insert(std::string_view key) { return find_or_insert(key, hash_of(key)); }
    Entry* find_or_insert(std::string_view key, std::uint64_t h) {
        std::size_t i = h & mask();
        for (; slots_[i].entry; i = (i + 1) & mask())
            if (slots_[i].hash == h && slots_[i].entry->first == key) return slots_[i].entry;
        if ((size_ + 1) * 4 > slots_.size() * 3) {  // keep the load ≤ 3/4
            grow();
            for (i = h & mask(); slots_[i].entry; i = (i + 1) & mask()) {
            }
        }
        auto* e = new Entry{std::string(key), V{}, h};
        slots_[i] = {h, e};
        ++size_;
        entry_bytes_ += entry_bytes(*e);
        return e;
    }

    // Linear probing with backward-shift deletion: no tombstones, probes stay short.
    void erase(Entry* e) {
        std::size_t i = e->hash & mask();
        while (slots_[i].entry != e) i = (i + 1) & mask();
        entry_bytes_ -= entry_bytes(*e);
        delete e;
        --size_;
        for (std::size_t j = (i + 1) & mask(); slots_[j].entry; j = (j + 1) & mask()) {
            const std::size_t home = slots_[j].hash & mask();
            // move j back to i if its home is not cyclically within (i, j]
            if (((j - home) & mask()) >= ((j - i) & mask())) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i] = {};
    }

    template <class F>
    void for_each(F&& f) const {
        for (const auto& s : slots_)
            if (s.entry) f(*s.entry);
    }

private:
    struct Slot {
        std::uint64_t hash = 0;
        Entry* entry = nullptr;
    };
    static std::size_t entry_bytes(const Entry& e) {
        // A key longer than the string's inline buffer has its own allocation.
        const bool heap_key = e.first.capacity() > std::string().capacity();
        return sizeof(Entry) + (heap_key ? e.first.capacity() + 1 : 0);
    }
    std::size_t mask() const { return slots_.size() - 1; }
    void grow() {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        for (const auto& s : old) {
            if (!s.entry) continue;
            std::size_t i = s.hash & mask();
            while (slots_[i].entry) i = (i + 1) & mask();
            slots_[i] = s;
        }
    }

    std::vector<Slot> slots_;
    std::size_t size_ = 0;
    std::size_t entry_bytes_ = 0;
};

}  // namespace stoatflow::core
