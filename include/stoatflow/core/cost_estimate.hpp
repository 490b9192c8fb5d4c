// What an aggregation will cost before it is created (stoatflow.estimate, README "Estimating
// cost"), from the engine's own formulas: the segment interval and live segments of
// SegmentLayout, the bytes per window and per key of WindowStore (what worker_memory_limit
// counts), the state row bytes of the layout.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <cstddef>
#include <cstdint>

namespace stoatflow::core {

// Keys are taken as this long (bytes) unless the caller says otherwise.
inline constexpr std::size_t kEstimateKeyBytes = 16;

struct CostInputs {
    WindowSpec spec;        // validated
    std::int64_t keys = 0;  // distinct keys with live windows
    Millis retention = 0;   // resolved (resolve_retention)
    Millis max_out_of_orderness = 0;
    std::size_t aggregates = 1;  // built-in aggregate cells per window
    std::size_t key_length = kEstimateKeyBytes;
    // Records per second over the keys (0: not known; then every key is taken to have records
    // all the time for memory, the bound, and each window to be written once for disk).
    double records_per_second = 0;
    // The worker's commit interval (stoatflow.commit_interval under a live stream): each commit
    // that changed an open window appends a version of it. 0: one commit per window.
    Millis commit_interval = 0;
};

struct CostEstimate {
    // Open windows of one key under a steady stream: tumbling ceil((size + grace) / size),
    // hopping ceil((size + grace) / advance), session ceil((gap + grace) / gap), sliding
    // 2 · ceil((D + grace) / D) (one record per key per D, each with its left window and the
    // one after it); each plus max_out_of_orderness / (advance, gap or D; sliding: twice that):
    // the windows records ahead of W keep open, on average.
    double open_windows_per_key = 0;
    Millis segment_interval = 0;
    long live_segments_max = 0;
    std::int64_t state_bytes_per_window = 0;  // in memory (WindowStore::window_bytes)
    std::int64_t key_bytes = 0;               // in memory, once per key (WindowStore::key_bytes)
    std::int64_t memory_bytes = 0;
    // Versions a window slot of one key leaves in the state tables: with n = max(1, length /
    // commit_interval) commits while records reach the window and λ a key's records per
    // millisecond, n · (1 − e^(−λ · length / n)) (the commits that saw a record of the key);
    // 1 when records_per_second is not given.
    double versions_per_window = 1;
    // The state rows at their peak, just before the oldest segment is dropped (it goes once its
    // end is retention behind W): without a rate the windows of a key starting over retention +
    // segment_interval + max_out_of_orderness (records that far ahead of W have windows
    // already), one version each; with one, versions_per_window each for the windows starting
    // over retention + segment_interval − size, half as many on average for the last size before
    // W (still taking records). Times keys (the caller sizes them).
    std::int64_t state_rows = 0;
};

CostEstimate estimate_cost(const CostInputs& in);

}  // namespace stoatflow::core
