// stoatflow._forget_consumer_group(source): drop_source removes the source's consumer group in
// Kafka, and with it the offsets the worker committed there for lag tools (README "Removing a
// pipeline"). PostgreSQL holds the truth, so this is best effort and bounded in time: NULL when
// the group is gone, else why it is not (the drop goes on and says so).
#include "stoatflow/core/error.hpp"
#include "stoatflow/kafka/consumer.hpp"
#include "stoatflow/kafka/limits.hpp"

#include <string>

#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/catalog/catalog.hpp"

extern "C" {
#include "commands/dbcommands.h"
#include "miscadmin.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

STOATFLOW_FUNCTION(stoatflow__forget_consumer_group) {
    const std::string name = text_to_string(PG_GETARG_DATUM(0));
    SourceDef src;
    {
        SpiSession spi;
        src = load_source(name);
        spi.finish();
    }
    std::string database;
    pg_call([&] {
        const char* db = get_database_name(MyDatabaseId);
        database = db ? db : "";
    });
    const std::string why = kafka::delete_consumer_group(src.brokers, src.kafka_options,
                                                         kafka::source_group_id(database, name),
                                                         kafka::kDeleteGroupTimeoutMs);
    if (!why.empty()) PG_RETURN_DATUM(text_datum(why));
    PG_RETURN_NULL();
}
