// The Square adapter against
// https://developer.squareup.com/reference/square/payments-api/create-payment
// and https://developer.squareup.com/reference/square/enums/ErrorCode.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class SquareAdapterTest : public ::testing::Test {
 protected:
  SquareAdapterTest() {
    SquareOptions o;
    o.secret = "EAAA_token";
    o.location_id = "L1";
    adapter_ = NewSquareAdapter(o);
  }
  PaymentIntent Intent() const { return {1050, "USD", "ccof:abc", "CUST1", "Ride 7", "", ""}; }
  static nlohmann::json Errors(const std::string& category, const std::string& code) {
    return {{"errors", {{{"category", category}, {"code", code}, {"detail", "d"}}}}};
  }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(SquareAdapterTest, TheKeyIsABodyFieldAndTheAmountAMoneyObject) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->path, "/v2/payments");
  EXPECT_EQ(Header(*r, "Authorization"), "Bearer EAAA_token");
  EXPECT_EQ(Header(*r, "Square-Version"), kSquareVersion);
  EXPECT_EQ(Header(*r, "Idempotency-Key"), "<absent>");
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["idempotency_key"], kProviderKey);  // 43 characters: fits 45
  EXPECT_EQ(body["source_id"], "ccof:abc");
  EXPECT_EQ(body["customer_id"], "CUST1");
  EXPECT_EQ(body["location_id"], "L1");
  EXPECT_EQ(body["amount_money"], (nlohmann::json{{"amount", 1050}, {"currency", "USD"}}));
  EXPECT_LE(body["reference_id"].get<std::string>().size(), 40u);
}

TEST_F(SquareAdapterTest, KeysAreFittedTo45Characters) {
  const std::string key = std::string(kProviderKey) + "_for_ride";
  auto r = adapter_->BuildCharge(Intent(), key);
  ASSERT_TRUE(r.has_value());
  const std::string sent = Json(*r)["idempotency_key"];
  EXPECT_EQ(sent.size(), 45u);
  EXPECT_EQ(sent, adapter_->FitKey(key));
  EXPECT_NE(sent, adapter_->FitKey(std::string(kOtherProviderKey) + "_for_ride"));
}

TEST_F(SquareAdapterTest, RetentionIsUndocumentedSoTheSafeDefaultIsConfigurable) {
  EXPECT_FALSE(adapter_->info().retention_documented);
  EXPECT_EQ(adapter_->info().key_retention, std::chrono::hours(24));
  SquareOptions o;
  o.key_retention = std::chrono::hours(2);
  EXPECT_EQ(NewSquareAdapter(o)->info().key_retention, std::chrono::hours(2));
}

TEST_F(SquareAdapterTest, ACompletedPaymentIsASuccess) {
  const auto c = adapter_->Classify(Answer(200, nlohmann::json{{"payment", {{"id", "P1"}, {"status", "COMPLETED"}}}}));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "P1");
}

TEST_F(SquareAdapterTest, PaymentMethodErrorsAreDeclines) {
  const auto c = adapter_->Classify(Answer(400, Errors("PAYMENT_METHOD_ERROR", "CARD_DECLINED")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.code, "CARD_DECLINED");
}

TEST_F(SquareAdapterTest, TemporaryErrorsAndRateLimitsAreRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(500, Errors("API_ERROR", "TEMPORARY_ERROR"))), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(503, Errors("API_ERROR", "SERVICE_UNAVAILABLE"))), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(504, Errors("API_ERROR", "GATEWAY_TIMEOUT"))), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(429, Errors("RATE_LIMIT_ERROR", "RATE_LIMITED"))), kRetryable);
}

TEST_F(SquareAdapterTest, AReusedKeyIsOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(400, Errors("INVALID_REQUEST_ERROR", "IDEMPOTENCY_KEY_REUSED"))),
              kOutcomeUnknown);
}

TEST_F(SquareAdapterTest, InvalidRequestsAndAuthenticationErrorsAreRefused) {
  EXPECT_KIND(adapter_->Classify(Answer(400, Errors("INVALID_REQUEST_ERROR", "MISSING_REQUIRED_PARAMETER"))),
              kTerminal);
  EXPECT_KIND(adapter_->Classify(Answer(401, Errors("AUTHENTICATION_ERROR", "UNAUTHORIZED"))), kTerminal);
}

TEST_F(SquareAdapterTest, RefundsCarryTheirOwnBodyKey) {
  auto r = adapter_->BuildRefund({"P1", 500, "USD", "requested"}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v2/refunds");
  EXPECT_EQ(Json(*r)["idempotency_key"], "k:refund");
  EXPECT_EQ(Json(*r)["payment_id"], "P1");
  EXPECT_KIND(adapter_->ClassifyRefund(Answer(200, nlohmann::json{{"refund", {{"id", "R1"}, {"status", "PENDING"}}}})),
              kSucceeded);
}

TEST_F(SquareAdapterTest, HasNoLookup) { EXPECT_FALSE(adapter_->info().has_lookup); }

}  // namespace
}  // namespace phasekey::phases
