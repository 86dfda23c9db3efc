// The ride booking service end to end: real processes (fake_gateway and
// `ride_booking serve`), real HTTP over loopback, a real PostgreSQL.
#include <gtest/gtest.h>
#include <signal.h>

#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/child_process.h"
#include "support/http_client.h"
#include "support/ride_world.h"
#include "support/tcp_probe.h"
#include "support/test_database.h"
#include "support/wait.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::ChildProcess;
using testing::HttpCall;
using testing::HttpResult;
using testing::TestDatabase;

const std::string kRide = R"({"origin_lat": 52.52, "origin_lon": 13.40, "target_lat": 48.85, "target_lon": 2.35})";

class RideServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::RideWorldOptions o{
        .database_url = db_.url(), .lease_seconds = 15, .charge_timeout_ms = 3000, .gateway_args = {"--seed", "7"}};
    world_ = std::make_unique<testing::RideWorld>(o);
    StartService();
  }
  void TearDown() override {
    service_.reset();
    world_.reset();
  }

  // The world's lease and charge timeout unless `process` overrides them.
  void StartService(const testing::RideProcessOptions& process = {}) {
    service_ = world_->StartService(&port_, process);
    ASSERT_NE(port_, 0) << "ride_booking serve did not start";
  }

  HttpResult Post(const std::string& key, const std::string& body = kRide, int user = 1) {
    std::vector<std::pair<std::string, std::string>> h = {{"Authorization", "Bearer tok_user_" + std::to_string(user)},
                                                          {"Content-Type", "application/json"}};
    if (!key.empty()) h.emplace_back("Idempotency-Key", key);
    return HttpCall(port_, "POST", "/rides", h, body);
  }
  bool Faults(const std::string& json) const { return world_->SetGatewayFaults(nlohmann::json::parse(json)); }
  nlohmann::json Ledger() const { return world_->Ledger(); }
  // Waits until the service's charge request has reached the gateway (which
  // then sleeps out its latency fault before charging); false if it did not
  // within 10 s.
  bool ChargeReachedTheGateway() const {
    return testing::WaitUntil([&] { return testing::DeliveredTo(service_->pid(), world_->gateway_port()); },
                              milliseconds(10000));
  }
  int Count(const std::string& sql) const { return std::stoi(world_->Value(sql)); }

  TestDatabase db_;
  std::unique_ptr<testing::RideWorld> world_;
  std::unique_ptr<ChildProcess> service_;
  std::uint16_t port_ = 0;
};

TEST_F(RideServiceTest, BooksARideAndChargesOnce) {
  HttpResult r = Post("ride-happy-0001");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.status, 201) << r.body;
  auto body = nlohmann::json::parse(r.body);
  EXPECT_TRUE(body.contains("ride_id"));
  EXPECT_EQ(body["message"], "Payment accepted. Your pilot is on their way!");
  auto ledger = Ledger();
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0]["id"], body["charge_id"]);
  EXPECT_EQ(ledger[0]["amount"], 2000);
  EXPECT_EQ(Count("SELECT count(*) FROM rides WHERE charge_id IS NOT NULL"), 1);
  HttpResult list = HttpCall(port_, "GET", "/rides", {{"Authorization", "Bearer tok_user_1"}}, "");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(nlohmann::json::parse(list.body)[0]["charge_id"], body["charge_id"]);
  EXPECT_EQ(HttpCall(port_, "GET", "/healthz", {}, "").status, 200);
}

TEST_F(RideServiceTest, ReplaysTheStoredAnswerByteForByte) {
  HttpResult first = Post("ride-replay-0001");
  ASSERT_EQ(first.status, 201);
  HttpResult again = Post("ride-replay-0001");
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.Header("idempotent-replayed"), "true");
  EXPECT_EQ(first.Header("idempotent-replayed"), "");
  EXPECT_EQ(Ledger().size(), 1u);
}

TEST_F(RideServiceTest, AnswersEachClientErrorWithAProblem) {
  HttpResult no_key = Post("");
  EXPECT_EQ(no_key.status, 400);
  EXPECT_EQ(no_key.Header("content-type"), "application/problem+json");
  HttpResult no_token = HttpCall(port_, "POST", "/rides", {{"Idempotency-Key", "k-401-000001"}}, kRide);
  EXPECT_EQ(no_token.status, 401);
  HttpResult bad_params =
      Post("ride-422-params", R"({"origin_lat": 91, "origin_lon": 0, "target_lat": 0, "target_lon": 0})");
  EXPECT_EQ(bad_params.status, 422);
  EXPECT_NE(bad_params.body.find("origin_lat"), std::string::npos) << bad_params.body;
  ASSERT_EQ(Post("ride-422-reuse").status, 201);
  HttpResult reuse = Post("ride-422-reuse", R"({"origin_lat": 1, "origin_lon": 1, "target_lat": 1, "target_lon": 1})");
  EXPECT_EQ(reuse.status, 422);
  EXPECT_EQ(reuse.Header("content-type"), "application/problem+json");
  EXPECT_EQ(Post("ride-bad-json", "{").status, 400);
  EXPECT_EQ(Count("SELECT count(*) FROM phasekey.idempotency_keys WHERE owner_token IS NOT NULL"), 0)
      << "nothing left locked";
}

TEST_F(RideServiceTest, AnswersInProgressWhileTheFirstRequestIsCharging) {
  ASSERT_TRUE(Faults(R"({"latency_ms": 1500})"));
  auto first = std::async(std::launch::async, [&] { return Post("ride-409-0001"); });
  ASSERT_TRUE(ChargeReachedTheGateway()) << "the first request's charge never reached the gateway";
  HttpResult second = Post("ride-409-0001");
  EXPECT_EQ(second.status, 409) << second.body;
  EXPECT_FALSE(second.Header("retry-after").empty());
  EXPECT_EQ(first.get().status, 201);
  EXPECT_EQ(Ledger().size(), 1u);
}

TEST_F(RideServiceTest, StoresAndReplaysADecline) {
  HttpResult r = Post("ride-declined-01", kRide, 13);
  EXPECT_EQ(r.status, 402) << r.body;
  HttpResult again = Post("ride-declined-01", kRide, 13);
  EXPECT_EQ(again.status, 402);
  EXPECT_EQ(again.body, r.body);
  EXPECT_EQ(again.Header("idempotent-replayed"), "true");
  EXPECT_EQ(Ledger().size(), 0u);
}

TEST_F(RideServiceTest, AGateway500AnswersRetryLaterThenTheRetrySucceeds) {
  ASSERT_TRUE(Faults(R"({"fail_rate": 1.0})"));
  HttpResult r = Post("ride-503-0001");
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_FALSE(r.Header("retry-after").empty());
  ASSERT_TRUE(Faults(R"({"fail_rate": 0.0})"));
  EXPECT_EQ(Post("ride-503-0001").status, 201);
  EXPECT_EQ(Ledger().size(), 1u);
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 1);
}

TEST_F(RideServiceTest, ADroppedGatewayResponseIsRetriedWithTheSameProviderKey) {
  // The gateway charges, then closes the connection without answering: the
  // outcome is unknown, so the engine calls again with the same provider key
  // and the gateway replays the charge (replays are never dropped).
  ASSERT_TRUE(Faults(R"({"drop_response_rate": 1.0})"));
  HttpResult r = Post("ride-drop-0001");
  ASSERT_EQ(r.status, 201) << r.body;
  auto ledger = Ledger();
  ASSERT_EQ(ledger.size(), 1u) << "one charge, however many attempts";
  EXPECT_EQ(ledger[0]["id"], nlohmann::json::parse(r.body)["charge_id"]);
  ASSERT_TRUE(Faults(R"({"drop_response_rate": 0.0})"));
  EXPECT_EQ(Post("ride-drop-0001").body, r.body);
}

TEST_F(RideServiceTest, AServiceKilledBetweenTheChargeAndItsRecordIsCompletedByARetry) {
  service_.reset();
  const testing::RideProcessOptions short_lease{.lease_seconds = 4, .charge_timeout_ms = 2500};
  StartService(short_lease);
  const std::uint16_t port = port_;
  ASSERT_TRUE(Faults(R"({"latency_ms": 1200})"));
  auto doomed = std::async(std::launch::async, [&] { return Post("ride-kill-0001"); });
  ASSERT_TRUE(ChargeReachedTheGateway()) << "the charge request never reached the gateway";
  service_->Signal(SIGKILL);
  service_->Wait();
  EXPECT_FALSE(doomed.get().ok) << "the client saw the connection die";
  // The gateway still makes the charge; nothing recorded it.
  testing::WaitUntil([&] { return !Ledger().empty(); }, milliseconds(5000), milliseconds(100));
  ASSERT_EQ(Ledger().size(), 1u);
  EXPECT_EQ(Count("SELECT count(*) FROM rides WHERE charge_id IS NULL"), 1);
  ASSERT_TRUE(Faults(R"({"latency_ms": 0})"));
  testing::RideProcessOptions same_port = short_lease;
  same_port.port = port;
  StartService(same_port);
  HttpResult r;
  // A client retrying every 250 ms: 409 until the dead holder's 4 s lease
  // runs out (waiting it out is the behaviour under test), then the takeover.
  for (int i = 0; i < 40; ++i) {
    r = Post("ride-kill-0001");
    if (r.status != 409) break;
    std::this_thread::sleep_for(milliseconds(250));
  }
  ASSERT_EQ(r.status, 201) << r.body;
  auto ledger = Ledger();
  ASSERT_EQ(ledger.size(), 1u) << "the takeover replayed the charge instead of making a second";
  EXPECT_EQ(ledger[0]["id"], nlohmann::json::parse(r.body)["charge_id"]);
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 1);
}

}  // namespace
}  // namespace phasekey
