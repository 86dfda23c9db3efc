// ChargeOutcome and RefundOutcome: what the charge and refund phases record,
// read back by later phases as types, with the JSON names keys in flight
// were stored with.
#include "phasekey/phases/payment_outcome.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "adapter_test_util.h"

namespace phasekey::phases {
namespace {

using testing::FakeContext;

constexpr RecoveryPoint kCharged{"charged"};

TEST(PaymentOutcomeTest, AChargeOutcomeReadsBackAsItWasRecorded) {
  const ChargeOutcome recorded{"stripe_v1", "ch_1", "succeeded", "ref-1", true};
  FakeContext ctx(1, std::chrono::seconds(0));
  ctx.set_outcome(recorded.ToJson());
  const ChargeOutcome read = ChargeOutcome::At(ctx, kCharged);
  EXPECT_EQ(read.provider, "stripe_v1");
  EXPECT_EQ(read.payment_id, "ch_1");
  EXPECT_EQ(read.status, "succeeded");
  EXPECT_EQ(read.reference, "ref-1");
  EXPECT_TRUE(read.reconciled);
}

TEST(PaymentOutcomeTest, TheJsonNamesAreTheOnesStoredOutcomesCarry) {
  EXPECT_EQ(
      ChargeOutcome({"adyen", "psp1", "Authorised", "r", false}).ToJson(),
      nlohmann::json::parse(
          R"({"provider":"adyen","payment_id":"psp1","status":"Authorised","reference":"r","reconciled":false})"));
  EXPECT_EQ(RefundOutcome({"square", "rf_1", "PENDING"}).ToJson(),
            nlohmann::json::parse(R"({"provider":"square","refund_id":"rf_1","status":"PENDING"})"));
}

TEST(PaymentOutcomeTest, ReadingAPointWithoutAChargeOutcomeThrows) {
  FakeContext ctx(1, std::chrono::seconds(0));
  EXPECT_THROW(ChargeOutcome::At(ctx, kCharged), std::invalid_argument);
  ctx.set_outcome({{"charge_id", 7}});
  EXPECT_THROW(ChargeOutcome::At(ctx, kCharged), std::invalid_argument);
  EXPECT_THROW(RefundOutcome::At(ctx, kCharged), std::invalid_argument);
}

TEST(PaymentOutcomeTest, AChargeRecordedByTheOldStripeClientStillReadsAfterAnUpgrade) {
  FakeContext ctx(1, std::chrono::seconds(0));
  ctx.set_outcome({{"charge_id", "ch_old"}});  // what the 0.3 ride service's own Stripe client stored
  const ChargeOutcome read = ChargeOutcome::At(ctx, kCharged);
  EXPECT_EQ(read.provider, "stripe_v1");
  EXPECT_EQ(read.payment_id, "ch_old");
  EXPECT_EQ(read.status, "succeeded");
}

TEST(PaymentOutcomeTest, ARefundOutcomeReadsBackAsItWasRecorded) {
  FakeContext ctx(1, std::chrono::seconds(0));
  ctx.set_outcome(RefundOutcome{"tap", "re_1", "REFUNDED"}.ToJson());
  const RefundOutcome read = RefundOutcome::At(ctx, kCharged);
  EXPECT_EQ(read.provider, "tap");
  EXPECT_EQ(read.refund_id, "re_1");
  EXPECT_EQ(read.status, "REFUNDED");
}

}  // namespace
}  // namespace phasekey::phases
