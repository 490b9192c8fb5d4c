// The order a commit writes its sink rows in: the sink's primary key, (key, window_start), keys
// compared bytewise. Consecutive rows then land on the same B-tree pages; the order is for
// locality only (any order writes the same rows).
#pragma once
#include "stoatflow/core/emit/commit_output.hpp"
#include "stoatflow/core/no_postgres.hpp"

#include <vector>

namespace stoatflow::core {

// Sorts by key (bytewise, as std::string compares), then start. The first 16 bytes of each key
// are compared from a copy beside the row pointer (one cache line holds four), so most
// comparisons touch neither the rows nor their keys.
void sort_by_primary_key(std::vector<const SinkRow*>& rows);

}  // namespace stoatflow::core
