// Schema migrations: numbered SQL files applied in order, each in its own
// transaction, with the applied versions recorded per component in
// phasekey.schema_migrations.
//
// Safe to run twice (applied versions are skipped) and from several processes
// at once: each migration's transaction takes a transaction-scoped advisory
// lock and reads the version under it, so nothing of a migrator that dies
// outlives its transaction, even through a transaction-mode pooler such as
// PgBouncer. Refuses, with
// kFailedPrecondition and nothing changed, when the database already holds a
// version of the component newer than the binary knows.
#ifndef PHASEKEY_MIGRATE_H_
#define PHASEKEY_MIGRATE_H_

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "phasekey/status.h"

namespace phasekey {

// One SQL file compiled into a binary by the phasekey_embed_sql CMake
// function. Applications embed their own migrations the same way and hand
// them to phasekey::Migrate (below).

// A view of static data: both strings point into the binary and live as
// long as the program.
struct SqlFile {
  std::string_view name;  // base file name, e.g. "0001_idempotency_keys.sql"
  std::string_view text;  // the file's bytes, verbatim
};

// One numbered SQL file of a component.
struct Migration {
  int version = 0;   // from the file name's leading digits, >= 1
  std::string name;  // the file name without the number and ".sql"
  std::string sql;   // may hold several statements
};

// The migrations of one component ("phasekey" for the engine; an
// application picks its own name). Versions are unique and ascending.
struct MigrationSet {
  // The name its versions are recorded under in phasekey.schema_migrations.
  std::string component;
  // In ascending version order.
  std::vector<Migration> migrations;
  // The highest version in the set (the last one's); 0 when it is empty.
  int LatestVersion() const { return migrations.empty() ? 0 : migrations.back().version; }
};

// Builds a set from files named "NNNN_description.sql" (see SqlFile above),
// sorted by version. InvalidArgument on a bad name or a duplicate version.
Result<MigrationSet> MigrationSetFromFiles(std::string component, std::span<const SqlFile> files);

// The engine's own migrations (sql/migrations), component "phasekey".
const MigrationSet& EngineMigrations();

// How Migrate() waits for other migrators.
struct MigrateOptions {
  // How long to wait for another migrator's advisory lock before giving up
  // with kRetryable. Long enough for any of our migrations on a busy server.
  std::chrono::milliseconds lock_wait{60000};
};

// What one Migrate() call found and did.
struct MigrateReport {
  int version_before = 0;    // highest applied version before the call
  int version_after = 0;     // highest applied version after the call
  std::vector<int> applied;  // versions this call applied, ascending
};

// Applies the missing migrations of `set` to the database at `database_url`
// (a libpq URL or key/value string). Blocks; thread-safe (uses its own
// connection).
Result<MigrateReport> Migrate(std::string_view database_url, const MigrationSet& set,
                              const MigrateOptions& options = {});

// The deployment's bucket count (RunnerOptions::buckets), kept in the
// database once migrated: records `buckets` when none is stored (0: the
// default, 16) and returns the stored count. FailedPrecondition, with a
// one-line message, when `buckets` is not 0 and differs from it.
Result<int> DeploymentBuckets(std::string_view database_url, int buckets);

// The highest applied version of `component`, 0 when none (or when the
// bookkeeping table does not exist yet).
Result<int> SchemaVersion(std::string_view database_url, std::string_view component);

}  // namespace phasekey

#endif  // PHASEKEY_MIGRATE_H_
