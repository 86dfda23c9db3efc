// The Moyasar adapter against https://docs.moyasar.com/api/idempotency,
// https://docs.moyasar.com/token-payment and https://docs.moyasar.com/api/errors.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class MoyasarAdapterTest : public ::testing::Test {
 protected:
  MoyasarAdapterTest() {
    MoyasarOptions o;
    o.secret = "sk_test_m";
    o.callback_url = "https://rides.example/paid";
    adapter_ = NewMoyasarAdapter(o);
  }
  PaymentIntent Intent() const { return {1000, "SAR", "token_abc", "", "Ride 7", "", ""}; }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(MoyasarAdapterTest, GivenIdIsANameBasedUuidOfTheProviderKey) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->path, "/v1/payments");
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["given_id"], "77a9d6cc-0ddb-5e50-9864-db09f1c82058");
  EXPECT_EQ(body["given_id"], adapter_->FitKey(kProviderKey));
  EXPECT_NE(adapter_->FitKey(kProviderKey), adapter_->FitKey(kOtherProviderKey));
}

TEST_F(MoyasarAdapterTest, AmountsAreSmallestUnitIntegersAndTheSourceIsAToken) {
  const nlohmann::json body = Json(*adapter_->BuildCharge(Intent(), kProviderKey));
  EXPECT_EQ(body["amount"], 1000);
  EXPECT_EQ(body["currency"], "SAR");
  EXPECT_EQ(body["source"], (nlohmann::json{{"type", "token"}, {"token", "token_abc"}}));
  EXPECT_EQ(body["callback_url"], "https://rides.example/paid");
}

TEST_F(MoyasarAdapterTest, AuthenticatesWithBasicAndTheSecretAsUser) {
  EXPECT_EQ(Header(*adapter_->BuildCharge(Intent(), kProviderKey), "Authorization"), "Basic c2tfdGVzdF9tOg==");
}

TEST_F(MoyasarAdapterTest, RetentionIsUndocumentedButTheLookupIsExact) {
  EXPECT_FALSE(adapter_->info().retention_documented);
  EXPECT_TRUE(adapter_->info().has_lookup);
  EXPECT_EQ(adapter_->ReferenceFor(kProviderKey), adapter_->FitKey(kProviderKey));
}

TEST_F(MoyasarAdapterTest, PaidIsASuccessAndAFailed201IsADecline) {
  auto c = adapter_->Classify(Answer(201, nlohmann::json{{"id", "77a9"}, {"status", "paid"}}));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "77a9");
  c = adapter_->Classify(Answer(
      201, nlohmann::json{{"id", "77a9"}, {"status", "failed"}, {"source", {{"message", "INSUFFICIENT_FUNDS"}}}}));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.message, "INSUFFICIENT_FUNDS");
}

TEST_F(MoyasarAdapterTest, AValidationErrorIsRefused) {
  const nlohmann::json error = {{"type", "invalid_request_error"},
                                {"message", "Validation Failed"},
                                {"errors", {{"amount", {"must be an integer"}}}}};
  EXPECT_KIND(adapter_->Classify(Answer(400, error)), kTerminal);
  EXPECT_KIND(adapter_->Classify(Answer(401, nlohmann::json{{"type", "authentication_error"}})), kTerminal);
}

TEST_F(MoyasarAdapterTest, ARefusedGivenIdIsOutcomeUnknown) {
  const nlohmann::json error = {{"type", "invalid_request_error"},
                                {"message", "Validation Failed"},
                                {"errors", {{"given_id", {"has already been taken"}}}}};
  EXPECT_KIND(adapter_->Classify(Answer(400, error)), kOutcomeUnknown);
}

TEST_F(MoyasarAdapterTest, ServerErrorsAreOutcomeUnknownAndRateLimitsRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(500, "")), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(Answer(503, "")), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(Answer(429, "")), kRetryable);
  EXPECT_KIND(adapter_->Classify(NotSent()), kRetryable);
}

TEST_F(MoyasarAdapterTest, TheLookupFetchesThePaymentByGivenId) {
  auto r = adapter_->BuildLookup(adapter_->ReferenceFor(kProviderKey));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->path, "/v1/payments/77a9d6cc-0ddb-5e50-9864-db09f1c82058");
  Lookup l = adapter_->ParseLookup(Answer(200, nlohmann::json{{"id", "77a9"}, {"status", "paid"}}));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_EQ(l.payment.payment_id, "77a9");
  EXPECT_EQ(adapter_->ParseLookup(Answer(404, nlohmann::json{{"type", "not_found"}})).kind, Lookup::Kind::kNotFound);
  EXPECT_EQ(adapter_->ParseLookup(Answer(500, "")).kind, Lookup::Kind::kUnknown);
}

TEST_F(MoyasarAdapterTest, RefundsPostToThePaymentsRefund) {
  auto r = adapter_->BuildRefund({"77a9", 500, "SAR", ""}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v1/payments/77a9/refund");
  EXPECT_EQ(Json(*r)["amount"], 500);
}

}  // namespace
}  // namespace phasekey::phases
