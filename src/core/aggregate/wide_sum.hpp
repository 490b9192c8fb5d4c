// The wide integer sum of a cell (ihi·2^126 + isum) as the aggregate files share it: the
// split point, normalizing, and the sum as one __int128 when it fits.
#pragma once
#include "stoatflow/core/aggregate/cells.hpp"
#include "stoatflow/core/no_postgres.hpp"

#include <optional>

namespace stoatflow::core {

inline constexpr int kWideShift = 126;
inline constexpr __int128 kWideMask = (static_cast<__int128>(1) << kWideShift) - 1;

// normalize_sum, inline for the files that fold and combine cells.
inline void normalize_wide(AggCell& c) {
    c.ihi += static_cast<std::int64_t>(c.isum >> kWideShift);  // arithmetic shift: floor
    c.isum &= kWideMask;
}

// The integer sum as __int128 when it fits one.
inline std::optional<__int128> integer_sum_128(const AggCell& cell) {
    if (cell.ihi == 0) return cell.isum;
    AggCell c = cell;
    normalize_wide(c);
    if (c.ihi < -2 || c.ihi > 1) return std::nullopt;
    return static_cast<__int128>(static_cast<unsigned __int128>(static_cast<__int128>(c.ihi))
                                 << kWideShift) +
           c.isum;
}

}  // namespace stoatflow::core
