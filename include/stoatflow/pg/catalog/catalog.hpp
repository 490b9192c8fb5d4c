// The catalog as C++ values: a source and its aggregations as declared in the tables of
// schema stoatflow, loaded through SPI.
#pragma once

#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/column_list.hpp"
#include "stoatflow/core/window_spec.hpp"
#include "stoatflow/core/windowed_aggregation.hpp"
#include "stoatflow/format/row_decoder.hpp"

#include <optional>
#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"

namespace stoatflow::pg {

struct SourceDef {
    std::int32_t id = 0;
    std::string name;
    std::string topic;                // as shown: the topics, joined by ", "
    std::vector<std::string> topics;  // in declared order; a TopicPartition's topic indexes this
    std::string brokers, format;
    std::string key_path;         // empty: Kafka message key
    std::string event_time_path;  // empty: Kafka timestamp
    core::Millis max_out_of_orderness = 0;
    core::Millis idle_timeout = 0;              // 0: never idle
    std::size_t max_key_bytes = 0;              // 0: unlimited (stoatflow.max_key_bytes)
    core::Millis future_limit = core::kNoTime;  // create_source(future_limit); kNoTime: off
    std::string start_offset;
    std::vector<std::pair<std::string, std::string>> kafka_options;
    // With columns (README "Expressions and PostgreSQL aggregates"): the declared columns (types as
    // stored); key_path and event_time_path then name columns (empty: kafka_key, kafka_timestamp).
    bool has_columns = false;
    std::vector<core::ColumnDecl> columns;
    std::string columns_json;  // stoatflow.source.columns as stored (for the analysis)
    std::vector<format::FormatOption> format_options;  // with columns: as stored
    Oid owner = InvalidOid;  // created_by: user code of the row type (input functions) runs as it
};

// format_options (a jsonb object, as text) as the format room checks them
// (format::parse_record_format), keys in order. Not an object: one option named "" (refused).
std::vector<format::FormatOption> read_format_options(const std::string& options_json);

struct AggregationDef {
    std::int32_t id = 0;
    std::string name;
    core::WindowSpec spec;
    std::vector<core::AggSpec> aggregates;
    core::EmitStrategy emit = core::EmitStrategy::OnWindowUpdate;
    // The emit strategy its committed state was written under (aggregation_progress.state_emit;
    // nullopt before the first commit). spec.closed_through is what that state had closed
    // (closed_through_ms). Both differ from the definition after alter_aggregation only (README
    // "Altering an aggregation").
    std::optional<core::EmitStrategy> committed_emit;
    core::Millis retention = 0;
    core::Millis segment_interval = 0;
    Oid sink = InvalidOid;    // as recorded; see resolve_sink()
    std::string sink_schema;  // the sink's name, to find it again after a re-creation
    std::string sink_table;
    Oid owner = InvalidOid;
    // Run by PostgreSQL's executor (README "Expressions and PostgreSQL aggregates"): aggregates is
    // then the declared SELECT list, analyzed again when the worker starts (analyze.hpp), and
    // `aggregates` above is empty.
    bool executor = false;
    std::int32_t source_id = 0;
    // A roll-up (README "Roll-ups"): the aggregation whose closed windows are its records (of the
    // same source, created before it); 0: an aggregation of the source's records.
    std::int32_t upstream_id = 0;
    std::string aggregates_text;
    std::optional<std::string> group_by, filter;
};

core::WindowSpec window_spec_from(const std::string& kind, core::Millis size, core::Millis advance,
                                  core::Millis grace);
// Catalog spelling of an aggregate function ('count_star', 'sum', ...) and back.
const char* agg_fn_catalog_name(core::AggFn fn);
core::AggFn agg_fn_from_catalog(const std::string& name);
std::vector<core::AggSpec> parse_aggregates(const std::string& text);
// The SQL type of an aggregate's column (sink, window_state, the declarations' shape checks).
struct SqlType {
    Oid oid;
    const char* name;  // as format_type() spells it
};
SqlType sql_type(core::ColumnType t);

// The ordinal of a topic of the source, -1 if it is not one of them.
std::int32_t topic_index(const SourceDef& source, const std::string& topic);

// Loaders (SPI must be connected). Throw Error 42704 when the name is unknown.
SourceDef load_source(const std::string& name);
std::optional<SourceDef> load_source_by_id(std::int32_t id);
std::vector<AggregationDef> load_aggregations(std::int32_t source_id);
AggregationDef load_aggregation(const std::string& name);

}  // namespace stoatflow::pg
