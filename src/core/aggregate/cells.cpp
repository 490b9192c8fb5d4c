// One aggregate's cell: the exact wide integer sum kept normalized, and as decimal text.
#include "stoatflow/core/aggregate/cells.hpp"

#include "wide_sum.hpp"

#include <cstdint>
#include <vector>

namespace stoatflow::core {

void normalize_sum(AggCell& c) { normalize_wide(c); }

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

}  // namespace stoatflow::core
