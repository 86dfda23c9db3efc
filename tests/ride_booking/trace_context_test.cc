// A request's life by its W3C trace id, end to end: real fake_gateway,
// `ride_booking serve` and `ride_booking worker` processes (both log one
// JSON line per answered request, RunnerOptions::log_requests), real HTTP
// over loopback, a real PostgreSQL. The `traceparent` header a client sends
// is stored with the key, and every log line about the key, from the
// service and from the worker that finishes the key its client abandoned,
// carries its trace id. An invalid or repeated header is ignored: the
// request succeeds as if it had none.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/http_client.h"
#include "support/ride_world.h"
#include "support/test_database.h"
#include "support/wait.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::ChildProcess;
using testing::HttpCall;
using testing::HttpResult;
using testing::TestDatabase;

const std::string kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kParent = "00f067aa0ba902b7";
const std::string kTraceParent = "00-" + kTrace + "-" + kParent + "-01";

class TraceContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("pk-trace-" + db_.name());
    std::filesystem::create_directories(dir_);
    testing::RideWorldOptions o{.database_url = db_.url(), .lease_seconds = 0, .charge_timeout_ms = 0};
    o.log_dir = dir_.string();
    world_ = std::make_unique<testing::RideWorld>(o);
    service_ = world_->StartService(&port_);
    ASSERT_NE(port_, 0) << "ride_booking serve did not start";
  }

  void TearDown() override {
    worker_.reset();
    service_.reset();
    world_.reset();
    if (HasFailure()) {
      std::printf("the processes' stderr is kept in %s\n", dir_.c_str());
    } else {
      std::filesystem::remove_all(dir_);
    }
  }

  HttpResult PostRide(const std::string& key, const std::vector<std::string>& traceparents) const {
    std::vector<std::pair<std::string, std::string>> headers = {
        {"Authorization", "Bearer tok_user_3"}, {"Content-Type", "application/json"}, {"Idempotency-Key", key}};
    for (const auto& value : traceparents) headers.emplace_back("traceparent", value);
    return HttpCall(port_, "POST", "/rides", headers, testing::kRideBody);
  }

  std::string StoredTraceParent(const std::string& key) const {
    return db_.Value(
        "SELECT coalesce(trace_parent, '<null>') FROM phasekey.idempotency_keys WHERE idempotency_key = '" + key + "'");
  }

  // The request log lines `process` ("service", "worker") wrote for `key`'s
  // row so far.
  std::vector<nlohmann::json> RequestLines(const std::string& process, const std::string& key) const {
    const std::string id = db_.Value("SELECT id FROM phasekey.idempotency_keys WHERE idempotency_key = '" + key + "'");
    std::ifstream in(world_->LogPath(process));
    std::vector<nlohmann::json> out;
    for (std::string line; std::getline(in, line);) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.value("msg", "") == "request" && j.contains("key_id") &&
          std::to_string(j["key_id"].get<long long>()) == id) {
        out.push_back(std::move(j));
      }
    }
    return out;
  }

  TestDatabase db_;
  std::filesystem::path dir_;
  std::unique_ptr<testing::RideWorld> world_;
  std::unique_ptr<ChildProcess> service_, worker_;
  std::uint16_t port_ = 0;
};

TEST_F(TraceContextTest, ARequestsTraceparentIsStoredWithTheKeyAndItsLogLineCarriesTheTraceId) {
  ASSERT_EQ(PostRide("trace-ride-0001", {kTraceParent}).status, 201);
  EXPECT_EQ(StoredTraceParent("trace-ride-0001"), kTraceParent);
  std::vector<nlohmann::json> lines;
  ASSERT_TRUE(testing::WaitUntil([&] { return !(lines = RequestLines("service", "trace-ride-0001")).empty(); },
                                 milliseconds(10000)));
  EXPECT_EQ(lines[0].value("reply", ""), "completed");
  EXPECT_EQ(lines[0].value("trace_id", ""), kTrace) << lines[0].dump();
  EXPECT_EQ(lines[0].value("parent_id", ""), kParent) << lines[0].dump();
}

TEST_F(TraceContextTest, AKeyItsClientAbandonedIsFinishedByTheWorkerUnderTheSameTraceId) {
  ASSERT_TRUE(world_->SetGatewayFaults({{"fail_rate", 1.0}}));
  const HttpResult first = PostRide("trace-ride-0002", {kTraceParent});
  ASSERT_EQ(first.status, 503) << "the gateway's outage did not reach the client: " << first.body;
  // The client gives up; the gateway recovers; the worker alone finishes the
  // key.
  ASSERT_TRUE(world_->SetGatewayFaults({{"fail_rate", 0.0}}));
  worker_ = world_->StartWorker();
  ASSERT_TRUE(db_.WaitForValue("SELECT state FROM phasekey.idempotency_keys WHERE idempotency_key = 'trace-ride-0002'",
                               "finished", milliseconds(60000)))
      << "the worker did not finish the abandoned key";
  EXPECT_EQ(StoredTraceParent("trace-ride-0002"), kTraceParent);

  const auto served = RequestLines("service", "trace-ride-0002");
  ASSERT_FALSE(served.empty());
  EXPECT_EQ(served[0].value("reply", ""), "retry_later");
  EXPECT_EQ(served[0].value("trace_id", ""), kTrace) << served[0].dump();
  std::vector<nlohmann::json> redriven;
  ASSERT_TRUE(testing::WaitUntil(
      [&] {
        redriven = RequestLines("worker", "trace-ride-0002");
        return !redriven.empty() && redriven.back().value("reply", "") == "completed";
      },
      milliseconds(10000)))
      << "the worker wrote no request line for the key it finished";
  for (const auto& line : redriven) {
    EXPECT_TRUE(line.value("redrive", false)) << line.dump();
    EXPECT_EQ(line.value("trace_id", ""), kTrace) << line.dump();
    EXPECT_EQ(line.value("parent_id", ""), kParent) << line.dump();
  }
}

TEST_F(TraceContextTest, AnInvalidOrRepeatedTraceparentIsIgnoredAndTheRequestSucceeds) {
  ASSERT_EQ(PostRide("trace-ride-0003", {"00-" + kTrace + "-" + kParent + "-01-extra"}).status, 201);
  EXPECT_EQ(StoredTraceParent("trace-ride-0003"), "<null>");
  ASSERT_EQ(PostRide("trace-ride-0004", {"ff-" + kTrace + "-" + kParent + "-01"}).status, 201);
  EXPECT_EQ(StoredTraceParent("trace-ride-0004"), "<null>");
  ASSERT_EQ(PostRide("trace-ride-0005", {kTraceParent, kTraceParent}).status, 201) << "sent twice: invalid";
  EXPECT_EQ(StoredTraceParent("trace-ride-0005"), "<null>");
  std::vector<nlohmann::json> lines;
  ASSERT_TRUE(testing::WaitUntil([&] { return !(lines = RequestLines("service", "trace-ride-0005")).empty(); },
                                 milliseconds(10000)));
  EXPECT_FALSE(lines[0].contains("trace_id")) << lines[0].dump();
  EXPECT_FALSE(lines[0].contains("retry_trace_id")) << lines[0].dump();
}

}  // namespace
}  // namespace phasekey
