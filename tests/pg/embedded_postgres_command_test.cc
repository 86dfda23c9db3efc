// `phasekey embedded-postgres` and `phasekey --version` as a user runs them:
// a real process. The command hands its child the libpq variables (psql
// needs no arguments) and uses a server another process already runs in the
// same folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "phasekey/tools/embedded_postgres.h"
#include "support/child_process.h"

namespace phasekey {
namespace {

namespace fs = std::filesystem;
using testing::RunResult;
using testing::RunToEnd;

// The version defined once, in the top-level project() call.
std::string ProjectVersion() {
  std::ifstream in(std::string(PHASEKEY_SOURCE_DIR) + "/CMakeLists.txt");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"(project\(phasekey VERSION ([0-9]+\.[0-9]+\.[0-9]+))"))) return "";
  return m[1];
}

class EmbeddedPostgresCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    pg_dir_ = std::string(PHASEKEY_TEST_BINARY_DIR) + "/epg-cli/" + info->name() + "-" + std::to_string(getpid());
    fs::remove_all(pg_dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(pg_dir_, ec);
  }

  RunResult RunWithServer(const std::vector<std::string>& command) {
    std::vector<std::string> argv = {PHASEKEY_CLI_PATH, "embedded-postgres", "--pg-dir", pg_dir_, "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    return RunToEnd(argv);
  }

  std::string pg_dir_;
};

TEST(PhasekeyCliTest, VersionPrintsTheProjectVersion) {
  const std::string version = ProjectVersion();
  ASSERT_FALSE(version.empty());

  const RunResult r = RunToEnd({PHASEKEY_CLI_PATH, "--version"});

  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "phasekey " + version + "\n");
}

// The password reaches the command (DATABASE_URL, PGPASSFILE) but not the
// terminal: the printed URL names the password file instead.
TEST_F(EmbeddedPostgresCommandTest, GivesTheCommandTheLibpqVariables) {
  const RunResult r = RunWithServer(
      {"sh", "-c", "echo \"$PGHOST $PGPORT $PGUSER $PGDATABASE $PGPASSFILE\"; echo \"url=$DATABASE_URL\""});

  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.out, m, std::regex(R"(^DATABASE_URL=(\S+)\n127\.0\.0\.1 ([0-9]+) postgres postgres (\S+)\nurl=(\S+)\n)")))
      << r.out;
  const std::string passfile = pg_dir_ + "/pgpass";
  EXPECT_EQ(m[1].str(), "postgresql://postgres@127.0.0.1:" + m[2].str() + "/postgres?passfile=" + passfile);
  EXPECT_EQ(m[3].str(), passfile);
  std::ifstream in(passfile);
  std::string line;
  std::getline(in, line);
  const std::string password = line.substr(line.rfind(':') + 1);
  ASSERT_EQ(password.size(), 64u) << line;
  EXPECT_EQ(m[4].str(), "postgresql://postgres:" + password + "@127.0.0.1:" + m[2].str() + "/postgres");
  EXPECT_EQ(r.out.find(password), r.out.find("url=") + 26) << "the password is printed only in the child's URL:\n"
                                                           << r.out;
}

TEST_F(EmbeddedPostgresCommandTest, ShowPasswordPrintsTheUrlWithThePassword) {
  const RunResult r = RunToEnd({PHASEKEY_CLI_PATH, "embedded-postgres", "--pg-dir", pg_dir_, "--show-password", "--",
                                "sh", "-c", "echo \"url=$DATABASE_URL\""});

  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex(R"(^DATABASE_URL=(\S+)\nurl=(\S+)\n)"))) << r.out;
  EXPECT_EQ(m[1].str(), m[2].str());
  EXPECT_TRUE(
      std::regex_match(m[1].str(), std::regex(R"(postgresql://postgres:[0-9a-f]{64}@127\.0\.0\.1:[0-9]+/postgres)")))
      << m[1];
}

TEST_F(EmbeddedPostgresCommandTest, PsqlConnectsWithoutArguments) {
  if (access("/usr/lib/postgresql/15/bin/psql", X_OK) != 0) GTEST_SKIP() << "psql (postgresql-15) is not installed";

  const RunResult r = RunWithServer({"/usr/lib/postgresql/15/bin/psql", "-X", "-A", "-t", "-c", "select 40 + 2"});

  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\n42\n"), std::string::npos) << r.out;
}

TEST_F(EmbeddedPostgresCommandTest, UsesTheServerAnotherProcessRunsInTheFolder) {
  EmbeddedPostgresOptions options;
  options.base_dir = pg_dir_;
  auto running = EmbeddedPostgres::Start(options);
  ASSERT_TRUE(running.has_value()) << running.error().message();

  const RunResult r = RunWithServer({"sh", "-c", "echo \"port=$PGPORT\""});

  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("port=" + std::to_string((*running)->port()) + "\n"), std::string::npos) << r.out;
  // The command did not stop a server it did not start.
  EXPECT_EQ(RunToEnd({"/usr/lib/postgresql/15/bin/pg_isready", "-q", "-h", "127.0.0.1", "-p",
                      std::to_string((*running)->port())})
                .exit_code,
            0);
}

TEST_F(EmbeddedPostgresCommandTest, ExitsWithTheCommandsStatus) {
  EXPECT_EQ(RunWithServer({"sh", "-c", "exit 7"}).exit_code, 7);
}

}  // namespace
}  // namespace phasekey
