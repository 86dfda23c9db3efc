// EmbeddedPostgres against the real PostgreSQL 15 binaries: first start with
// initdb, restart, stop, stale lock files, death of the parent process and
// sharing one server between processes.
#include "phasekey/tools/embedded_postgres.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "embedded_postgres/embedded_postgres_internal.h"
#include "gtest/gtest.h"
#include "support/prerequisites.h"

namespace phasekey {
namespace {

namespace em = pg::embedded;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

int CountOccurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

// Runs `sql` (one row, one column) on a fresh connection.
std::string QueryValue(const std::string& conninfo, const std::string& sql) {
  pqxx::connection conn(conninfo);
  pqxx::nontransaction tx(conn);
  return tx.exec1(sql)[0].as<std::string>();
}

void Execute(const std::string& conninfo, const std::string& sql) {
  pqxx::connection conn(conninfo);
  pqxx::work tx(conn);
  tx.exec(sql);
  tx.commit();
}

// True if `pid` no longer runs; a zombie counts as gone (init may reap late).
bool IsGone(pid_t pid) { return em::GetProcessState(pid) != em::ProcessState::kRunning; }

bool WaitUntilGone(pid_t pid, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!IsGone(pid)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

// Running postgres processes (postmaster and children) working in `data_dir`.
std::vector<pid_t> PostgresProcessesIn(const std::string& data_dir) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    pid_t pid = static_cast<pid_t>(std::atoi(entry.path().filename().c_str()));
    std::error_code ec;
    fs::path cwd = fs::read_symlink(entry.path() / "cwd", ec);
    if (pid > 0 && !ec && em::IsLivePostgres(pid) && fs::equivalent(cwd, data_dir, ec)) {
      pids.push_back(pid);
    }
  }
  return pids;
}

// A child process that has exited; reaped unless `keep_zombie`.
pid_t ExitedChild(bool keep_zombie) {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (!keep_zombie) {
    waitpid(pid, nullptr, 0);
  } else {
    while (em::GetProcessState(pid) != em::ProcessState::kZombie) {
      std::this_thread::sleep_for(milliseconds(1));
    }
  }
  return pid;
}

// Replaces the pid (first line) of the postmaster.pid text `contents`.
std::string WithPid(const std::string& contents, pid_t pid) {
  return std::to_string(pid) + contents.substr(contents.find('\n'));
}

class EmbeddedPostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    base_dir_ = std::string(PHASEKEY_TEST_BINARY_DIR) + "/epg/" + info->name() + "-" + std::to_string(getpid());
    std::error_code ec;
    fs::remove_all(base_dir_, ec);
  }

  void TearDown() override {
    std::error_code ec;
    fs::remove_all(base_dir_, ec);
    RemoveSocketDirOf(base_dir_);
  }

  // Removes the /tmp socket directory used for a too long `base_dir`.
  static void RemoveSocketDirOf(const std::string& base_dir) {
    std::string socket_dir = em::SocketDirFor(base_dir);
    std::error_code ec;
    if (socket_dir != base_dir) fs::remove_all(socket_dir, ec);
  }

  EmbeddedPostgresOptions Options() const {
    EmbeddedPostgresOptions options;
    options.base_dir = base_dir_;
    options.settings = {{"fsync", "off"}};
    return options;
  }

  std::string base_dir_;
};

TEST_F(EmbeddedPostgresTest, StartsOnEmptyDirectoryAndAnswersQueries) {
  auto server = EmbeddedPostgres::Start(Options());
  ASSERT_TRUE(server.has_value()) << server.error().message();
  const EmbeddedPostgres& pg = **server;

  EXPECT_GT(pg.pid(), 0);
  const std::string pgpass = ReadFile(base_dir_ + "/pgpass");
  ASSERT_EQ(pgpass.find("127.0.0.1:*:*:postgres:"), 0u) << pgpass;
  const std::string secret = pgpass.substr(23, pgpass.find('\n') - 23);
  EXPECT_EQ(secret.size(), 64u) << pgpass;
  EXPECT_EQ(secret.find_first_not_of("0123456789abcdef"), std::string::npos) << pgpass;
  const std::string where = "@127.0.0.1:" + std::to_string(pg.port()) + "/postgres";
  EXPECT_EQ(pg.url(), "postgresql://postgres:" + secret + where);
  EXPECT_EQ(pg.display_url(), "postgresql://postgres" + where + "?passfile=" + base_dir_ + "/pgpass");
  EXPECT_EQ(pg.password_file(), base_dir_ + "/pgpass");
  EXPECT_EQ(QueryValue(pg.display_url(), "SELECT 2"), "2") << "the passfile= URL connects too";
  EXPECT_EQ(pg.data_dir(), base_dir_ + "/data");
  EXPECT_TRUE(fs::exists(pg.data_dir() + "/PG_VERSION"));
  EXPECT_EQ(QueryValue(pg.url(), "SELECT 1"), "1");
  EXPECT_EQ(QueryValue(pg.socket_conninfo(), "SELECT current_user"), "postgres");
  EXPECT_EQ(QueryValue(pg.url(), "SHOW server_encoding"), "UTF8");
}

TEST_F(EmbeddedPostgresTest, RunsAsTheSystemUserWhenStartedByRoot) {
  if (geteuid() != 0) PHASEKEY_SKIP_OR_FAIL_IN_CI() << "needs root: only root hands the server to the postgres user";
  auto server = EmbeddedPostgres::Start(Options());
  ASSERT_TRUE(server.has_value()) << server.error().message();
  const passwd* pw = getpwnam("postgres");
  ASSERT_NE(pw, nullptr);

  struct stat st;
  ASSERT_EQ(stat((*server)->data_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, pw->pw_uid);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(("/proc/" + std::to_string((*server)->pid())).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, pw->pw_uid);
}

TEST_F(EmbeddedPostgresTest, RestartReusesTheClusterWithoutInitdb) {
  {
    auto first = EmbeddedPostgres::Start(Options());
    ASSERT_TRUE(first.has_value()) << first.error().message();
    Execute((*first)->url(), "CREATE TABLE survivor (x int); INSERT INTO survivor VALUES (42)");
    ASSERT_TRUE((*first)->Stop().ok());
  }
  auto second = EmbeddedPostgres::Start(Options());
  ASSERT_TRUE(second.has_value()) << second.error().message();

  EXPECT_EQ(QueryValue((*second)->url(), "SELECT x FROM survivor"), "42");
  const std::string log = ReadFile(base_dir_ + "/server.log");
  EXPECT_EQ(CountOccurrences(log, "The files belonging to this database system"), 1) << log;
}

TEST_F(EmbeddedPostgresTest, StopLeavesNoPostgresProcessAndIsIdempotent) {
  auto server = EmbeddedPostgres::Start(Options());
  ASSERT_TRUE(server.has_value()) << server.error().message();
  const pid_t pid = (*server)->pid();
  const std::string data_dir = (*server)->data_dir();
  ASSERT_FALSE(PostgresProcessesIn(data_dir).empty());

  EXPECT_TRUE((*server)->Stop().ok());

  EXPECT_EQ(kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH);
  EXPECT_TRUE(PostgresProcessesIn(data_dir).empty());
  EXPECT_FALSE(fs::exists(data_dir + "/postmaster.pid"));
  EXPECT_EQ((*server)->pid(), -1);
  EXPECT_TRUE((*server)->Stop().ok());
}

// Starts and stops once, returning the postmaster.pid the server wrote.
std::string PidFileOfPreviousRun(const EmbeddedPostgresOptions& options) {
  auto server = EmbeddedPostgres::Start(options);
  if (!server) return "";
  std::string contents = ReadFile((*server)->data_dir() + "/postmaster.pid");
  (void)(*server)->Stop();
  return contents;
}

TEST_F(EmbeddedPostgresTest, RecoversFromStalePidFileOfDeadProcess) {
  const std::string old = PidFileOfPreviousRun(Options());
  ASSERT_FALSE(old.empty());
  WriteFile(base_dir_ + "/data/postmaster.pid", WithPid(old, ExitedChild(false)));

  auto server = EmbeddedPostgres::Start(Options());
  ASSERT_TRUE(server.has_value()) << server.error().message();
  EXPECT_EQ(QueryValue((*server)->url(), "SELECT 1"), "1");
}

TEST_F(EmbeddedPostgresTest, RecoversFromStalePidFileOfZombieProcess) {
  // Postgres itself takes a zombie's pid for a live postmaster and refuses.
  const std::string old = PidFileOfPreviousRun(Options());
  ASSERT_FALSE(old.empty());
  const pid_t zombie = ExitedChild(true);
  WriteFile(base_dir_ + "/data/postmaster.pid", WithPid(old, zombie));

  auto server = EmbeddedPostgres::Start(Options());
  waitpid(zombie, nullptr, 0);
  ASSERT_TRUE(server.has_value()) << server.error().message();
  EXPECT_EQ(QueryValue((*server)->url(), "SELECT 1"), "1");
}

TEST_F(EmbeddedPostgresTest, RecoversFromStalePidFileOfUnrelatedLiveProcess) {
  const std::string old = PidFileOfPreviousRun(Options());
  ASSERT_FALSE(old.empty());
  const pid_t sleeper = fork();
  if (sleeper == 0) {
    pause();
    _exit(0);
  }
  WriteFile(base_dir_ + "/data/postmaster.pid", WithPid(old, sleeper));

  auto server = EmbeddedPostgres::Start(Options());
  kill(sleeper, SIGKILL);
  waitpid(sleeper, nullptr, 0);
  ASSERT_TRUE(server.has_value()) << server.error().message();
  EXPECT_EQ(QueryValue((*server)->url(), "SELECT 1"), "1");
}

TEST_F(EmbeddedPostgresTest, RefusesDataDirectoryHeldByLiveServer) {
  auto server = EmbeddedPostgres::Start(Options());
  ASSERT_TRUE(server.has_value()) << server.error().message();

  Status s = em::RecoverStalePidFile((*server)->data_dir(), milliseconds(200));

  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("pid " + std::to_string((*server)->pid())), std::string::npos) << s.message();
  EXPECT_TRUE(fs::exists((*server)->data_dir() + "/postmaster.pid"));
  EXPECT_EQ(QueryValue((*server)->url(), "SELECT 1"), "1");
}

// In a forked child: starts a server, reports its pid on `fd` (-1 on
// failure) and sleeps until killed. Never returns.
[[noreturn]] void RunServerInChild(const EmbeddedPostgresOptions& options, int fd) {
  auto server = EmbeddedPostgres::Start(options);
  if (!server) std::fprintf(stderr, "child %d: %s\n", getpid(), server.error().message().c_str());
  pid_t pid = server ? (*server)->pid() : -1;
  if (write(fd, &pid, sizeof(pid)) != sizeof(pid) || pid < 0) _exit(1);
  for (;;) pause();
}

// Reads the pid a RunServerInChild process reports; -1 if none in time.
pid_t ReadReportedPid(int fd) {
  pollfd p{fd, POLLIN, 0};
  pid_t pid = -1;
  if (poll(&p, 1, 60000) != 1 || read(fd, &pid, sizeof(pid)) != sizeof(pid)) return -1;
  return pid;
}

TEST_F(EmbeddedPostgresTest, ServerDiesWhenParentIsKilled) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  const pid_t parent = fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) RunServerInChild(Options(), fds[1]);
  close(fds[1]);
  const pid_t postgres = ReadReportedPid(fds[0]);
  close(fds[0]);

  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  ASSERT_GT(postgres, 0) << ReadFile(base_dir_ + "/server.log");
  EXPECT_TRUE(WaitUntilGone(postgres, std::chrono::seconds(10)));

  // The shutdown was clean enough for the next start to just work.
  auto server = EmbeddedPostgres::Start(Options());
  ASSERT_TRUE(server.has_value()) << server.error().message();
  EXPECT_EQ(QueryValue((*server)->url(), "SELECT 1"), "1");
}

TEST_F(EmbeddedPostgresTest, ASecondStartAttachesToTheRunningServerWhenAsked) {
  auto first = EmbeddedPostgres::Start(Options());
  ASSERT_TRUE(first.has_value()) << first.error().message();
  EmbeddedPostgresOptions options = Options();
  options.attach_to_running = true;

  auto second = EmbeddedPostgres::Start(options);

  ASSERT_TRUE(second.has_value()) << second.error().message();
  EXPECT_TRUE((*first)->owns_server());
  EXPECT_FALSE((*second)->owns_server());
  EXPECT_EQ((*second)->pid(), (*first)->pid());
  EXPECT_EQ((*second)->url(), (*first)->url());
  Execute((*second)->url(), "CREATE TABLE shared (x int)");
  // Stopping the attached one leaves the owner's server running.
  EXPECT_TRUE((*second)->Stop().ok());
  EXPECT_EQ((*second)->pid(), -1);
  EXPECT_EQ(QueryValue((*first)->url(), "SELECT count(*) FROM shared"), "0");
}

TEST_F(EmbeddedPostgresTest, TwoProcessesStartingAtOnceOnAnEmptyDirectoryShareOneServer) {
  EmbeddedPostgresOptions options = Options();
  options.attach_to_running = true;
  int fds[2][2];
  pid_t children[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(pipe2(fds[i], O_CLOEXEC), 0);
    children[i] = fork();
    ASSERT_GE(children[i], 0);
    if (children[i] == 0) RunServerInChild(options, fds[i][1]);
    close(fds[i][1]);
  }
  pid_t reported[2];
  for (int i = 0; i < 2; ++i) {
    reported[i] = ReadReportedPid(fds[i][0]);
    close(fds[i][0]);
  }
  const std::string log = ReadFile(base_dir_ + "/server.log");
  for (pid_t child : children) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
  }

  ASSERT_GT(reported[0], 0) << log;
  EXPECT_EQ(reported[0], reported[1]) << log;
  EXPECT_EQ(CountOccurrences(log, "The files belonging to this database system"), 1) << log;
  EXPECT_TRUE(WaitUntilGone(reported[0], std::chrono::seconds(10)));
}

TEST_F(EmbeddedPostgresTest, WithoutAttachASecondStartStillRefusesTheBusyDirectory) {
  auto first = EmbeddedPostgres::Start(Options());
  ASSERT_TRUE(first.has_value()) << first.error().message();

  auto second = EmbeddedPostgres::Start(Options());

  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.error().message().find("still in use"), std::string::npos) << second.error().message();
  EXPECT_EQ(QueryValue((*first)->url(), "SELECT 1"), "1");
}

TEST_F(EmbeddedPostgresTest, PutsSocketUnderTmpWhenBaseDirPathIsTooLong) {
  EmbeddedPostgresOptions options = Options();
  options.base_dir = base_dir_ + "/" + std::string(100, 'x');
  auto server = EmbeddedPostgres::Start(options);
  ASSERT_TRUE(server.has_value()) << server.error().message();

  const std::string& conninfo = (*server)->socket_conninfo();
  EXPECT_EQ(conninfo.rfind("host=/tmp/phasekey-pg-", 0), 0u) << conninfo;
  EXPECT_EQ(QueryValue(conninfo, "SELECT 1"), "1");
  EXPECT_EQ(conninfo.substr(5, conninfo.find(' ') - 5), em::SocketDirFor(options.base_dir));
  ASSERT_TRUE((*server)->Stop().ok());
  RemoveSocketDirOf(options.base_dir);
}

TEST_F(EmbeddedPostgresTest, ReportsTheServerLogWhenStartupFails) {
  EmbeddedPostgresOptions options = Options();
  options.settings.push_back({"no_such_setting", "1"});
  auto server = EmbeddedPostgres::Start(options);

  ASSERT_FALSE(server.has_value());
  EXPECT_EQ(server.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(server.error().message().find("unrecognized configuration parameter"), std::string::npos)
      << server.error().message();
  EXPECT_TRUE(PostgresProcessesIn(base_dir_ + "/data").empty());
}

TEST_F(EmbeddedPostgresTest, FailsClearlyWhenTheRequestedPortIsTaken) {
  int blocker = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(blocker, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(blocker, 1), 0);
  ASSERT_EQ(getsockname(blocker, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  EmbeddedPostgresOptions options = Options();
  options.port = ntohs(addr.sin_port);

  auto server = EmbeddedPostgres::Start(options);
  close(blocker);

  ASSERT_FALSE(server.has_value());
  EXPECT_NE(server.error().message().find("could not bind"), std::string::npos) << server.error().message();
}

TEST_F(EmbeddedPostgresTest, RejectsAnEmptyBaseDir) {
  EmbeddedPostgresOptions options;
  auto server = EmbeddedPostgres::Start(options);

  ASSERT_FALSE(server.has_value());
  EXPECT_EQ(server.error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phasekey
