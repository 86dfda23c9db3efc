// The Adyen adapter against
// https://docs.adyen.com/api-explorer/Checkout/71/post/payments,
// https://docs.adyen.com/development-resources/api-idempotency and
// https://docs.adyen.com/online-payments/payment-result-codes.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class AdyenAdapterTest : public ::testing::Test {
 protected:
  AdyenAdapterTest() {
    AdyenOptions o;
    o.secret = "AQE_key";
    o.merchant_account = "RideCo";
    adapter_ = NewAdyenAdapter(o);
  }
  PaymentIntent Intent() const { return {1050, "EUR", "shopper-42", "8415", "Ride 7", "", ""}; }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(AdyenAdapterTest, PaymentsCarryMinorUnitsTheReferenceAndTheKeyHeader) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->path, "/v71/payments");
  EXPECT_EQ(Header(*r, "X-API-Key"), "AQE_key");
  EXPECT_EQ(Header(*r, "idempotency-key"), kProviderKey);  // 43 characters: fits 64
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["merchantAccount"], "RideCo");
  EXPECT_EQ(body["amount"], (nlohmann::json{{"value", 1050}, {"currency", "EUR"}}));
  EXPECT_EQ(body["reference"], kProviderKey);
  EXPECT_EQ(body["paymentMethod"]["storedPaymentMethodId"], "8415");
  EXPECT_EQ(body["shopperReference"], "shopper-42");
  EXPECT_EQ(body["shopperInteraction"], "ContAuth");
  EXPECT_EQ(body["recurringProcessingModel"], "UnscheduledCardOnFile");
}

TEST_F(AdyenAdapterTest, KeysLongerThan64CharactersAreFittedDeterministically) {
  const std::string key = std::string(kProviderKey) + "_with_a_rather_long_phase_name";
  auto a = adapter_->BuildCharge(Intent(), key);
  auto b = adapter_->BuildCharge(Intent(), key);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(Header(*a, "Idempotency-Key").size(), 64u);
  EXPECT_EQ(Header(*a, "Idempotency-Key"), Header(*b, "Idempotency-Key"));
}

TEST_F(AdyenAdapterTest, ThreeDecimalCurrenciesKeepTheirMinorUnits) {
  PaymentIntent intent = Intent();
  intent.currency = "KWD";
  intent.amount_minor = 12345;
  EXPECT_EQ(Json(*adapter_->BuildCharge(intent, kProviderKey))["amount"]["value"], 12345);
}

TEST_F(AdyenAdapterTest, DeclaresSevenDaysTheSaferOfTheDocumentedRetentions) {
  EXPECT_EQ(adapter_->info().key_retention, std::chrono::hours(24 * 7));
}

TEST_F(AdyenAdapterTest, AuthorisedIsPaidAndPendingStillCounts) {
  auto c = adapter_->Classify(Answer(200, nlohmann::json{{"resultCode", "Authorised"}, {"pspReference", "PSP1"}}));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "PSP1");
  EXPECT_KIND(adapter_->Classify(Answer(200, nlohmann::json{{"resultCode", "Received"}, {"pspReference", "P"}})),
              kSucceeded);
}

TEST_F(AdyenAdapterTest, RefusedIsADecline) {
  const nlohmann::json refused = {
      {"resultCode", "Refused"}, {"refusalReason", "Not enough balance"}, {"refusalReasonCode", "12"}};
  const auto c = adapter_->Classify(Answer(200, refused));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.code, "12");
}

TEST_F(AdyenAdapterTest, AShopperActionCannotHappenOffSession) {
  EXPECT_KIND(adapter_->Classify(Answer(200, nlohmann::json{{"resultCode", "RedirectShopper"}})), kTerminal);
}

TEST_F(AdyenAdapterTest, A704WithTransientErrorIsRetried) {
  const nlohmann::json body = {
      {"status", 422}, {"errorCode", "704"}, {"message", "request already processed or in progress"}};
  EXPECT_KIND(adapter_->Classify(Answer(422, body, {{"transient-error", "true"}})), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(409, body, {{"Transient-Error", "true"}})), kRetryable);
}

TEST_F(AdyenAdapterTest, A704WithoutTransientErrorIsOutcomeUnknown) {
  const nlohmann::json body = {{"status", 422}, {"errorCode", "704"}, {"message", "request already processed"}};
  EXPECT_KIND(adapter_->Classify(Answer(422, body)), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(Answer(422, body, {{"transient-error", "false"}})), kOutcomeUnknown);
}

TEST_F(AdyenAdapterTest, TheIdempotencyStoreBeingDownIsRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(503, nlohmann::json{{"errorCode", "703"}})), kRetryable);
}

TEST_F(AdyenAdapterTest, ValidationErrorsAreRefusedAndServerErrorsRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(422, nlohmann::json{{"errorCode", "14_012"}, {"message", "bad"}})), kTerminal);
  EXPECT_KIND(adapter_->Classify(Answer(401, "")), kTerminal);
  EXPECT_KIND(adapter_->Classify(Answer(500, nlohmann::json{{"errorCode", "905"}})), kRetryable);
  EXPECT_KIND(adapter_->Classify(NotSent()), kRetryable);
  EXPECT_KIND(adapter_->Classify(SentNoAnswer()), kOutcomeUnknown);
}

TEST_F(AdyenAdapterTest, RefundsGoToThePaymentsRefundsEndpoint) {
  auto r = adapter_->BuildRefund({"PSP1", 500, "EUR", ""}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v71/payments/PSP1/refunds");
  EXPECT_EQ(Header(*r, "Idempotency-Key"), "k:refund");
  EXPECT_KIND(adapter_->ClassifyRefund(Answer(201, nlohmann::json{{"pspReference", "R1"}, {"status", "received"}})),
              kSucceeded);
}

TEST_F(AdyenAdapterTest, HasNoLookupSoReconciliationIsImpossible) {
  EXPECT_FALSE(adapter_->info().has_lookup);
  EXPECT_EQ(adapter_->BuildLookup("x").error().code(), StatusCode::kFailedPrecondition);
}

TEST_F(AdyenAdapterTest, RefusesToBuildWithoutAMerchantAccount) {
  EXPECT_EQ(NewAdyenAdapter()->BuildCharge(Intent(), kProviderKey).error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phasekey::phases
