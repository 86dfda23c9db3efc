// fake_gateway's Stripe PaymentIntents (POST /v1/payment_intents with
// confirm=true, GET /v1/payment_intents/search), in process, and the phases/
// Stripe adapter in its PaymentIntents mode reading the gateway's answers:
// Stripe's key replay, succeeded, requires_action (customer 14) and the
// requires_payment_method decline (customer 13).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "fake_gateway/gateway.h"
#include "phasekey/phases/adapters.h"
#include "ride_booking/send_in_process.h"

namespace fake_gateway {
namespace {

using nlohmann::json;
using phasekey::phases::Classification;
using phasekey::phases::Lookup;
using phasekey::phases::ProviderAnswer;
using phasekey::phases::ProviderRequest;

constexpr char kForm[] = "application/x-www-form-urlencoded";
constexpr char kProviderKey[] = "0b6f4c8e-3d2a-4f7b-9c1e-5a8d2e6f1b3c:charge";

std::string Intent(const std::string& customer) {
  return "amount=2000&currency=usd&customer=" + customer + "&confirm=true&metadata%5Bphasekey_reference%5D=r-" +
         customer;
}

class FakeGatewayPaymentIntentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "fake_gateway_pi_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    GatewayOptions options;
    options.data_dir = dir_;
    std::string error;
    gateway_ = Gateway::Open(std::move(options), &error);
    ASSERT_NE(gateway_, nullptr) << error;
  }
  void TearDown() override {
    gateway_.reset();
    std::filesystem::remove_all(dir_);
  }

  GatewayResponse Post(const std::string& path, const std::string& key, const std::string& form) {
    return gateway_->Handle("POST", path, {{"Content-Type", kForm}, {"Idempotency-Key", key}}, form);
  }
  ProviderAnswer Send(const ProviderRequest& request) { return SendInProcess(*gateway_, request); }

  std::filesystem::path dir_;
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(FakeGatewayPaymentIntentsTest, AConfirmedIntentSucceedsIsInTheLedgerAndIsReplayedUnderItsKey) {
  const GatewayResponse first = Post("/v1/payment_intents", "pi-key-1", Intent("7"));
  ASSERT_EQ(first.status, 200) << first.body;
  const json intent = json::parse(first.body);
  EXPECT_EQ(intent["object"], "payment_intent");
  EXPECT_EQ(intent["status"], "succeeded");
  EXPECT_TRUE(intent["id"].get<std::string>().starts_with("pi_"));
  const GatewayResponse again = Post("/v1/payment_intents", "pi-key-1", Intent("7"));
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(FindHeader(again.headers, "Idempotent-Replayed"), "true");
  ASSERT_EQ(gateway_->Charges().size(), 1u);
  EXPECT_EQ(gateway_->Charges()[0].id, intent["id"]);
}

TEST_F(FakeGatewayPaymentIntentsTest, CustomerThirteenIsDeclinedWithTheIntentRequiringAPaymentMethod) {
  const GatewayResponse declined = Post("/v1/payment_intents", "pi-key-13", Intent("13"));
  ASSERT_EQ(declined.status, 402) << declined.body;
  const json error = json::parse(declined.body)["error"];
  EXPECT_EQ(error["type"], "card_error");
  EXPECT_EQ(error["decline_code"], "generic_decline");
  EXPECT_EQ(error["payment_intent"]["status"], "requires_payment_method");
  EXPECT_EQ(Post("/v1/payment_intents", "pi-key-13", Intent("13")).body, declined.body);
  EXPECT_TRUE(gateway_->Charges().empty());
}

TEST_F(FakeGatewayPaymentIntentsTest, CustomerFourteenRequiresActionAndNothingIsPaid) {
  const GatewayResponse r = Post("/v1/payment_intents", "pi-key-14", Intent("14"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["status"], "requires_action");
  EXPECT_EQ(json::parse(r.body)["next_action"]["type"], "use_stripe_sdk");
  EXPECT_TRUE(gateway_->Charges().empty());
  // The Charges API has no such customer rule: 14 pays there.
  EXPECT_EQ(Post("/v1/charges", "ch-key-14", "amount=2000&currency=usd&customer=14").status, 200);
}

TEST_F(FakeGatewayPaymentIntentsTest, AnIntentLeftToConfirmLaterIsRefused) {
  const GatewayResponse r = Post("/v1/payment_intents", "pi-key-2", "amount=2000&currency=usd&customer=7");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "confirm");
}

TEST_F(FakeGatewayPaymentIntentsTest, AKeyUsedForAChargeIsAReuseWithOtherParametersForAnIntent) {
  ASSERT_EQ(Post("/v1/charges", "shared-key", "amount=2000&currency=usd&customer=7").status, 200);
  const GatewayResponse r =
      Post("/v1/payment_intents", "shared-key", "amount=2000&currency=usd&customer=7&confirm=true");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "idempotency_error");
}

TEST_F(FakeGatewayPaymentIntentsTest, TheStripeAdapterChargesAndFindsIntentsButNotCharges) {
  phasekey::phases::StripeOptions options;
  options.api = phasekey::phases::StripeV1Api::kPaymentIntents;
  auto adapter = phasekey::phases::NewStripeV1Adapter(options);
  auto charge = adapter->BuildCharge({2000, "usd", "7", "", "ride", "", ""}, kProviderKey);
  ASSERT_TRUE(charge.has_value());
  const Classification paid = adapter->Classify(Send(*charge));
  ASSERT_EQ(paid.kind, Classification::Kind::kSucceeded) << paid.message;
  EXPECT_TRUE(paid.payment_id.starts_with("pi_"));
  auto lookup = adapter->BuildLookup(adapter->ReferenceFor(kProviderKey));
  ASSERT_TRUE(lookup.has_value());
  const Lookup found = adapter->ParseLookup(Send(*lookup));
  EXPECT_EQ(found.kind, Lookup::Kind::kFound) << found.message;
  EXPECT_EQ(found.payment.payment_id, paid.payment_id);
  // The Charges API's search does not list the intent.
  auto charges = phasekey::phases::NewStripeV1Adapter();
  EXPECT_EQ(charges->ParseLookup(Send(*charges->BuildLookup(adapter->ReferenceFor(kProviderKey)))).kind,
            Lookup::Kind::kNotFound);

  auto needs_action = adapter->BuildCharge({2000, "usd", "14", "", "ride", "", ""}, "other-key:charge");
  ASSERT_TRUE(needs_action.has_value());
  const Classification c = adapter->Classify(Send(*needs_action));
  EXPECT_EQ(c.kind, Classification::Kind::kTerminal);
  EXPECT_TRUE(c.declined);
}

}  // namespace
}  // namespace fake_gateway
