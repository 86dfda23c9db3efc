// The Stripe API v2 adapter against
// https://docs.stripe.com/api/v2/payments/off-session-payments/create and
// https://docs.stripe.com/api-v2-overview.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class StripeV2AdapterTest : public ::testing::Test {
 protected:
  StripeV2AdapterTest() {
    StripeOptions o;
    o.secret = "sk_test_123";
    adapter_ = NewStripeV2Adapter(o);
  }
  PaymentIntent Intent() const { return {2000, "usd", "cus_1", "pm_1", "Ride 7", "ride-7", ""}; }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(StripeV2AdapterTest, ChargesAreJsonPostsWithANestedAmountAndTheKeyInTheHeader) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->path, "/v2/payments/off_session_payments");
  EXPECT_EQ(r->content_type, "application/json");
  EXPECT_EQ(Header(*r, "Idempotency-Key"), kProviderKey);
  EXPECT_EQ(Header(*r, "Stripe-Version"), kStripeV2Version);
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["amount"], (nlohmann::json{{"value", 2000}, {"currency", "usd"}}));
  EXPECT_EQ(body["customer"], "cus_1");
  EXPECT_EQ(body["payment_method"], "pm_1");
  EXPECT_EQ(body["metadata"]["phasekey_reference"], kProviderKey);
}

TEST_F(StripeV2AdapterTest, ACustomerAndAPaymentMethodAreBothRequired) {
  PaymentIntent intent = Intent();
  intent.source_detail.clear();
  EXPECT_EQ(adapter_->BuildCharge(intent, kProviderKey).error().code(), StatusCode::kInvalidArgument);
}

TEST_F(StripeV2AdapterTest, DeclaresAThirtyDayRetentionAndNoLookup) {
  EXPECT_EQ(adapter_->info().key_retention, std::chrono::hours(24 * 30));
  EXPECT_FALSE(adapter_->info().has_lookup);
}

TEST_F(StripeV2AdapterTest, ACreatedPaymentIsASuccessEvenWhilePending) {
  const nlohmann::json osp = {{"id", "osp_1"}, {"object", "v2.payments.off_session_payment"}, {"status", "pending"}};
  const auto c = adapter_->Classify(Answer(200, osp));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "osp_1");
  EXPECT_EQ(c.status, "pending");
}

TEST_F(StripeV2AdapterTest, AFailedPaymentIsADecline) {
  const nlohmann::json osp = {{"id", "osp_1"},
                              {"object", "v2.payments.off_session_payment"},
                              {"status", "failed"},
                              {"failure_reason", "rejected"}};
  const auto c = adapter_->Classify(Answer(200, osp));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
}

TEST_F(StripeV2AdapterTest, ErrorsFollowTheStripeRules) {
  auto error = [](const std::string& type) { return nlohmann::json{{"error", {{"type", type}, {"message", "x"}}}}; };
  EXPECT_KIND(adapter_->Classify(Answer(409, error("idempotency_error"))), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(400, error("invalid_request_error"))), kTerminal);
  EXPECT_KIND(adapter_->Classify(Answer(402, error("card_error"))), kTerminal);
  EXPECT_KIND(adapter_->Classify(Answer(429, error("rate_limit_error"))), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(503, error("api_error"))), kRetryable);
  EXPECT_KIND(adapter_->Classify(SentNoAnswer()), kOutcomeUnknown);
}

TEST_F(StripeV2AdapterTest, HasNoRefundOrLookup) {
  EXPECT_EQ(adapter_->BuildRefund({"osp_1", 100, "usd", ""}, kProviderKey).error().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(adapter_->BuildLookup("x").error().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace phasekey::phases
