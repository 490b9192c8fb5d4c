// The compact binary form of a window's cells that the state tables store
// (AggLayout::serialize, AggLayout::deserialize: the format is described in agg_layout.hpp).
#include "stoatflow/core/aggregate/agg_layout.hpp"

#include "stoatflow/core/error.hpp"
#include "wide_sum.hpp"

#include <cstring>
#include <limits>

namespace stoatflow::core {

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
                normalize_wide(nc);
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
            normalize_wide(nc);
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
        if (has_sum(specs_[i].fn)) normalize_wide(cells[i]);
    return cells;
}

}  // namespace stoatflow::core
