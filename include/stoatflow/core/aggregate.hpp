// The aggregate functions (count(*), count, sum, min, max, avg): their declaration,
// output column names and types, and the mergeable per-window state they fold into.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstdint>
#include <memory>
#include <optional>
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

// A numeric field value taken from one record, for one aggregate.
struct Value {
    enum class Kind : std::uint8_t { Missing, Int, Double } kind = Kind::Missing;
    std::int64_t i = 0;
    double d = 0;
    static Value missing() { return {}; }
    static Value of_int(std::int64_t v) { return {Kind::Int, v, 0}; }
    static Value of_double(double v) { return {Kind::Double, 0, v}; }
};

// One aggregate's state in one window. Integer inputs sum exactly in `isum`;
// values with a fractional part add into `d`. min/max keep their value in `d`.
struct AggCell {
    __int128 isum = 0;
    double d = 0;
    std::int64_t n = 0;  // values seen (count(*): records)
    bool operator==(const AggCell& o) const { return isum == o.isum && d == o.d && n == o.n; }
};

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
    operator std::vector<AggCell>() const { return std::vector<AggCell>(data(), data() + size_); }  // NOLINT
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
        if (n > kInline) heap_.reset(new AggCell[n]);
        else heap_.reset();
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

class AggLayout {
public:
    explicit AggLayout(std::vector<AggSpec> specs);
    const std::vector<AggSpec>& specs() const { return specs_; }
    std::size_t size() const { return specs_.size(); }

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

    // Compact binary state: only the fields each function needs, little-endian.
    void serialize(const AggCell* cells, std::string& out) const;
    // Throws Error (XX001) on a short or malformed buffer.
    std::vector<AggCell> deserialize(const char* data, std::size_t len) const;

private:
    std::vector<AggSpec> specs_;
};

std::string int128_to_string(__int128 v);

}  // namespace stoatflow::core
