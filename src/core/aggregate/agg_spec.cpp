// The declared aggregates: function names, output column names and types, and the checks
// every aggregate list passes (field paths, reserved and duplicate names).
#include "stoatflow/core/aggregate/agg_spec.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/core/names.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace stoatflow::core {

const char* to_string(AggFn fn) {
    switch (fn) {
    case AggFn::CountStar: return "count";
    case AggFn::Count: return "count";
    case AggFn::Sum: return "sum";
    case AggFn::Min: return "min";
    case AggFn::Max: return "max";
    case AggFn::Avg: return "avg";
    }
    return "unknown";
}

AggFn agg_fn_from_name(const std::string& raw) {
    std::string name = raw;
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (name == "count") return AggFn::Count;
    if (name == "sum") return AggFn::Sum;
    if (name == "min") return AggFn::Min;
    if (name == "max") return AggFn::Max;
    if (name == "avg") return AggFn::Avg;
    throw Error(sqlstate::kUndefinedFunction, "unknown aggregate function \"" + raw + "\"",
                "Supported aggregates: count(*), count(field), sum(field), min(field), "
                "max(field), avg(field).");
}

ColumnType column_type(AggFn fn) {
    switch (fn) {
    case AggFn::CountStar:
    case AggFn::Count: return ColumnType::BigInt;
    case AggFn::Sum: return ColumnType::Numeric;
    default: return ColumnType::Double;
    }
}

void validate_field_path(const std::string& path) {
    auto bad = [&](const std::string& why) {
        throw Error(sqlstate::kInvalidParameterValue, "invalid field path \"" + path + "\": " + why,
                    "A field path names a JSON member, with dots for nesting: 'amount', "
                    "'user.id'.");
    };
    if (path.empty()) bad("it is empty");
    if (path.size() > 256) bad("it is longer than 256 characters");
    std::size_t seg = 0;
    for (char c : path) {
        if (c == '.') {
            if (seg == 0) bad("it has an empty member name");
            seg = 0;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            bad("it contains a control character");
        } else {
            ++seg;
        }
    }
    if (seg == 0) bad("it has an empty member name");
}

std::string default_column_name(AggFn fn, const std::string& field) {
    if (fn == AggFn::CountStar) return "count";
    std::string name = std::string(to_string(fn)) + "_";
    for (char c : field) {
        const unsigned char u = static_cast<unsigned char>(c);
        name += (std::isalnum(u) || c == '_') ? static_cast<char>(std::tolower(u)) : '_';
    }
    return name;
}

std::vector<AggSpec> normalize_aggregates(std::vector<AggSpec> specs) {
    if (specs.empty())
        throw Error(sqlstate::kInvalidParameterValue, "at least one aggregate is required",
                    "For example: 'count(*) AS views, sum(amount) AS revenue'.");
    static const std::set<std::string> reserved = {"key", "window_start", "window_end",
                                                   "event_time", "final"};
    std::set<std::string> seen;
    for (auto& s : specs) {
        if (s.fn != AggFn::CountStar) validate_field_path(s.field);
        if (s.column.empty()) s.column = default_column_name(s.fn, s.field);
        if (!name_fits(s.column.size()))
            throw Error(sqlstate::kInvalidParameterValue,
                        name_too_long_message("column name \"" + s.column + "\""),
                        "Give the aggregate a shorter name with AS.");
        if (reserved.count(s.column))
            throw Error(sqlstate::kDuplicateColumn,
                        "aggregate column name \"" + s.column + "\" is reserved",
                        "The sink already has columns key, window_start, window_end, "
                        "event_time and final; choose another name with AS.");
        if (!seen.insert(s.column).second)
            throw Error(sqlstate::kDuplicateColumn,
                        "aggregate column name \"" + s.column + "\" is used twice",
                        "Give each aggregate a distinct name with AS.");
    }
    return specs;
}

}  // namespace stoatflow::core
