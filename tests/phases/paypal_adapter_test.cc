// The PayPal adapter against https://developer.paypal.com/docs/api/orders/v2/,
// https://developer.paypal.com/reference/guidelines/idempotency and the
// Orders v2 error pages.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class PayPalAdapterTest : public ::testing::Test {
 protected:
  PayPalAdapterTest() {
    PayPalOptions o;
    o.secret = "A21_token";
    adapter_ = NewPayPalAdapter(o);
  }
  PaymentIntent Intent() const { return {1050, "USD", "vault_7", "", "Ride 7", "ride-7", ""}; }
  static nlohmann::json Issue(const std::string& name, const std::string& issue) {
    return {{"name", name}, {"details", {{{"issue", issue}, {"description", "d"}}}}};
  }
  static nlohmann::json Order(const std::string& capture_status) {
    return {{"id", "5O1"},
            {"status", "COMPLETED"},
            {"purchase_units", {{{"payments", {{"captures", {{{"id", "CAP1"}, {"status", capture_status}}}}}}}}}};
  }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(PayPalAdapterTest, OrdersCarryTheRequestIdHeaderAndADecimalAmount) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->path, "/v2/checkout/orders");
  EXPECT_EQ(Header(*r, "PayPal-Request-Id"), kProviderKey);
  EXPECT_EQ(Header(*r, "Prefer"), "return=representation");
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["intent"], "CAPTURE");
  const nlohmann::json& unit = body["purchase_units"][0];
  EXPECT_EQ(unit["amount"], (nlohmann::json{{"currency_code", "USD"}, {"value", "10.50"}}));
  EXPECT_EQ(unit["invoice_id"], kProviderKey);
  EXPECT_EQ(unit["custom_id"], "ride-7");
  EXPECT_EQ(body["payment_source"]["card"]["vault_id"], "vault_7");
  EXPECT_EQ(body["payment_source"]["card"]["stored_credential"]["payment_initiator"], "MERCHANT");
}

TEST_F(PayPalAdapterTest, KeysAreFittedTo108Characters) {
  const std::string key = std::string(kProviderKey) + std::string(100, 'z');
  EXPECT_EQ(adapter_->FitKey(key).size(), 108u);
  EXPECT_EQ(adapter_->FitKey(key), adapter_->FitKey(key));
}

TEST_F(PayPalAdapterTest, ZeroDecimalCurrenciesAtPayPalMustBeWholeAmounts) {
  PaymentIntent intent = Intent();
  intent.currency = "HUF";  // ISO: two decimals; PayPal: none
  intent.amount_minor = 150000;
  EXPECT_EQ(Json(*adapter_->BuildCharge(intent, kProviderKey))["purchase_units"][0]["amount"]["value"], "1500");
  intent.amount_minor = 150050;
  EXPECT_EQ(adapter_->BuildCharge(intent, kProviderKey).error().code(), StatusCode::kInvalidArgument);
  intent.currency = "JPY";
  intent.amount_minor = 500;
  EXPECT_EQ(Json(*adapter_->BuildCharge(intent, kProviderKey))["purchase_units"][0]["amount"]["value"], "500");
}

TEST_F(PayPalAdapterTest, DeclaresTheSixHourOrdersRetention) {
  EXPECT_EQ(adapter_->info().key_retention, std::chrono::hours(6));
  PayPalOptions o;
  o.key_retention = std::chrono::hours(72);  // by arrangement with PayPal
  EXPECT_EQ(NewPayPalAdapter(o)->info().key_retention, std::chrono::hours(72));
}

TEST_F(PayPalAdapterTest, ACompletedCaptureIsASuccessWithTheCaptureId) {
  const auto c = adapter_->Classify(Answer(201, Order("COMPLETED")));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "CAP1");
}

TEST_F(PayPalAdapterTest, DeclinesComeAsCapturesOrAs422Issues) {
  EXPECT_KIND(adapter_->Classify(Answer(201, Order("DECLINED"))), kTerminal);
  auto c = adapter_->Classify(Answer(422, Issue("UNPROCESSABLE_ENTITY", "INSTRUMENT_DECLINED")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_TRUE(adapter_->Classify(Answer(422, Issue("UNPROCESSABLE_ENTITY", "TRANSACTION_REFUSED"))).declined);
}

TEST_F(PayPalAdapterTest, ADuplicateInvoiceIdIsOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(422, Issue("UNPROCESSABLE_ENTITY", "DUPLICATE_INVOICE_ID"))), kOutcomeUnknown);
}

TEST_F(PayPalAdapterTest, ASimultaneousRequestIsRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(409, Issue("RESOURCE_CONFLICT", "PREVIOUS_REQUEST_IN_PROGRESS"))), kRetryable);
}

TEST_F(PayPalAdapterTest, InvalidRequestsAreRefusedAndServerErrorsRetried) {
  auto c = adapter_->Classify(Answer(400, Issue("INVALID_REQUEST", "MISSING_REQUIRED_PARAMETER")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_FALSE(c.declined);
  EXPECT_KIND(adapter_->Classify(Answer(401, nlohmann::json{{"error", "invalid_token"}})), kTerminal);
  EXPECT_KIND(adapter_->Classify(Answer(500, Issue("INTERNAL_SERVER_ERROR", ""))), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(429, Issue("RATE_LIMIT_REACHED", ""))), kRetryable);
  EXPECT_KIND(adapter_->Classify(SentNoAnswer()), kOutcomeUnknown);
}

TEST_F(PayPalAdapterTest, APayerActionCannotHappenOffSession) {
  EXPECT_KIND(adapter_->Classify(Answer(201, nlohmann::json{{"id", "5O1"}, {"status", "PAYER_ACTION_REQUIRED"}})),
              kTerminal);
}

TEST_F(PayPalAdapterTest, RefundsGoToTheCapture) {
  auto r = adapter_->BuildRefund({"CAP1", 500, "USD", "late driver"}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v2/payments/captures/CAP1/refund");
  EXPECT_EQ(Header(*r, "PayPal-Request-Id"), "k:refund");
  EXPECT_EQ(Json(*r)["amount"]["value"], "5.00");
}

TEST_F(PayPalAdapterTest, HasNoLookup) { EXPECT_FALSE(adapter_->info().has_lookup); }

}  // namespace
}  // namespace phasekey::phases
