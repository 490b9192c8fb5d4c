// stoatflow._parse_topics(topic): create_source's topic list, checked and split by the one rule
// in kafka::parse_topic_list (README "Expressions and PostgreSQL aggregates": several topics per
// source).
#include "stoatflow/core/error.hpp"
#include "stoatflow/kafka/topics.hpp"

#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"
#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

// _parse_topics(topic text) → text[]: the names in the order given.
STOATFLOW_FUNCTION(stoatflow__parse_topics) {
    if (PG_ARGISNULL(0))
        throw Error(sqlstate::kInvalidParameterValue, "topic must not be NULL",
                    "Name a Kafka topic, or several separated by commas.");
    const auto topics = kafka::parse_topic_list(text_to_string(PG_GETARG_DATUM(0)));
    std::vector<Datum> elems;
    for (const auto& t : topics) elems.push_back(text_datum(t));
    return make_array(elems, {}, TEXTOID);
}
