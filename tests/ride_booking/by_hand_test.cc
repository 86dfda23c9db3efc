// README's "by hand" section as a new user runs it: fake_gateway, then
// `ride_booking serve` and `ride_booking worker` started together in one
// folder with no DATABASE_URL. Both come up on one embedded PostgreSQL (the
// second finds the server the first started) and a ride is booked. Only the
// ports differ from the README (any free port instead of 8080 and 8081).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/http_client.h"

namespace phasekey {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using testing::ChildProcess;

const std::string kRide = R"({"origin_lat": 52.52, "origin_lon": 13.40, "target_lat": 48.85, "target_lon": 2.35})";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

int CountOccurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

// Runs every process in a fresh folder (the working directory of this test
// process), as a user following the README from a checkout would.
class ByHandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pk-by-hand-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    old_cwd_ = fs::current_path();
    fs::current_path(dir_);
  }
  void TearDown() override {
    // SIGTERM: each stops cleanly, and the one that started the server
    // stops it. The worker first, so that the server outlives its users.
    for (auto* p : {&worker_, &service_, &gateway_}) {
      if (*p == nullptr) continue;
      (*p)->Signal(SIGTERM);
      (*p)->Wait();
      p->reset();
    }
    fs::current_path(old_cwd_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  fs::path dir_, old_cwd_;
  std::unique_ptr<ChildProcess> gateway_, service_, worker_;
};

TEST_F(ByHandTest, ServeAndWorkerWithoutADatabaseUrlShareOneEmbeddedServer) {
  gateway_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{FAKE_GATEWAY_PATH, "--listen", "127.0.0.1:0", "--data-dir", "gateway"});
  const std::uint16_t gw_port = gateway_->WaitForListeningPort();
  ASSERT_NE(gw_port, 0) << "fake_gateway did not start";
  const std::string gateway_url = "http://127.0.0.1:" + std::to_string(gw_port);
  const std::vector<std::string> no_database = {"DATABASE_URL="};

  // Started back to back, as `... &` lines are: both race for the server.
  service_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{RIDE_BOOKING_PATH, "serve", "--listen", "127.0.0.1:0", "--gateway-url", gateway_url},
      no_database, (dir_ / "serve.err").string());
  worker_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{RIDE_BOOKING_PATH, "worker", "--gateway-url", gateway_url}, no_database,
      (dir_ / "worker.err").string());
  const std::uint16_t port = service_->WaitForListeningPort(milliseconds(120000));
  const std::string worker_ready = worker_->WaitForLine("metrics on", milliseconds(120000));
  const std::string logs = ReadFile(dir_ / "serve.err") + ReadFile(dir_ / "worker.err");

  ASSERT_NE(port, 0) << logs;
  ASSERT_FALSE(worker_ready.empty()) << logs;
  EXPECT_EQ(CountOccurrences(logs, "embedded PostgreSQL at"), 2) << logs;
  EXPECT_EQ(CountOccurrences(logs, "(started here;"), 1) << logs;
  EXPECT_EQ(CountOccurrences(logs, "(started by another process"), 1) << logs;
  const testing::HttpResult ride = testing::HttpCall(port, "POST", "/rides",
                                                     {{"Authorization", "Bearer tok_user_1"},
                                                      {"Idempotency-Key", "ride-0001-abcdef"},
                                                      {"Content-Type", "application/json"}},
                                                     kRide);
  EXPECT_EQ(ride.status, 201) << ride.error << ride.body;
  EXPECT_FALSE(worker_->TryWait().has_value()) << ReadFile(dir_ / "worker.err");
  EXPECT_FALSE(service_->TryWait().has_value()) << ReadFile(dir_ / "serve.err");
}

}  // namespace
}  // namespace phasekey
