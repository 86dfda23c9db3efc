// The ride service's webhook endpoint (POST /webhooks/gateway) over loopback
// HTTP, against real processes and a real PostgreSQL: signed events applied
// once, bad signatures refused before anything is recorded, a refund before
// its charge parked and then applied, the fake gateway's at-least-once
// deliveries converging through a service outage and a gateway restart, and
// a ride's PaymentIntent and its refund ending as one refunded payment.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "phasekey/webhook_endpoint.h"
#include "support/child_process.h"
#include "support/http_client.h"
#include "support/ride_world.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::ChildProcess;
using testing::HttpCall;
using testing::HttpResult;
using testing::TestDatabase;

constexpr char kSecret[] = "whsec_ride_test";
constexpr char kPath[] = "/webhooks/gateway";

std::string Event(const std::string& id, const std::string& type, const std::string& charge) {
  return nlohmann::json{{"id", id},
                        {"object", "event"},
                        {"type", type},
                        {"created", 1700000000},
                        {"data", {{"object", {{"id", charge}, {"object", "charge"}}}}}}
      .dump();
}

std::int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class WebhooksTest : public ::testing::Test {
 protected:
  void TearDown() override {
    service_.reset();
    world_.reset();
  }

  // The gateway: on `port` (0: any) with `gateway_args`; it delivers its
  // events only when they name a webhook URL.
  void StartWorld(std::uint16_t port = 0, std::vector<std::string> gateway_args = {}) {
    testing::RideWorldOptions o{.database_url = db_.url(),
                                .gateway_args = std::move(gateway_args),
                                .gateway_env = {std::string("FAKE_GATEWAY_WEBHOOK_SECRET=") + kSecret},
                                .gateway_port = port};
    world_ = std::make_unique<testing::RideWorld>(o);
  }
  // The service, with the webhook secret, on `port` (0: any).
  void StartService(std::uint16_t port = 0) {
    if (!world_) StartWorld();
    service_ =
        world_->StartService(&port_, {.env = {std::string("RIDE_BOOKING_WEBHOOK_SECRET=") + kSecret}, .port = port});
    ASSERT_NE(port_, 0) << "ride_booking serve did not start";
  }
  HttpResult Deliver(const std::string& body, const std::string& signature) {
    std::vector<std::pair<std::string, std::string>> h = {{"Content-Type", "application/json"}};
    if (!signature.empty()) h.emplace_back("Stripe-Signature", signature);
    return HttpCall(port_, "POST", kPath, h, body);
  }
  HttpResult DeliverSigned(const std::string& body) { return Deliver(body, SignWebhook(kSecret, body, Now())); }
  std::string Value(const std::string& sql) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec(sql);
    return r.empty() || r[0][0].is_null() ? "<none>" : r[0][0].as<std::string>();
  }

  TestDatabase db_;
  std::unique_ptr<testing::RideWorld> world_;
  std::unique_ptr<ChildProcess> service_;
  std::uint16_t port_ = 0;
};

TEST_F(WebhooksTest, ASignedEventIsAppliedOnceAndItsRedeliveriesAcknowledged) {
  StartService();
  const std::string body = Event("evt_1", "charge.succeeded", "ch_1");
  HttpResult first = DeliverSigned(body);
  ASSERT_TRUE(first.ok) << first.error;
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(nlohmann::json::parse(first.body).at("delivery"), "applied");
  HttpResult again = DeliverSigned(body);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(nlohmann::json::parse(again.body).at("delivery"), "duplicate");
  EXPECT_EQ(Value("SELECT state FROM ride_payments WHERE charge_id = 'ch_1'"), "succeeded");
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events"), "1");
}

TEST_F(WebhooksTest, ABadOrStaleSignatureIsRefusedAndNothingIsRecorded) {
  StartService();
  const std::string body = Event("evt_1", "charge.succeeded", "ch_1");
  const std::string wrong_secret = SignWebhook("whsec_attacker", body, Now());
  const std::string stale = SignWebhook(kSecret, body, Now() - 600);
  const std::string other_body = SignWebhook(kSecret, Event("evt_2", "charge.succeeded", "ch_1"), Now());
  for (const std::string& signature : {wrong_secret, stale, other_body, std::string()}) {
    HttpResult r = Deliver(body, signature);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, 400) << signature;
    EXPECT_EQ(r.Header("content-type"), "application/problem+json");
    EXPECT_NE(nlohmann::json::parse(r.body).at("type").get<std::string>().find("#invalid-signature"),
              std::string::npos);
  }
  HttpResult not_an_event = DeliverSigned(R"({"id":"evt_3"})");
  EXPECT_EQ(not_an_event.status, 400);
  EXPECT_NE(not_an_event.body.find("invalid-event"), std::string::npos);
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events"), "0");
  EXPECT_EQ(Value("SELECT count(*) FROM ride_payments"), "0");
}

TEST_F(WebhooksTest, ARefundDeliveredBeforeItsChargeEndsRefunded) {
  StartService();
  HttpResult refunded = DeliverSigned(Event("evt_r", "charge.refunded", "ch_1"));
  ASSERT_EQ(refunded.status, 200) << refunded.body;
  EXPECT_EQ(nlohmann::json::parse(refunded.body).at("delivery"), "parked");
  EXPECT_EQ(Value("SELECT count(*) FROM ride_payments"), "0");
  HttpResult succeeded = DeliverSigned(Event("evt_s", "charge.succeeded", "ch_1"));
  ASSERT_EQ(succeeded.status, 200) << succeeded.body;
  EXPECT_EQ(Value("SELECT state FROM ride_payments WHERE charge_id = 'ch_1'"), "refunded");
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events WHERE state = 'applied'"), "2");
}

TEST_F(WebhooksTest, TheWorkerSweepsAParkedRefundOnceItsChargeIsRecordedByAnotherPath) {
  StartService();
  HttpResult refunded = DeliverSigned(Event("evt_r", "charge.refunded", "ch_1"));
  ASSERT_EQ(refunded.status, 200) << refunded.body;
  {  // an operator records the charge by hand: no event will unpark the refund
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec0("INSERT INTO ride_payments (charge_id, state) VALUES ('ch_1', 'succeeded')");
    tx.commit();
  }
  ASSERT_EQ(Value("SELECT state FROM phasekey.inbox_events WHERE event_id = 'evt_r'"), "parked");
  auto worker = world_->StartWorker();
  std::string state;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(milliseconds(100))) {
    state = Value("SELECT state FROM ride_payments WHERE charge_id = 'ch_1'");
    if (state == "refunded") break;
  }
  EXPECT_EQ(state, "refunded");
  EXPECT_EQ(Value("SELECT state FROM phasekey.inbox_events WHERE event_id = 'evt_r'"), "applied");
  worker->Signal(SIGTERM);
  EXPECT_EQ(worker->Wait(), 0);
}

TEST_F(WebhooksTest, GatewayEventsConvergeThroughAServiceOutageAndAGatewayRestart) {
  const std::uint16_t gw_port = testing::FreeLoopbackPort(), svc_port = testing::FreeLoopbackPort();
  StartWorld(gw_port, {"--seed", "3", "--webhook-url", "http://127.0.0.1:" + std::to_string(svc_port) + kPath,
                       "--webhook-duplicate-rate", "0.5", "--webhook-reorder-rate", "1"});  // no service yet
  std::vector<std::string> charges;
  for (int i = 0; i < 3; ++i) {
    HttpResult r = HttpCall(gw_port, "POST", "/v1/charges", {{"Idempotency-Key", "ride-" + std::to_string(i)}},
                            "amount=1500&currency=usd&customer=" + std::to_string(i + 1));
    ASSERT_EQ(r.status, 200) << r.body;
    charges.push_back(nlohmann::json::parse(r.body).at("id").get<std::string>());
  }
  HttpResult refund =
      HttpCall(gw_port, "POST", "/v1/refunds", {{"Idempotency-Key", "refund-0"}}, "charge=" + charges[0]);
  ASSERT_EQ(refund.status, 200) << refund.body;
  HttpResult replayed =
      HttpCall(gw_port, "POST", "/v1/refunds", {{"Idempotency-Key", "refund-0"}}, "charge=" + charges[0]);
  EXPECT_EQ(replayed.status, 200);
  EXPECT_EQ(replayed.body, refund.body);

  ASSERT_EQ(world_->StopGateway(), 0);  // undelivered: derived again from the ledger
  world_->StartGateway();
  StartService(svc_port);

  const std::string expected = charges[0] + ":refunded," + charges[1] + ":succeeded," + charges[2] + ":succeeded";
  const std::string query = "SELECT string_agg(charge_id || ':' || state, ',' ORDER BY charge_id = '" + charges[0] +
                            "' DESC, charge_id = '" + charges[1] + "' DESC) FROM ride_payments";
  std::string got;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(milliseconds(100))) {
    got = Value(query);
    if (got == expected) break;
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events WHERE state = 'applied'"), "4");
}

// The service's own ride, paid by a PaymentIntent (its default) and refunded
// through POST /rides/{id}/refund: the gateway's payment_intent.succeeded
// and its charge.refunded (whose charge names the intent) both land on the
// ride's payment, "pi_...".
TEST_F(WebhooksTest, ARidePaidByAPaymentIntentAndRefundedEndsRefundedUnderTheIntent) {
  const std::uint16_t gw_port = testing::FreeLoopbackPort(), svc_port = testing::FreeLoopbackPort();
  StartWorld(gw_port, {"--webhook-url", "http://127.0.0.1:" + std::to_string(svc_port) + kPath});
  StartService(svc_port);
  const HttpResult ride = world_->PostRide(port_, 21, "intent-ride-1");
  ASSERT_EQ(ride.status, 201) << ride.body;
  const nlohmann::json booked = nlohmann::json::parse(ride.body);
  const std::string payment = booked.at("charge_id").get<std::string>();
  ASSERT_TRUE(payment.starts_with("pi_")) << ride.body;
  const HttpResult refund =
      HttpCall(port_, "POST", "/rides/" + std::to_string(booked.at("ride_id").get<long long>()) + "/refund",
               {{"Authorization", "Bearer tok_user_21"},
                {"Content-Type", "application/json"},
                {"Idempotency-Key", "intent-refund-1"}},
               "{}");
  ASSERT_EQ(refund.status, 200) << refund.body;

  std::string state;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(milliseconds(100))) {
    state = Value("SELECT string_agg(charge_id || ':' || state, ',') FROM ride_payments");
    if (state == payment + ":refunded") break;
  }
  EXPECT_EQ(state, payment + ":refunded");
  EXPECT_EQ(Value("SELECT string_agg(event_type || ':' || object_id, ',' ORDER BY event_type) "
                  "FROM phasekey.inbox_events WHERE state = 'applied'"),
            "charge.refunded:" + payment + ",payment_intent.succeeded:" + payment);
}

}  // namespace
}  // namespace phasekey
