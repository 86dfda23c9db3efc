// fake_gateway's refunds and webhook events, through the transport-free
// Gateway: refunds idempotent and durable, every recorded charge and refund
// handed on for delivery, events derived with stable ids and signed the way
// the engine verifies.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fake_gateway/gateway.h"
#include "fake_gateway/webhook_events.h"
#include "fake_gateway/webhook_sender.h"
#include "phasekey/phases/stripe_event.h"
#include "phasekey/webhook_endpoint.h"
#include "support/loopback_http_server.h"
#include "support/wait.h"

namespace fake_gateway {
namespace {

using nlohmann::json;

class FakeGatewayWebhooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "fake_gateway_webhooks.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Gateway> Open() {
    GatewayOptions options;
    options.data_dir = dir_;
    options.seed = 1;
    options.on_recorded = [this](const LedgerEntry& entry) {
      std::lock_guard lock(mu_);
      for (const WebhookEvent& e : EventsOf(entry)) recorded_.push_back(e);
    };
    std::string error;
    auto gateway = Gateway::Open(std::move(options), &error);
    EXPECT_NE(gateway, nullptr) << error;
    return gateway;
  }
  static std::string ChargeId(Gateway& gateway, const std::string& key) {
    GatewayResponse r =
        gateway.Handle("POST", "/v1/charges", {{"Idempotency-Key", key}}, "amount=2000&currency=usd&customer=7");
    EXPECT_EQ(r.status, 200) << r.body;
    return json::parse(r.body).at("id").get<std::string>();
  }
  static GatewayResponse Refund(Gateway& gateway, const std::string& key, const std::string& charge) {
    Headers headers;
    if (!key.empty()) headers.emplace_back("Idempotency-Key", key);
    return gateway.Handle("POST", "/v1/refunds", headers, "charge=" + charge);
  }

  std::filesystem::path dir_;
  std::mutex mu_;
  std::vector<WebhookEvent> recorded_;  // GUARDED_BY(mu_)
};

TEST_F(FakeGatewayWebhooksTest, ARefundIsIdempotentUnderItsKeyAndMadeOnlyOnce) {
  auto gateway = Open();
  ASSERT_NE(gateway, nullptr);
  const std::string charge = ChargeId(*gateway, "ride-1");
  GatewayResponse first = Refund(*gateway, "refund-1", charge);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(json::parse(first.body).at("charge"), charge);
  EXPECT_EQ(json::parse(first.body).at("amount"), 2000);
  GatewayResponse replay = Refund(*gateway, "refund-1", charge);
  EXPECT_EQ(replay.status, 200);
  EXPECT_EQ(replay.body, first.body);
  GatewayResponse again = Refund(*gateway, "refund-2", charge);
  EXPECT_EQ(again.status, 400);
  EXPECT_EQ(json::parse(again.body).at("error").at("code"), "charge_already_refunded");
  EXPECT_EQ(Refund(*gateway, "refund-3", "ch_unknown").status, 404);
  EXPECT_EQ(Refund(*gateway, "refund-1", "ch_other").status, 400) << "a key reused with other parameters";
  EXPECT_EQ(gateway->Handle("POST", "/v1/refunds", {}, "amount=5").status, 400);
  EXPECT_EQ(gateway->Refunds().size(), 1u);
}

TEST_F(FakeGatewayWebhooksTest, RefundsSurviveARestartAndShowInTheLedger) {
  std::string charge;
  {
    auto gateway = Open();
    ASSERT_NE(gateway, nullptr);
    charge = ChargeId(*gateway, "ride-1");
    ChargeId(*gateway, "ride-2");
    ASSERT_EQ(Refund(*gateway, "", charge).status, 200);
  }
  auto reopened = Open();
  ASSERT_NE(reopened, nullptr);
  ASSERT_EQ(reopened->Refunds().size(), 1u);
  EXPECT_EQ(reopened->Refunds()[0].charge_id, charge);
  json ledger = json::parse(reopened->Handle("GET", "/_ledger", {}, "").body);
  ASSERT_EQ(ledger.size(), 2u);
  EXPECT_EQ(ledger[0].at("refunded"), true);
  EXPECT_FALSE(ledger[1].contains("refunded"));
  EXPECT_EQ(Refund(*reopened, "", charge).status, 400) << "still refunded after the restart";
}

TEST_F(FakeGatewayWebhooksTest, EveryChargeAndRefundIsHandedOnForDeliveryWithTheIdsTheLedgerImplies) {
  auto gateway = Open();
  ASSERT_NE(gateway, nullptr);
  const std::string charge = ChargeId(*gateway, "ride-1");
  ChargeId(*gateway, "ride-1");  // a replay: no new charge, no new event
  gateway->Handle("POST", "/v1/charges", {}, "amount=2000&currency=usd&customer=13");  // declined: none
  ASSERT_EQ(Refund(*gateway, "r", charge).status, 200);
  std::vector<std::string> ids;
  {
    std::lock_guard lock(mu_);
    for (const auto& e : recorded_) ids.push_back(e.id);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"evt_succeeded_" + charge, "evt_refunded_" + charge}));
  std::vector<std::string> derived;
  for (const auto& e : EventsOfLedger(gateway->Charges(), gateway->Refunds())) derived.push_back(e.id);
  EXPECT_EQ(derived, ids) << "a restart derives the same events";
}

TEST_F(FakeGatewayWebhooksTest, EventsAreSignedAndShapedTheWayTheEngineReadsThem) {
  auto gateway = Open();
  ASSERT_NE(gateway, nullptr);
  const std::string charge = ChargeId(*gateway, "ride-1");
  ASSERT_EQ(Refund(*gateway, "r", charge).status, 200);
  for (const WebhookEvent& e : EventsOfLedger(gateway->Charges(), gateway->Refunds())) {
    const std::string header = StripeSignature("whsec_x", e.payload, 1700000000);
    EXPECT_EQ(header, phasekey::SignWebhook("whsec_x", e.payload, 1700000000));
    EXPECT_TRUE(
        phasekey::VerifyWebhookSignature(header, e.payload, "whsec_x",
                                         std::chrono::system_clock::time_point(std::chrono::seconds(1700000000)))
            .ok());
    auto parsed = phasekey::phases::ParseStripeEvent(e.payload);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
    EXPECT_EQ(parsed->event_id, e.id);
    EXPECT_EQ(parsed->type, e.type);
    EXPECT_EQ(parsed->object_id, charge);
  }
}

// A PaymentIntent's events, as Stripe sends them: payment_intent.succeeded
// about the intent, and at its refund charge.refunded about the intent's
// charge, which names the intent; the engine files both under the intent.
TEST_F(FakeGatewayWebhooksTest, AnIntentsEventsAreAboutTheIntent) {
  auto gateway = Open();
  ASSERT_NE(gateway, nullptr);
  GatewayResponse paid = gateway->Handle("POST", "/v1/payment_intents", {{"Idempotency-Key", "ride-1"}},
                                         "amount=2000&currency=usd&customer=7&confirm=true");
  ASSERT_EQ(paid.status, 200) << paid.body;
  const std::string intent = json::parse(paid.body).at("id").get<std::string>();
  ASSERT_TRUE(intent.starts_with("pi_")) << paid.body;
  ASSERT_EQ(gateway->Handle("POST", "/v1/refunds", {{"Idempotency-Key", "r"}}, "payment_intent=" + intent).status, 200);
  const std::vector<WebhookEvent> events = EventsOfLedger(gateway->Charges(), gateway->Refunds());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, "payment_intent.succeeded");
  EXPECT_EQ(events[1].type, "charge.refunded");
  const json refunded_charge = json::parse(events[1].payload).at("data").at("object");
  EXPECT_EQ(refunded_charge.at("id"), "ch_" + intent.substr(3));
  EXPECT_EQ(refunded_charge.at("payment_intent"), intent);
  for (const WebhookEvent& e : events) {
    auto parsed = phasekey::phases::ParseStripeEvent(e.payload);
    ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
    EXPECT_EQ(parsed->object_id, intent) << e.payload;
  }
}

TEST(WebhookSenderTest, RefusesABadUrlOrAMissingSecret) {
  std::string error;
  WebhookSenderOptions o;
  o.url = "https://example.com/hook";
  o.secret = "s";
  EXPECT_EQ(WebhookSender::Start(o, &error), nullptr);
  o.url = "http://127.0.0.1:9/hook";
  o.secret = "";
  EXPECT_EQ(WebhookSender::Start(o, &error), nullptr);
  EXPECT_NE(error.find("secret"), std::string::npos);
}

// Lines of a file, in order.
std::vector<std::string> Lines(const std::filesystem::path& file) {
  std::vector<std::string> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Waits until the sender has nothing pending (false after 60 s).
bool Drained(const WebhookSender& sender) {
  return phasekey::testing::WaitUntil([&] { return sender.stats().pending == 0; }, std::chrono::milliseconds(60000));
}

TEST_F(FakeGatewayWebhooksTest, AReceiverSlowOnOneEventDoesNotHoldBackTheOthers) {
  // The slow event goes first and its answer takes 2 s: with one delivery at
  // a time every other event would wait behind it and be acknowledged after
  // it; with several, the others are acknowledged meanwhile.
  phasekey::testing::LoopbackHttpServer receiver([](const phasekey::testing::LoopbackRequest& r) {
    phasekey::testing::LoopbackAnswer a = phasekey::testing::AnswerAndClose(200);
    if (r.body.find("evt_slow") != std::string::npos) a.delay = std::chrono::milliseconds(2000);
    return a;
  });
  WebhookSenderOptions o;
  o.url = receiver.Url("/hook");
  o.secret = "whsec_test";
  o.delivered_file = dir_ / "delivered.txt";
  o.duplicate_rate = 0;
  o.reorder_rate = 0;
  o.timeout = std::chrono::milliseconds(30000);
  std::string error;
  auto sender = WebhookSender::Start(o, &error);
  ASSERT_NE(sender, nullptr) << error;
  sender->Enqueue({"evt_slow", "charge.succeeded", R"({"id":"evt_slow"})"});
  for (int i = 0; i < 20; ++i) {
    const std::string id = "evt_" + std::to_string(i);
    sender->Enqueue({id, "charge.succeeded", R"({"id":")" + id + R"("})"});
  }
  ASSERT_TRUE(Drained(*sender));
  const std::vector<std::string> acknowledged = Lines(o.delivered_file);
  ASSERT_EQ(acknowledged.size(), 21u);
  EXPECT_EQ(acknowledged.back(), "evt_slow") << "the slow event held back the others";
  EXPECT_EQ(sender->stats().delivered, 21u);
  EXPECT_EQ(std::filesystem::status(o.delivered_file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST_F(FakeGatewayWebhooksTest, AnEventIsRetriedUntilTheReceiverAcknowledgesItAndSignedEachTime) {
  std::map<std::string, int> refused;  // the script's calls are serialized
  phasekey::testing::LoopbackHttpServer receiver([&refused](const phasekey::testing::LoopbackRequest& r) {
    if (refused[r.body]++ < 2) return phasekey::testing::AnswerAndClose(503);
    return phasekey::testing::AnswerAndClose(200);
  });
  WebhookSenderOptions o;
  o.url = receiver.Url("/hook");
  o.secret = "whsec_test";
  o.duplicate_rate = 0;
  o.first_backoff = std::chrono::milliseconds(10);
  std::string error;
  auto sender = WebhookSender::Start(o, &error);
  ASSERT_NE(sender, nullptr) << error;
  for (int i = 0; i < 10; ++i) {
    const std::string id = "evt_" + std::to_string(i);
    sender->Enqueue({id, "charge.succeeded", R"({"id":")" + id + R"("})"});
  }
  sender->Enqueue({"evt_0", "charge.succeeded", R"({"id":"evt_0"})"});  // queued already: ignored
  ASSERT_TRUE(Drained(*sender));
  EXPECT_EQ(sender->stats().delivered, 10u);
  EXPECT_EQ(sender->stats().attempts, 30u);
  ASSERT_EQ(receiver.seen().size(), 30u);
  for (const phasekey::testing::LoopbackRequest& r : receiver.seen()) {
    EXPECT_EQ(r.target, "/hook");
    const std::string& signature = r.headers.at("stripe-signature");
    const int64_t t = std::stoll(signature.substr(2, signature.find(',') - 2));
    EXPECT_EQ(signature, StripeSignature("whsec_test", r.body, t));
  }
}

}  // namespace
}  // namespace fake_gateway
