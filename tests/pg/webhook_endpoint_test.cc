// WebhookEndpoint without a transport, over a real Inbox and PostgreSQL: what
// each outcome answers, above all that a failed handler gets a retryable 5xx
// and its redelivery is applied.
#include "phasekey/webhook_endpoint.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <stdexcept>

#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

constexpr char kSecret[] = "whsec_endpoint";
constexpr std::int64_t kNow = 1700000000;

HttpRequest Delivery(const std::string& body, const std::string& signature) {
  HttpRequest req;
  req.method = "POST";
  req.target = "/webhooks";
  req.body = body;
  if (!signature.empty()) req.headers.Add("Stripe-Signature", signature);
  return req;
}

// A parser of the test's own (the Stripe one lives in phases/, which the
// engine's tests do not link): id, type and data.object.id, or refused.
Result<InboxEvent> ParseEvent(std::string_view body) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("id") || !j.contains("type") || !j.contains("data") ||
      !j["data"].contains("object")) {
    return Status::InvalidArgument("not an event");
  }
  return InboxEvent{"stripe", j["id"], j["data"]["object"]["id"], j["type"], std::string(body)};
}

const std::string kEvent = R"({"id":"evt_1","type":"charge.succeeded","data":{"object":{"id":"ch_1"}}})";

class WebhookEndpointTest : public ::testing::Test {
 protected:
  WebhookEndpointTest() {
    DatabaseOptions db;
    db.url = db_.url();
    auto inbox = Inbox::Open(db, [this](pqxx::transaction_base&, const InboxEvent&) {
      if (fail_next_.exchange(false)) throw std::runtime_error("downstream unavailable");
      ++applied_;
      return InboxResult::Applied();
    });
    if (!inbox) throw std::runtime_error(inbox.error().ToString());
    inbox_ = std::move(*inbox);
  }
  WebhookEndpoint Endpoint(std::string secret = kSecret) {
    WebhookEndpointOptions o;
    o.secret = std::move(secret);
    o.clock = [] { return std::chrono::system_clock::time_point(std::chrono::seconds(kNow)); };
    return WebhookEndpoint(o, *inbox_, ParseEvent);
  }
  int Recorded() {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    return tx.exec1("SELECT count(*) FROM phasekey.inbox_events")[0].as<int>();
  }
  static std::string Slug(const Response& r) {
    const std::string type = nlohmann::json::parse(r.body).at("type");
    return type.substr(type.find('#') + 1);
  }

  TestDatabase db_;
  std::unique_ptr<Inbox> inbox_;
  std::atomic<bool> fail_next_{false};
  std::atomic<int> applied_{0};
};

TEST_F(WebhookEndpointTest, AFailedHandlerGetsARetryable503AndTheRedeliveryIsApplied) {
  WebhookEndpoint endpoint = Endpoint();
  fail_next_ = true;
  Response failed = endpoint.Handle(Delivery(kEvent, SignWebhook(kSecret, kEvent, kNow)));
  EXPECT_EQ(failed.status, 503);
  EXPECT_EQ(Slug(failed), "retry-later");
  ASSERT_NE(failed.headers.Find("Retry-After"), nullptr);
  EXPECT_EQ(failed.body.find("downstream"), std::string::npos) << "a 5xx never names internals";
  EXPECT_EQ(Recorded(), 0);
  Response applied = endpoint.Handle(Delivery(kEvent, SignWebhook(kSecret, kEvent, kNow)));
  EXPECT_EQ(applied.status, 200);
  EXPECT_EQ(nlohmann::json::parse(applied.body), (nlohmann::json{{"received", true}, {"delivery", "applied"}}));
  Response duplicate = endpoint.Handle(Delivery(kEvent, SignWebhook(kSecret, kEvent, kNow + 60)));
  EXPECT_EQ(duplicate.status, 200);
  EXPECT_EQ(nlohmann::json::parse(duplicate.body).at("delivery"), "duplicate");
  EXPECT_EQ(applied_.load(), 1);
}

TEST_F(WebhookEndpointTest, RefusesBeforeRecordingWhenTheSignatureIsMissingRepeatedOrStale) {
  WebhookEndpoint endpoint = Endpoint();
  HttpRequest twice = Delivery(kEvent, SignWebhook(kSecret, kEvent, kNow));
  twice.headers.Add("stripe-signature", SignWebhook(kSecret, kEvent, kNow));
  for (const HttpRequest& req :
       {Delivery(kEvent, ""), twice, Delivery(kEvent, SignWebhook(kSecret, kEvent, kNow - 301))}) {
    Response r = endpoint.Handle(req);
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(Slug(r), "invalid-signature");
  }
  const std::string no_object = R"({"id":"evt_2","type":"charge.succeeded","data":{}})";
  Response unparsable = endpoint.Handle(Delivery(no_object, SignWebhook(kSecret, no_object, kNow)));
  EXPECT_EQ(unparsable.status, 400);
  EXPECT_EQ(Slug(unparsable), "invalid-event");
  EXPECT_EQ(Recorded(), 0);
  EXPECT_EQ(applied_.load(), 0);
}

TEST_F(WebhookEndpointTest, WithoutASecretEveryDeliveryIsRefusedWithA500) {
  WebhookEndpoint endpoint = Endpoint("");
  Response r = endpoint.Handle(Delivery(kEvent, SignWebhook("", kEvent, kNow)));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(Recorded(), 0);
}

}  // namespace
}  // namespace phasekey
