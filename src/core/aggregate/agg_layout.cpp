// The aggregates of one aggregation at work: folding a record into a window's cells,
// combining two windows' cells, and the result values.
#include "stoatflow/core/aggregate/agg_layout.hpp"

#include "wide_sum.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

namespace stoatflow::core {

AggLayout::AggLayout(std::vector<AggSpec> specs, std::shared_ptr<ExternalAggregates> external)
    : specs_(std::move(specs)), external_(std::move(external)) {}

namespace {
// Integral doubles inside int64 range sum exactly with the integers.
inline bool integral(double v) {
    return std::isfinite(v) && v == std::trunc(v) && v >= -9.2e18 && v <= 9.2e18;
}
inline double value_as_double(const Value& v) {
    switch (v.kind) {
    case Value::Kind::Int: return static_cast<double>(v.i);
    case Value::Kind::BigInt: return static_cast<double>(v.big());
    default: return v.d;
    }
}
// Adds an integer of any __int128 value to the wide sum without overflowing isum: its
// multiples of 2^126 go to ihi first.
void add_wide(AggCell& c, __int128 v) {
    normalize_wide(c);
    c.ihi += static_cast<std::int64_t>(v >> kWideShift);  // floor: −2 .. 1
    c.isum += v & kWideMask;                              // < 2^127 with isum < 2^126
    normalize_wide(c);
}
}  // namespace

void AggLayout::add(AggCell* cells, const Value* values) const {
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        AggCell& c = cells[i];
        const AggFn fn = specs_[i].fn;
        if (fn == AggFn::CountStar) {
            ++c.n;
            continue;
        }
        const Value& v = values[i];
        if (v.kind == Value::Kind::Missing) continue;
        switch (fn) {
        case AggFn::Count: break;
        case AggFn::Sum:
        case AggFn::Avg:
            if (v.kind == Value::Kind::Int)
                c.isum += v.i;
            else if (v.kind == Value::Kind::BigInt)
                add_wide(c, v.big());
            else if (integral(v.d))
                c.isum += static_cast<std::int64_t>(v.d);
            else
                c.d += v.d;
            break;
        case AggFn::Min: {
            const double x = value_as_double(v);
            if (c.n == 0 || x < c.d) c.d = x;
            break;
        }
        case AggFn::Max: {
            const double x = value_as_double(v);
            if (c.n == 0 || x > c.d) c.d = x;
            break;
        }
        case AggFn::CountStar: break;
        }
        ++c.n;
    }
}

void AggLayout::merge(AggCell* into, const AggCell* from) const {
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        AggCell& a = into[i];
        const AggCell& b = from[i];
        switch (specs_[i].fn) {
        case AggFn::Min:
            if (b.n > 0 && (a.n == 0 || b.d < a.d)) a.d = b.d;
            break;
        case AggFn::Max:
            if (b.n > 0 && (a.n == 0 || b.d > a.d)) a.d = b.d;
            break;
        default: {
            AggCell bn = b;
            normalize_wide(a);
            normalize_wide(bn);
            a.isum += bn.isum;  // each < 2^126: no overflow
            a.ihi += bn.ihi;
            normalize_wide(a);
            a.d += b.d;
            break;
        }
        }
        a.n += b.n;
    }
}

std::optional<std::int64_t> AggLayout::as_bigint(std::size_t i, const AggCell& c) const {
    const AggFn fn = specs_[i].fn;
    if (fn == AggFn::CountStar || fn == AggFn::Count) return c.n;
    return std::nullopt;
}

namespace {
double integer_sum_as_double(const AggCell& c) {
    if (const auto v = integer_sum_128(c)) return static_cast<double>(*v);
    AggCell nc = c;  // beyond __int128: |ihi| ≥ 2 dominates, isum adds its low bits
    normalize_wide(nc);
    return std::ldexp(static_cast<double>(nc.ihi), kWideShift) + static_cast<double>(nc.isum);
}
}  // namespace

std::optional<double> AggLayout::as_double(std::size_t i, const AggCell& c) const {
    if (c.n == 0) {
        if (specs_[i].fn == AggFn::CountStar || specs_[i].fn == AggFn::Count) return 0.0;
        return std::nullopt;
    }
    switch (specs_[i].fn) {
    case AggFn::CountStar:
    case AggFn::Count: return static_cast<double>(c.n);
    case AggFn::Sum: return integer_sum_as_double(c) + c.d;
    case AggFn::Avg: return (integer_sum_as_double(c) + c.d) / static_cast<double>(c.n);
    case AggFn::Min:
    case AggFn::Max: return c.d;
    }
    return std::nullopt;
}

std::optional<std::string> AggLayout::as_numeric_text(std::size_t i, const AggCell& c) const {
    if (specs_[i].fn != AggFn::Sum || c.n == 0) return std::nullopt;
    if (c.d == 0.0)
        return c.ihi == 0 ? int128_to_string(c.isum) : wide_sum_to_string(c.ihi, c.isum);
    const double total = integer_sum_as_double(c) + c.d;
    if (!std::isfinite(total))
        return std::string(total > 0 ? "Infinity" : total < 0 ? "-Infinity" : "NaN");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", total);
    return std::string(buf);
}

std::optional<std::int64_t> AggLayout::as_numeric_int64(std::size_t i, const AggCell& c) const {
    if (specs_[i].fn != AggFn::Sum || c.n == 0 || c.d != 0.0) return std::nullopt;
    const auto sum = integer_sum_128(c);
    if (!sum || *sum < std::numeric_limits<std::int64_t>::min() ||
        *sum > std::numeric_limits<std::int64_t>::max())
        return std::nullopt;
    return static_cast<std::int64_t>(*sum);
}

std::optional<std::string> AggLayout::as_text(std::size_t i, const AggCell& c) const {
    switch (column_type(specs_[i].fn)) {
    case ColumnType::BigInt: return std::to_string(*as_bigint(i, c));
    case ColumnType::Numeric: return as_numeric_text(i, c);
    case ColumnType::Double: {
        auto d = as_double(i, c);
        if (!d) return std::nullopt;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", *d);
        return std::string(buf);
    }
    }
    return std::nullopt;
}

}  // namespace stoatflow::core
