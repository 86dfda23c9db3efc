// `phasekey worker` as a real process: hands staged jobs on to stdout, stops
// cleanly on SIGTERM, refuses --redrive without flows, serves /metrics and
// /healthz with --metrics-listen.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/http_client.h"
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

// The value of the sample `series` (name and labels as exposed), or -1.
double Sample(const std::string& exposition, const std::string& series) {
  const std::size_t at = exposition.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(exposition.substr(at + series.size() + 2));
}

TEST(WorkerCommandTest, ServesMetricsAndAHealthCheckThatSeesTheReaperPoll) {
  TestDatabase db;
  testing::ChildProcess worker(
      {PHASEKEY_CLI_PATH, "worker", "--reap", "--metrics-listen", "127.0.0.1:0", "--database-url", db.url()});
  const std::string line = worker.WaitForLine("metrics on ", std::chrono::seconds(30));
  ASSERT_FALSE(line.empty()) << worker.ReadAll();
  const auto port = static_cast<std::uint16_t>(std::stoi(line.substr(line.rfind(':') + 1)));
  // The reaper sweeps at once; /healthz says so once it has.
  testing::HttpResult health;
  for (int i = 0; i < 100; ++i) {
    health = testing::HttpCall(port, "GET", "/healthz", {}, "");
    if (health.ok && health.body.find("\"last_poll_age_s\":null") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(health.status, 200) << health.body;
  EXPECT_NE(health.body.find("\"reaper\""), std::string::npos) << health.body;
  EXPECT_EQ(health.body.find("enqueuer"), std::string::npos) << "only the roles it runs: " << health.body;
  const testing::HttpResult metrics = testing::HttpCall(port, "GET", "/metrics", {}, "");
  ASSERT_EQ(metrics.status, 200);
  const double polled = Sample(metrics.body, "phasekey_worker_last_poll_timestamp_seconds{role=\"reaper\"}");
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(polled, now - 60) << metrics.body;
  EXPECT_LE(polled, now + 1) << metrics.body;
  EXPECT_GE(Sample(metrics.body, "phasekey_keys{state=\"active\"}"), 0) << "the sweep's gauges: " << metrics.body;
  EXPECT_EQ(testing::HttpCall(port, "GET", "/rides", {}, "").status, 404);
  worker.Signal(SIGTERM);
  EXPECT_EQ(worker.Wait(), 0) << worker.ReadAll();
}

TEST(WorkerCommandTest, RefusesABadMetricsAddressWithOneLine) {
  const auto r = testing::RunToEnd(
      {PHASEKEY_CLI_PATH, "worker", "--metrics-listen", "nonsense", "--database-url", "postgresql://x@127.0.0.1:1/x"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(WorkerCommandTest, RefusesRedriveWithoutTheApplicationsFlows) {
  EXPECT_EQ(
      testing::RunToEnd({PHASEKEY_CLI_PATH, "worker", "--redrive", "--database-url", "postgresql://x@127.0.0.1:1/x"})
          .exit_code,
      2);
}

}  // namespace
}  // namespace phasekey
