// The server noticing a client that makes a new key for a retry, with real
// processes: `ride_booking serve`, `ride_booking worker --reap` (whose
// reaper audits the keys) and fake_gateway on loopback, a real PostgreSQL.
// The misbehaving client is `phasekey request` run twice without --intent
// (each run is a new intent, so a new key: what a script that retries a
// failed command that way does). A client that retries under its key is
// not counted.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "support/child_process.h"
#include "support/http_client.h"
#include "support/ride_service_fixture.h"
#include "support/wait.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::ChildProcess;
using testing::ReadFile;

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

double RegenerationCounter(std::uint16_t metrics_port) {
  const testing::HttpResult r = testing::HttpCall(metrics_port, "GET", "/metrics", {}, "");
  if (r.status != 200) throw std::runtime_error("GET /metrics of the worker failed: " + r.error);
  std::smatch m;
  if (!std::regex_search(
          r.body, m, std::regex(R"(phasekey_suspected_key_regeneration_total\{flow="create_ride"\} ([0-9.e+]+))"))) {
    return 0;
  }
  return std::stod(m[1]);
}

class KeyRegenerationTest : public testing::RideServiceTest {};

TEST_F(KeyRegenerationTest, AClientThatSendsTheSameRideUnderANewKeyIsCountedAndListedByStats) {
  auto worker = world_->StartWorker({.args = {"--reap", "--reap-interval-ms", "200"}});
  const std::string metrics_at = worker->WaitForLine("metrics on ", milliseconds(30000));
  ASSERT_FALSE(metrics_at.empty());
  const auto metrics_port = static_cast<std::uint16_t>(std::stoi(metrics_at.substr(metrics_at.rfind(':') + 1)));
  const std::string worker_log = world_->LogPath("worker");
  // The reaper's first sweep only learns the keys already there: wait for it.
  ASSERT_TRUE(testing::WaitUntil([&] { return Occurrences(ReadFile(worker_log), "\"reaper sweep\"") >= 1; },
                                 milliseconds(30000)));

  // A correct client: a retry under the same key (the stored answer).
  ASSERT_EQ(world_->PostRide(port_, 1, "careful-key-1").status, 201);
  const testing::HttpResult again = world_->PostRide(port_, 1, "careful-key-1");
  ASSERT_EQ(again.status, 201);

  // The mistake: the same ride of user 2, sent twice, each run a new key.
  const std::string url = RidesUrl();
  for (int run = 0; run < 2; ++run) {
    ChildProcess client({PHASEKEY_CLI_PATH, "request", "-H", "Authorization: Bearer tok_user_2", "-H",
                         "Content-Type: application/json", "--data", testing::kRideBody, "POST", url},
                        std::vector<std::string>{}, (dir_ / ("client-" + std::to_string(run) + ".log")).string());
    client.ReadAll();
    ASSERT_EQ(client.Wait(), 0);
  }
  const std::vector<std::string> keys = world_->Rows(
      "SELECT idempotency_key FROM phasekey.idempotency_keys WHERE idempotency_key <> 'careful-key-1' "
      "ORDER BY id");
  ASSERT_EQ(keys.size(), 2u);
  ASSERT_NE(keys[0], keys[1]);
  EXPECT_EQ(world_->Ledger().size(), 3u) << "the server refuses nothing: two identical requests can be meant";

  ASSERT_TRUE(testing::WaitUntil([&] { return RegenerationCounter(metrics_port) >= 1; }, milliseconds(30000)))
      << ReadFile(worker_log);
  // Two more sweeps see the same keys: still one suspect, and the careful
  // client none.
  const int sweeps = Occurrences(ReadFile(worker_log), "\"reaper sweep\"");
  ASSERT_TRUE(testing::WaitUntil([&] { return Occurrences(ReadFile(worker_log), "\"reaper sweep\"") >= sweeps + 2; },
                                 milliseconds(30000)));
  EXPECT_EQ(RegenerationCounter(metrics_port), 1);
  // The worker logged the suspect with both keys.
  const std::string log = ReadFile(worker_log);
  const auto line_at = log.find("suspected key regeneration");
  ASSERT_NE(line_at, std::string::npos) << log;
  const auto line_start = log.rfind('\n', line_at) == std::string::npos ? 0 : log.rfind('\n', line_at) + 1;
  const std::string line = log.substr(line_start, log.find('\n', line_at) - line_start);
  EXPECT_NE(line.find("\"earlier_idempotency_key\":\"" + keys[0] + "\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"idempotency_key\":\"" + keys[1] + "\""), std::string::npos) << line;
  EXPECT_EQ(log.find("careful-key-1"), std::string::npos) << log;

  // phasekey stats lists the pair for the operator.
  const testing::RunResult stats =
      testing::RunToEnd({PHASEKEY_CLI_PATH, "stats", "--json", "--database-url", db_.url()});
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  const nlohmann::json suspects = nlohmann::json::parse(stats.out)["suspected_key_regeneration"];
  EXPECT_EQ(suspects["by_flow"]["create_ride"], 1) << suspects.dump();
  ASSERT_EQ(suspects["recent"].size(), 1u) << suspects.dump();
  EXPECT_EQ(suspects["recent"][0]["earlier_key"], keys[0]);
  EXPECT_EQ(suspects["recent"][0]["later_key"], keys[1]);
}

}  // namespace
}  // namespace phasekey
