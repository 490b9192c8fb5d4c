// The aggregate functions (count(*), count, sum, min, max, avg): their declaration,
// output column names and types, and the mergeable per-window state they fold into.
#pragma once
#include "stoatflow/core/external_aggregate.hpp"
#include "stoatflow/core/no_postgres.hpp"

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <limits>
#include <string>
#include <vector>

namespace stoatflow::core {

enum class AggFn { CountStar, Count, Sum, Min, Max, Avg };

// SQL type of an output column.
enum class ColumnType { BigInt, Double, Numeric };

struct AggSpec {
    AggFn fn = AggFn::CountStar;
    std::string field;   // JSON field path ('amount', 'user.id'); empty for count(*)
    std::string column;  // output column name (after defaults are applied)
};

const char* to_string(AggFn fn);
// 'count', 'sum', ... → AggFn; throws Error 42883 naming the supported functions.
AggFn agg_fn_from_name(const std::string& name);
ColumnType column_type(AggFn fn);
// Default column name: 'count' for count(*), else function_field ('sum_amount',
// 'max_user_latency' for 'user.latency').
std::string default_column_name(AggFn fn, const std::string& field);
// Validates a list: applies default names, rejects empty lists, missing or bad field
// paths and duplicate or reserved column names (key, window_start, ...). Throws Error.
std::vector<AggSpec> normalize_aggregates(std::vector<AggSpec> specs);
// Checks a JSON field path: dot-separated non-empty names. Throws Error (22023).
void validate_field_path(const std::string& path);

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

// The cells of one window: up to four inline (no allocation, same cache line as the
// window), more on the heap. Converts to and from std::vector for outputs and restores.
class CellArray {
public:
    static constexpr std::size_t kInline = 4;
    CellArray() = default;
    explicit CellArray(std::size_t n) { resize(n); }
    CellArray(const std::vector<AggCell>& v) { assign(v.data(), v.size()); }  // NOLINT: implicit
    CellArray(const CellArray& o) { assign(o.data(), o.size_); }
    CellArray(CellArray&& o) noexcept : heap_(std::move(o.heap_)), size_(o.size_) {
        if (!heap_)
            for (std::size_t i = 0; i < size_; ++i) inline_[i] = o.inline_[i];
    }
    CellArray& operator=(CellArray&& o) noexcept {
        if (this != &o) {
            heap_ = std::move(o.heap_);
            size_ = o.size_;
            if (!heap_)
                for (std::size_t i = 0; i < size_; ++i) inline_[i] = o.inline_[i];
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
    operator std::vector<AggCell>() const {
        return std::vector<AggCell>(data(), data() + size_);
    }  // NOLINT
    AggCell* data() { return heap_ ? heap_.get() : inline_; }
    const AggCell* data() const { return heap_ ? heap_.get() : inline_; }
    std::size_t size() const { return size_; }
    const AggCell& operator[](std::size_t i) const { return data()[i]; }
    bool operator==(const std::vector<AggCell>& v) const {
        if (v.size() != size_) return false;
        for (std::size_t i = 0; i < size_; ++i)
            if (!(data()[i] == v[i])) return false;
        return true;
    }

private:
    void resize(std::size_t n) {
        size_ = n;
        if (n > kInline)
            heap_.reset(new AggCell[n]);
        else
            heap_.reset();
        for (std::size_t i = 0; i < n; ++i) data()[i] = AggCell{};
    }
    void assign(const AggCell* src, std::size_t n) {
        if (n != size_ || (n > kInline) != static_cast<bool>(heap_)) resize(n);
        for (std::size_t i = 0; i < n; ++i) data()[i] = src[i];
    }
    AggCell inline_[kInline];
    std::unique_ptr<AggCell[]> heap_;
    std::size_t size_ = 0;
};

// The aggregates of one aggregation: the built-in ones (specs, folded in AggCells) and,
// optionally, external ones whose state only `external` understands (one ExternalState
// per window for all of them). Whether there are external ones is decided here, once per
// layout, so the built-in path pays one predictable branch per window touched.
class AggLayout {
public:
    explicit AggLayout(std::vector<AggSpec> specs,
                       std::shared_ptr<ExternalAggregates> external = nullptr);
    const std::vector<AggSpec>& specs() const { return specs_; }
    std::size_t size() const { return specs_.size(); }
    ExternalAggregates* external() const { return external_.get(); }

    std::vector<AggCell> empty_state() const { return std::vector<AggCell>(specs_.size()); }
    // Fold one record (values[i] is the field value for aggregate i) into cells.
    void add(AggCell* cells, const Value* values) const;
    // Combine two windows' states (session merge, sliding derivation).
    void merge(AggCell* into, const AggCell* from) const;

    // Result value of aggregate i: nullopt is SQL NULL (no values seen).
    std::optional<std::int64_t> as_bigint(std::size_t i, const AggCell& c) const;
    std::optional<double> as_double(std::size_t i, const AggCell& c) const;
    // numeric as exact decimal text (sum)
    std::optional<std::string> as_numeric_text(std::size_t i, const AggCell& c) const;
    // The same sum when it is an exact integer within int64 (the common case; no text).
    std::optional<std::int64_t> as_numeric_int64(std::size_t i, const AggCell& c) const;
    // Any column as text (for tests and the SQL layer's text paths).
    std::optional<std::string> as_text(std::size_t i, const AggCell& c) const;

    // Compact binary state: only the fields each function needs, little-endian. Per cell:
    // n (int64); min/max: d; sum/avg: the integer sum's low 128 bits, then d. That is the
    // whole row (version 0.1's format, of a length fixed by the specs: state_v01_size())
    // whenever every integer sum fits __int128; otherwise the row goes on with a tail: the
    // byte 2 (format version) and each sum/avg cell's ihi (int64), and the 128 bits
    // written are the normalized isum. A session's floor (WindowedAggregation), when given,
    // follows as one more tail: the byte 3 and the floor (int64). A layout with external
    // aggregates always ends with their state: the byte 4, its length (uint32) and the
    // bytes ExternalAggregates::serialize wrote (`external`, required for such a layout).
    void serialize(const AggCell* cells, std::string& out,
                   std::optional<std::int64_t> floor = std::nullopt,
                   const std::string* external = nullptr) const;
    // Reads every form (rows written by 0.1 included); the floor into *floor (nullopt when
    // the row has none), the external state's bytes into *external. Throws Error (XX001) on
    // a short or malformed buffer, and when the external tail is missing or unexpected.
    std::vector<AggCell> deserialize(const char* data, std::size_t len,
                                     std::optional<std::int64_t>* floor = nullptr,
                                     std::string* external = nullptr) const;
    // Length of a row in the 0.1 format for these aggregates.
    std::size_t state_v01_size() const;
    static constexpr char kStateWideSums = 2;      // version byte of the wide-sums tail
    static constexpr char kStateSessionFloor = 3;  // tag of the floor tail
    static constexpr char kStateExternal = 4;      // tag of the external aggregates' state

private:
    std::vector<AggSpec> specs_;
    std::shared_ptr<ExternalAggregates> external_;
};

std::string int128_to_string(__int128 v);

}  // namespace stoatflow::core
