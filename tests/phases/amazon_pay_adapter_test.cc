// The Amazon Pay adapter against
// https://developer.amazon.com/docs/amazon-pay-api-v2/idempotency.html and
// https://developer.amazon.com/docs/amazon-pay-api-v2/charge.html.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/key_fitting.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class AmazonPayAdapterTest : public ::testing::Test {
 protected:
  AmazonPayAdapterTest() {
    AmazonPayOptions o;
    o.sign = [](ProviderRequest* r) {
      r->headers.emplace_back("Authorization", "AMZN-PAY-RSASSA-PSS-V2 test");
      return Status::OK();
    };
    adapter_ = NewAmazonPayAdapter(o);
  }
  PaymentIntent Intent() const { return {1400, "USD", "S01-123", "", "Ride 7", "", ""}; }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(AmazonPayAdapterTest, TheKeyIsFittedTo32UrlSafeCharacters) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const std::string key = Header(*r, "x-amz-pay-idempotency-key");
  EXPECT_EQ(key.size(), 32u);
  EXPECT_TRUE(KeyFits(key, {1, 32, KeyAlphabet::kUrlSafe})) << key;
  EXPECT_EQ(key, adapter_->FitKey(kProviderKey));
  EXPECT_NE(key, adapter_->FitKey(kOtherProviderKey));
}

TEST_F(AmazonPayAdapterTest, ChargesUseADecimalStringAmountAndAreSignedLast) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v2/charges");
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["chargePermissionId"], "S01-123");
  EXPECT_EQ(body["chargeAmount"], (nlohmann::json{{"amount", "14.00"}, {"currencyCode", "USD"}}));
  EXPECT_EQ(body["captureNow"], true);
  EXPECT_EQ(body["merchantMetadata"]["merchantReferenceId"], kProviderKey);
  EXPECT_EQ(Header(*r, "Authorization"), "AMZN-PAY-RSASSA-PSS-V2 test");
}

TEST_F(AmazonPayAdapterTest, ASigningFailureIsReturned) {
  AmazonPayOptions o;
  o.sign = [](ProviderRequest*) { return Status::FailedPrecondition("no private key"); };
  EXPECT_EQ(NewAmazonPayAdapter(o)->BuildCharge(Intent(), kProviderKey).error().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(AmazonPayAdapterTest, KeysAreKeptIndefinitely) {
  EXPECT_EQ(adapter_->info().key_retention, std::chrono::seconds::max());
}

TEST_F(AmazonPayAdapterTest, ACapturedChargeIsASuccess) {
  const nlohmann::json charge = {{"chargeId", "S01-123-C1"}, {"statusDetails", {{"state", "Captured"}}}};
  const auto c = adapter_->Classify(Answer(201, charge));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "S01-123-C1");
}

TEST_F(AmazonPayAdapterTest, ADeclinedChargeIsADecline) {
  const nlohmann::json charge = {{"chargeId", "C2"},
                                 {"statusDetails", {{"state", "Declined"}, {"reasonCode", "HardDeclined"}}}};
  const auto c = adapter_->Classify(Answer(201, charge));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.code, "HardDeclined");
  EXPECT_TRUE(adapter_->Classify(Answer(400, nlohmann::json{{"reasonCode", "HardDeclined"}})).declined);
}

TEST_F(AmazonPayAdapterTest, ADuplicateKeyWithChangedValuesIsOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(400, nlohmann::json{{"reasonCode", "DuplicateIdempotencyKey"}})),
              kOutcomeUnknown);
}

TEST_F(AmazonPayAdapterTest, ThrottlingAndServerErrorsAreRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(429, nlohmann::json{{"reasonCode", "TooManyRequests"}})), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(500, nlohmann::json{{"reasonCode", "InternalServerError"}})), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(503, nlohmann::json{{"reasonCode", "ServiceUnavailable"}})), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(400, nlohmann::json{{"reasonCode", "InvalidParameterValue"}})), kTerminal);
  EXPECT_KIND(adapter_->Classify(SentNoAnswer()), kOutcomeUnknown);
}

TEST_F(AmazonPayAdapterTest, RefundsAreKeyedToo) {
  auto r = adapter_->BuildRefund({"C1", 500, "USD", ""}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v2/refunds");
  EXPECT_EQ(Json(*r)["refundAmount"]["amount"], "5.00");
  EXPECT_EQ(Header(*r, "x-amz-pay-idempotency-key"), adapter_->FitKey("k:refund"));
}

}  // namespace
}  // namespace phasekey::phases
