// The aggregate functions (count(*), count, sum, min, max, avg): their declaration
// (aggregate/agg_spec.hpp), the mergeable per-window state they fold into
// (aggregate/cells.hpp) and an aggregation's aggregates at work (aggregate/agg_layout.hpp).
#pragma once
#include "stoatflow/core/aggregate/agg_layout.hpp"
#include "stoatflow/core/aggregate/agg_spec.hpp"
#include "stoatflow/core/aggregate/cells.hpp"
#include "stoatflow/core/no_postgres.hpp"
