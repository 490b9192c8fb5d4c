// The server settings (GUCs) stoatflow defines, and their limits: one place for each.
// Registered by _PG_init (src/pg/stoatflow.cpp); read anywhere in the PostgreSQL layer.
#pragma once

namespace stoatflow::pg {

// stoatflow.commit_interval: how often a source's worker commits, in milliseconds (SIGHUP).
constexpr int kCommitIntervalDefaultMs = 1000;
constexpr int kCommitIntervalMinMs = 10;
constexpr int kCommitIntervalMaxMs = 60 * 60 * 1000;

// stoatflow.catchup_commit_interval: the commit interval while a source is far behind the
// end of its topic (core::CommitPolicy); 0 or anything not above commit_interval turns it
// off (SIGHUP).
constexpr int kCatchupCommitIntervalDefaultMs = 10000;
constexpr int kCatchupCommitIntervalMaxMs = 60 * 60 * 1000;

// stoatflow.log_commits: one LOG line per commit (what it wrote, how long it took) (SIGHUP).

// stoatflow.max_key_bytes: a record whose grouping key is longer is a dead letter (key_too_long)
// instead of an index entry the sink's B-tree cannot hold (a B-tree row must fit a third of
// a page: 2,704 bytes with the window start) (SIGHUP; a worker reads it when it starts).
constexpr int kMaxKeyBytesDefault = 1024;
constexpr int kMaxKeyBytesMin = 1;
constexpr int kMaxKeyBytesMax = 2048;

// stoatflow.worker_memory_limit, in kB: past it a source worker stops consuming (status
// 'error') instead of growing until the kernel's OOM killer restarts the whole server. 0: none.
constexpr int kWorkerMemoryLimitDefaultKb = 1024 * 1024;  // 1 GB

// stoatflow.user_code_timeout, in ms: each call of code an owner wrote (an expression, an aggregate
// support function, ...) that runs longer is cancelled and becomes a dead letter of its
// aggregation (user_code_timeout). 0: no limit (SIGHUP).
constexpr int kUserCodeTimeoutDefaultMs = 1000;
constexpr int kUserCodeTimeoutMaxMs = 60 * 60 * 1000;

// stoatflow.database: the database the background worker connects to (postmaster start).
constexpr const char* kDatabaseDefault = "postgres";

extern int commit_interval_ms;
extern int catchup_commit_interval_ms;
extern bool log_commits;
extern int max_key_bytes;
extern int worker_memory_limit_kb;
extern int user_code_timeout;
extern char* database_name;

// Defines the settings above; called once from _PG_init.
void define_settings();

}  // namespace stoatflow::pg
