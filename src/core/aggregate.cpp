// Aggregate functions: declaration checks, default names, mergeable state, result
// values and the compact binary form the state tables store.
#include "stoatflow/core/aggregate.hpp"

#include "stoatflow/core/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

namespace stoatflow::core {

const char* to_string(AggFn fn) {
    switch (fn) {
    case AggFn::CountStar: return "count";
    case AggFn::Count: return "count";
    case AggFn::Sum: return "sum";
    case AggFn::Min: return "min";
    case AggFn::Max: return "max";
    case AggFn::Avg: return "avg";
    }
    return "unknown";
}

AggFn agg_fn_from_name(const std::string& raw) {
    std::string name = raw;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name == "count") return AggFn::Count;
    if (name == "sum") return AggFn::Sum;
    if (name == "min") return AggFn::Min;
    if (name == "max") return AggFn::Max;
    if (name == "avg") return AggFn::Avg;
    throw Error(sqlstate::kUndefinedFunction, "unknown aggregate function \"" + raw + "\"",
                "Supported aggregates: count(*), count(field), sum(field), min(field), "
                "max(field), avg(field).");
}

ColumnType column_type(AggFn fn) {
    switch (fn) {
    case AggFn::CountStar:
    case AggFn::Count: return ColumnType::BigInt;
    case AggFn::Sum: return ColumnType::Numeric;
    default: return ColumnType::Double;
    }
}

void validate_field_path(const std::string& path) {
    auto bad = [&](const std::string& why) {
        throw Error(sqlstate::kInvalidParameterValue,
                    "invalid field path \"" + path + "\": " + why,
                    "A field path names a JSON member, with dots for nesting: 'amount', "
                    "'user.id'.");
    };
    if (path.empty()) bad("it is empty");
    if (path.size() > 256) bad("it is longer than 256 characters");
    std::size_t seg = 0;
    for (char c : path) {
        if (c == '.') {
            if (seg == 0) bad("it has an empty member name");
            seg = 0;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            bad("it contains a control character");
        } else {
            ++seg;
        }
    }
    if (seg == 0) bad("it has an empty member name");
}

std::string default_column_name(AggFn fn, const std::string& field) {
    if (fn == AggFn::CountStar) return "count";
    std::string name = std::string(to_string(fn)) + "_";
    for (char c : field) {
        const unsigned char u = static_cast<unsigned char>(c);
        name += (std::isalnum(u) || c == '_') ? static_cast<char>(std::tolower(u)) : '_';
    }
    return name;
}

std::vector<AggSpec> normalize_aggregates(std::vector<AggSpec> specs) {
    if (specs.empty())
        throw Error(sqlstate::kInvalidParameterValue, "at least one aggregate is required",
                    "For example: 'count(*) AS views, sum(amount) AS revenue'.");
    static const std::set<std::string> reserved = {"key", "window_start", "window_end",
                                                   "event_time", "final"};
    std::set<std::string> seen;
    for (auto& s : specs) {
        if (s.fn != AggFn::CountStar) validate_field_path(s.field);
        if (s.column.empty()) s.column = default_column_name(s.fn, s.field);
        if (s.column.size() > 63)
            throw Error(sqlstate::kInvalidParameterValue,
                        "column name \"" + s.column + "\" is longer than 63 characters",
                        "Give the aggregate a shorter name with AS.");
        if (reserved.count(s.column))
            throw Error(sqlstate::kDuplicateColumn,
                        "aggregate column name \"" + s.column + "\" is reserved",
                        "The sink already has columns key, window_start, window_end, "
                        "event_time and final; choose another name with AS.");
        if (!seen.insert(s.column).second)
            throw Error(sqlstate::kDuplicateColumn,
                        "aggregate column name \"" + s.column + "\" is used twice",
                        "Give each aggregate a distinct name with AS.");
    }
    return specs;
}

AggLayout::AggLayout(std::vector<AggSpec> specs) : specs_(std::move(specs)) {}

namespace {
// Integral doubles inside int64 range sum exactly with the integers.
inline bool integral(double v) {
    return std::isfinite(v) && v == std::trunc(v) && v >= -9.2e18 && v <= 9.2e18;
}
inline double value_as_double(const Value& v) {
    return v.kind == Value::Kind::Int ? static_cast<double>(v.i) : v.d;
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
            if (v.kind == Value::Kind::Int) c.isum += v.i;
            else if (integral(v.d)) c.isum += static_cast<std::int64_t>(v.d);
            else c.d += v.d;
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
        default:
            a.isum += b.isum;
            a.d += b.d;
            break;
        }
        a.n += b.n;
    }
}

std::string int128_to_string(__int128 v) {
    if (v == 0) return "0";
    const bool neg = v < 0;
    unsigned __int128 u = neg ? static_cast<unsigned __int128>(-(v + 1)) + 1
                              : static_cast<unsigned __int128>(v);
    char buf[48];
    int pos = sizeof buf;
    while (u > 0) {
        buf[--pos] = static_cast<char>('0' + static_cast<int>(u % 10));
        u /= 10;
    }
    if (neg) buf[--pos] = '-';
    return std::string(buf + pos, sizeof buf - pos);
}

std::optional<std::int64_t> AggLayout::as_bigint(std::size_t i, const AggCell& c) const {
    const AggFn fn = specs_[i].fn;
    if (fn == AggFn::CountStar || fn == AggFn::Count) return c.n;
    return std::nullopt;
}

std::optional<double> AggLayout::as_double(std::size_t i, const AggCell& c) const {
    if (c.n == 0) {
        if (specs_[i].fn == AggFn::CountStar || specs_[i].fn == AggFn::Count) return 0.0;
        return std::nullopt;
    }
    switch (specs_[i].fn) {
    case AggFn::CountStar:
    case AggFn::Count: return static_cast<double>(c.n);
    case AggFn::Sum: return static_cast<double>(c.isum) + c.d;
    case AggFn::Avg: return (static_cast<double>(c.isum) + c.d) / static_cast<double>(c.n);
    case AggFn::Min:
    case AggFn::Max: return c.d;
    }
    return std::nullopt;
}

std::optional<std::string> AggLayout::as_numeric_text(std::size_t i, const AggCell& c) const {
    if (specs_[i].fn != AggFn::Sum || c.n == 0) return std::nullopt;
    if (c.d == 0.0) return int128_to_string(c.isum);
    const double total = static_cast<double>(c.isum) + c.d;
    if (!std::isfinite(total)) return std::string(total > 0 ? "Infinity" : total < 0 ? "-Infinity" : "NaN");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", total);
    return std::string(buf);
}

std::optional<std::int64_t> AggLayout::as_numeric_int64(std::size_t i, const AggCell& c) const {
    if (specs_[i].fn != AggFn::Sum || c.n == 0 || c.d != 0.0) return std::nullopt;
    if (c.isum < std::numeric_limits<std::int64_t>::min() || c.isum > std::numeric_limits<std::int64_t>::max())
        return std::nullopt;
    return static_cast<std::int64_t>(c.isum);
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

namespace {
template <class T>
void put(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // x86-64 and aarch64 are little-endian; pinned by a test
    out.append(b, sizeof(T));
}
template <class T>
T get(const char*& p, const char* end) {
    if (end - p < static_cast<std::ptrdiff_t>(sizeof(T)))
        throw Error(sqlstate::kDataCorrupted, "window state is truncated",
                    "The state table row is shorter than its aggregates need.");
    T v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
}
}  // namespace

void AggLayout::serialize(const AggCell* cells, std::string& out) const {
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        const AggCell& c = cells[i];
        put<std::int64_t>(out, c.n);
        switch (specs_[i].fn) {
        case AggFn::CountStar:
        case AggFn::Count: break;
        case AggFn::Min:
        case AggFn::Max: put<double>(out, c.d); break;
        case AggFn::Sum:
        case AggFn::Avg:
            put<std::int64_t>(out, static_cast<std::int64_t>(c.isum));
            put<std::int64_t>(out, static_cast<std::int64_t>(c.isum >> 64));
            put<double>(out, c.d);
            break;
        }
    }
}

std::vector<AggCell> AggLayout::deserialize(const char* data, std::size_t len) const {
    std::vector<AggCell> cells(specs_.size());
    const char* p = data;
    const char* end = data + len;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        AggCell& c = cells[i];
        c.n = get<std::int64_t>(p, end);
        switch (specs_[i].fn) {
        case AggFn::CountStar:
        case AggFn::Count: break;
        case AggFn::Min:
        case AggFn::Max: c.d = get<double>(p, end); break;
        case AggFn::Sum:
        case AggFn::Avg: {
            const auto lo = static_cast<std::uint64_t>(get<std::int64_t>(p, end));
            const auto hi = get<std::int64_t>(p, end);
            c.isum = static_cast<__int128>((static_cast<unsigned __int128>(hi) << 64) | lo);
            c.d = get<double>(p, end);
            break;
        }
        }
    }
    if (p != end)
        throw Error(sqlstate::kDataCorrupted, "window state has trailing bytes",
                    "The state row does not match the aggregation's aggregates.");
    return cells;
}

}  // namespace stoatflow::core
