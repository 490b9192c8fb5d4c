// Parsing and validating a source's comma-separated topic list.
#include "stoatflow/kafka/topics.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/kafka/limits.hpp"

#include <algorithm>
#include <set>

namespace stoatflow::kafka {

namespace {
constexpr const char* kNameHint =
    "Kafka topic names use letters, digits, \".\", \"_\" and \"-\" (at most 249).";
constexpr const char* kListHint = "Separate topic names with commas: 'web_activity, purchases'.";

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool valid_name(const std::string& n) {
    if (n.empty() || n.size() > kMaxTopicNameBytes || n == "." || n == "..") return false;
    return std::all_of(n.begin(), n.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

// A name as quoted in a message: bounded, so a pasted megabyte does not become the error.
std::string quoted(const std::string& n) {
    constexpr std::size_t kShown = 300;
    return "\"" + (n.size() > kShown ? n.substr(0, kShown) + "..." : n) + "\"";
}
}  // namespace

std::vector<std::string> parse_topic_list(const std::string& list) {
    std::vector<std::string> items;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = list.find(',', start);
        const std::size_t end = comma == std::string::npos ? list.size() : comma;
        std::size_t a = start, b = end;
        while (a < b && is_space(list[a])) ++a;
        while (b > a && is_space(list[b - 1])) --b;
        items.push_back(list.substr(a, b - a));
        if (items.size() > kMaxTopicsPerSource)
            throw Error(sqlstate::kProgramLimitExceeded,
                        "a source reads at most " + std::to_string(kMaxTopicsPerSource) + " topics",
                        "Split the topics over several sources.");
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    std::set<std::string> seen;
    for (const auto& n : items) {
        if (n.empty() && items.size() > 1)
            throw Error(sqlstate::kInvalidParameterValue,
                        "topic list " + quoted(list) + " has an empty name", kListHint);
        if (!valid_name(n))
            throw Error(sqlstate::kInvalidParameterValue, "invalid Kafka topic name " + quoted(n),
                        kNameHint);
        if (!seen.insert(n).second)
            throw Error(sqlstate::kInvalidParameterValue,
                        "topic " + quoted(n) + " is listed more than once",
                        "List each topic once.");
    }
    return items;
}

}  // namespace stoatflow::kafka
