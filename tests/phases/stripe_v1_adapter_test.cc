// The Stripe API v1 adapter against the request shapes and error cases in
// https://docs.stripe.com/api/charges/create, /api/errors, /error-codes and
// /api/idempotent_requests.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class StripeV1AdapterTest : public ::testing::Test {
 protected:
  StripeV1AdapterTest() {
    StripeOptions o;
    o.secret = "sk_test_123";
    adapter_ = NewStripeV1Adapter(o);
  }
  PaymentIntent Intent() const { return {1050, "USD", "cus_42", "", "Ride 7", "ride-7", ""}; }
  ProviderRequest Charge(const PaymentIntent& intent, const char* key = kProviderKey) const {
    auto r = adapter_->BuildCharge(intent, key);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().ToString());
    return r ? *r : ProviderRequest{};
  }
  static nlohmann::json StripeError(const std::string& type, const std::string& code, const std::string& message) {
    return {{"error", {{"type", type}, {"code", code}, {"message", message}}}};
  }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(StripeV1AdapterTest, ChargesAreFormPostsToV1ChargesWithTheKeyInTheHeader) {
  const ProviderRequest r = Charge(Intent());
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/v1/charges");
  EXPECT_EQ(r.content_type, "application/x-www-form-urlencoded");
  EXPECT_EQ(Header(r, "Idempotency-Key"), kProviderKey);
  EXPECT_EQ(Header(r, "Authorization"), "Bearer sk_test_123");
  const auto form = Form(r.body);
  EXPECT_EQ(form.at("amount"), "1050");
  EXPECT_EQ(form.at("currency"), "usd");
  EXPECT_EQ(form.at("customer"), "cus_42");
  EXPECT_EQ(form.count("source"), 0u);
  EXPECT_EQ(form.at("description"), "Ride 7");
  EXPECT_EQ(form.at("metadata[phasekey_reference]"), kProviderKey);
  EXPECT_EQ(form.at("metadata[order_reference]"), "ride-7");
}

TEST_F(StripeV1AdapterTest, TokensAndSourcesAreSentAsSource) {
  PaymentIntent intent = Intent();
  intent.customer_or_source = "tok_visa";
  const auto form = Form(Charge(intent).body);
  EXPECT_EQ(form.at("source"), "tok_visa");
  EXPECT_EQ(form.count("customer"), 0u);
}

TEST_F(StripeV1AdapterTest, TheSameKeyRowAndPhaseAlwaysSendTheSameKeyAndBody) {
  EXPECT_EQ(Charge(Intent()).body, Charge(Intent()).body);
  EXPECT_EQ(Header(Charge(Intent()), "Idempotency-Key"), Header(Charge(Intent()), "Idempotency-Key"));
  EXPECT_NE(Header(Charge(Intent(), kOtherProviderKey), "Idempotency-Key"),
            Header(Charge(Intent()), "Idempotency-Key"));
}

TEST_F(StripeV1AdapterTest, KeysLongerThan255CharactersAreFitted) {
  const std::string long_key = std::string(kProviderKey) + std::string(300, 'p');
  const std::string key = adapter_->FitKey(long_key);
  EXPECT_EQ(key.size(), 255u);
  EXPECT_EQ(key, adapter_->FitKey(long_key));
}

TEST_F(StripeV1AdapterTest, AmountsFollowStripesMinorUnits) {
  PaymentIntent intent = Intent();
  intent.currency = "JPY";
  intent.amount_minor = 500;
  EXPECT_EQ(Form(Charge(intent).body).at("amount"), "500");
  intent.currency = "ISK";  // zero-decimal in ISO, two-decimal at Stripe
  intent.amount_minor = 100;
  EXPECT_EQ(Form(Charge(intent).body).at("amount"), "10000");
  intent.currency = "KWD";
  intent.amount_minor = 12340;
  EXPECT_EQ(Form(Charge(intent).body).at("amount"), "12340");
  intent.amount_minor = 12345;  // three-decimal amounts must end in 0
  EXPECT_EQ(adapter_->BuildCharge(intent, kProviderKey).error().code(), StatusCode::kInvalidArgument);
}

TEST_F(StripeV1AdapterTest, ASucceededChargeIsASuccessWithItsId) {
  const auto c =
      adapter_->Classify(Answer(200, nlohmann::json{{"id", "ch_1"}, {"object", "charge"}, {"status", "succeeded"}}));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "ch_1");
}

TEST_F(StripeV1AdapterTest, ACardErrorIsAStoredDecline) {
  nlohmann::json body = StripeError("card_error", "card_declined", "Your card was declined.");
  body["error"]["decline_code"] = "insufficient_funds";
  const auto c = adapter_->Classify(Answer(402, body));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.code, "insufficient_funds");
}

TEST_F(StripeV1AdapterTest, AnInvalidRequestIsAStoredRefusal) {
  const auto c = adapter_->Classify(Answer(400, StripeError("invalid_request_error", "parameter_missing", "amount")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_FALSE(c.declined);
}

TEST_F(StripeV1AdapterTest, AKeyInUseIsRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(409, StripeError("idempotency_error", "idempotency_key_in_use", "busy"))),
              kRetryable);
}

TEST_F(StripeV1AdapterTest, AnIdempotencyMismatchIsOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(400, StripeError("idempotency_error", "", "Keys for idempotent requests..."))),
              kOutcomeUnknown);
}

TEST_F(StripeV1AdapterTest, RateLimitsAndServerErrorsAreRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(429, StripeError("invalid_request_error", "rate_limit", "slow"))), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(500, StripeError("api_error", "", "oops"))), kRetryable);
}

TEST_F(StripeV1AdapterTest, AServerErrorStripeSavedUnderTheKeyIsOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(500, StripeError("api_error", "", "oops"), {{"Stripe-Should-Retry", "false"}})),
              kOutcomeUnknown);
}

TEST_F(StripeV1AdapterTest, StripeShouldRetryTrueIsRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(400, StripeError("invalid_request_error", "lock_timeout", "x"),
                                        {{"stripe-should-retry", "true"}})),
              kRetryable);
}

TEST_F(StripeV1AdapterTest, AnAuthenticationFailureIsRefused) {
  EXPECT_KIND(adapter_->Classify(Answer(401, StripeError("invalid_request_error", "", "No API key"))), kTerminal);
}

TEST_F(StripeV1AdapterTest, TransportFailuresSplitIntoNotSentAndUnknown) {
  EXPECT_KIND(adapter_->Classify(NotSent()), kRetryable);
  EXPECT_KIND(adapter_->Classify(SentNoAnswer()), kOutcomeUnknown);
}

TEST_F(StripeV1AdapterTest, RefundsPostToV1RefundsWithTheirOwnKey) {
  auto r = adapter_->BuildRefund({"ch_1", 500, "usd", "requested"}, "0b6f4c8e-3d2a-4f7b-9c1e-5a8d2e6f1b3c:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v1/refunds");
  EXPECT_EQ(Form(r->body).at("charge"), "ch_1");
  EXPECT_EQ(Form(r->body).at("amount"), "500");
  EXPECT_EQ(Header(*r, "Idempotency-Key"), "0b6f4c8e-3d2a-4f7b-9c1e-5a8d2e6f1b3c:refund");
  EXPECT_KIND(adapter_->ClassifyRefund(
                  Answer(200, nlohmann::json{{"id", "re_1"}, {"object", "refund"}, {"status", "succeeded"}})),
              kSucceeded);
}

TEST_F(StripeV1AdapterTest, TheLookupSearchesChargesByTheReferenceMetadata) {
  auto r = adapter_->BuildLookup(adapter_->ReferenceFor(kProviderKey));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->path, "/v1/charges/search?query=metadata%5B%27phasekey_reference%27%5D%3A%27" +
                         std::string("0b6f4c8e-3d2a-4f7b-9c1e-5a8d2e6f1b3c%3Acharge%27"));
  EXPECT_EQ(Header(*r, "Idempotency-Key"), "<absent>");
}

TEST_F(StripeV1AdapterTest, TheLookupFindsAPaidChargeOrReportsNone) {
  const nlohmann::json paid = {{"object", "search_result"},
                               {"data", {{{"id", "ch_9"}, {"object", "charge"}, {"status", "succeeded"}}}}};
  Lookup l = adapter_->ParseLookup(Answer(200, paid));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_EQ(l.payment.payment_id, "ch_9");
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, nlohmann::json{{"data", nlohmann::json::array()}})).kind,
            Lookup::Kind::kNotFound);
  const nlohmann::json failed = {{"data", {{{"id", "ch_8"}, {"object", "charge"}, {"status", "failed"}}}}};
  l = adapter_->ParseLookup(Answer(200, failed));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_KIND(l.payment, kTerminal);
  EXPECT_EQ(adapter_->ParseLookup(Answer(500, "oops")).kind, Lookup::Kind::kUnknown);
  EXPECT_EQ(adapter_->ParseLookup(SentNoAnswer()).kind, Lookup::Kind::kUnknown);
}

}  // namespace
}  // namespace phasekey::phases
