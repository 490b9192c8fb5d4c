// The background workers: one launcher (registered in _PG_init) that keeps one source
// worker running per source of the configured database, and the source worker itself.
#pragma once

namespace stoatflow::pg {

// Registers the launcher (and its shared memory); called from _PG_init while
// shared_preload_libraries loads.
void register_launcher();
// Wakes the launcher when the current transaction commits (sources changed).
void wake_launcher_at_commit();

}  // namespace stoatflow::pg
