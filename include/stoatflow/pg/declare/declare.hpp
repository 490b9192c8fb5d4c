// The declarations in C++ (README "create_source", "create_aggregation"): the SQL functions
// create_source and create_aggregation are thin shells over create_source() and
// create_aggregation() here, which check, route, write the catalog and create the sink. The
// helpers below are the rules they share with the other SQL helpers (one owner each).
#pragma once

#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <optional>
#include <string>
#include <vector>

#include "stoatflow/pg/border/guard.hpp"

namespace stoatflow::pg::declare {

// ---- the requests, as the SQL functions receive them (nullopt: SQL NULL) ----

using OptText = std::optional<std::string>;
using OptMillis = std::optional<core::Millis>;

struct SourceRequest {
    OptText source_name, topic, brokers, format, key, event_time;
    Datum max_out_of_orderness = 0, idle_timeout = 0, future_limit = 0;  // interval, or 0: NULL
    bool has_max_out_of_orderness = false, has_idle_timeout = false, has_future_limit = false;
    OptText start_offset;
    OptText kafka_options;  // jsonb as text
    OptText columns;
    OptText format_options;  // jsonb as text
};

// A stoatflow.window row: kind, size, advance, grace (intervals as Datums; 0: NULL).
struct WindowArg {
    bool is_null = true;
    OptText kind;
    Datum size = 0, advance = 0, grace = 0;
};

struct AggregationRequest {
    OptText aggregation_name, source;
    WindowArg window;
    OptText aggregates, sink, emit;
    Datum retention = 0;  // interval, or 0: NULL
    OptText group_by, filter;
    OptText start_from;  // 'earliest', 'latest', a timestamp, or NULL
};

void create_source(const SourceRequest& request);
void create_aggregation(const AggregationRequest& request);

// ---- shared rules ----

// Milliseconds of an interval (floored); months and years refused (22023, naming `what`).
core::Millis interval_ms(Datum interval, const std::string& what);

// A start position (create_source's start_offset, create_aggregation's start_from): 'earliest',
// 'latest', or a timestamp, returned normalized in UTC ('2026-11-01 00:00:00+00'); anything
// else is refused (22023, naming `what`). README "Backfill and start_from".
std::string start_position(const std::string& value, const std::string& what);

// Source and aggregation names: identifiers a user can type unquoted (42602).
void check_name(const std::string& what, const OptText& name);

// The window as validated by the core, its retention resolved and its segment interval.
struct WindowCheck {
    core::Millis retention = 0;
    core::Millis segment_interval = 0;
};
WindowCheck check_window(const std::string& kind, core::Millis size, core::Millis advance,
                         core::Millis grace, std::optional<core::Millis> retention);

// A stoatflow.window argument (NULL: is_null), and the window it declares, checked and resolved
// as create_aggregation takes it (22004 for a NULL window, 22023 for a bad one): milliseconds,
// the spec, the retention (retention: an interval Datum, 0 for NULL) and segment interval.
WindowArg window_arg(FunctionCallInfo fcinfo, int i);
struct ResolvedWindow {
    std::string kind;
    core::Millis size = 0, advance = 0, grace = 0;
    core::WindowSpec spec;
    WindowCheck check;
};
ResolvedWindow resolve_window(const WindowArg& window, Datum retention);

// A window kind and an emit strategy the core knows (22023); NULL refused as unknown.
void check_names(const OptText& window_kind, const OptText& emit);

// A source's key or event-time field path (without columns), messages prefixed by `what`.
void check_field_path(const std::string& what, const std::string& path);

// The broker list and librdkafka's checks of the options (names and values in order).
void check_kafka_config(const OptText& brokers, const std::vector<std::string>& names,
                        const std::vector<std::string>& values);

// A source's schema registry URL (README "Formats", "Who may point a source where"): one the
// registry client will use (http or https, registry::check_url: 22023), and one whose host is
// the database server itself or an internal network only for a caller who may read the server's
// files (42501), as for kafka_options naming server files. Returns whether the caller may reach
// internal addresses (the worker checks the addresses a host name resolves to by the same rule).
bool check_registry_url(const std::string& url);
// Superusers and members of pg_read_server_files: who may name server files in kafka_options and
// point a source's registry at internal addresses (README "Security").
bool may_read_server_files(Oid role);

// The caller's search_path as schema names (see declare_source.cpp) and as a lookup path.
std::vector<std::string> caller_schemas(bool keep_catalog);
std::string caller_lookup_path();

// A source's column list as stored in stoatflow.source.columns (jsonb text; columns.cpp).
std::string columns_json(const std::string& list);

// One column of a sink as the worker writes it: name, type as format_type spells it, its
// definition for CREATE TABLE, and whether it is part of the key (before window_start).
struct SinkColumn {
    std::string name, type, definition;
    bool is_key = false;
};
// The fast path's sink columns for a parsed 0.1 aggregate list (sink_columns).
std::vector<SinkColumn> fast_sink_columns(const std::vector<core::AggSpec>& specs);
// An existing sink judged at declaration by the rule every write applies (check_sink_shape).
void check_sink(Oid sink, const std::string& display, const std::vector<SinkColumn>& columns);

}  // namespace stoatflow::pg::declare
