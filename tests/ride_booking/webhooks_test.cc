// The ride service's webhook endpoint (POST /webhooks/gateway) over loopback
// HTTP, against real processes and a real PostgreSQL: signed events applied
// once, bad signatures refused before anything is recorded, a refund before
// its charge parked and then applied, and the fake gateway's at-least-once
// deliveries converging through a service outage and a gateway restart.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "phasekey/webhook_signature.h"
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
  return nlohmann::json{{"id", id}, {"object", "event"}, {"type", type}, {"created", 1700000000},
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
    gateway_.reset();
    if (!gw_dir_.empty()) std::filesystem::remove_all(gw_dir_);
  }

  // `listen` "127.0.0.1:0" or a fixed port; the gateway URL need not answer.
  void StartService(const std::string& listen, std::uint16_t gateway_port) {
    service_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{RIDE_BOOKING_PATH, "serve", "--database-url", db_.url(), "--listen", listen,
                                 "--gateway-url", "http://127.0.0.1:" + std::to_string(gateway_port)},
        std::vector<std::string>{std::string("RIDE_BOOKING_WEBHOOK_SECRET=") + kSecret});
    port_ = service_->WaitForListeningPort();
    ASSERT_NE(port_, 0) << "ride_booking serve did not start";
  }
  void StartGateway(std::uint16_t port, std::uint16_t service_port) {
    if (gw_dir_.empty()) gw_dir_ = std::filesystem::temp_directory_path() / ("pk-gw-wh-" + db_.name());
    gateway_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{FAKE_GATEWAY_PATH, "--listen", "127.0.0.1:" + std::to_string(port), "--data-dir",
                                 gw_dir_.string(), "--seed", "3", "--webhook-url",
                                 "http://127.0.0.1:" + std::to_string(service_port) + kPath,
                                 "--webhook-duplicate-rate", "0.5", "--webhook-reorder-rate", "1"},
        std::vector<std::string>{std::string("FAKE_GATEWAY_WEBHOOK_SECRET=") + kSecret});
    ASSERT_EQ(gateway_->WaitForListeningPort(), port) << "fake_gateway did not start";
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
  std::filesystem::path gw_dir_;
  std::unique_ptr<ChildProcess> gateway_, service_;
  std::uint16_t port_ = 0;
};

TEST_F(WebhooksTest, ASignedEventIsAppliedOnceAndItsRedeliveriesAcknowledged) {
  StartService("127.0.0.1:0", 9);
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
  StartService("127.0.0.1:0", 9);
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
  StartService("127.0.0.1:0", 9);
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
  StartService("127.0.0.1:0", 9);
  HttpResult refunded = DeliverSigned(Event("evt_r", "charge.refunded", "ch_1"));
  ASSERT_EQ(refunded.status, 200) << refunded.body;
  {  // an operator records the charge by hand: no event will unpark the refund
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec0("INSERT INTO ride_payments (charge_id, state) VALUES ('ch_1', 'succeeded')");
    tx.commit();
  }
  ASSERT_EQ(Value("SELECT state FROM phasekey.inbox_events WHERE event_id = 'evt_r'"), "parked");
  ChildProcess worker({RIDE_BOOKING_PATH, "worker", "--database-url", db_.url(), "--gateway-url",
                       "http://127.0.0.1:9", "--poll-ms", "100"});
  std::string state;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(milliseconds(100))) {
    state = Value("SELECT state FROM ride_payments WHERE charge_id = 'ch_1'");
    if (state == "refunded") break;
  }
  EXPECT_EQ(state, "refunded");
  EXPECT_EQ(Value("SELECT state FROM phasekey.inbox_events WHERE event_id = 'evt_r'"), "applied");
  worker.Signal(SIGTERM);
  EXPECT_EQ(worker.Wait(), 0);
}

TEST_F(WebhooksTest, GatewayEventsConvergeThroughAServiceOutageAndAGatewayRestart) {
  const std::uint16_t gw_port = testing::FreeLoopbackPort(), svc_port = testing::FreeLoopbackPort();
  StartGateway(gw_port, svc_port);  // the service is not running yet
  std::vector<std::string> charges;
  for (int i = 0; i < 3; ++i) {
    HttpResult r = HttpCall(gw_port, "POST", "/v1/charges", {{"Idempotency-Key", "ride-" + std::to_string(i)}},
                            "amount=1500&currency=usd&customer=" + std::to_string(i + 1));
    ASSERT_EQ(r.status, 200) << r.body;
    charges.push_back(nlohmann::json::parse(r.body).at("id").get<std::string>());
  }
  HttpResult refund = HttpCall(gw_port, "POST", "/v1/refunds", {{"Idempotency-Key", "refund-0"}}, "charge=" + charges[0]);
  ASSERT_EQ(refund.status, 200) << refund.body;
  HttpResult replayed = HttpCall(gw_port, "POST", "/v1/refunds", {{"Idempotency-Key", "refund-0"}}, "charge=" + charges[0]);
  EXPECT_EQ(replayed.status, 200);
  EXPECT_EQ(replayed.body, refund.body);

  gateway_->Signal(SIGTERM);  // undelivered: derived again from the ledger
  ASSERT_EQ(gateway_->Wait(), 0);
  StartGateway(gw_port, svc_port);
  StartService("127.0.0.1:" + std::to_string(svc_port), gw_port);

  const std::string expected = charges[0] + ":refunded," + charges[1] + ":succeeded," + charges[2] + ":succeeded";
  const std::string query =
      "SELECT string_agg(charge_id || ':' || state, ',' ORDER BY charge_id = '" + charges[0] + "' DESC, charge_id = '" +
      charges[1] + "' DESC) FROM ride_payments";
  std::string got;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(milliseconds(100))) {
    got = Value(query);
    if (got == expected) break;
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.inbox_events WHERE state = 'applied'"), "4");
}

}  // namespace
}  // namespace phasekey
