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

// stoatflow.database: the database the background worker connects to (postmaster start).
constexpr const char* kDatabaseDefault = "postgres";

extern int commit_interval_ms;
extern int catchup_commit_interval_ms;
extern bool log_commits;
extern char* database_name;

// Defines the settings above; called once from _PG_init.
void define_settings();

}  // namespace stoatflow::pg
