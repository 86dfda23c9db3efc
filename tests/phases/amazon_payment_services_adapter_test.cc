// The Amazon Payment Services (PayFort) adapter against
// https://paymentservices.amazon.com/docs/api/managing-payments/recurring,
// /docs/developer-resources/signature and the check-status page. Expected
// signatures were computed independently with Python's hashlib.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

constexpr char kReference[] = "0b6f4c8e-3d2a-3j5fgvznjnhryxxxf6pwt3he7y";

class AmazonPaymentServicesAdapterTest : public ::testing::Test {
 protected:
  AmazonPaymentServicesAdapterTest() {
    AmazonPaymentServicesOptions o;
    o.merchant_identifier = "CycHZxVj";
    o.access_code = "zx0IPmPy5jp1vAz8Kpg7";
    o.sha_request_phrase = "PASS";
    adapter_ = NewAmazonPaymentServicesAdapter(o);
  }
  PaymentIntent Intent() const { return {10000, "AED", "tok123", "agr1", "Ride 7", "", "rider@example.com"}; }
  static nlohmann::json ApsAnswer(const std::string& status, const std::string& message_code,
                                  const std::string& message = "") {
    return {{"status", status},
            {"response_code", status + message_code},
            {"response_message", message},
            {"fort_id", "1699"}};
  }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(AmazonPaymentServicesAdapterTest, ThePurchaseCarriesTheMerchantReferenceAndASha256Signature) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->path, "/FortAPI/paymentApi");
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["command"], "PURCHASE");
  EXPECT_EQ(body["merchant_reference"], kReference);
  EXPECT_EQ(body["amount"], "10000");
  EXPECT_EQ(body["currency"], "AED");
  EXPECT_EQ(body["eci"], "RECURRING");
  EXPECT_EQ(body["token_name"], "tok123");
  EXPECT_EQ(body["agreement_id"], "agr1");
  EXPECT_EQ(body["signature"], "8cbf86a37b83e4101a353355132510ca0be0abe2fdbd43a68260cf527c633053");
  EXPECT_EQ(adapter_->info().placement, KeyPlacement::kNone);
}

TEST_F(AmazonPaymentServicesAdapterTest, AmountsAreMinorUnitsWithThreeDecimalsForKwd) {
  PaymentIntent intent = Intent();
  intent.currency = "KWD";
  intent.amount_minor = 1234;
  EXPECT_EQ(Json(*adapter_->BuildCharge(intent, kProviderKey))["amount"], "1234");
}

TEST_F(AmazonPaymentServicesAdapterTest, ACustomerEmailIsRequired) {
  PaymentIntent intent = Intent();
  intent.customer_email.clear();
  EXPECT_EQ(adapter_->BuildCharge(intent, kProviderKey).error().code(), StatusCode::kInvalidArgument);
}

TEST_F(AmazonPaymentServicesAdapterTest, PurchaseSuccessIsPaidAndHoldsCountAsExisting) {
  auto c = adapter_->Classify(Answer(200, ApsAnswer("14", "000", "Success")));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "1699");
  EXPECT_KIND(adapter_->Classify(Answer(200, ApsAnswer("20", "064"))), kSucceeded);
}

TEST_F(AmazonPaymentServicesAdapterTest, PurchaseFailureIsADecline) {
  const auto c = adapter_->Classify(Answer(200, ApsAnswer("13", "016", "Card declined")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.code, "13016");
}

TEST_F(AmazonPaymentServicesAdapterTest, AReusedMerchantReferenceIsOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(200, ApsAnswer("00", "066", "Merchant reference already exists"))),
              kOutcomeUnknown);
}

TEST_F(AmazonPaymentServicesAdapterTest, UncertainAndPendingAreOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(200, ApsAnswer("15", "777"))), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(Answer(200, ApsAnswer("19", "777"))), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(Answer(502, "")), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(SentNoAnswer()), kOutcomeUnknown);
}

TEST_F(AmazonPaymentServicesAdapterTest, AnInvalidRequestIsRefused) {
  const auto c = adapter_->Classify(Answer(200, ApsAnswer("00", "008", "Signature mismatch")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_FALSE(c.declined);
}

TEST_F(AmazonPaymentServicesAdapterTest, CheckStatusIsASignedQueryByMerchantReference) {
  auto r = adapter_->BuildLookup(kReference);
  ASSERT_TRUE(r.has_value());
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["query_command"], "CHECK_STATUS");
  EXPECT_EQ(body["merchant_reference"], kReference);
  EXPECT_EQ(body["signature"], "b2ef390590cf86cef66ffe461ee89fc17ceb3d4ad97eb19b518c71b842f1d769");
}

TEST_F(AmazonPaymentServicesAdapterTest, CheckStatusReadsTheOriginalTransactionStatus) {
  nlohmann::json found = ApsAnswer("12", "000", "Success");
  found["transaction_status"] = "14";
  Lookup l = adapter_->ParseLookup(Answer(200, found));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_EQ(l.payment.payment_id, "1699");
  found["transaction_status"] = "13";
  EXPECT_KIND(adapter_->ParseLookup(Answer(200, found)).payment, kTerminal);
  found["transaction_status"] = "19";
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, found)).kind, Lookup::Kind::kUnknown);
}

TEST_F(AmazonPaymentServicesAdapterTest, CheckStatusIsNotFoundOnlyWhenItSaysSo) {
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, ApsAnswer("11", "070", "Transaction does not exist"))).kind,
            Lookup::Kind::kNotFound);
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, ApsAnswer("11", "001", "Technical problem"))).kind,
            Lookup::Kind::kUnknown);
  EXPECT_EQ(adapter_->ParseLookup(SentNoAnswer()).kind, Lookup::Kind::kUnknown);
}

TEST_F(AmazonPaymentServicesAdapterTest, RefundsReferToTheFortId) {
  auto r = adapter_->BuildRefund({"1699", 5000, "AED", ""}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Json(*r)["command"], "REFUND");
  EXPECT_EQ(Json(*r)["fort_id"], "1699");
  EXPECT_KIND(adapter_->ClassifyRefund(Answer(200, ApsAnswer("06", "000"))), kSucceeded);
}

TEST_F(AmazonPaymentServicesAdapterTest, RefusesToBuildWithoutCredentials) {
  EXPECT_EQ(NewAmazonPaymentServicesAdapter()->BuildCharge(Intent(), kProviderKey).error().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phasekey::phases
