// `phasekey migrate` as an operator runs it: a real process.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "phasekey/migrate.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

struct CliRun {
  int exit_code;
  std::string out;
};

CliRun RunCli(const std::string& args) {
  const std::string cmd = std::string(PHASEKEY_CLI_PATH) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  CliRun r{-1, ""};
  if (p == nullptr) return r;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) r.out += buf.data();
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(MigrateCommandTest, PrintsTheSchemaVersionAndIsSafeToRunTwice) {
  testing::TestDatabase db(testing::TestDatabase::Schema::kEmpty);
  const std::string latest = std::to_string(EngineMigrations().LatestVersion());
  CliRun first = RunCli("migrate --database-url '" + db.url() + "'");
  EXPECT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("phasekey schema version " + latest + " (was 0;"), std::string::npos) << first.out;
  CliRun second = RunCli("migrate --database-url '" + db.url() + "'");
  EXPECT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find("applied: none"), std::string::npos) << second.out;
}

TEST(MigrateCommandTest, FailsWithOneLineAndNonZeroExitOnAnUnreachableDatabase) {
  CliRun r = RunCli("migrate --database-url 'postgresql://nobody@127.0.0.1:1/none'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.rfind("phasekey migrate: ", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

// A folder of migration files for an application, removed at the end.
class AppMigrations {
 public:
  AppMigrations() : dir_(std::filesystem::temp_directory_path() / ("pk-app-migrations-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir_);
  }
  ~AppMigrations() { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& sql) const { std::ofstream(dir_ / name) << sql; }
  std::string path() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

TEST(MigrateCommandTest, AppliesAnApplicationsMigrationsAfterTheEnginesOnce) {
  testing::TestDatabase db(testing::TestDatabase::Schema::kEmpty);
  AppMigrations app;
  app.Write("0001_wallets.sql", "CREATE TABLE wallets (account text PRIMARY KEY, balance bigint NOT NULL);");
  app.Write("0002_wallet_limit.sql", "ALTER TABLE wallets ADD COLUMN max_balance bigint;");
  app.Write("README.txt", "not a migration");
  const std::string args = "migrate --database-url '" + db.url() + "' --component wallet --migrations " + app.path();
  CliRun first = RunCli(args);
  EXPECT_EQ(first.exit_code, 0) << first.out;
  EXPECT_NE(first.out.find("phasekey schema version"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("wallet schema version 2 (was 0; applied: 1, 2)"), std::string::npos) << first.out;
  CliRun second = RunCli(args);
  EXPECT_EQ(second.exit_code, 0) << second.out;
  EXPECT_NE(second.out.find("wallet schema version 2 (was 2; applied: none)"), std::string::npos) << second.out;
  auto version = SchemaVersion(db.url(), "wallet");
  ASSERT_TRUE(version.has_value());
  EXPECT_EQ(*version, 2);
}

TEST(MigrateCommandTest, RefusesABadApplicationFolderWithOneLineAndChangesNothing) {
  testing::TestDatabase db(testing::TestDatabase::Schema::kEmpty);
  AppMigrations app;
  app.Write("first.sql", "CREATE TABLE t (x int);");  // no version number
  const std::vector<std::string> bad = {" --component wallet --migrations " + app.path(),
                                        " --component wallet --migrations /nonexistent/folder",
                                        " --component phasekey --migrations " + app.path(), " --component wallet"};
  for (const std::string& extra : bad) {
    CliRun r = RunCli("migrate --database-url '" + db.url() + "'" + extra);
    EXPECT_EQ(r.exit_code, 2) << extra << ": " << r.out;
    EXPECT_EQ(r.out.rfind("phasekey migrate: ", 0), 0u) << extra << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << extra << ": " << r.out;
  }
  for (const char* component : {"wallet", "phasekey"}) {
    auto version = SchemaVersion(db.url(), component);
    ASSERT_TRUE(version.has_value());
    EXPECT_EQ(*version, 0) << component << ": nothing is applied before the folder is known good";
  }
}

TEST(MigrateCommandTest, RejectsAnUnknownFlagWithAUsageError) {
  CliRun r = RunCli("migrate --no-such-flag");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("no-such-flag"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace phasekey
