// The Stripe API v1 adapter with StripeV1Api::kPaymentIntents, against the
// request shape of https://docs.stripe.com/api/payment_intents/create
// (confirm=true) and the statuses of /payments/paymentintents/lifecycle.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class StripePaymentIntentsAdapterTest : public ::testing::Test {
 protected:
  StripePaymentIntentsAdapterTest() {
    StripeOptions o;
    o.secret = "sk_test_123";
    o.api = StripeV1Api::kPaymentIntents;
    adapter_ = NewStripeV1Adapter(o);
  }
  ProviderRequest Charge(const PaymentIntent& intent) const {
    auto r = adapter_->BuildCharge(intent, kProviderKey);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().ToString());
    return r ? *r : ProviderRequest{};
  }
  static nlohmann::json Intent(const std::string& status) {
    return {{"id", "pi_1"}, {"object", "payment_intent"}, {"status", status}};
  }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(StripePaymentIntentsAdapterTest, ChargesCreateAndConfirmAPaymentIntentUnderTheKey) {
  const ProviderRequest r = Charge({1050, "USD", "cus_42", "pm_7", "Ride 7", "ride-7", ""});
  EXPECT_EQ(r.path, "/v1/payment_intents");
  EXPECT_EQ(Header(r, "Idempotency-Key"), kProviderKey);
  EXPECT_EQ(Header(r, "Authorization"), "Bearer sk_test_123");
  const auto form = Form(r.body);
  EXPECT_EQ(form.at("amount"), "1050");
  EXPECT_EQ(form.at("currency"), "usd");
  EXPECT_EQ(form.at("customer"), "cus_42");
  EXPECT_EQ(form.at("payment_method"), "pm_7");
  EXPECT_EQ(form.at("confirm"), "true");
  EXPECT_EQ(form.at("automatic_payment_methods[allow_redirects]"), "never");
  EXPECT_EQ(form.at("metadata[phasekey_reference]"), kProviderKey);
  EXPECT_EQ(form.count("source"), 0u);
}

TEST_F(StripePaymentIntentsAdapterTest, APaymentMethodAloneIsSentAsPaymentMethod) {
  const auto form = Form(Charge({1050, "USD", "pm_card_visa", "", "", "", ""}).body);
  EXPECT_EQ(form.at("payment_method"), "pm_card_visa");
  EXPECT_EQ(form.count("customer"), 0u);
}

TEST_F(StripePaymentIntentsAdapterTest, SucceededAndProcessingArePayments) {
  const Classification paid = adapter_->Classify(Answer(200, Intent("succeeded")));
  EXPECT_KIND(paid, kSucceeded);
  EXPECT_EQ(paid.payment_id, "pi_1");
  EXPECT_KIND(adapter_->Classify(Answer(200, Intent("processing"))), kSucceeded);
}

TEST_F(StripePaymentIntentsAdapterTest, RequiresActionIsAFinalDeclineForAServerSideFlow) {
  const Classification c = adapter_->Classify(Answer(200, Intent("requires_action")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.code, "requires_action");
}

TEST_F(StripePaymentIntentsAdapterTest, ADeclinedConfirmationIsAStoredDecline) {
  nlohmann::json body = {{"error",
                          {{"type", "card_error"},
                           {"code", "card_declined"},
                           {"decline_code", "generic_decline"},
                           {"message", "Your card was declined."},
                           {"payment_intent", Intent("requires_payment_method")}}}};
  const Classification c = adapter_->Classify(Answer(402, body));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.code, "generic_decline");
}

TEST_F(StripePaymentIntentsAdapterTest, TheLookupSearchesPaymentIntentsAndReadsTheirStatuses) {
  auto r = adapter_->BuildLookup(adapter_->ReferenceFor(kProviderKey));
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->path.starts_with("/v1/payment_intents/search?query=metadata%5B%27phasekey_reference%27%5D"))
      << r->path;
  Lookup l = adapter_->ParseLookup(Answer(200, nlohmann::json{{"data", {Intent("succeeded")}}}));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_EQ(l.payment.payment_id, "pi_1");
  l = adapter_->ParseLookup(Answer(200, nlohmann::json{{"data", {Intent("requires_payment_method")}}}));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_KIND(l.payment, kTerminal);
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, nlohmann::json{{"data", nlohmann::json::array()}})).kind,
            Lookup::Kind::kNotFound);
}

TEST_F(StripePaymentIntentsAdapterTest, RefundsNameTheIntent) {
  auto r = adapter_->BuildRefund({"pi_1", 500, "usd", ""}, "0b6f4c8e-3d2a-4f7b-9c1e-5a8d2e6f1b3c:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Form(r->body).at("payment_intent"), "pi_1");
  EXPECT_EQ(Form(r->body).count("charge"), 0u);
}

}  // namespace
}  // namespace phasekey::phases
