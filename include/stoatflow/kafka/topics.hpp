// A source's topic list (README "Expressions and PostgreSQL aggregates"): `topic => 'web_activity,
// purchases'`. One rule, used by create_source (through stoatflow._parse_topics) and unit-tested on
// its own.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <string>
#include <vector>

namespace stoatflow::kafka {

// Splits a comma-separated list of Kafka topic names; whitespace around a name is ignored.
// Each name: letters, digits, '.', '_', '-', 1 to 249 bytes, not "." or ".." (Kafka's rule).
// No name twice, at most kMaxTopicsPerSource names. Throws stoatflow::Error: 22023 for a bad
// or repeated name or an empty item, 54000 for too many.
std::vector<std::string> parse_topic_list(const std::string& list);

}  // namespace stoatflow::kafka
