// Who can connect to the embedded server (docs/database.md, "Who can
// connect"): another Unix user of the host, made here with useradd, reaches
// it neither over TCP (no password, or a wrong one: the authentication
// fails) nor through the unix socket (its directory is closed to it), and
// cannot read the password file; its owner connects with url(). Needs root
// (useradd, and the server runs as the postgres user); with CI set, a run
// that cannot make the other user fails instead of skipping.
#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "embedded_postgres/embedded_postgres_internal.h"
#include "gtest/gtest.h"
#include "phasekey/tools/embedded_postgres.h"
#include "support/prerequisites.h"

extern char** environ;

namespace phasekey {
namespace {

namespace em = pg::embedded;
namespace fs = std::filesystem;

constexpr char kPsql[] = "/usr/lib/postgresql/15/bin/psql";

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs `argv` (argv[0] a path) to its end with stdout and stderr captured.
Outcome RunCaptured(const std::vector<std::string>& argv) {
  char path[] = "/tmp/phasekey-access-out-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return {};
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fd, 1);
  posix_spawn_file_actions_adddup2(&actions, fd, 2);
  pid_t pid = -1;
  Outcome o;
  if (posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  close(fd);
  std::ifstream in(path);
  o.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  unlink(path);
  return o;
}

std::string QueryValue(const std::string& conninfo, const std::string& sql) {
  pqxx::connection conn(conninfo);
  pqxx::nontransaction tx(conn);
  return tx.exec1(sql)[0].as<std::string>();
}

class EmbeddedPostgresAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    base_dir_ = std::string(PHASEKEY_TEST_BINARY_DIR) + "/epg-access/" + info->name() + "-" + std::to_string(getpid());
    std::error_code ec;
    fs::remove_all(base_dir_, ec);
  }

  void TearDown() override {
    std::error_code ec;
    fs::remove_all(base_dir_, ec);
    if (!intruder_.empty()) RunCaptured({"/usr/sbin/userdel", intruder_});
  }

  // Makes the other user; false (the test skipped, or failed in CI) when
  // this run cannot.
  bool MakeIntruder() {
    if (geteuid() != 0) {
      SkipOrFail("needs root: useradd, and a server run as the postgres user");
      return false;
    }
    if (access(kPsql, X_OK) != 0) {
      SkipOrFail("psql (postgresql-15) is not installed");
      return false;
    }
    const std::string name = "pkintruder" + std::to_string(getpid());
    RunCaptured({"/usr/sbin/userdel", name});  // left by a killed run
    const Outcome made = RunCaptured({"/usr/sbin/useradd", "-r", "-M", "-N", "-s", "/usr/sbin/nologin", name});
    const passwd* pw = getpwnam(name.c_str());
    if (made.exit_code != 0 || pw == nullptr) {
      SkipOrFail("useradd " + name + " failed: " + made.output);
      return false;
    }
    intruder_ = name;
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    return true;
  }

  // `argv` run as the other user, with an empty environment (no PG*
  // variables, no ~/.pgpass).
  Outcome AsIntruder(std::vector<std::string> argv) const {
    std::vector<std::string> full = {"/usr/bin/setpriv",
                                     "--reuid=" + std::to_string(uid_),
                                     "--regid=" + std::to_string(gid_),
                                     "--clear-groups",
                                     "--",
                                     "/usr/bin/env",
                                     "-i",
                                     "PATH=/usr/bin:/bin",
                                     "HOME=/nonexistent"};
    full.insert(full.end(), argv.begin(), argv.end());
    return RunCaptured(full);
  }

  Outcome PsqlAsIntruder(const std::string& conninfo) const {
    return AsIntruder({kPsql, "-X", "-w", "-At", "-c", "SELECT current_user", conninfo + " connect_timeout=5"});
  }

  void SkipOrFail(const std::string& why) { PHASEKEY_SKIP_OR_FAIL_IN_CI() << why; }

  std::string base_dir_;
  std::string intruder_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

TEST_F(EmbeddedPostgresAccessTest, AnotherLocalUserCannotConnectOverTcpOrTheSocket) {
  if (!MakeIntruder()) return;
  EmbeddedPostgresOptions options;
  options.base_dir = base_dir_;
  auto server = EmbeddedPostgres::Start(options);
  ASSERT_TRUE(server.has_value()) << server.error().message();
  const std::string port = std::to_string((*server)->port());
  const std::string socket_dir = em::SocketDirFor(base_dir_);

  // Over TCP, with no password and with a wrong one.
  const Outcome no_password = PsqlAsIntruder("host=127.0.0.1 port=" + port + " user=postgres dbname=postgres");
  EXPECT_NE(no_password.exit_code, 0) << no_password.output;
  EXPECT_NE(no_password.output.find("no password supplied"), std::string::npos) << no_password.output;
  const Outcome wrong = PsqlAsIntruder("host=127.0.0.1 port=" + port + " user=postgres dbname=postgres password=guess");
  EXPECT_NE(wrong.exit_code, 0) << wrong.output;
  EXPECT_NE(wrong.output.find("password authentication failed"), std::string::npos) << wrong.output;

  // Through the socket: its directory is closed to other users.
  const Outcome socket = PsqlAsIntruder("host=" + socket_dir + " port=" + port + " user=postgres dbname=postgres");
  EXPECT_NE(socket.exit_code, 0) << socket.output;
  EXPECT_NE(socket.output.find("Permission denied"), std::string::npos) << socket.output;

  // Nor can it read the password.
  const Outcome cat = AsIntruder({"/bin/cat", base_dir_ + "/pgpass"});
  EXPECT_NE(cat.exit_code, 0) << cat.output;
  EXPECT_NE(cat.output.find("Permission denied"), std::string::npos) << cat.output;

  // The owner connects, over TCP and through the socket.
  EXPECT_EQ(QueryValue((*server)->url(), "SELECT current_user"), "postgres");
  EXPECT_EQ(QueryValue((*server)->socket_conninfo(), "SELECT current_user"), "postgres");
}

TEST_F(EmbeddedPostgresAccessTest, ThePasswordFileAndTheFoldersAreTheServerUsersAlone) {
  EmbeddedPostgresOptions options;
  options.base_dir = base_dir_;
  auto server = EmbeddedPostgres::Start(options);
  ASSERT_TRUE(server.has_value()) << server.error().message();
  const uid_t server_uid = geteuid() == 0 ? getpwnam("postgres")->pw_uid : geteuid();

  struct stat st;
  ASSERT_EQ(stat((*server)->password_file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, server_uid);
  for (const std::string& dir : {base_dir_, (*server)->data_dir(), em::SocketDirFor(base_dir_)}) {
    ASSERT_EQ(stat(dir.c_str(), &st), 0) << dir;
    EXPECT_EQ(st.st_mode & 07777, 0700u) << dir;
    EXPECT_EQ(st.st_uid, server_uid) << dir;
  }
  const std::string socket = em::SocketDirFor(base_dir_) + "/.s.PGSQL." + std::to_string((*server)->port());
  ASSERT_EQ(stat(socket.c_str(), &st), 0) << socket;
  EXPECT_EQ(st.st_mode & 0777, 0700u) << socket;
  // The password is nowhere in the server's log.
  std::ifstream log(base_dir_ + "/server.log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  const std::string& url = (*server)->url();
  const std::string password = url.substr(url.find(':', 13) + 1, 64);
  EXPECT_EQ(text.find(password), std::string::npos);
}

// A cluster whose password file is gone (or made before there was one) gets
// a new password at the next start; the old one no longer works.
TEST_F(EmbeddedPostgresAccessTest, AClusterWithoutAPasswordFileGetsANewPassword) {
  EmbeddedPostgresOptions options;
  options.base_dir = base_dir_;
  options.port = 0;
  std::string old_url;
  {
    auto first = EmbeddedPostgres::Start(options);
    ASSERT_TRUE(first.has_value()) << first.error().message();
    old_url = (*first)->url();
    pqxx::connection conn(old_url);
    pqxx::nontransaction(conn).exec0("CREATE TABLE kept (x int)");
  }
  ASSERT_TRUE(fs::remove(base_dir_ + "/pgpass"));

  auto second = EmbeddedPostgres::Start(options);
  ASSERT_TRUE(second.has_value()) << second.error().message();
  EXPECT_EQ(QueryValue((*second)->url(), "SELECT count(*) FROM kept"), "0");
  const std::string port = std::to_string((*second)->port());
  const std::string old_password = old_url.substr(old_url.find(':', 13) + 1, 64);
  EXPECT_EQ((*second)->url().find(old_password), std::string::npos);
  EXPECT_THROW(
      pqxx::connection("host=127.0.0.1 port=" + port + " user=postgres dbname=postgres password=" + old_password),
      pqxx::broken_connection);
}

// As root, an ancestor the server user cannot search is opened to that user
// alone (an ACL entry), not to everyone (o+x).
TEST_F(EmbeddedPostgresAccessTest, AClosedAncestorIsOpenedToTheServerUserAlone) {
  if (!MakeIntruder()) return;
  const std::string closed = base_dir_ + "-closed";
  fs::create_directories(closed);
  ASSERT_EQ(chmod(closed.c_str(), 0700), 0);
  EmbeddedPostgresOptions options;
  options.base_dir = closed + "/pg";

  auto server = EmbeddedPostgres::Start(options);

  ASSERT_TRUE(server.has_value()) << server.error().message();
  EXPECT_EQ(QueryValue((*server)->url(), "SELECT 1"), "1");
  struct stat st;
  ASSERT_EQ(stat(closed.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07, 0u) << "others got permissions on " << closed;
  const Outcome look = AsIntruder({"/usr/bin/stat", closed + "/pg"});
  EXPECT_NE(look.exit_code, 0) << look.output;
  EXPECT_NE(look.output.find("Permission denied"), std::string::npos) << look.output;
  server->reset();
  // The next start finds the entry there and starts again.
  auto again = EmbeddedPostgres::Start(options);
  ASSERT_TRUE(again.has_value()) << again.error().message();
  again->reset();
  std::error_code ec;
  fs::remove_all(closed, ec);
}

}  // namespace
}  // namespace phasekey
