// CellArray: a window's cells, inline up to kInline, on the heap beyond. Its inline cells
// and heap pointer share their bytes, so every copy, move and resize across that boundary
// must keep the cells (checked against a std::vector holding the same ones).
#include "stoatflow/core/aggregate/cells.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace stoatflow::core {
namespace {

std::vector<AggCell> cells_of(std::size_t n, int seed) {
    std::vector<AggCell> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i].isum = (static_cast<__int128>(seed) << 70) + static_cast<__int128>(i * 31 + 7);
        v[i].d = seed * 0.5 + static_cast<double>(i);
        v[i].n = seed * 100 + static_cast<std::int64_t>(i);
        v[i].ihi = -seed - static_cast<std::int64_t>(i);
    }
    return v;
}

void expect_holds(const CellArray& a, const std::vector<AggCell>& v) {
    ASSERT_EQ(a.size(), v.size());
    EXPECT_TRUE(a == v);
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_TRUE(a[i] == v[i]) << "cell " << i;
    EXPECT_TRUE(static_cast<std::vector<AggCell>>(a) == v);
}

TEST(CellArray, SmallerThanTheWideLayout) {
    // The inline cells and the heap pointer overlap: kInline cells and the size, no more.
    EXPECT_EQ(sizeof(CellArray), CellArray::kInline * sizeof(AggCell) + 8);
}

TEST(CellArray, FreshCellsAreZero) {
    for (std::size_t n = 0; n <= CellArray::kInline + 3; ++n)
        expect_holds(CellArray(n), std::vector<AggCell>(n));
}

TEST(CellArray, CopiesMovesAndAssignmentsAcrossTheInlineBoundary) {
    const std::size_t max = CellArray::kInline + 3;
    for (std::size_t a = 0; a <= max; ++a) {
        for (std::size_t b = 0; b <= max; ++b) {
            SCOPED_TRACE(testing::Message() << a << " cells, then " << b);
            const std::vector<AggCell> va = cells_of(a, 1), vb = cells_of(b, 2);
            CellArray x(va);
            expect_holds(x, va);
            CellArray copy(x);
            expect_holds(copy, va);
            // copy-assign over a different size, the other way round too
            CellArray y(vb);
            y = x;
            expect_holds(y, va);
            expect_holds(x, va);
            x = CellArray(vb);  // move-assign
            expect_holds(x, vb);
            CellArray moved(std::move(x));
            expect_holds(moved, vb);
            EXPECT_EQ(x.size(), 0u);  // NOLINT(bugprone-use-after-move): left empty
            x = va;                   // from a vector, after being moved from
            expect_holds(x, va);
            moved = std::move(x);
            expect_holds(moved, va);
            // self-assignment keeps the cells
            CellArray& self = moved;
            moved = self;
            expect_holds(moved, va);
            moved = std::move(self);
            expect_holds(moved, va);
            // writes through data() land in the array's own cells, not a shared one
            if (a > 0) {
                CellArray w(va);
                CellArray w2(w);
                w.data()[a - 1].n = -12345;
                EXPECT_EQ(w[a - 1].n, -12345);
                expect_holds(w2, va);
            }
        }
    }
}

}  // namespace
}  // namespace stoatflow::core
