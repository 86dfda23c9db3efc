// Implements phasekey/migrate.h.
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/result>
#include <pqxx/transaction>

#include <fmt/format.h>
#include <algorithm>

#include "pg/conninfo.h"
#include "pg/db_failure.h"
#include "pg/statements.h"
#include "phasekey/migrate.h"
#include "sql/sql_catalog.h"

namespace phasekey {
namespace sql {
extern const SqlFile kEngineMigrationFiles[];
extern const std::size_t kEngineMigrationFiles_count;
}  // namespace sql

namespace {

int CurrentVersion(pqxx::transaction_base& tx, std::string_view component) {
  if (!pg::Exec1(tx, sql::q::MigrationTableExists)[0].as<bool>()) return 0;
  return pg::Exec1(tx, sql::q::MigrationCurrentVersion, std::string(component))[0].as<int>();
}

// FailedPrecondition when a version the database records for the component
// was applied under another name than this binary's migration of that
// version: the database was migrated by another history of migrations (a
// development database from before a baseline replaced the first ones), and
// applying this binary's would build on a schema it does not describe.
Status CheckSameHistory(pqxx::transaction_base& tx, const MigrationSet& set) {
  for (const auto& row : pg::Exec(tx, sql::q::MigrationHistory, set.component)) {
    const int version = row[0].as<int>();
    const std::string name = row[1].as<std::string>();
    auto ours = std::find_if(set.migrations.begin(), set.migrations.end(),
                             [&](const Migration& m) { return m.version == version; });
    if (ours == set.migrations.end() || ours->name == name) continue;
    return Status::FailedPrecondition(
        fmt::format("database schema of '{}' records version {} as '{}', but this binary's version {} is '{}': the "
                    "database was migrated by another history of migrations; a database from before the baseline "
                    "migration (pre-release) must be recreated (docs/upgrading.md)",
                    set.component, version, name, version, ours->name));
  }
  return Status::OK();
}

// Where a migration transaction failed: taking the lock, or after it.
enum class Stage { kLocking, kMigrating };

// One transaction holding the migration lock: reads the version and applies
// the first missing migration, if any. Each migration commits on its own
// (ALTER TYPE ... ADD VALUE cannot be used in the transaction that adds it);
// the lock lives exactly as long as the transaction, so nothing of it
// outlives a migrator that dies, even behind a transaction-mode pooler.
// Returns false when nothing was missing; fills report->version_before on
// the first call.
Result<bool> ApplyNext(pqxx::connection& conn, const MigrationSet& set, const MigrateOptions& options,
                       MigrateReport* report, Stage* stage) {
  *stage = Stage::kLocking;
  pqxx::work tx(conn);
  pg::Exec(tx, sql::q::MigrationSetLockTimeout, std::to_string(options.lock_wait.count()) + "ms");
  pg::Exec(tx, sql::q::MigrationLock);
  *stage = Stage::kMigrating;
  pg::Exec0(tx, sql::q::MigrationBootstrapSchema);
  pg::Exec0(tx, sql::q::MigrationBootstrapTable);
  const int version = CurrentVersion(tx, set.component);
  if (report->version_before < 0) report->version_before = version;
  if (Status same = CheckSameHistory(tx, set); !same.ok()) return same;
  if (version > set.LatestVersion()) {
    return Status::FailedPrecondition(
        fmt::format("database schema of '{}' is at version {}, newer than this binary knows ({}); "
                    "upgrade phasekey before running it against this database",
                    set.component, version, set.LatestVersion()));
  }
  report->version_after = version;
  auto next = std::find_if(set.migrations.begin(), set.migrations.end(),
                           [&](const Migration& m) { return m.version > version; });
  if (next == set.migrations.end()) {
    tx.commit();
    return false;
  }
  tx.exec(next->sql);
  pg::Exec0(tx, sql::q::MigrationRecord, set.component, next->version, next->name);
  tx.commit();
  report->applied.push_back(next->version);
  report->version_after = next->version;
  return true;
}

Status ToMigrateStatus(std::string_view what) {
  pg::DbFailure f = pg::ClassifyDbException(std::current_exception(), pg::CallStage::kBeforeCommit, false);
  if (f.sqlstate == "55P03")
    return Status::Retryable(fmt::format("{}: another migrator holds the lock: {}", what, f.message));
  Status s = pg::ToStatus(f);
  return s.IsRetryable() ? Status::Retryable(fmt::format("{}: {}", what, s.message()))
                         : Status::Terminal(fmt::format("{}: {}", what, s.message()));
}

}  // namespace

Result<MigrationSet> MigrationSetFromFiles(std::string component, std::span<const SqlFile> files) {
  MigrationSet set;
  set.component = std::move(component);
  for (const auto& f : files) {
    Migration m;
    std::string error;
    if (!sql::ParseMigration(f, &m, &error)) return Status::InvalidArgument(error);
    set.migrations.push_back(std::move(m));
  }
  std::sort(set.migrations.begin(), set.migrations.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  for (std::size_t i = 1; i < set.migrations.size(); ++i) {
    if (set.migrations[i].version == set.migrations[i - 1].version) {
      return Status::InvalidArgument(fmt::format("two migrations with version {}", set.migrations[i].version));
    }
  }
  return set;
}

const MigrationSet& EngineMigrations() {
  static const MigrationSet set = [] {
    auto r = MigrationSetFromFiles(
        "phasekey", std::span<const SqlFile>(sql::kEngineMigrationFiles, sql::kEngineMigrationFiles_count));
    if (!r) {
      std::fprintf(stderr, "phasekey: broken engine migrations: %s\n", r.error().message().c_str());
      std::abort();
    }
    return std::move(r).value();
  }();
  return set;
}

Result<MigrateReport> Migrate(std::string_view database_url, const MigrationSet& set, const MigrateOptions& options) {
  if (set.component.empty()) return Status::InvalidArgument("migration set has no component name");
  std::optional<pqxx::connection> conn;
  try {
    conn.emplace(pg::HardenConnInfo(database_url, DatabaseOptions{}));
  } catch (...) {
    return ToMigrateStatus(fmt::format("cannot connect to {}", pg::RedactConnInfo(database_url)));
  }
  const pg::ScopedStatementMode unprepared(pg::StatementMode::kUnprepared);  // nothing is prepared on `conn`
  MigrateReport report;
  report.version_before = -1;
  Stage stage = Stage::kLocking;
  try {
    for (;;) {
      Result<bool> applied = ApplyNext(*conn, set, options, &report, &stage);
      if (!applied) return applied.error();
      if (!*applied) return report;
    }
  } catch (...) {
    if (stage == Stage::kLocking) return ToMigrateStatus("cannot take the migration lock");
    return ToMigrateStatus(fmt::format("migrating '{}' failed", set.component));
  }
}

Result<int> SchemaVersion(std::string_view database_url, std::string_view component) {
  const pg::ScopedStatementMode unprepared(pg::StatementMode::kUnprepared);  // nothing is prepared on `conn`
  try {
    pqxx::connection conn(pg::HardenConnInfo(database_url, DatabaseOptions{}));
    pqxx::nontransaction tx(conn);
    return CurrentVersion(tx, component);
  } catch (...) {
    return ToMigrateStatus("cannot read the schema version");
  }
}

}  // namespace phasekey
