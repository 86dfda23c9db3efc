// RefundWith and AddRefund (refund_phase.h) over a fake transport: a refund
// is made once, resent only where the gateway deduplicates it, and refused
// for an operator where a resend could refund twice.
#include "phasekey/phases/refund_phase.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

constexpr RecoveryPoint kCharged{"charged"};
constexpr RecoveryPoint kRefunded{"refunded"};

// Stripe's refunds endpoint: one refund per Idempotency-Key, whose first
// answer is replayed to every resend; can make a refund and lose the answer.
class FakeStripeRefunds : public HttpClient {
 public:
  enum class Mode { kAnswer, kExecuteThenDrop, kRefuse };

  ProviderAnswer Send(std::string_view, const ProviderRequest& r, std::chrono::milliseconds) const override {
    requests.push_back(r);
    const std::string* key = r.FindHeader("Idempotency-Key");
    if (key != nullptr && replies.count(*key) > 0) return replies.at(*key);
    if (mode == Mode::kRefuse) {
      return Answer(400, nlohmann::json{{"error",
                                         {{"type", "invalid_request_error"},
                                          {"code", "charge_already_refunded"},
                                          {"message", "Charge ch_1 has already been refunded."}}}});
    }
    const std::string id = "re_" + std::to_string(++refunds);
    const ProviderAnswer answer = Answer(200, nlohmann::json{{"id", id},
                                                             {"object", "refund"},
                                                             {"status", "succeeded"},
                                                             {"charge", Form(r.body).at("charge")},
                                                             {"amount", 2000}});
    if (key != nullptr) replies[*key] = answer;
    return mode == Mode::kExecuteThenDrop ? SentNoAnswer() : answer;
  }

  Mode mode = Mode::kAnswer;
  mutable int refunds = 0;
  mutable std::vector<ProviderRequest> requests;
  mutable std::map<std::string, ProviderAnswer> replies;
};

// The refund of the charge phase's payment, as a flow would compute it.
RefundIntent FromCharge(const PhaseContext& ctx) {
  return RefundIntent{ctx.Outcome(kCharged).value("payment_id", ""), 2000, "usd", "ride cancelled"};
}

class RefundPhaseTest : public ::testing::Test {
 protected:
  RefundPhaseTest() {
    StripeOptions s;
    s.base_url = "http://127.0.0.1:9";
    stripe_ = NewStripeV1Adapter(s);
  }

  PhaseResult Run(const ForeignPhase& phase, int attempts, std::chrono::seconds key_age,
                  SendPolicy policy = SendPolicy::kSend) {
    FakeContext ctx(attempts, key_age);
    ctx.set_policy(policy);
    ctx.set_outcome({{"payment_id", "ch_1"}});
    return phase(ctx);
  }

  std::unique_ptr<ProviderAdapter> stripe_;
  FakeStripeRefunds gateway_;
};

TEST_F(RefundPhaseTest, RefundsThePaymentOnceUnderTheRefundPhasesKey) {
  const ForeignPhase phase = RefundWith(*stripe_, gateway_, FromCharge, kRefunded);
  const PhaseResult r = Run(phase, 1, std::chrono::seconds(0));
  ASSERT_TRUE(std::holds_alternative<GoTo>(r));
  const GoTo& go = std::get<GoTo>(r);
  EXPECT_EQ(go.next, kRefunded);
  EXPECT_EQ(go.outcome["refund_id"], "re_1");
  EXPECT_EQ(go.outcome["provider"], "stripe_v1");
  ASSERT_EQ(gateway_.requests.size(), 1u);
  EXPECT_EQ(gateway_.requests[0].path, "/v1/refunds");
  EXPECT_EQ(Form(gateway_.requests[0].body).at("charge"), "ch_1");
  ASSERT_NE(gateway_.requests[0].FindHeader("Idempotency-Key"), nullptr);
  EXPECT_EQ(*gateway_.requests[0].FindHeader("Idempotency-Key"), stripe_->FitKey(kProviderKey));
}

TEST_F(RefundPhaseTest, ALostAnswerIsResentUnderTheSameKeyAndRefundsOnce) {
  const ForeignPhase phase = RefundWith(*stripe_, gateway_, FromCharge, kRefunded);
  gateway_.mode = FakeStripeRefunds::Mode::kExecuteThenDrop;
  const PhaseResult first = Run(phase, 1, std::chrono::seconds(0));
  ASSERT_TRUE(std::holds_alternative<Failure>(first));
  EXPECT_EQ(std::get<Failure>(first).kind, Failure::Kind::kOutcomeUnknown);
  // The engine re-runs it (in the request, or a later claim within Stripe's 24 h).
  for (int attempts : {1, 2}) {
    const PhaseResult again = Run(phase, attempts, std::chrono::hours(2));
    ASSERT_TRUE(std::holds_alternative<GoTo>(again));
    EXPECT_EQ(std::get<GoTo>(again).outcome["refund_id"], "re_1");
  }
  EXPECT_EQ(gateway_.refunds, 1) << "the resends were replayed, not refunded again";
}

TEST_F(RefundPhaseTest, PastTheKeysRetentionAReRunParksTheKeyForAnOperatorWithoutSending) {
  const ForeignPhase phase = RefundWith(*stripe_, gateway_, FromCharge, kRefunded);
  // The engine's word that Stripe may have forgotten the key (30 h > 24 h).
  const PhaseResult r = Run(phase, 2, std::chrono::hours(30), SendPolicy::kLookUpFirst);
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  const Failure& f = std::get<Failure>(r);
  EXPECT_EQ(f.kind, Failure::Kind::kNeedsOperator);
  EXPECT_NE(f.reason.find("may have refunded"), std::string::npos) << f.reason;
  EXPECT_TRUE(gateway_.requests.empty());
}

TEST_F(RefundPhaseTest, WithoutKeysAReRunAfterAnEarlierAttemptRefusesForAnOperator) {
  HyperPayOptions h;
  h.base_url = "http://127.0.0.1:9";
  h.entity_id = "8a8294174b7ecb28014b9699220015ca";
  const auto hyperpay = NewHyperPayAdapter(h);
  const ForeignPhase phase = RefundWith(*hyperpay, gateway_, FromCharge, kRefunded);
  const PhaseResult r = Run(phase, 2, std::chrono::seconds(5));
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, Failure::Kind::kNeedsOperator);
  EXPECT_TRUE(gateway_.requests.empty());
}

TEST_F(RefundPhaseTest, ARefusedRefundIsStoredAsA502NamingTheProvidersCode) {
  const ForeignPhase phase = RefundWith(*stripe_, gateway_, FromCharge, kRefunded);
  gateway_.mode = FakeStripeRefunds::Mode::kRefuse;
  const PhaseResult r = Run(phase, 1, std::chrono::seconds(0));
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  const Failure& f = std::get<Failure>(r);
  EXPECT_EQ(f.kind, Failure::Kind::kTerminal);
  EXPECT_EQ(f.response.status, 502);
  const nlohmann::json body = nlohmann::json::parse(f.response.body);
  EXPECT_EQ(body["provider"], "stripe_v1");
  EXPECT_EQ(body["code"], "charge_already_refunded");
}

TEST_F(RefundPhaseTest, AnAdapterWithoutRefundsIsRefusedWhenTheFlowIsBuilt) {
  const auto v2 = NewStripeV2Adapter();
  EXPECT_THROW(RefundWith(*v2, gateway_, FromCharge, kRefunded), std::invalid_argument);
}

TEST_F(RefundPhaseTest, AddRefundDeclaresTheCallTimeoutAndTheAdaptersRetention) {
  RefundOptions options;
  options.call_timeout = std::chrono::milliseconds(4000);
  auto noop = [](AtomicContext&) -> PhaseResult { return GoTo{kCharged}; };
  Flow::Builder builder("cancel_ride");
  builder.Atomic(kStarted, "load_ride", noop, {kCharged});
  AddRefund(builder, kCharged, "refund", *stripe_, gateway_, FromCharge, kFinished, options);
  auto flow = builder.Build();
  ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
  const Flow::Node* node = (*flow)->Find("charged");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->kind, Flow::PhaseKind::kForeign);
  EXPECT_EQ(node->timeout, std::chrono::milliseconds(4000));
  EXPECT_EQ(node->key_retention, std::chrono::hours(24));  // Stripe's
}

}  // namespace
}  // namespace phasekey::phases
