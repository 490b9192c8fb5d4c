// What the sink receives of a window, per emit strategy: on_window_update writes a row for
// every commit that changed an open window and a final one when it closes; on_window_close
// writes only the final row. A row whose start moved (a session extended back) first
// deletes the row under its old start.
#pragma once
#include "stoatflow/core/emit/commit_output.hpp"
#include "stoatflow/core/emit/emit_strategy.hpp"
#include "stoatflow/core/external_aggregate.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/window/window_state.hpp"

#include <cstddef>
#include <string>

namespace stoatflow::core {

class Emitter {
public:
    Emitter(EmitStrategy strategy, const ExternalAggregates* ext)
        : strategy_(strategy), ext_(ext) {}

    EmitStrategy strategy() const { return strategy_; }

    // A window the watermark closed: its final row, under both strategies.
    void closed(const std::string& key, WindowState& ws, CommitOutput& out,
                AggregationStats& stats) const {
        emit_row(key, ws, true, out, stats);
    }
    // An open window changed since the last commit: a row under on_window_update only.
    void changed(const std::string& key, WindowState& ws, CommitOutput& out,
                 AggregationStats& stats) const {
        if (strategy_ == EmitStrategy::OnWindowUpdate) emit_row(key, ws, false, out, stats);
    }
    // Sink rows a commit with `changed` open windows changed will write at most (reserved).
    std::size_t rows_for_changes(std::size_t changed) const {
        return strategy_ == EmitStrategy::OnWindowUpdate ? changed : 0;
    }
    // Recovery: does the sink hold a row for a committed window state? Under on_window_update
    // every committed state version was upserted in the same transaction; under
    // on_window_close only closed windows were written.
    bool in_sink(bool closed) const { return in_sink(strategy_, closed); }
    // The same for a state committed under `committed` (it differs after alter_aggregation
    // changed emit: README "Altering an aggregation").
    static bool in_sink(EmitStrategy committed, bool closed) {
        return committed == EmitStrategy::OnWindowUpdate || closed;
    }

private:
    void emit_row(const std::string& key, WindowState& ws, bool final, CommitOutput& out,
                  AggregationStats& stats) const;

    EmitStrategy strategy_;
    const ExternalAggregates* ext_;  // null when the aggregation has no external aggregates
};

}  // namespace stoatflow::core
