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
        throw Error(sqlstate::kInvalidParameterValue, "invalid field path \"" + path + "\": " + why,
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
constexpr int kWideShift = 126;
constexpr __int128 kWideMask = (static_cast<__int128>(1) << kWideShift) - 1;
// Adds an integer of any __int128 value to the wide sum without overflowing isum: its
// multiples of 2^126 go to ihi first.
void add_wide(AggCell& c, __int128 v) {
    normalize_sum(c);
    c.ihi += static_cast<std::int64_t>(v >> kWideShift);  // floor: −2 .. 1
    c.isum += v & kWideMask;                              // < 2^127 with isum < 2^126
    normalize_sum(c);
}
}  // namespace

void normalize_sum(AggCell& c) {
    c.ihi += static_cast<std::int64_t>(c.isum >> kWideShift);  // arithmetic shift: floor
    c.isum &= kWideMask;
}

bool AggCell::operator==(const AggCell& o) const {
    AggCell a = *this, b = o;
    normalize_sum(a);
    normalize_sum(b);
    return a.isum == b.isum && a.ihi == b.ihi && d == o.d && n == o.n;
}

std::string wide_sum_to_string(std::int64_t ihi, __int128 isum) {
    AggCell c;
    c.ihi = ihi;
    c.isum = isum;
    normalize_sum(c);
    // |sum| = top·2^128 + low, from sum = ihi·2^126 + u with u in [0, 2^126).
    const bool neg = c.ihi < 0;
    unsigned __int128 u = static_cast<unsigned __int128>(c.isum);
    unsigned __int128 a = neg ? static_cast<unsigned __int128>(-static_cast<__int128>(c.ihi))
                              : static_cast<unsigned __int128>(c.ihi);
    if (neg) {  // a·2^126 − u = (a − 1)·2^126 + (2^126 − u)
        if (u != 0) {
            a -= 1;
            u = (static_cast<unsigned __int128>(1) << kWideShift) - u;
        }
    }
    const unsigned __int128 low = u + ((a & 3) << kWideShift);  // < 2^128
    const std::uint64_t top = static_cast<std::uint64_t>(a >> 2);
    if (top == 0 && low <= static_cast<unsigned __int128>(kWideMask))
        return int128_to_string(neg ? -static_cast<__int128>(low) : static_cast<__int128>(low));
    // Long division of the 192-bit magnitude by 10^19, most significant limb first.
    std::uint64_t limbs[3] = {top, static_cast<std::uint64_t>(low >> 64),
                              static_cast<std::uint64_t>(low)};
    constexpr std::uint64_t kChunk = 10000000000000000000ull;  // 10^19
    std::vector<std::uint64_t> chunks;                         // least significant first
    while (limbs[0] != 0 || limbs[1] != 0 || limbs[2] != 0) {
        unsigned __int128 rem = 0;
        for (auto& limb : limbs) {
            const unsigned __int128 cur = (rem << 64) | limb;
            limb = static_cast<std::uint64_t>(cur / kChunk);
            rem = cur % kChunk;
        }
        chunks.push_back(static_cast<std::uint64_t>(rem));
    }
    std::string out = neg ? "-" : "";
    out += std::to_string(chunks.back());
    for (std::size_t i = chunks.size() - 1; i-- > 0;) {
        const std::string part = std::to_string(chunks[i]);
        out.append(19 - part.size(), '0');
        out += part;
    }
    return out;
}

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
            normalize_sum(a);
            normalize_sum(bn);
            a.isum += bn.isum;  // each < 2^126: no overflow
            a.ihi += bn.ihi;
            normalize_sum(a);
            a.d += b.d;
            break;
        }
        }
        a.n += b.n;
    }
}

std::string int128_to_string(__int128 v) {
    if (v == 0) return "0";
    const bool neg = v < 0;
    unsigned __int128 u =
        neg ? static_cast<unsigned __int128>(-(v + 1)) + 1 : static_cast<unsigned __int128>(v);
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

namespace {
// The integer sum as __int128 when it fits one.
std::optional<__int128> integer_sum_128(const AggCell& cell) {
    if (cell.ihi == 0) return cell.isum;
    AggCell c = cell;
    normalize_sum(c);
    if (c.ihi < -2 || c.ihi > 1) return std::nullopt;
    return static_cast<__int128>(static_cast<unsigned __int128>(static_cast<__int128>(c.ihi))
                                 << kWideShift) +
           c.isum;
}
double integer_sum_as_double(const AggCell& c) {
    if (const auto v = integer_sum_128(c)) return static_cast<double>(*v);
    AggCell nc = c;  // beyond __int128: |ihi| ≥ 2 dominates, isum adds its low bits
    normalize_sum(nc);
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

std::size_t AggLayout::state_v01_size() const {
    std::size_t n = 0;
    for (const auto& spec : specs_) {
        switch (spec.fn) {
        case AggFn::CountStar:
        case AggFn::Count: n += 8; break;
        case AggFn::Min:
        case AggFn::Max: n += 16; break;
        case AggFn::Sum:
        case AggFn::Avg: n += 32; break;
        }
    }
    return n;
}

namespace {
bool has_sum(AggFn fn) { return fn == AggFn::Sum || fn == AggFn::Avg; }
}  // namespace

void AggLayout::serialize(const AggCell* cells, std::string& out, std::optional<std::int64_t> floor,
                          const std::string* external) const {
    if (static_cast<bool>(external) != static_cast<bool>(external_))
        throw Error(sqlstate::kInternalError,
                    external_ ? "window state without its external aggregates' state"
                              : "external state for an aggregation without external aggregates");
    // The 0.1 format unless some integer sum outgrew __int128 (then the wide tail follows).
    bool wide = false;
    for (std::size_t i = 0; i < specs_.size(); ++i)
        if (has_sum(specs_[i].fn) && cells[i].ihi != 0 && !integer_sum_128(cells[i])) wide = true;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
        const AggCell& c = cells[i];
        put<std::int64_t>(out, c.n);
        switch (specs_[i].fn) {
        case AggFn::CountStar:
        case AggFn::Count: break;
        case AggFn::Min:
        case AggFn::Max: put<double>(out, c.d); break;
        case AggFn::Sum:
        case AggFn::Avg: {
            __int128 low;
            if (wide) {
                AggCell nc = c;
                normalize_sum(nc);
                low = nc.isum;
            } else {
                low = *integer_sum_128(c);
            }
            put<std::int64_t>(out, static_cast<std::int64_t>(low));
            put<std::int64_t>(out, static_cast<std::int64_t>(low >> 64));
            put<double>(out, c.d);
            break;
        }
        }
    }
    if (wide) {
        out.push_back(kStateWideSums);
        for (std::size_t i = 0; i < specs_.size(); ++i) {
            if (!has_sum(specs_[i].fn)) continue;
            AggCell nc = cells[i];
            normalize_sum(nc);
            put<std::int64_t>(out, nc.ihi);
        }
    }
    if (floor) {
        out.push_back(kStateSessionFloor);
        put<std::int64_t>(out, *floor);
    }
    if (external) {
        if (external->size() > std::numeric_limits<std::uint32_t>::max())
            throw Error(sqlstate::kProgramLimitExceeded,
                        "the external aggregates' state is larger than 4 GB");
        out.push_back(kStateExternal);
        put<std::uint32_t>(out, static_cast<std::uint32_t>(external->size()));
        out += *external;
    }
}

std::vector<AggCell> AggLayout::deserialize(const char* data, std::size_t len,
                                            std::optional<std::int64_t>* floor,
                                            std::string* external) const {
    std::vector<AggCell> cells(specs_.size());
    const char* p = data;
    const std::size_t body = state_v01_size();
    const char* end = data + std::min(len, body);
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
    if (floor) floor->reset();
    if (external) external->clear();
    bool has_external = false;
    // The tails: the wide sums, the floor, the external state, each at most once, in that
    // order.
    p = data + std::min(len, body);
    end = data + len;
    char last = 0;
    while (p < end) {
        const char tag = *p++;
        if (tag == kStateWideSums && last < tag) {
            for (std::size_t i = 0; i < specs_.size(); ++i)
                if (has_sum(specs_[i].fn)) cells[i].ihi = get<std::int64_t>(p, end);
        } else if (tag == kStateSessionFloor && last < tag) {
            const std::int64_t f = get<std::int64_t>(p, end);
            if (floor) *floor = f;
        } else if (tag == kStateExternal && last < tag && external_) {
            const std::uint32_t n = get<std::uint32_t>(p, end);
            if (static_cast<std::size_t>(end - p) < n)
                throw Error(sqlstate::kDataCorrupted, "window state is truncated",
                            "The external aggregates' state is shorter than its length says.");
            if (external) external->assign(p, n);
            p += n;
            has_external = true;
        } else {
            throw Error(sqlstate::kDataCorrupted, "window state has trailing bytes",
                        "The state row does not match the aggregation's aggregates.");
        }
        last = tag;
    }
    if (external_ && !has_external)
        throw Error(sqlstate::kDataCorrupted, "window state lacks the external aggregates' state",
                    "The state row does not match the aggregation's aggregates.");
    // isum gets its headroom back for the int64 path.
    for (std::size_t i = 0; i < specs_.size(); ++i)
        if (has_sum(specs_[i].fn)) normalize_sum(cells[i]);
    return cells;
}

}  // namespace stoatflow::core
