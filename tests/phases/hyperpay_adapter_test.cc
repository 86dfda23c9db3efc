// The HyperPay (OPPWA) adapter against
// https://hyperpay.docs.oppwa.com/reference/parameters, /reference/resultCodes
// and /tutorials/reporting/transaction.
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class HyperPayAdapterTest : public ::testing::Test {
 protected:
  HyperPayAdapterTest() {
    HyperPayOptions o;
    o.secret = "OGE4_token";
    o.entity_id = "8a8294174b7ecb28014b9699220015ca";
    adapter_ = NewHyperPayAdapter(o);
  }
  PaymentIntent Intent() const { return {9200, "SAR", "8ac7a4a1", "", "Ride 7", "", ""}; }
  static nlohmann::json Result(const std::string& code, const std::string& id = "8ac7p1") {
    return {{"id", id}, {"paymentType", "DB"}, {"result", {{"code", code}, {"description", "d"}}}};
  }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(HyperPayAdapterTest, ThereIsNoKeyOnlyTheMerchantTransactionId) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->path, "/v1/registrations/8ac7a4a1/payments");
  EXPECT_EQ(r->content_type, "application/x-www-form-urlencoded");
  EXPECT_EQ(Header(*r, "Authorization"), "Bearer OGE4_token");
  EXPECT_EQ(Header(*r, "Idempotency-Key"), "<absent>");
  const auto form = Form(r->body);
  EXPECT_EQ(form.at("entityId"), "8a8294174b7ecb28014b9699220015ca");
  EXPECT_EQ(form.at("paymentType"), "DB");
  EXPECT_EQ(form.at("merchantTransactionId"), kProviderKey);
  EXPECT_EQ(form.at("standingInstruction.source"), "MIT");
  EXPECT_EQ(adapter_->info().placement, KeyPlacement::kNone);
  EXPECT_EQ(adapter_->FitKey(kProviderKey), "");
}

TEST_F(HyperPayAdapterTest, AmountsHaveAtMostTwoDecimals) {
  EXPECT_EQ(Form(adapter_->BuildCharge(Intent(), kProviderKey)->body).at("amount"), "92.00");
  PaymentIntent intent = Intent();
  intent.currency = "KWD";
  intent.amount_minor = 12340;
  EXPECT_EQ(Form(adapter_->BuildCharge(intent, kProviderKey)->body).at("amount"), "12.34");
  intent.amount_minor = 12345;
  EXPECT_EQ(adapter_->BuildCharge(intent, kProviderKey).error().code(), StatusCode::kInvalidArgument);
  intent.currency = "JPY";
  intent.amount_minor = 500;
  EXPECT_EQ(Form(adapter_->BuildCharge(intent, kProviderKey)->body).at("amount"), "500");
}

TEST_F(HyperPayAdapterTest, SuccessCodesAreSuccessesWhateverTheHttpStatus) {
  for (const char* code : {"000.000.000", "000.100.110", "000.300.000", "000.600.000", "000.400.110"}) {
    const auto c = adapter_->Classify(Answer(200, Result(code)));
    EXPECT_KIND(c, kSucceeded) << code;
    EXPECT_EQ(c.payment_id, "8ac7p1");
  }
  EXPECT_KIND(adapter_->Classify(Answer(200, Result("000.400.000"))), kSucceeded);  // manual review
}

TEST_F(HyperPayAdapterTest, DeclinesArriveAs400WithARejectionCode) {
  auto c = adapter_->Classify(Answer(400, Result("800.100.153")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_EQ(c.code, "800.100.153");
}

TEST_F(HyperPayAdapterTest, ValidationCodesAreRefusals) {
  auto c = adapter_->Classify(Answer(400, Result("200.300.404")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_FALSE(c.declined);
}

TEST_F(HyperPayAdapterTest, PendingCommunicationAndSystemErrorsAreOutcomeUnknown) {
  for (const char* code : {"000.200.000", "800.400.500", "100.400.500", "900.100.300", "000.400.030", "800.500.100",
                           "999.999.999", "600.100.100"}) {
    EXPECT_KIND(adapter_->Classify(Answer(200, Result(code))), kOutcomeUnknown) << code;
  }
}

TEST_F(HyperPayAdapterTest, ThrottlingIsRetried) {
  EXPECT_KIND(adapter_->Classify(Answer(429, Result("800.120.100"))), kRetryable);
}

TEST_F(HyperPayAdapterTest, WithoutAKeyA5xxOrALostAnswerIsOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(502, "<html>bad gateway</html>")), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(SentNoAnswer()), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(NotSent()), kRetryable);
}

TEST_F(HyperPayAdapterTest, TheLookupQueriesByMerchantTransactionId) {
  auto r = adapter_->BuildLookup(adapter_->ReferenceFor(kProviderKey));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->method, "GET");
  EXPECT_EQ(r->path,
            "/v3/query?entityId=8a8294174b7ecb28014b9699220015ca&merchantTransactionId="
            "0b6f4c8e-3d2a-4f7b-9c1e-5a8d2e6f1b3c%3Acharge");
}

TEST_F(HyperPayAdapterTest, TheLookupReadsEveryListedPayment) {
  const nlohmann::json answer = {{"result", {{"code", "000.000.100"}}},
                                 {"payments", {Result("800.100.151", "p0"), Result("000.000.000", "p1")}}};
  Lookup l = adapter_->ParseLookup(Answer(200, answer));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_EQ(l.payment.payment_id, "p1");
}

TEST_F(HyperPayAdapterTest, TheLookupReportsExtraPaymentsForAnOperator) {
  const nlohmann::json answer = {{"payments", {Result("000.000.000", "p1"), Result("000.000.000", "p2")}}};
  Lookup l = adapter_->ParseLookup(Answer(200, answer));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_NE(l.message.find("paid 2 times"), std::string::npos) << l.message;
}

TEST_F(HyperPayAdapterTest, TheLookupIsUnknownWhileAPaymentIsPending) {
  const nlohmann::json answer = {{"payments", {Result("000.200.000", "p1")}}};
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, answer)).kind, Lookup::Kind::kUnknown);
}

TEST_F(HyperPayAdapterTest, TheLookupFindsADeclineOrNothing) {
  Lookup l = adapter_->ParseLookup(Answer(200, nlohmann::json{{"payments", {Result("800.100.153", "p0")}}}));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_KIND(l.payment, kTerminal);
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, nlohmann::json{{"payments", nlohmann::json::array()}})).kind,
            Lookup::Kind::kNotFound);
  EXPECT_EQ(adapter_->ParseLookup(Answer(400, nlohmann::json{{"result", {{"code", "700.400.580"}}}})).kind,
            Lookup::Kind::kNotFound);
  EXPECT_EQ(adapter_->ParseLookup(Answer(500, "")).kind, Lookup::Kind::kUnknown);
}

TEST_F(HyperPayAdapterTest, RefundsAreRfPaymentsOnThePayment) {
  auto r = adapter_->BuildRefund({"8ac7p1", 500, "SAR", ""}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/v1/payments/8ac7p1");
  EXPECT_EQ(Form(r->body).at("paymentType"), "RF");
  EXPECT_EQ(Form(r->body).at("amount"), "5.00");
}

}  // namespace
}  // namespace phasekey::phases
