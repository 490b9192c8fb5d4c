// Roll-ups (README "Roll-ups"): an aggregation whose records are another aggregation's closed
// windows. The record path feeds each final row of the upstream, in the snapshot that makes it
// final, into the roll-up's engine; the roll-up's watermark is the upstream's minus the
// upstream's size + grace, so every upstream window arrives before the roll-up window holding it
// can close. Pure C++ (src/README.md).
#pragma once

#include "stoatflow/core/emit/commit_output.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/windowed_aggregation.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace stoatflow::flow {

// How a roll-up reads its upstream's windows.
struct RollupInput {
    std::size_t upstream = 0;  // the upstream's index in the record path (below the roll-up's)
    std::vector<std::size_t> columns;  // per roll-up aggregate: the upstream aggregate it reads
    core::Millis tile = 0;  // upstream windows read: those starting at a multiple of this
    core::Millis lag = 0;   // the roll-up's watermark is the source's minus this
};

// The upstream's window definition and aggregates, and the roll-up's: which aggregates read
// which upstream column (an AggSpec's field names an upstream aggregate's column), and the
// tile and lag (upstream_lag: the upstream's own lag, 0 for an aggregation of the source).
// Throws Error for what create_aggregation refuses (messages name the upstream `up_name`): an
// upstream or a roll-up that is not tumbling or hopping (0A000), windows the upstream's tiles do
// not divide (22023), an aggregate other than sum, min and max, or one over an upstream average
// (0A000), a field that names no upstream column (42703).
RollupInput rollup_input(std::size_t upstream, const std::string& up_name,
                         const core::WindowSpec& up, const std::vector<core::AggSpec>& up_aggs,
                         core::Millis upstream_lag, const core::WindowSpec& down,
                         const std::vector<core::AggSpec>& down_aggs);

// A roll-up's watermark from the source's (kNoTime stays kNoTime).
core::Millis rollup_watermark(core::Millis source_watermark, core::Millis lag);

// The value an upstream aggregate's cell has in its sink column, as a roll-up aggregate folds it:
// count → its integer, sum → the exact integer (within int64) or its double, min/max/avg → the
// double; Missing for SQL NULL.
core::Value rollup_value(const core::AggLayout& up, std::size_t i, const core::AggCell& cell);

// Feeds the final rows of the upstream's commit output into the roll-up's engine, in
// window_start order (then key), judged against `watermark` (the roll-up's watermark at its
// previous flush: no upstream final is late for it). Returns the windows fed.
std::size_t feed_rollup(const core::CommitOutput& upstream_out, const core::AggLayout& up,
                        const RollupInput& in, core::WindowedAggregation& rollup,
                        core::Millis watermark);

}  // namespace stoatflow::flow
