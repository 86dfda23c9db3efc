// `phasekey migrate` as an operator runs it: a real process.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

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

TEST(MigrateCommandTest, RejectsAnUnknownFlagWithAUsageError) {
  CliRun r = RunCli("migrate --no-such-flag");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("no-such-flag"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace phasekey
