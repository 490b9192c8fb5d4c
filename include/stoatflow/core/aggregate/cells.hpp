// The mergeable state of one aggregate in one window (AggCell, exact wide integer sums),
// a window's cells (CellArray) and the field values folded into them (Value).
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stoatflow::core {

// Integers are summed exactly up to this many decimal digits per value (README "Security"); a
// longer one is a dead letter (value_out_of_range). 10^38 − 1 still fits __int128.
inline constexpr int kMaxExactIntegerDigits = 38;

// A numeric field value taken from one record, for one aggregate. Small (24 bytes): the
// rare integer beyond int64 keeps its high half where a double would be.
struct Value {
    enum class Kind : std::uint8_t { Missing, Int, Double, BigInt } kind = Kind::Missing;
    std::int64_t i = 0;  // Int: the value; BigInt: its low 64 bits
    union {
        double d = 0;     // Double: the value
        std::int64_t hi;  // BigInt: its high 64 bits (two's complement)
    };
    static Value missing() { return {}; }
    static Value of_int(std::int64_t v) {
        Value x;
        x.kind = Kind::Int;
        x.i = v;
        return x;
    }
    static Value of_double(double v) {
        Value x;
        x.kind = Kind::Double;
        x.d = v;
        return x;
    }
    // Any __int128; of_big of an int64 is still an Int, so the common path sees it as one.
    static Value of_big(__int128 v) {
        if (v >= INT64_MIN && v <= INT64_MAX) return of_int(static_cast<std::int64_t>(v));
        Value x;
        x.kind = Kind::BigInt;
        x.i = static_cast<std::int64_t>(static_cast<std::uint64_t>(v));
        x.hi = static_cast<std::int64_t>(v >> 64);
        return x;
    }
    __int128 big() const {
        return static_cast<__int128>(
            (static_cast<unsigned __int128>(static_cast<std::uint64_t>(hi)) << 64) |
            static_cast<std::uint64_t>(i));
    }
};

// One aggregate's state in one window. Integer inputs sum exactly: the sum is
// ihi·2^126 + isum. int64 inputs add into isum alone (the hot path, unchanged: isum has
// 2^126 of headroom, 2^63 int64 additions); larger ones and merges carry into ihi, which
// keeps sums of up to ~10^56 exact. Values with a fractional part add into `d`. min/max
// keep their value in `d`. Packed to 8-byte alignment: 40 bytes, not 48 (isum is then read
// as two 64-bit words, which is what the arithmetic does anyway).
struct __attribute__((packed, aligned(8))) AggCell {
    __int128 isum = 0;
    double d = 0;
    std::int64_t n = 0;    // values seen (count(*): records)
    std::int64_t ihi = 0;  // the sum's multiples of 2^126
    bool operator==(const AggCell& o) const;
};

// The exact integer sum of a cell, normalized: isum in [0, 2^126), ihi = floor(sum / 2^126).
void normalize_sum(AggCell& c);
// The exact integer sum ihi·2^126 + isum as decimal text.
std::string wide_sum_to_string(std::int64_t ihi, __int128 isum);

// The cells of one window: up to three inline (no allocation, same cache lines as the
// window), more on the heap. The inline cells and the heap pointer share their bytes (the
// size says which one is live), so the array is 128 bytes, not 176: it sits in every window,
// state row and sink row (BENCHMARKS.md "Memory per window"). Converts to and from
// std::vector for outputs and restores.
class CellArray {
public:
    static constexpr std::size_t kInline = 3;
    CellArray() : heap_(nullptr) {}
    explicit CellArray(std::size_t n) : heap_(nullptr) { resize(n); }
    CellArray(const std::vector<AggCell>& v) : heap_(nullptr) {  // NOLINT: implicit
        assign(v.data(), v.size());
    }
    CellArray(const CellArray& o) : heap_(nullptr) { assign(o.data(), o.size_); }
    CellArray(CellArray&& o) noexcept : heap_(nullptr) { take(o); }
    CellArray& operator=(CellArray&& o) noexcept {
        if (this != &o) {
            release();
            take(o);
        }
        return *this;
    }
    CellArray& operator=(const CellArray& o) {
        if (this != &o) assign(o.data(), o.size_);
        return *this;
    }
    CellArray& operator=(const std::vector<AggCell>& v) {
        assign(v.data(), v.size());
        return *this;
    }
    ~CellArray() { release(); }
    operator std::vector<AggCell>() const {
        return std::vector<AggCell>(data(), data() + size_);
    }  // NOLINT
    AggCell* data() { return on_heap() ? heap_ : inline_; }
    const AggCell* data() const { return on_heap() ? heap_ : inline_; }
    std::size_t size() const { return size_; }
    const AggCell& operator[](std::size_t i) const { return data()[i]; }
    bool operator==(const std::vector<AggCell>& v) const {
        if (v.size() != size_) return false;
        for (std::size_t i = 0; i < size_; ++i)
            if (!(data()[i] == v[i])) return false;
        return true;
    }

private:
    bool on_heap() const { return size_ > kInline; }
    void release() noexcept {
        if (on_heap()) delete[] heap_;
        heap_ = nullptr;
        size_ = 0;
    }
    // Moves o's cells here (this holds none) and leaves o empty.
    void take(CellArray& o) noexcept {
        size_ = o.size_;
        if (o.on_heap()) {
            heap_ = o.heap_;
        } else {
            for (std::size_t i = 0; i < size_; ++i) inline_[i] = o.inline_[i];
        }
        o.heap_ = nullptr;
        o.size_ = 0;
    }
    void resize(std::size_t n) {
        if (n != size_) {
            release();
            if (n > kInline) heap_ = new AggCell[n];
            size_ = static_cast<std::uint32_t>(n);
        }
        for (std::size_t i = 0; i < n; ++i) data()[i] = AggCell{};
    }
    void assign(const AggCell* src, std::size_t n) {
        if (n != size_) {
            release();
            if (n > kInline) heap_ = new AggCell[n];
            size_ = static_cast<std::uint32_t>(n);
        }
        for (std::size_t i = 0; i < n; ++i) data()[i] = src[i];
    }
    union {
        AggCell inline_[kInline];
        AggCell* heap_;
    };
    std::uint32_t size_ = 0;
};

std::string int128_to_string(__int128 v);

}  // namespace stoatflow::core
