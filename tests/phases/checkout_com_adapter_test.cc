// The Checkout.com adapter against
// https://www.checkout.com/docs/payments/manage-payments/idempotency,
// https://www.checkout.com/docs/resources/calculating-the-amount and
// https://checkout.com/docs/payments/manage-payments/get-a-list-of-payments.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "key_hashing.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/key_fitting.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class CheckoutComAdapterTest : public ::testing::Test {
 protected:
  CheckoutComAdapterTest() {
    CheckoutComOptions o;
    o.secret = "sk_sbox_1";
    o.processing_channel_id = "pc_1";
    adapter_ = NewCheckoutComAdapter(o);
  }
  PaymentIntent Intent() const { return {1050, "GBP", "src_abc", "", "Ride 7", "", ""}; }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(CheckoutComAdapterTest, PaymentsSendAUuidKeyInTheCkoHeader) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->path, "/payments");
  EXPECT_EQ(Header(*r, "Authorization"), "Bearer sk_sbox_1");
  EXPECT_EQ(Header(*r, "Cko-Idempotency-Key"), NameBasedUuid(kProviderKey));
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["source"], (nlohmann::json{{"type", "id"}, {"id", "src_abc"}}));
  EXPECT_EQ(body["amount"], 1050);
  EXPECT_EQ(body["currency"], "GBP");
  EXPECT_EQ(body["processing_channel_id"], "pc_1");
  EXPECT_EQ(body["merchant_initiated"], true);
  EXPECT_LE(body["reference"].get<std::string>().size(), 50u);
  EXPECT_EQ(body["reference"], adapter_->ReferenceFor(kProviderKey));
}

TEST_F(CheckoutComAdapterTest, CustomersAreSentAsCustomerSources) {
  PaymentIntent intent = Intent();
  intent.customer_or_source = "cus_1";
  EXPECT_EQ(Json(*adapter_->BuildCharge(intent, kProviderKey))["source"]["type"], "customer");
}

TEST_F(CheckoutComAdapterTest, ThreeDecimalAmountsMustEndInZeroAndHaveAtMostNineDigits) {
  PaymentIntent intent = Intent();
  intent.currency = "BHD";
  intent.amount_minor = 100000;
  EXPECT_EQ(Json(*adapter_->BuildCharge(intent, kProviderKey))["amount"], 100000);
  intent.amount_minor = 1001;
  EXPECT_EQ(adapter_->BuildCharge(intent, kProviderKey).error().code(), StatusCode::kInvalidArgument);
  intent.currency = "JPY";
  intent.amount_minor = 1000000000;
  EXPECT_EQ(adapter_->BuildCharge(intent, kProviderKey).error().code(), StatusCode::kInvalidArgument);
}

TEST_F(CheckoutComAdapterTest, AnApprovedPaymentIsASuccess) {
  const auto c = adapter_->Classify(Answer(
      201, nlohmann::json{{"id", "pay_1"}, {"approved", true}, {"status", "Authorized"}, {"response_code", "10000"}}));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "pay_1");
}

TEST_F(CheckoutComAdapterTest, ADeclinedPaymentIsA201WithApprovedFalse) {
  const nlohmann::json declined = {{"id", "pay_2"},
                                   {"approved", false},
                                   {"status", "Declined"},
                                   {"response_code", "20051"},
                                   {"response_summary", "Insufficient Funds"}};
  const auto c = adapter_->Classify(Answer(201, declined));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.code, "20051");
}

TEST_F(CheckoutComAdapterTest, APendingRedirectIsRefusedOffSession) {
  const nlohmann::json pending = {{"id", "pay_3"}, {"status", "Pending"}, {"_links", {{"redirect", {{"href", "x"}}}}}};
  EXPECT_KIND(adapter_->Classify(Answer(202, pending)), kTerminal);
}

TEST_F(CheckoutComAdapterTest, ConcurrentRequestsAreRetriedUnderBothDocumentedStatuses) {
  EXPECT_KIND(adapter_->Classify(Answer(409, "")), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(429, "")), kRetryable);
}

TEST_F(CheckoutComAdapterTest, ServerErrorsAreOutcomeUnknownBecauseOnly2xxIsCached) {
  EXPECT_KIND(adapter_->Classify(Answer(502, "")), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(Answer(500, "")), kOutcomeUnknown);
}

TEST_F(CheckoutComAdapterTest, InvalidRequestsAreRefused) {
  const nlohmann::json invalid = {
      {"request_id", "r"}, {"error_type", "request_invalid"}, {"error_codes", {"amount_invalid"}}};
  const auto c = adapter_->Classify(Answer(422, invalid));
  EXPECT_KIND(c, kTerminal);
  EXPECT_EQ(c.code, "amount_invalid");
  EXPECT_KIND(adapter_->Classify(Answer(401, "")), kTerminal);
}

TEST_F(CheckoutComAdapterTest, TheLookupListsPaymentsByReference) {
  auto r = adapter_->BuildLookup("ref-1");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->path, "/payments?reference=ref-1&limit=10");
  const nlohmann::json found = {{"total_count", 1}, {"data", {{{"id", "pay_9"}, {"status", "Captured"}}}}};
  Lookup l = adapter_->ParseLookup(Answer(200, found));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_EQ(l.payment.payment_id, "pay_9");
  EXPECT_EQ(
      adapter_->ParseLookup(Answer(200, nlohmann::json{{"total_count", 0}, {"data", nlohmann::json::array()}})).kind,
      Lookup::Kind::kNotFound);
  const nlohmann::json pending = {{"data", {{{"id", "pay_8"}, {"status", "Pending"}}}}};
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, pending)).kind, Lookup::Kind::kUnknown);
  EXPECT_EQ(adapter_->ParseLookup(Answer(503, "")).kind, Lookup::Kind::kUnknown);
}

TEST_F(CheckoutComAdapterTest, RefundsAreKeyedPaymentActions) {
  auto r = adapter_->BuildRefund({"pay_1", 500, "GBP", ""}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/payments/pay_1/refunds");
  EXPECT_EQ(Header(*r, "Cko-Idempotency-Key"), NameBasedUuid("k:refund"));
  EXPECT_KIND(adapter_->ClassifyRefund(Answer(202, nlohmann::json{{"action_id", "act_1"}})), kSucceeded);
}

}  // namespace
}  // namespace phasekey::phases
