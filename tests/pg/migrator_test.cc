#include "phasekey/migrate.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <thread>
#include <vector>

#include "support/pgbouncer.h"
#include "support/prerequisites.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

int CountRows(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  return tx.exec1(sql)[0].as<int>();
}

TEST(MigratorTest, MigratesAnEmptyDatabaseToTheLatestVersion) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  auto report = Migrate(db.url(), EngineMigrations());
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->version_before, 0);
  EXPECT_EQ(report->version_after, EngineMigrations().LatestVersion());
  EXPECT_EQ(report->applied.size(), EngineMigrations().migrations.size());
  EXPECT_EQ(CountRows(db.url(), "SELECT count(*) FROM phasekey.idempotency_keys"), 0);
  auto version = SchemaVersion(db.url(), "phasekey");
  ASSERT_TRUE(version.has_value());
  EXPECT_EQ(*version, EngineMigrations().LatestVersion());
}

TEST(MigratorTest, RunningTwiceAppliesNothingTheSecondTime) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  ASSERT_TRUE(Migrate(db.url(), EngineMigrations()).has_value());
  auto again = Migrate(db.url(), EngineMigrations());
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_TRUE(again->applied.empty());
  EXPECT_EQ(again->version_before, again->version_after);
}

TEST(MigratorTest, ConcurrentMigratorsApplyEachVersionExactlyOnce) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  constexpr int kMigrators = 6;
  std::vector<std::thread> threads;
  std::vector<Status> results(kMigrators);
  std::vector<std::size_t> applied(kMigrators);
  for (int i = 0; i < kMigrators; ++i) {
    threads.emplace_back([&, i] {
      auto r = Migrate(db.url(), EngineMigrations());
      results[i] = r ? Status::OK() : r.error();
      applied[i] = r ? r->applied.size() : 0;
    });
  }
  for (auto& t : threads) t.join();
  std::size_t total = 0;
  for (int i = 0; i < kMigrators; ++i) {
    EXPECT_TRUE(results[i].ok()) << results[i].ToString();
    total += applied[i];
  }
  EXPECT_EQ(total, EngineMigrations().migrations.size());
  EXPECT_EQ(CountRows(db.url(), "SELECT count(*) FROM phasekey.schema_migrations"),
            static_cast<int>(EngineMigrations().migrations.size()));
}

TEST(MigratorTest, RefusesADatabaseNewerThanTheBinary) {
  TestDatabase db(TestDatabase::Schema::kMigrated);
  {
    pqxx::connection conn(db.url());
    pqxx::work tx(conn);
    tx.exec0("INSERT INTO phasekey.schema_migrations (component, version, name) VALUES ('phasekey', 999, 'future')");
    tx.commit();
  }
  auto report = Migrate(db.url(), EngineMigrations());
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(report.error().message().find("version 999"), std::string::npos) << report.error().ToString();
}

// A development database migrated before the baseline replaced the first
// migrations records their names: this binary's version 1 is another
// migration, so it refuses the database (whatever its version number, even
// one this binary has reached) instead of building on a schema its
// migrations do not describe.
TEST(MigratorTest, RefusesADatabaseMigratedByAnotherHistoryOfMigrations) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  const SqlFile before_the_baseline[] = {{"0001_idempotency_keys.sql", "SELECT 1;"},
                                         {"0002_staged_jobs.sql", "SELECT 1;"}};
  ASSERT_TRUE(Migrate(db.url(), *MigrationSetFromFiles("phasekey", before_the_baseline)).has_value());
  ASSERT_NE(EngineMigrations().migrations.front().name, "idempotency_keys");

  auto report = Migrate(db.url(), EngineMigrations());
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().code(), StatusCode::kFailedPrecondition) << report.error().ToString();
  EXPECT_NE(report.error().message().find("records version 1 as 'idempotency_keys'"), std::string::npos)
      << report.error().ToString();
  EXPECT_NE(report.error().message().find("recreated"), std::string::npos) << report.error().ToString();
  EXPECT_EQ(CountRows(db.url(), "SELECT count(*) FROM phasekey.schema_migrations"), 2);
  EXPECT_EQ(CountRows(db.url(),
                      "SELECT count(*) FROM pg_tables WHERE schemaname = 'phasekey' "
                      "AND tablename = 'idempotency_keys'"),
            0);
}

TEST(MigratorTest, AppliesAnApplicationsOwnMigrationsBesideTheEngines) {
  TestDatabase db(TestDatabase::Schema::kMigrated);
  const SqlFile files[] = {{"0002_add_col.sql", "ALTER TABLE app_things ADD COLUMN note text;"},
                           {"0001_things.sql", "CREATE TABLE app_things (id int PRIMARY KEY);"}};
  auto set = MigrationSetFromFiles("app", files);
  ASSERT_TRUE(set.has_value()) << set.error().ToString();
  auto report = Migrate(db.url(), *set);
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->applied, (std::vector<int>{1, 2}));
  EXPECT_EQ(*SchemaVersion(db.url(), "app"), 2);
  EXPECT_EQ(*SchemaVersion(db.url(), "phasekey"), EngineMigrations().LatestVersion());
}

TEST(MigratorTest, AFailingMigrationLeavesNothingBehind) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  const SqlFile files[] = {{"0001_ok.sql", "CREATE TABLE good (id int);"},
                           {"0002_bad.sql", "CREATE TABLE half (id int); SELECT no_such_function();"}};
  auto report = Migrate(db.url(), *MigrationSetFromFiles("app", files));
  ASSERT_FALSE(report.has_value());
  EXPECT_TRUE(report.error().IsTerminal()) << report.error().ToString();
  EXPECT_EQ(*SchemaVersion(db.url(), "app"), 1);
  EXPECT_EQ(CountRows(db.url(), "SELECT count(*) FROM pg_tables WHERE tablename = 'half'"), 0);
}

TEST(MigratorTest, RejectsBadMigrationFileNames) {
  const SqlFile files[] = {{"first.sql", "SELECT 1;"}};
  EXPECT_FALSE(MigrationSetFromFiles("app", files).has_value());
  const SqlFile dup[] = {{"0001_a.sql", "SELECT 1;"}, {"0001_b.sql", "SELECT 1;"}};
  EXPECT_FALSE(MigrationSetFromFiles("app", dup).has_value());
}

TEST(MigratorTest, ReportsAnUnreachableServerClearly) {
  auto report = Migrate("postgresql://nobody@127.0.0.1:1/none", EngineMigrations());
  ASSERT_FALSE(report.has_value());
  EXPECT_NE(report.error().message().find("cannot connect"), std::string::npos) << report.error().ToString();
}

// Through PgBouncer in transaction mode (one server connection), a
// session-level advisory lock outlives its client on the pooled server
// session: asserted first, so the test knows its pooler keeps sessions. A
// migration through it still leaves no lock behind (the engine's session
// lock did: every later migrator on another server connection then failed
// with "another migrator holds the lock"), and a second one goes through.
TEST(MigratorTest, ThroughATransactionPoolerAMigrationLeavesNoLockBehind) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  auto bouncer = testing::PgBouncer::Start(db.url());
  if (!bouncer) PHASEKEY_SKIP_OR_FAIL_IN_CI() << bouncer.error().message();
  const std::string held =
      "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
      "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())";
  auto through_bouncer = [&](const std::string& sql) {
    pqxx::connection client((*bouncer)->url());
    pqxx::nontransaction(client).exec(sql);
  };
  through_bouncer("SELECT pg_advisory_lock(42)");
  ASSERT_EQ(db.Value(held), "1") << "the pooler did not keep the session: nothing to prove\n" << (*bouncer)->Log();
  through_bouncer("SELECT pg_advisory_unlock(42)");
  ASSERT_EQ(db.Value(held), "0");

  auto first = Migrate((*bouncer)->url(), EngineMigrations());
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(first->version_after, EngineMigrations().LatestVersion());
  EXPECT_EQ(db.Value(held), "0") << "the migration lock outlived the migrator";
  MigrateOptions quick;
  quick.lock_wait = std::chrono::seconds(2);
  auto second = Migrate((*bouncer)->url(), EngineMigrations(), quick);
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  EXPECT_TRUE(second->applied.empty());
}

}  // namespace
}  // namespace phasekey
