// `phasekey worker` as a real process: hands staged jobs on to stdout, stops
// cleanly on SIGTERM, refuses --redrive without flows.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

TEST(WorkerCommandTest, HandsStagedJobsOnAndStopsCleanlyOnSigterm) {
  TestDatabase db;
  {
    pqxx::connection conn(db.url());
    pqxx::work tx(conn);
    tx.exec0(
        "INSERT INTO phasekey.staged_jobs (job_name, job_args) SELECT 'send_ride_receipt', "
        "jsonb_build_object('n', i) FROM generate_series(1, 3) AS i");
    tx.commit();
  }
  testing::ChildProcess worker({PHASEKEY_CLI_PATH, "worker", "--database-url", db.url()});
  ASSERT_GT(worker.pid(), 0);
  // One line per job handed on; then whatever else it prints until it stops.
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0; i < 3; ++i) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const std::string line = worker.WaitForLine("", left);
    if (line.empty()) break;
    out += line + "\n";
  }
  worker.Signal(SIGTERM);
  out += worker.ReadAll();
  EXPECT_EQ(worker.Wait(), 0);
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
  EXPECT_NE(out.find("\"name\":\"send_ride_receipt\""), std::string::npos) << out;
  pqxx::connection conn(db.url());
  pqxx::nontransaction tx(conn);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM phasekey.staged_jobs")[0].as<int>(), 0);
}

TEST(WorkerCommandTest, RefusesRedriveWithoutTheApplicationsFlows) {
  EXPECT_EQ(
      testing::RunToEnd({PHASEKEY_CLI_PATH, "worker", "--redrive", "--database-url", "postgresql://x@127.0.0.1:1/x"})
          .exit_code,
      2);
}

}  // namespace
}  // namespace phasekey
