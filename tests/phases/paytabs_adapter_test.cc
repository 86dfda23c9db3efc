// The PayTabs adapter against the PT2 API manuals (payment request, query
// transaction, response_status codes).
#include <gtest/gtest.h>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/key_fitting.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

class PayTabsAdapterTest : public ::testing::Test {
 protected:
  PayTabsAdapterTest() {
    PayTabsOptions o;
    o.secret = "SJ_server_key";
    o.profile_id = "87654";
    adapter_ = NewPayTabsAdapter(o);
  }
  PaymentIntent Intent() const { return {12345, "KWD", "2C4654BC67A3", "TST2229801363947", "Ride 7", "", ""}; }
  static nlohmann::json Transaction(const std::string& status, const std::string& code = "",
                                    const std::string& ref = "TST1") {
    return {{"tran_ref", ref}, {"payment_result", {{"response_status", status}, {"response_code", code}}}};
  }
  std::unique_ptr<ProviderAdapter> adapter_;
};

TEST_F(PayTabsAdapterTest, TheCartIdIsTheReferenceAndThereIsNoKey) {
  auto r = adapter_->BuildCharge(Intent(), kProviderKey);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->path, "/payment/request");
  EXPECT_EQ(Header(*r, "authorization"), "SJ_server_key");
  const nlohmann::json body = Json(*r);
  EXPECT_EQ(body["profile_id"], 87654);
  EXPECT_EQ(body["tran_type"], "sale");
  EXPECT_EQ(body["tran_class"], "recurring");
  EXPECT_EQ(body["token"], "2C4654BC67A3");
  EXPECT_EQ(body["tran_ref"], "TST2229801363947");
  const std::string cart_id = body["cart_id"];
  EXPECT_TRUE(KeyFits(cart_id, {1, 64, KeyAlphabet::kReferenceSafe})) << cart_id;
  EXPECT_EQ(cart_id, adapter_->ReferenceFor(kProviderKey));
  EXPECT_NE(cart_id, adapter_->ReferenceFor(kOtherProviderKey));
}

TEST_F(PayTabsAdapterTest, CartAmountIsANumberWithTheCurrencysDecimals) {
  EXPECT_EQ(Json(*adapter_->BuildCharge(Intent(), kProviderKey))["cart_amount"].dump(), "12.345");
  PaymentIntent intent = Intent();
  intent.currency = "SAR";
  intent.amount_minor = 10000;
  EXPECT_EQ(Json(*adapter_->BuildCharge(intent, kProviderKey))["cart_amount"].dump(), "100.0");
}

TEST_F(PayTabsAdapterTest, AuthorisedAndHeldAreSuccesses) {
  auto c = adapter_->Classify(Answer(200, Transaction("A", "G1234")));
  EXPECT_KIND(c, kSucceeded);
  EXPECT_EQ(c.payment_id, "TST1");
  EXPECT_KIND(adapter_->Classify(Answer(200, Transaction("H"))), kSucceeded);
}

TEST_F(PayTabsAdapterTest, DeclinedIsADeclineAndPendingIsUnknown) {
  const auto c = adapter_->Classify(Answer(200, Transaction("D", "5")));
  EXPECT_KIND(c, kTerminal);
  EXPECT_TRUE(c.declined);
  EXPECT_KIND(adapter_->Classify(Answer(200, Transaction("P"))), kOutcomeUnknown);
}

TEST_F(PayTabsAdapterTest, AReportedDuplicateIsOutcomeUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(200, Transaction("E", "4"))), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(Answer(200, Transaction("E", "99"))), kTerminal);
}

TEST_F(PayTabsAdapterTest, ValidationErrorsAreRefusedAndServerErrorsUnknown) {
  EXPECT_KIND(adapter_->Classify(Answer(400, nlohmann::json{{"code", 101}, {"message", "Cart ID not valid"}})),
              kTerminal);
  EXPECT_KIND(adapter_->Classify(Answer(500, "")), kOutcomeUnknown);
  EXPECT_KIND(adapter_->Classify(SentNoAnswer()), kOutcomeUnknown);
}

TEST_F(PayTabsAdapterTest, TheLookupQueriesByCartId) {
  auto r = adapter_->BuildLookup("cart-1");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->path, "/payment/query");
  EXPECT_EQ(Json(*r), (nlohmann::json{{"profile_id", 87654}, {"cart_id", "cart-1"}}));
}

TEST_F(PayTabsAdapterTest, TheLookupReadsOneOrSeveralTransactions) {
  Lookup l = adapter_->ParseLookup(Answer(200, Transaction("A", "", "TST7")));
  EXPECT_EQ(l.kind, Lookup::Kind::kFound);
  EXPECT_EQ(l.payment.payment_id, "TST7");
  const nlohmann::json several = {Transaction("D", "5", "TST1"), Transaction("A", "", "TST2")};
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, several)).payment.payment_id, "TST2");
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, nlohmann::json{Transaction("P")})).kind, Lookup::Kind::kUnknown);
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, nlohmann::json::array())).kind, Lookup::Kind::kNotFound);
}

TEST_F(PayTabsAdapterTest, AnUnrecognisedQueryAnswerIsNeverTakenAsNotFound) {
  EXPECT_EQ(adapter_->ParseLookup(Answer(200, nlohmann::json{{"code", 2}, {"message", "?"}})).kind,
            Lookup::Kind::kUnknown);
  EXPECT_EQ(adapter_->ParseLookup(Answer(400, "")).kind, Lookup::Kind::kUnknown);
}

TEST_F(PayTabsAdapterTest, RefundsReferToTheTransaction) {
  auto r = adapter_->BuildRefund({"TST1", 500, "KWD", "late"}, "k:refund");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(Json(*r)["tran_type"], "refund");
  EXPECT_EQ(Json(*r)["tran_ref"], "TST1");
  EXPECT_EQ(Json(*r)["cart_amount"].dump(), "0.5");
}

TEST_F(PayTabsAdapterTest, RefusesANonNumericProfileId) {
  PayTabsOptions o;
  o.profile_id = "abc";
  EXPECT_EQ(NewPayTabsAdapter(o)->BuildCharge(Intent(), kProviderKey).error().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace phasekey::phases
