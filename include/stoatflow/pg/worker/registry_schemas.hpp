// A running source's writer schemas from its schema registry (README "Formats"): the format
// room's SchemaSource (format/schema_source.hpp) over the registry room's cache
// (registry/schema_cache.hpp), which fetches off the hot path and retries with backoff. Here,
// because the PostgreSQL layer is the room that may include both (src/README.md); it calls no
// PostgreSQL function itself.
#pragma once

#include <memory>
#include <string>

#include "stoatflow/format/row_decoder.hpp"
#include "stoatflow/format/schema_source.hpp"

namespace stoatflow::pg {

// The schemas of a format read through a registry (format.uses_registry()), nullptr for any
// other. Throws Error 22023 for a URL the registry client will not use (registry::check_url).
// internal_ok: the source's owner may reach internal addresses (declare::may_read_server_files);
// else the client connects to none, whatever the host resolves to (README "Security").
std::shared_ptr<format::SchemaSource> registry_schemas(const format::RecordFormat& format,
                                                       bool internal_ok);

// A URL the registry client will use (registry::check_url), else Error 22023 naming what is
// wrong (the declaration's check and the worker's alike).
void check_registry_url_syntax(const std::string& url);

}  // namespace stoatflow::pg
