// ChargeWith and AddCharge (charge_phase.h) over a fake transport: the
// reconcile-before-charge rules that keep a charge single when the first
// outcome was unknown, and the lookup's consistency window that keeps a
// lagging lookup's "not found" from charging a keyless gateway twice. The
// engine's retention rule (SendPolicy::kLookUpFirst decided by the runner)
// is tested end to end in charge_phase_retention_test.cc.
#include "phasekey/phases/charge_phase.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "adapter_test_util.h"
#include "phasekey/phases/adapters.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers

constexpr RecoveryPoint kReady{"ready"};
constexpr RecoveryPoint kCharged{"charged"};

// A gateway in the OPPWA dialect: it remembers every debit by
// merchantTransactionId, and can be told to execute a debit but lose the
// answer (the outcome-unknown case).
class FakeOppwa : public HttpClient {
 public:
  enum class Mode { kAnswer, kExecuteThenDrop, kRefuseConnection, kQueryFails };
  // kQueryLags: the query lists no payment yet (a lookup inside its
  // consistency window).

  ProviderAnswer Send(std::string_view base_url, const ProviderRequest& r,
                      std::chrono::milliseconds timeout) const override {
    EXPECT_EQ(base_url, "http://127.0.0.1:9");
    EXPECT_GT(timeout.count(), 0);
    calls.push_back(r.method + " " + r.path.substr(0, r.path.find('?')));
    timeouts.push_back(timeout);
    if (mode == Mode::kRefuseConnection) return NotSent();
    if (r.method == "GET") {
      if (mode == Mode::kQueryFails) return Answer(500, "");
      if (r.path.starts_with("/v1/charges/search"))
        return Answer(200, {{"object", "search_result"}, {"data", nlohmann::json::array()}});
      nlohmann::json payments = nlohmann::json::array();
      for (const auto& [ref, id] : debits) {
        if (query_lags) break;
        if (r.path.find(PercentEncoded(ref)) != std::string::npos) payments.push_back(Payment(id, "000.000.000"));
      }
      return Answer(200, nlohmann::json{{"result", {{"code", "000.000.100"}}}, {"payments", payments}});
    }
    if (!r.path.starts_with("/v1/registrations/")) return Answer(503, "");  // another dialect
    const std::string id = "p" + std::to_string(debits.size() + 1);
    if (decline) return Answer(400, Payment(id, "800.100.153"));
    debits.emplace_back(Form(r.body).at("merchantTransactionId"), id);
    if (mode == Mode::kExecuteThenDrop) return SentNoAnswer();
    return Answer(200, Payment(id, "000.000.000"));
  }

  int Posts() const {
    int n = 0;
    for (const auto& c : calls) n += c.starts_with("POST");
    return n;
  }

  Mode mode = Mode::kAnswer;
  bool decline = false;
  bool query_lags = false;                                          // the query lists nothing yet (its index lags)
  mutable std::vector<std::pair<std::string, std::string>> debits;  // (reference, id)
  mutable std::vector<std::string> calls;
  mutable std::vector<std::chrono::milliseconds> timeouts;  // of each call, in order

 private:
  static nlohmann::json Payment(const std::string& id, const std::string& code) {
    return {{"id", id}, {"paymentType", "DB"}, {"result", {{"code", code}, {"description", "d"}}}};
  }
  static std::string PercentEncoded(const std::string& s) {
    std::string out;
    for (char c : s) out += c == ':' ? std::string("%3A") : std::string(1, c);
    return out;
  }
};

class ChargePhaseTest : public ::testing::Test {
 protected:
  ChargePhaseTest() {
    HyperPayOptions o;
    o.base_url = "http://127.0.0.1:9";
    o.entity_id = "entity";
    hyperpay_ = NewHyperPayAdapter(o);
    SquareOptions s;
    s.base_url = "http://127.0.0.1:9";
    square_ = NewSquareAdapter(s);
  }
  static PaymentIntent Intent(const PhaseContext&) { return {1050, "SAR", "reg-1", "", "Ride", "", ""}; }
  ForeignPhase Phase(const ProviderAdapter& adapter) { return ChargeWith(adapter, gateway_, Intent, kCharged); }

  FakeOppwa gateway_;
  std::unique_ptr<ProviderAdapter> hyperpay_;
  std::unique_ptr<ProviderAdapter> square_;
};

TEST_F(ChargePhaseTest, AFirstAttemptChargesWithoutLookingUp) {
  const PhaseResult r = Phase(*hyperpay_)(FakeContext(1, std::chrono::seconds(0)));
  ASSERT_TRUE(std::holds_alternative<GoTo>(r));
  const GoTo& go = std::get<GoTo>(r);
  EXPECT_EQ(go.next, kCharged);
  EXPECT_EQ(go.outcome["payment_id"], "p1");
  EXPECT_EQ(go.outcome["provider"], "hyperpay");
  EXPECT_EQ(go.outcome["reference"], kProviderKey);
  EXPECT_EQ(go.outcome["reconciled"], false);
  EXPECT_EQ(gateway_.calls, (std::vector<std::string>{"POST /v1/registrations/reg-1/payments"}));
}

TEST_F(ChargePhaseTest, AChargeWithoutALookupFirstHasThePhasesWholeBudget) {
  ChargeOptions options;
  options.call_timeout = std::chrono::milliseconds(3000);
  (void)ChargeWith(*hyperpay_, gateway_, Intent, kCharged, options)(FakeContext(1, std::chrono::seconds(0)));
  ASSERT_EQ(gateway_.timeouts.size(), 1u);
  EXPECT_GT(gateway_.timeouts[0], std::chrono::milliseconds(5000));  // of ChargePhaseTimeout's 6000
  EXPECT_LE(gateway_.timeouts[0], std::chrono::milliseconds(6000));
  // After a lookup (that finds nothing, past HyperPay's one-hour lookup
  // window), the lookup has its call_timeout and the charge what the lookup
  // left: here nearly all, as it answered at once.
  FakeOppwa empty;
  (void)ChargeWith(*hyperpay_, empty, Intent, kCharged, options)(FakeContext(2, std::chrono::hours(2)));
  ASSERT_EQ(empty.timeouts.size(), 2u);
  EXPECT_EQ(empty.timeouts[0], std::chrono::milliseconds(3000));
  EXPECT_GT(empty.timeouts[1], std::chrono::milliseconds(5000));
  EXPECT_LE(empty.timeouts[1], std::chrono::milliseconds(6000));
}

TEST_F(ChargePhaseTest, AnUnknownOutcomeThenAnInRequestRetryFindsThePaymentAndDoesNotChargeAgain) {
  ForeignPhase phase = Phase(*hyperpay_);
  const FakeContext ctx(1, std::chrono::seconds(0));
  gateway_.mode = FakeOppwa::Mode::kExecuteThenDrop;
  const PhaseResult first = phase(ctx);
  ASSERT_TRUE(std::holds_alternative<Failure>(first));
  EXPECT_EQ(std::get<Failure>(first).kind, Failure::Kind::kOutcomeUnknown);

  gateway_.mode = FakeOppwa::Mode::kAnswer;
  const PhaseResult second = phase(ctx);  // same holder: attempts() is still 1
  ASSERT_TRUE(std::holds_alternative<GoTo>(second));
  EXPECT_EQ(std::get<GoTo>(second).outcome["payment_id"], "p1");
  EXPECT_EQ(std::get<GoTo>(second).outcome["reconciled"], true);
  EXPECT_EQ(gateway_.Posts(), 1);
  EXPECT_EQ(gateway_.debits.size(), 1u);
}

TEST_F(ChargePhaseTest, ARerunByAnotherHolderFindsThePaymentAndDoesNotChargeAgain) {
  gateway_.mode = FakeOppwa::Mode::kExecuteThenDrop;
  (void)Phase (*hyperpay_)(FakeContext(1, std::chrono::seconds(0)));  // the process then dies
  gateway_.mode = FakeOppwa::Mode::kAnswer;
  const PhaseResult r = Phase(*hyperpay_)(FakeContext(2, std::chrono::seconds(90)));  // a new process
  ASSERT_TRUE(std::holds_alternative<GoTo>(r));
  EXPECT_EQ(std::get<GoTo>(r).outcome["payment_id"], "p1");
  EXPECT_EQ(gateway_.Posts(), 1);
  EXPECT_EQ(gateway_.calls.back(), "GET /v3/query");
}

TEST_F(ChargePhaseTest, ARerunPastTheLookupWindowThatFindsNothingChargesOnce) {
  const PhaseResult r = Phase(*hyperpay_)(FakeContext(2, std::chrono::hours(2)));
  ASSERT_TRUE(std::holds_alternative<GoTo>(r));
  EXPECT_EQ(std::get<GoTo>(r).outcome["reconciled"], false);
  EXPECT_EQ(gateway_.calls, (std::vector<std::string>{"GET /v3/query", "POST /v1/registrations/reg-1/payments"}));
  EXPECT_EQ(gateway_.debits.size(), 1u);
}

// The lookup's consistency window (AdapterInfo::lookup_window): inside it
// a "not found" may only mean the lookup does not see the charge yet.
TEST_F(ChargePhaseTest, EveryAdapterWithALookupDeclaresHowFarItsLookupMayLag) {
  StripeOptions stripe;
  MoyasarOptions moyasar;
  PayTabsOptions paytabs;
  AmazonPaymentServicesOptions aps;
  CheckoutComOptions checkout;
  const std::map<std::string, std::chrono::milliseconds> windows = {
      {"stripe_v1", NewStripeV1Adapter(stripe)->info().lookup_window},
      {"moyasar", NewMoyasarAdapter(moyasar)->info().lookup_window},
      {"hyperpay", hyperpay_->info().lookup_window},
      {"paytabs", NewPayTabsAdapter(paytabs)->info().lookup_window},
      {"amazon_payment_services", NewAmazonPaymentServicesAdapter(aps)->info().lookup_window},
      {"checkout_com", NewCheckoutComAdapter(checkout)->info().lookup_window}};
  const std::chrono::milliseconds hour = std::chrono::hours(1);
  EXPECT_EQ(windows.at("stripe_v1"), hour) << "Stripe's search: up to an hour behind during outages";
  EXPECT_EQ(windows.at("moyasar"), std::chrono::milliseconds(0)) << "a retrieve by id is read-after-write";
  for (const char* undocumented : {"hyperpay", "paytabs", "amazon_payment_services", "checkout_com"}) {
    EXPECT_EQ(windows.at(undocumented), hour) << undocumented << ": undocumented, so the safer reading";
  }
  stripe.lookup_window = std::chrono::milliseconds(2500);
  EXPECT_EQ(NewStripeV1Adapter(stripe)->info().lookup_window, std::chrono::milliseconds(2500)) << "the override";
}

TEST_F(ChargePhaseTest, ALaggingLookupNeverLeadsAKeylessGatewayToChargeAgain) {
  ForeignPhase phase = Phase(*hyperpay_);
  const FakeContext first(1, std::chrono::seconds(0));
  gateway_.mode = FakeOppwa::Mode::kExecuteThenDrop;
  const PhaseResult lost = phase(first);  // charged; the answer is lost
  ASSERT_TRUE(std::holds_alternative<Failure>(lost));
  EXPECT_EQ(std::get<Failure>(lost).kind, Failure::Kind::kOutcomeUnknown);

  // The in-request retry and a later holder, both well inside HyperPay's
  // one-hour window: the query does not list the debit yet.
  gateway_.mode = FakeOppwa::Mode::kAnswer;
  gateway_.query_lags = true;
  FakeContext later(2, std::chrono::minutes(20));
  for (const PhaseContext* ctx : {static_cast<const PhaseContext*>(&first), static_cast<const PhaseContext*>(&later)}) {
    const PhaseResult r = phase(*ctx);
    ASSERT_TRUE(std::holds_alternative<Failure>(r));
    EXPECT_EQ(std::get<Failure>(r).kind, Failure::Kind::kRetryable) << std::get<Failure>(r).reason;
    EXPECT_NE(std::get<Failure>(r).reason.find("may lag"), std::string::npos) << std::get<Failure>(r).reason;
  }
  EXPECT_EQ(gateway_.Posts(), 1) << "a not-found inside the window sent nothing";
  EXPECT_EQ(gateway_.debits.size(), 1u);

  // Once the query lists it, the phase finishes with the one debit.
  gateway_.query_lags = false;
  const PhaseResult found = phase(later);
  ASSERT_TRUE(std::holds_alternative<GoTo>(found));
  EXPECT_EQ(std::get<GoTo>(found).outcome["payment_id"], "p1");
  EXPECT_EQ(std::get<GoTo>(found).outcome["reconciled"], true);
  EXPECT_EQ(gateway_.Posts(), 1);
}

TEST_F(ChargePhaseTest, ANotFoundInsideTheWindowStillResendsWhereTheKeyMakesItSafe) {
  StripeOptions o;
  o.base_url = "http://127.0.0.1:9";
  const auto stripe = NewStripeV1Adapter(o);  // keys kept 24 h, every answer replayed; search lags up to 1 h
  const PhaseResult r = ChargeWith(*stripe, gateway_, Intent, kCharged)(FakeContext(2, std::chrono::minutes(5)));
  (void)r;  // the fake's answer to a Stripe charge does not matter: the point is what was sent
  EXPECT_EQ(gateway_.calls, (std::vector<std::string>{"GET /v1/charges/search", "POST /v1/charges"}));
}

TEST_F(ChargePhaseTest, LookUpOnlyInsideTheWindowLooksAgainInsteadOfGivingUp) {
  FakeContext ctx(3, std::chrono::hours(13));
  ctx.set_policy(SendPolicy::kLookUpOnly);
  ctx.set_first_attempt_age(std::chrono::minutes(30));  // the key waited long before this phase
  const PhaseResult r = Phase(*hyperpay_)(ctx);
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, Failure::Kind::kRetryable) << "not NotTaken: the payment may yet show up";
  EXPECT_EQ(gateway_.Posts(), 0);
}

TEST_F(ChargePhaseTest, AWindowOfZeroTrustsANotFoundAtOnce) {
  HyperPayOptions o;
  o.base_url = "http://127.0.0.1:9";
  o.entity_id = "entity";
  o.lookup_window = std::chrono::milliseconds(0);  // a gateway whose query is read-after-write
  const auto exact = NewHyperPayAdapter(o);
  const PhaseResult r = Phase(*exact)(FakeContext(2, std::chrono::seconds(0)));
  ASSERT_TRUE(std::holds_alternative<GoTo>(r));
  EXPECT_EQ(gateway_.calls, (std::vector<std::string>{"GET /v3/query", "POST /v1/registrations/reg-1/payments"}));
}

TEST_F(ChargePhaseTest, AFailedLookupRetriesWithoutCharging) {
  gateway_.mode = FakeOppwa::Mode::kQueryFails;
  const PhaseResult r = Phase(*hyperpay_)(FakeContext(2, std::chrono::seconds(90)));
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, Failure::Kind::kRetryable);
  EXPECT_EQ(gateway_.Posts(), 0);
}

TEST_F(ChargePhaseTest, ARequestThatNeverLeftIsRetriedAndNotReconciled) {
  ForeignPhase phase = Phase(*hyperpay_);
  const FakeContext ctx(1, std::chrono::seconds(0));
  gateway_.mode = FakeOppwa::Mode::kRefuseConnection;
  const PhaseResult first = phase(ctx);
  ASSERT_TRUE(std::holds_alternative<Failure>(first));
  EXPECT_EQ(std::get<Failure>(first).kind, Failure::Kind::kRetryable);
  gateway_.mode = FakeOppwa::Mode::kAnswer;
  gateway_.calls.clear();
  ASSERT_TRUE(std::holds_alternative<GoTo>(phase(ctx)));
  EXPECT_EQ(gateway_.calls, (std::vector<std::string>{"POST /v1/registrations/reg-1/payments"}));
}

TEST_F(ChargePhaseTest, ADeclineIsAStored402NamingTheProvider) {
  gateway_.decline = true;
  const PhaseResult r = Phase(*hyperpay_)(FakeContext(1, std::chrono::seconds(0)));
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  const Failure& f = std::get<Failure>(r);
  EXPECT_EQ(f.kind, Failure::Kind::kTerminal);
  EXPECT_EQ(f.response.status, 402);
  const nlohmann::json body = nlohmann::json::parse(f.response.body);
  EXPECT_EQ(body["provider"], "hyperpay");
  EXPECT_EQ(body["code"], "800.100.153");
}

TEST_F(ChargePhaseTest, AnInvalidIntentIsAStored500AndNothingIsSent) {
  ForeignPhase phase = ChargeWith(
      *hyperpay_, gateway_, [](const PhaseContext&) { return PaymentIntent{1, "XX", "r", "", "", "", ""}; }, kCharged);
  const PhaseResult r = phase(FakeContext(1, std::chrono::seconds(0)));
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).response.status, 500);
  EXPECT_TRUE(gateway_.calls.empty());
}

TEST_F(ChargePhaseTest, AKeyedProviderWithoutLookupResendsUnderTheKeyWhileItIsRemembered) {
  // Square's answer does not matter here: the point is that it is sent.
  const PhaseResult r = Phase(*square_)(FakeContext(2, std::chrono::hours(1)));
  EXPECT_FALSE(std::holds_alternative<GoTo>(r));
  EXPECT_EQ(gateway_.Posts(), 1);
}

// SendPolicy::kLookUpOnly (past give_up_after), set by hand here: the phase
// never sends, whatever it finds.
TEST_F(ChargePhaseTest, LookUpOnlyNeverChargesAndReportsNotTakenWhenTheProviderHasNothing) {
  FakeContext ctx(3, std::chrono::hours(13));
  ctx.set_policy(SendPolicy::kLookUpOnly);
  const PhaseResult r = Phase(*hyperpay_)(ctx);
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, Failure::Kind::kNotTaken);
  EXPECT_EQ(gateway_.Posts(), 0);
}

TEST_F(ChargePhaseTest, LookUpOnlyFinishesWithAPaymentItFinds) {
  gateway_.debits.emplace_back(kProviderKey, "p9");
  FakeContext ctx(3, std::chrono::hours(13));
  ctx.set_policy(SendPolicy::kLookUpOnly);
  const PhaseResult r = Phase(*hyperpay_)(ctx);
  ASSERT_TRUE(std::holds_alternative<GoTo>(r));
  EXPECT_EQ(std::get<GoTo>(r).outcome["payment_id"], "p9");
  EXPECT_EQ(gateway_.Posts(), 0);
}

TEST_F(ChargePhaseTest, LookUpOnlyRetriesWhenTheLookupFails) {
  gateway_.mode = FakeOppwa::Mode::kQueryFails;
  FakeContext ctx(3, std::chrono::hours(13));
  ctx.set_policy(SendPolicy::kLookUpOnly);
  const PhaseResult r = Phase(*hyperpay_)(ctx);
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, Failure::Kind::kRetryable);
  EXPECT_EQ(gateway_.Posts(), 0);
}

TEST_F(ChargePhaseTest, AnInconclusiveLookupStillResendsWhenTheKeyDeduplicates) {
  StripeOptions o;
  o.base_url = "http://127.0.0.1:9";
  const auto stripe = NewStripeV1Adapter(o);  // replays every answer under the key for 24 h
  gateway_.mode = FakeOppwa::Mode::kQueryFails;
  (void)Phase (*stripe)(FakeContext(2, std::chrono::seconds(90)));
  EXPECT_EQ(gateway_.calls, (std::vector<std::string>{"GET /v1/charges/search", "POST /v1/charges"}));
}

TEST_F(ChargePhaseTest, AnInconclusiveLookupNeverResendsWhereTheKeyKeepsOnlySuccesses) {
  CheckoutComOptions o;
  o.base_url = "http://127.0.0.1:9";
  const auto cko = NewCheckoutComAdapter(o);  // caches 2xx only: a resend after a 5xx runs again
  gateway_.mode = FakeOppwa::Mode::kQueryFails;
  const PhaseResult r = Phase(*cko)(FakeContext(2, std::chrono::seconds(90)));
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(std::get<Failure>(r).kind, Failure::Kind::kRetryable);
  EXPECT_EQ(gateway_.calls, (std::vector<std::string>{"GET /payments"}));
}

TEST_F(ChargePhaseTest, TheTerminalResponseCanBeReplaced) {
  gateway_.decline = true;
  ChargeOptions options;
  options.terminal_response = [](const ProviderAdapter&, const Classification& c) {
    return JsonResponse(402, {{"error", "Your card was declined."}, {"code", c.code}});
  };
  const PhaseResult r =
      ChargeWith(*hyperpay_, gateway_, Intent, kCharged, options)(FakeContext(1, std::chrono::seconds(0)));
  ASSERT_TRUE(std::holds_alternative<Failure>(r));
  EXPECT_EQ(nlohmann::json::parse(std::get<Failure>(r).response.body)["error"], "Your card was declined.");
}

TEST_F(ChargePhaseTest, AddChargeDeclaresTheTimeoutAndTheRetentionOfTheAdapter) {
  ChargeOptions options;
  options.call_timeout = std::chrono::milliseconds(3000);
  PayPalOptions p;
  p.base_url = "http://127.0.0.1:9";
  const auto paypal = NewPayPalAdapter(p);
  auto noop = [](AtomicContext&) -> PhaseResult { return GoTo{kReady}; };
  Flow::Builder builder("ride");
  builder.Atomic(kStarted, "create_ride", noop, {kReady});
  AddCharge(builder, kReady, "charge", *hyperpay_, gateway_, Intent, kCharged, options);
  builder.Foreign(kCharged, "second_charge", ChargeWith(*paypal, gateway_, Intent, kFinished, options), {kFinished},
                  ChargePhaseTimeout(*paypal, options), ChargePhaseRetention(*paypal));
  auto flow = builder.Build();
  ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
  const Flow::Node* node = (*flow)->Find("ready");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->kind, Flow::PhaseKind::kForeign);
  EXPECT_EQ(node->timeout, std::chrono::milliseconds(6000));          // lookup + charge
  EXPECT_EQ(node->key_retention, std::chrono::seconds::max());        // no key: always reconciles
  EXPECT_EQ((*flow)->ShortestKeyRetention(), std::chrono::hours(6));  // PayPal's
  EXPECT_EQ((*flow)->Find("charged")->timeout, std::chrono::milliseconds(3000));
}

}  // namespace
}  // namespace phasekey::phases
