// The module's entry: PG_MODULE_MAGIC, _PG_init (which insists on shared_preload_libraries),
// the server settings, and stoatflow.version().
#include <climits>

#include "stoatflow/pg/border/guard.hpp"
#include "stoatflow/pg/settings.hpp"
#include "stoatflow/pg/worker/worker.hpp"

extern "C" {
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

void _PG_init(void);
}

#ifndef STOATFLOW_VERSION
#error "STOATFLOW_VERSION must be defined by the build (Makefile reads stoatflow.control)"
#endif

namespace stoatflow::pg {

int commit_interval_ms = kCommitIntervalDefaultMs;
int catchup_commit_interval_ms = kCatchupCommitIntervalDefaultMs;
bool log_commits = false;
int max_key_bytes = kMaxKeyBytesDefault;
int worker_memory_limit_kb = kWorkerMemoryLimitDefaultKb;
int user_code_timeout = kUserCodeTimeoutDefaultMs;
char* database_name = nullptr;

void define_settings() {
    DefineCustomIntVariable(
        "stoatflow.commit_interval", "How often a source's worker commits consumed records.",
        "Window state, sink rows, dead letters and Kafka offsets are written "
        "in one transaction per interval.",
        &commit_interval_ms, kCommitIntervalDefaultMs, kCommitIntervalMinMs, kCommitIntervalMaxMs,
        PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "stoatflow.catchup_commit_interval",
        "How often a source's worker commits while it is far behind its topic.",
        "Used instead of stoatflow.commit_interval while many records (core::CommitPolicy) wait to be "
        "consumed; 0 (or a value not above commit_interval) commits every commit_interval.",
        &catchup_commit_interval_ms, kCatchupCommitIntervalDefaultMs, 0,
        kCatchupCommitIntervalMaxMs, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomBoolVariable(
        "stoatflow.log_commits", "Logs each commit of a source's worker.",
        "One LOG line per commit: records, changed window state (rows, bytes), sink rows "
        "and deletes, dead letters, and how long the commit took.",
        &log_commits, false, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "stoatflow.max_key_bytes", "Longest grouping key a record may have, in bytes.",
        "A record with a longer key goes to stoatflow.dead_letters (reason key_too_long).",
        &max_key_bytes, kMaxKeyBytesDefault, kMaxKeyBytesMin, kMaxKeyBytesMax, PGC_SIGHUP, 0,
        nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "stoatflow.worker_memory_limit",
        "Memory a source worker may use before it stops consuming.",
        "Past it the source shows status error naming the aggregation that holds the most state, "
        "instead of growing until the kernel kills it. 0 turns the limit off.",
        &worker_memory_limit_kb, kWorkerMemoryLimitDefaultKb, 0, MAX_KILOBYTES, PGC_SIGHUP,
        GUC_UNIT_KB, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "stoatflow.user_code_timeout", "Longest time one call of an owner's code may run.",
        "An expression or aggregate support function of an aggregation running longer is "
        "cancelled: the record becomes a dead letter of that aggregation (user_code_timeout). "
        "0 turns the limit off.",
        &user_code_timeout, kUserCodeTimeoutDefaultMs, 0, kUserCodeTimeoutMaxMs, PGC_SIGHUP,
        GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomStringVariable(
        "stoatflow.database", "Database the stoatflow background worker connects to.", nullptr,
        &database_name, kDatabaseDefault, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    MarkGUCPrefixReserved("stoatflow");
}

}  // namespace stoatflow::pg

// Plain C-style code on purpose: no C++ object is alive here, so an ERROR may longjmp through.
void _PG_init(void) {
    // The worker is registered here, and static background workers can only be registered
    // while the postmaster loads shared_preload_libraries. CREATE EXTENSION loads the library
    // too, so without the preload it fails with this message.
    if (!process_shared_preload_libraries_in_progress)
        ereport(
            ERROR,
            (errcode(stoatflow::pg::pg_errcode(stoatflow::sqlstate::kObjectNotInPrerequisiteState)),
             errmsg("stoatflow must be loaded via shared_preload_libraries"),
             errhint("Add stoatflow to shared_preload_libraries in postgresql.conf and "
                     "restart the server.")));

    stoatflow::pg::define_settings();
    stoatflow::pg::register_launcher();
}

STOATFLOW_FUNCTION(stoatflow_version) { return CStringGetTextDatum(STOATFLOW_VERSION); }
