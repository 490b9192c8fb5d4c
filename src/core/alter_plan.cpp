// alter_aggregation's decisions: what may change on a running aggregation and the values it gets.
#include "stoatflow/core/alter_plan.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/core/segment_layout.hpp"

namespace stoatflow::core {

Millis max_retention_for(Millis segment_interval, Millis window_length) {
    // interval(R) = max(R / 2, 60 s, length) ≤ stored  ⇔  R / 2 ≤ stored (the other two terms
    // are the same as when the stored one was computed), i.e. R ≤ 2 · stored + 1.
    if (SegmentLayout(0, window_length).interval() > segment_interval) return 0;
    return 2 * segment_interval + 1;
}

AlterPlan plan_alter(const AggregationParams& before, const AlterRequest& request) {
    AlterPlan plan;
    plan.after = before;
    AggregationParams& after = plan.after;
    if (!request.grace && !request.emit && !request.retention) {
        plan.notices.push_back("nothing to change: give grace, emit or retention");
        return plan;
    }
    if (request.grace) {
        if (*request.grace < 0)
            throw Error(sqlstate::kInvalidParameterValue, "grace must not be negative",
                        "Give a grace of 0 or more, e.g. grace => '30 seconds'.");
        after.spec.grace = *request.grace;
        after.spec.validate();
    }
    if (request.emit) after.emit = *request.emit;
    if (request.retention) {
        after.retention = resolve_retention(after.spec, *request.retention);
    } else if (after.retention < after.spec.min_retention()) {
        after.retention = after.spec.min_retention();
        plan.notices.push_back("retention raised to " + std::to_string(after.retention) +
                               " ms, the minimum for " + after.spec.describe());
    }
    if (after.retention != before.retention) {
        const Millis needs = SegmentLayout(after.retention, after.spec.length()).interval();
        if (needs > before.segment_interval) {
            const Millis most = max_retention_for(before.segment_interval, after.spec.length());
            throw Error(sqlstate::kInvalidParameterValue,
                        "retention " + std::to_string(after.retention) + " ms needs segments of " +
                            std::to_string(needs) +
                            " ms, but this aggregation's state tables are "
                            "laid out in segments of " +
                            std::to_string(before.segment_interval) + " ms",
                        "On this aggregation retention can be at most " + std::to_string(most) +
                            " ms. For a longer one, create a new aggregation with that retention "
                            "(its segments are sized for it) and drop this one.");
        }
    }
    plan.changes = !(after.spec == before.spec) || after.emit != before.emit ||
                   after.retention != before.retention;
    if (!plan.changes)
        plan.notices.push_back("nothing to change: the aggregation has these settings");
    return plan;
}

}  // namespace stoatflow::core
