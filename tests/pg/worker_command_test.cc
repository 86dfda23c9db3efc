// `phasekey worker` as a real process: hands staged jobs on to stdout, stops
// cleanly on SIGTERM, refuses --redrive without flows.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child Spawn(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  c.out = fds[0];
  return c;
}

int Wait(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(WorkerCommandTest, HandsStagedJobsOnAndStopsCleanlyOnSigterm) {
  TestDatabase db;
  {
    pqxx::connection conn(db.url());
    pqxx::work tx(conn);
    tx.exec0("INSERT INTO phasekey.staged_jobs (job_name, job_args) SELECT 'send_ride_receipt', "
             "jsonb_build_object('n', i) FROM generate_series(1, 3) AS i");
    tx.commit();
  }
  Child c = Spawn({PHASEKEY_CLI_PATH, "worker", "--database-url", db.url()});
  ASSERT_GT(c.pid, 0);
  std::string out;
  char buf[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::count(out.begin(), out.end(), '\n') < 3 && std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::read(c.out, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::kill(c.pid, SIGTERM);
  EXPECT_EQ(Wait(c.pid), 0);
  ::close(c.out);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
  EXPECT_NE(out.find("\"name\":\"send_ride_receipt\""), std::string::npos) << out;
  pqxx::connection conn(db.url());
  pqxx::nontransaction tx(conn);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM phasekey.staged_jobs")[0].as<int>(), 0);
}

TEST(WorkerCommandTest, RefusesRedriveWithoutTheApplicationsFlows) {
  Child c = Spawn({PHASEKEY_CLI_PATH, "worker", "--redrive", "--database-url", "postgresql://x@127.0.0.1:1/x"});
  ASSERT_GT(c.pid, 0);
  EXPECT_EQ(Wait(c.pid), 2);
  ::close(c.out);
}

}  // namespace
}  // namespace phasekey
