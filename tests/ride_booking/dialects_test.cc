// The ride flow against each of fake_gateway's dialects, end to end: a real
// fake_gateway process with --dialect, a real `ride_booking serve
// --provider`, real HTTP over loopback and a real PostgreSQL. With the
// gateway dropping every response of the first attempt, each ride is still
// charged exactly once (the key or, for HyperPay, the lookup by
// merchantTransactionId keeps it single); user 13's card is declined in every
// dialect. A ride is refunded through each dialect's refund route
// (POST /rides/{id}/refund), once. A short `ride_booking chaos --provider`
// run per dialect closes it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/http_client.h"
#include "support/ride_world.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::ChildProcess;
using testing::HttpCall;
using testing::HttpResult;
using testing::RunToEnd;
using testing::TestDatabase;

const std::string kRide = R"({"origin_lat": 52.52, "origin_lon": 13.40, "target_lat": 48.85, "target_lon": 2.35})";

// The gateway (with --dialect) and one service (with --provider), started
// by RideWorld; the database is the test's own.
class DialectTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    testing::RideWorldOptions o{
        .database_url = db_.url(), .lease_seconds = 15, .charge_timeout_ms = 3000, .provider = GetParam()};
    world_ = std::make_unique<testing::RideWorld>(o);
    service_ = world_->StartService(&port_);
    ASSERT_NE(port_, 0) << "ride_booking serve did not start";
  }
  void TearDown() override {
    service_.reset();
    world_.reset();
  }

  HttpResult Post(const std::string& key, int user = 1) { return world_->PostRide(port_, user, key, kRide); }
  HttpResult Refund(const std::string& path, const std::string& key, int user = 1) {
    return HttpCall(port_, "POST", path,
                    {{"Authorization", "Bearer tok_user_" + std::to_string(user)},
                     {"Content-Type", "application/json"},
                     {"Idempotency-Key", key}},
                    "{}");
  }
  bool Faults(const nlohmann::json& faults) { return world_->SetGatewayFaults(faults); }
  nlohmann::json Ledger() { return world_->Ledger(); }
  // How often the service's charge phase failed (any outcome but "moved"),
  // from its /metrics (phasekey_phase_outcomes_total).
  long long ChargeFailures() {
    std::istringstream metrics(HttpCall(port_, "GET", "/metrics", {}, "").body);
    long long failures = 0;
    for (std::string line; std::getline(metrics, line);) {
      if (line.rfind("phasekey_phase_outcomes_total{", 0) != 0 || line.find("phase=\"charge\"") == std::string::npos ||
          line.find("kind=\"moved\"") != std::string::npos) {
        continue;
      }
      failures += std::stoll(line.substr(line.rfind(' ') + 1));
    }
    return failures;
  }
  int Count(const std::string& sql) { return std::stoi(world_->Value(sql)); }

  TestDatabase db_;
  std::unique_ptr<testing::RideWorld> world_;
  std::unique_ptr<ChildProcess> service_;
  std::uint16_t port_ = 0;
};

TEST_P(DialectTest, DroppedResponsesStillChargeEachRideOnce) {
  // One connection per gateway call. On a kept-alive connection the gateway's
  // drop (a close with no answer) looks like a connection it closed while
  // idle, which the client sends again within the call when the provider key
  // makes that safe (docs/providers.md, "Connections to providers"): no
  // answer would reach the phase as lost, and this test is about the phase's
  // recovery from a lost answer.
  service_.reset();
  service_ = world_->StartService(&port_, {.args = {"--no-provider-keep-alive"}});
  ASSERT_NE(port_, 0) << "ride_booking serve did not start";
  const std::vector<std::string> keys = {"ride-drop-" + GetParam() + "-1", "ride-drop-" + GetParam() + "-2"};
  std::vector<std::string> bodies;
  for (const std::string& key : keys) {
    // The first attempt: the gateway charges, then drops the answer.
    ASSERT_TRUE(Faults({{"drop_response_rate", 1.0}}));
    HttpResult first = Post(key);
    ASSERT_TRUE(first.ok) << first.error;
    ASSERT_TRUE(Faults({{"drop_response_rate", 0.0}}));
    HttpResult r = first;
    // The engine settles it within the request, or a client retry with the
    // same key does.
    for (int attempt = 0; attempt < 20 && r.status != 201; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      r = Post(key);
    }
    ASSERT_EQ(r.status, 201) << "first: " << first.status << " " << first.body << "\nlast: " << r.body;
    bodies.push_back(r.body);
  }
  // Every first attempt lost its answer: the charge phase failed once per
  // key at least, else the test saw no fault.
  EXPECT_GE(ChargeFailures(), static_cast<long long>(keys.size())) << "the gateway dropped no answer";
  const nlohmann::json ledger = Ledger();
  ASSERT_EQ(ledger.size(), keys.size()) << ledger.dump(2);
  std::set<std::string> ids;
  for (const auto& charge : ledger) {
    ids.insert(charge["id"].get<std::string>());
    EXPECT_EQ(charge["amount"], 2000);
    EXPECT_EQ(charge["currency"], "usd");
    EXPECT_TRUE(charge["idempotency_key"].is_string()) << "the key or reference used: " << charge.dump();
  }
  for (const std::string& body : bodies) {
    EXPECT_TRUE(ids.contains(nlohmann::json::parse(body)["charge_id"].get<std::string>())) << body;
  }
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 2);
  // A replay of a finished ride charges nothing more.
  EXPECT_EQ(Post(keys[0]).body, bodies[0]);
  EXPECT_EQ(Ledger().size(), keys.size());
}

TEST_P(DialectTest, DeclinesUserThirteen) {
  const std::string key = "ride-declined-" + GetParam();
  HttpResult r = Post(key, 13);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.status, 402) << r.body;
  HttpResult again = Post(key, 13);
  EXPECT_EQ(again.status, 402);
  EXPECT_EQ(again.body, r.body);
  EXPECT_EQ(Ledger().size(), 0u);
}

TEST_P(DialectTest, ARideIsRefundedOnceThroughTheProvidersRefund) {
  HttpResult ride = Post("ride-refund-" + GetParam());
  ASSERT_EQ(ride.status, 201) << ride.body;
  const nlohmann::json booked = nlohmann::json::parse(ride.body);
  const std::string path = "/rides/" + std::to_string(booked["ride_id"].get<long long>()) + "/refund";
  HttpResult refund = Refund(path, "refund-" + GetParam());
  ASSERT_EQ(refund.status, 200) << refund.body;
  const nlohmann::json refunded = nlohmann::json::parse(refund.body);
  EXPECT_EQ(refunded["charge_id"], booked["charge_id"]);
  EXPECT_FALSE(refunded["refund_id"].get<std::string>().empty());
  // A retry is answered from the key; another key finds the ride refunded.
  EXPECT_EQ(Refund(path, "refund-" + GetParam()).body, refund.body);
  EXPECT_EQ(Refund(path, "refund-again-" + GetParam()).status, 409);
  const nlohmann::json ledger = Ledger();
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0].value("refunded", false), true) << ledger.dump();
  EXPECT_EQ(Count("SELECT count(*) FROM rides WHERE refund_id = '" + refunded["refund_id"].get<std::string>() + "'"),
            1);
  const HttpResult none = Refund("/rides/999999/refund", "refund-none-" + GetParam());
  EXPECT_EQ(none.status, 404);
  EXPECT_EQ(none.Header("content-type"), "application/problem+json");
  EXPECT_NE(none.body.find("#ride-not-found"), std::string::npos) << none.body;
}

class DialectChaosTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DialectChaosTest, ShortChaosRunPasses) {
  TestDatabase db(TestDatabase::Schema::kMigrated);
  const auto [code, out] =
      RunToEnd({RIDE_BOOKING_PATH, "chaos", "--provider", GetParam(), "--database-url", db.url(), "--clients", "2",
                "--requests", "5", "--kills", "0", "--seed", "1", "--no-progress"});
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("chaos: PASS"), std::string::npos) << out;
}

const std::vector<std::string> kDialects = {"stripe", "adyen", "square", "tap", "moyasar", "hyperpay"};

std::string Name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

// Stripe's two APIs v1: the service charges through PaymentIntents unless
// told to use the Charges API; the payment id says which one the gateway
// served. Only a PaymentIntent can need the customer's authentication (user
// 14), which a server-side flow cannot give: a decline, nothing charged.
TEST(StripeApiTest, TheServiceChargesThroughPaymentIntentsUnlessToldToUseCharges) {
  TestDatabase db;
  testing::RideWorld world({.database_url = db.url()});
  std::uint16_t intents_port = 0, charges_port = 0;
  auto intents = world.StartService(&intents_port, {.name = "intents"});
  auto charges = world.StartService(&charges_port, {.name = "charges", .args = {"--stripe-api", "charges"}});
  ASSERT_NE(intents_port, 0);
  ASSERT_NE(charges_port, 0);
  const HttpResult by_intent = world.PostRide(intents_port, 21, "stripe-api-intent");
  const HttpResult by_charge = world.PostRide(charges_port, 22, "stripe-api-charge");
  ASSERT_EQ(by_intent.status, 201) << by_intent.body;
  ASSERT_EQ(by_charge.status, 201) << by_charge.body;
  EXPECT_TRUE(nlohmann::json::parse(by_intent.body)["charge_id"].get<std::string>().starts_with("pi_"))
      << by_intent.body;
  EXPECT_TRUE(nlohmann::json::parse(by_charge.body)["charge_id"].get<std::string>().starts_with("ch_"))
      << by_charge.body;
  EXPECT_EQ(world.PostRide(intents_port, 14, "stripe-api-authenticate").status, 402);
  EXPECT_EQ(world.PostRide(charges_port, 14, "stripe-api-no-authentication").status, 201);
  EXPECT_EQ(world.Ledger().size(), 3u) << world.Ledger().dump(2);
}

INSTANTIATE_TEST_SUITE_P(AllDialects, DialectTest, ::testing::ValuesIn(kDialects), Name);
INSTANTIATE_TEST_SUITE_P(AllDialects, DialectChaosTest, ::testing::ValuesIn(kDialects), Name);

}  // namespace
}  // namespace phasekey
