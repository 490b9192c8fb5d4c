// The aggregate functions (count(*), count, sum, min, max, avg) as an aggregation declares
// them: names, output column names and SQL types, and the checks of a declared list.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <string>
#include <vector>

namespace stoatflow::core {

enum class AggFn { CountStar, Count, Sum, Min, Max, Avg };

// SQL type of an output column.
enum class ColumnType { BigInt, Double, Numeric };

struct AggSpec {
    AggFn fn = AggFn::CountStar;
    std::string field;   // JSON field path ('amount', 'user.id'); empty for count(*)
    std::string column;  // output column name (after defaults are applied)
};

const char* to_string(AggFn fn);
// 'count', 'sum', ... → AggFn; throws Error 42883 naming the supported functions.
AggFn agg_fn_from_name(const std::string& name);
ColumnType column_type(AggFn fn);
// Default column name: 'count' for count(*), else function_field ('sum_amount',
// 'max_user_latency' for 'user.latency').
std::string default_column_name(AggFn fn, const std::string& field);
// Validates a list: applies default names, rejects empty lists, missing or bad field
// paths and duplicate or reserved column names (key, window_start, ...). Throws Error.
std::vector<AggSpec> normalize_aggregates(std::vector<AggSpec> specs);
// Checks a JSON field path: dot-separated non-empty names. Throws Error (22023).
void validate_field_path(const std::string& path);

}  // namespace stoatflow::core
