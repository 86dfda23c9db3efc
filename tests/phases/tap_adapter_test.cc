// The Tap adapter against https://developers.tap.company/docs/idempotency and
// https://developers.tap.company/reference/create-a-charge.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class TapAdapterTest : public ::testing::Test {
 protected:
  TapAdapterTest() {
    TapOptions o;
    o.secret = "sk_test_tap";
    o.redirect_url = "https://rides.example/return";
    adapter_ = NewTapAdapter(o);
  }
  PaymentIntent Intent() const { return {1250, "KWD", "card_1", "cus_9", "Ride 7", "ord-7", ""}; }
  ProviderRequest Charge(const PaymentIntent& intent) const { return *adapter_->BuildCharge(intent, kProviderKey); }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(TapAdapterTest, TheKeyGoesInReferenceIdempotent) {
  const ProviderRequest r = Charge(Intent());
  EXPECT_EQ(r.path, "/v2/charges");
  EXPECT_EQ(Header(r, "Authorization"), "Bearer sk_test_tap");
  const nlohmann::json body = Json(r);
  const std::string key = body["reference"]["idempotent"];
  EXPECT_EQ(key, adapter_->FitKey(kProviderKey));
  EXPECT_LE(key.size(), 64u);
  EXPECT_EQ(key.find(':'), std::string::npos) << key;  // url-safe alphabet
  EXPECT_EQ(body["reference"]["order"], "ord-7");
  EXPECT_EQ(body["source"]["id"], "card_1");
  EXPECT_EQ(body["customer"]["id"], "cus_9");
  EXPECT_EQ(body["redirect"]["url"], "https://rides.example/return");
}

TEST_F(TapAdapterTest, AmountsAreDecimalNumbersWithTheCurrencysDigits) {
  EXPECT_EQ(Json(Charge(Intent()))["amount"].dump(), "1.25");  // 1250 fils
  PaymentIntent intent = Intent();
  intent.amount_minor = 1234;
  EXPECT_EQ(Json(Charge(intent))["amount"].dump(), "1.234");
  intent.currency = "SAR";
  intent.amount_minor = 1050;
  EXPECT_EQ(Json(Charge(intent))["amount"].dump(), "10.5");
  EXPECT_EQ(Json(Charge(intent))["currency"], "SAR");
}

TEST_F(TapAdapterTest, TheSameProviderKeyAlwaysGivesTheSameIdempotentString) {
  EXPECT_EQ(Charge(Intent()).body, Charge(Intent()).body);
  EXPECT_NE(adapter_->FitKey(kProviderKey), adapter_->FitKey(kOtherProviderKey));
}

TEST_F(TapAdapterTest, DeclaresTwentyFourHours) { EXPECT_EQ(adapter_->info().key_retention, std::chrono::hours(24)); }

TEST_F(TapAdapterTest, CapturedIsPaidAndDeclinedIsADecline) {
  auto c =
      adapter_->Classify(Answer(200, nlohmann::json{{"id", "chg_1"}, {"object", "charge"}, {"status", "CAPTURED"}}));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "chg_1");
  const nlohmann::json declined = {{"id", "chg_2"},
                                   {"object", "charge"},
                                   {"status", "DECLINED"},
                                   {"response", {{"code", "507"}, {"message", "Declined"}}}};
  c = adapter_->Classify(Answer(200, declined));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
}

TEST_F(TapAdapterTest, AnInitiatedChargeNeedsTheCustomerAndIsRefused) {
  EXPECT_KIND(
      adapter_->Classify(Answer(200, nlohmann::json{{"id", "c"}, {"object", "charge"}, {"status", "INITIATED"}})),
      kTerminal);
}

TEST_F(TapAdapterTest, UnknownStatusIsOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(200, nlohmann::json{{"id", "c"}, {"object", "charge"}, {"status", "UNKNOWN"}})),
              kOutcomeUnknown);
}

TEST_F(TapAdapterTest, ErrorsAreRefusedOrRetried) {
  const nlohmann::json invalid = {{"errors", {{{"code", "1108"}, {"description", "Currency is invalid"}}}}};
  auto c = adapter_->Classify(Answer(400, invalid));
  EXPECT_KIND(c, kTerminal);
  EXPECT_EQ(c.code, "1108");
  EXPECT_KIND(adapter_->Classify(Answer(429, "")), kRetryable);
  EXPECT_KIND(adapter_->Classify(Answer(502, "")), kRetryable);
  EXPECT_KIND(adapter_->Classify(SentNoAnswer()), kOutcomeUnknown);
}

TEST_F(TapAdapterTest, RefundsAreKeyedTheSameWay) {
  auto r = adapter_->BuildRefund({"chg_1", 500, "KWD", ""}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v2/refunds");
  EXPECT_EQ(Json(*r)["reference"]["idempotent"], adapter_->FitKey("k:refund"));
  EXPECT_EQ(Json(*r)["amount"].dump(), "0.5");
}

TEST_F(TapAdapterTest, RefusesToBuildWithoutARedirectUrl) {
  EXPECT_EQ(NewTapAdapter()->BuildCharge(Intent(), kProviderKey).error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phasekey::phases
