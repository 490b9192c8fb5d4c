// Roll-ups (rollup.hpp, README "Roll-ups"): the rules of a roll-up's input and the feed of an
// upstream's final windows into it. Pure C++ (src/README.md).
#include "stoatflow/flow/rollup.hpp"

#include "stoatflow/core/error.hpp"

#include <algorithm>

namespace stoatflow::flow {

namespace {

std::string ms_text(core::Millis ms) { return std::to_string(ms) + " ms"; }

}  // namespace

RollupInput rollup_input(std::size_t upstream, const std::string& up_name,
                         const core::WindowSpec& up, const std::vector<core::AggSpec>& up_aggs,
                         core::Millis upstream_lag, const core::WindowSpec& down,
                         const std::vector<core::AggSpec>& down_aggs) {
    using core::WindowKind;
    const auto grid = [](WindowKind k) {
        return k == WindowKind::Tumbling || k == WindowKind::Hopping;
    };
    if (!grid(up.kind))
        throw Error(sqlstate::kFeatureNotSupported,
                    "aggregation \"" + up_name + "\" is a " + core::to_string(up.kind) +
                        " aggregation: a roll-up reads tumbling or hopping windows only",
                    up.kind == WindowKind::Session
                        ? "Sessions have no fixed boundaries, so no larger window is made of "
                          "them; roll up a tumbling aggregation of the same source instead."
                        : "Sliding windows overlap at every record, so their sums count records "
                          "many times; roll up a tumbling aggregation of the same source instead.");
    if (!grid(down.kind))
        throw Error(sqlstate::kFeatureNotSupported,
                    std::string("a roll-up of aggregation \"") + up_name + "\" cannot be " +
                        core::to_string(down.kind),
                    "A roll-up's windows are tumbling or hopping windows made of whole upstream "
                    "windows.");
    RollupInput in;
    in.upstream = upstream;
    // The upstream windows that tile time: all of a tumbling aggregation's, and of a hopping
    // one those starting at a multiple of its size (the others overlap them).
    in.tile = up.size;
    if (up.kind == WindowKind::Hopping && up.size % up.advance != 0)
        throw Error(sqlstate::kInvalidParameterValue,
                    "the windows of aggregation \"" + up_name + "\" (" + up.describe() +
                        ") do not tile time: its size is no multiple of its advance",
                    "Roll up an aggregation whose windows tile time (tumbling, or hopping with a "
                    "size that is a multiple of the advance).");
    if (down.size % in.tile != 0 || down.advance % in.tile != 0)
        throw Error(sqlstate::kInvalidParameterValue,
                    "a roll-up of aggregation \"" + up_name + "\" needs a size and advance that " +
                        "are multiples of its windows' " + ms_text(in.tile) + "; " +
                        down.describe() + " is not",
                    "Each roll-up window must be made of whole upstream windows: for 1-minute "
                    "windows, for example 10 minutes or 1 hour.");
    in.lag = upstream_lag + up.size + up.grace;
    for (const core::AggSpec& a : down_aggs) {
        if (a.fn != core::AggFn::Sum && a.fn != core::AggFn::Min && a.fn != core::AggFn::Max)
            throw Error(sqlstate::kFeatureNotSupported,
                        std::string("a roll-up cannot use ") + core::to_string(a.fn) +
                            (a.fn == core::AggFn::CountStar ? "" : "(" + a.field + ")") +
                            ": its records are the windows of aggregation \"" + up_name + "\"",
                        a.fn == core::AggFn::Avg
                            ? "An average of averages is not the average: roll up sum(sum_x) "
                              "and sum(count) and divide them when you read the sink."
                            : "count would count upstream windows, not records: use "
                              "sum(count) (the upstream's count column).");
        const auto col = std::find_if(up_aggs.begin(), up_aggs.end(),
                                      [&](const core::AggSpec& u) { return u.column == a.field; });
        if (col == up_aggs.end()) {
            std::string names;
            for (const core::AggSpec& u : up_aggs) names += (names.empty() ? "" : ", ") + u.column;
            throw Error(sqlstate::kUndefinedColumn,
                        "aggregation \"" + up_name + "\" has no column \"" + a.field + "\"",
                        "A roll-up aggregates the upstream's columns: " + names + ".");
        }
        if (col->fn == core::AggFn::Avg)
            throw Error(
                sqlstate::kFeatureNotSupported,
                "column \"" + a.field + "\" of aggregation \"" + up_name +
                    "\" is an average, which cannot be rolled up",
                "An average of averages is not the average: keep sum and count upstream, "
                "roll up sum(sum_x) and sum(count) and divide them when you read the sink.");
        in.columns.push_back(static_cast<std::size_t>(col - up_aggs.begin()));
    }
    return in;
}

core::Millis rollup_watermark(core::Millis source_watermark, core::Millis lag) {
    return source_watermark == core::kNoTime ? core::kNoTime : source_watermark - lag;
}

core::Value rollup_value(const core::AggLayout& up, std::size_t i, const core::AggCell& cell) {
    switch (up.specs()[i].fn) {
    case core::AggFn::CountStar:
    case core::AggFn::Count: return core::Value::of_int(*up.as_bigint(i, cell));
    case core::AggFn::Sum:
        if (const auto exact = up.as_numeric_int64(i, cell)) return core::Value::of_int(*exact);
        break;
    default: break;
    }
    const auto d = up.as_double(i, cell);
    return d ? core::Value::of_double(*d) : core::Value::missing();
}

std::size_t feed_rollup(const core::CommitOutput& upstream_out, const core::AggLayout& up,
                        const RollupInput& in, core::WindowedAggregation& rollup,
                        core::Millis watermark) {
    std::vector<const core::SinkRow*> finals;
    for (const core::SinkRow& row : upstream_out.upserts)
        if (row.final && row.start % in.tile == 0) finals.push_back(&row);
    // README "Roll-ups": in window_start order, so the roll-up sees its records in event time.
    std::sort(finals.begin(), finals.end(), [](const core::SinkRow* a, const core::SinkRow* b) {
        return a->start != b->start ? a->start < b->start : a->key < b->key;
    });
    std::vector<core::Value> values(in.columns.size());
    for (const core::SinkRow* row : finals) {
        for (std::size_t k = 0; k < in.columns.size(); ++k)
            values[k] = rollup_value(up, in.columns[k], row->cells[in.columns[k]]);
        rollup.process(row->key, row->start, values.data(), watermark);
    }
    return finals.size();
}

}  // namespace stoatflow::flow
