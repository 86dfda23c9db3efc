// Implements phasekey/migrate.h.
#include <pqxx/connection>
#include <pqxx/nontransaction>
#include <pqxx/transaction>

#include <algorithm>
#include <fmt/format.h>

#include "pg/conninfo.h"
#include "pg/db_failure.h"
#include "phasekey/migrate.h"
#include "sql/sql_catalog.h"

namespace phasekey {
namespace sql {
extern const SqlFile kEngineMigrationFiles[];
extern const std::size_t kEngineMigrationFiles_count;
}  // namespace sql

namespace {

using sql::Query;

int CurrentVersion(pqxx::connection& conn, std::string_view component) {
  pqxx::nontransaction tx(conn);
  if (!tx.exec_params1(Query("MigrationTableExists"))[0].as<bool>()) return 0;
  return tx.exec_params1(Query("MigrationCurrentVersion"), std::string(component))[0].as<int>();
}

void Apply(pqxx::connection& conn, const std::string& component, const Migration& m) {
  pqxx::work tx(conn);
  tx.exec(m.sql);
  tx.exec_params0(Query("MigrationRecord"), component, m.version, m.name);
  tx.commit();
}

// Runs under the advisory lock. Returns the report or a refusal.
Result<MigrateReport> ApplyMissing(pqxx::connection& conn, const MigrationSet& set) {
  {
    pqxx::nontransaction tx(conn);
    tx.exec0(Query("MigrationBootstrapSchema"));
    tx.exec0(Query("MigrationBootstrapTable"));
  }
  MigrateReport report;
  report.version_before = CurrentVersion(conn, set.component);
  if (report.version_before > set.LatestVersion()) {
    return Status::FailedPrecondition(fmt::format(
        "database schema of '{}' is at version {}, newer than this binary knows ({}); "
        "upgrade phasekey before running it against this database",
        set.component, report.version_before, set.LatestVersion()));
  }
  for (const auto& m : set.migrations) {
    if (m.version <= report.version_before) continue;
    Apply(conn, set.component, m);
    report.applied.push_back(m.version);
  }
  report.version_after = CurrentVersion(conn, set.component);
  return report;
}

Status ToMigrateStatus(std::string_view what) {
  pg::DbFailure f = pg::ClassifyDbException(std::current_exception(), pg::CallStage::kBeforeCommit, false);
  if (f.sqlstate == "55P03") return Status::Retryable(fmt::format("{}: another migrator holds the lock: {}", what, f.message));
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
  try {
    pqxx::nontransaction tx(*conn);
    tx.exec_params(Query("MigrationSetLockTimeout"), std::to_string(options.lock_wait.count()) + "ms");
    tx.exec(Query("MigrationLock"));
  } catch (...) {
    return ToMigrateStatus("cannot take the migration lock");
  }
  Result<MigrateReport> report = Status::Terminal("not run");
  try {
    report = ApplyMissing(*conn, set);
  } catch (...) {
    report = ToMigrateStatus(fmt::format("migrating '{}' failed", set.component));
  }
  // The lock is session-level; closing the connection releases it in any case.
  conn.reset();
  return report;
}

Result<int> SchemaVersion(std::string_view database_url, std::string_view component) {
  try {
    pqxx::connection conn(pg::HardenConnInfo(database_url, DatabaseOptions{}));
    return CurrentVersion(conn, component);
  } catch (...) {
    return ToMigrateStatus("cannot read the schema version");
  }
}

}  // namespace phasekey
