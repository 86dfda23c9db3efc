// The charge phase under the engine's retention rule, end to end without a
// database: a real runner (RunnerImpl over the in-memory key store) decides
// SendPolicy from the key row's age and the retention AddCharge declares,
// and ChargeWith acts on it over a fake Stripe or Square. Each key here was
// left at the charge 25 hours ago by a holder whose charge may have gone
// through: past the provider's 24 h key memory (minus the engine's 1 h
// margin), inside a give_up_after of 48 h, so only the retention rule is at
// stake. Every test checks that the phase ran under kLookUpFirst because of
// that rule (or, without a lookup, that the key was parked for it), not
// only that nothing was charged twice: with the rule off (the runner never
// answering kLookUpFirst) each of them fails.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "adapter_test_util.h"
#include "phasekey/fingerprint.h"
#include "phasekey/phases/adapters.h"
#include "phasekey/phases/charge_phase.h"
#include "runner/runner_impl.h"
#include "support/memory_key_store.h"

namespace phasekey::phases {
namespace {

using namespace phasekey::phases::testing;  // NOLINT: test helpers
using phasekey::testing::MemoryKeyStore;
using std::chrono::hours;
using std::chrono::milliseconds;

constexpr RecoveryPoint kReady{"ready"};
constexpr RecoveryPoint kCharged{"charged"};
constexpr char kAccount[] = "user_7";
constexpr char kBody[] = R"({"amount":1050})";

// Stripe's charges and search, or Square's payments, as far as the phase
// needs them: every call is recorded; the search fails, finds nothing, or
// finds `found_id`.
class FakeGateway : public HttpClient {
 public:
  enum class Search { kFails, kFindsNothing, kFinds };

  ProviderAnswer Send(std::string_view, const ProviderRequest& r, std::chrono::milliseconds) const override {
    std::lock_guard lock(mu_);
    calls_.push_back(r.method + " " + r.path.substr(0, r.path.find('?')));
    if (r.method == "GET") {
      if (search == Search::kFails) return Answer(500, nlohmann::json{{"error", {{"type", "api_error"}}}});
      nlohmann::json data = nlohmann::json::array();
      if (search == Search::kFinds) data.push_back({{"id", found_id}, {"object", "charge"}, {"status", "succeeded"}});
      return Answer(200, {{"object", "search_result"}, {"data", data}});
    }
    return Answer(200, {{"id", "ch_new"},
                        {"object", "charge"},
                        {"status", "succeeded"},
                        {"payment", {{"id", "sq_new"}, {"status", "COMPLETED"}}}});
  }

  std::vector<std::string> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }
  int Posts() const {
    int n = 0;
    for (const auto& c : calls()) n += c.starts_with("POST");
    return n;
  }

  Search search = Search::kFinds;
  std::string found_id = "ch_first";

 private:
  mutable std::mutex mu_;
  mutable std::vector<std::string> calls_;
};

class ChargeUnderTheRetentionRuleTest : public ::testing::Test {
 protected:
  ChargeUnderTheRetentionRuleTest() {
    StripeOptions s;
    s.base_url = "http://127.0.0.1:9";
    stripe_ = NewStripeV1Adapter(s);  // keys 24 h, search by the reference
    SquareOptions q;
    q.base_url = "http://127.0.0.1:9";
    square_ = NewSquareAdapter(q);  // keys 24 h, no lookup
  }

  // A runner over one flow: create (atomic) -> charge through `adapter`,
  // declared as AddCharge declares it -> respond 201 with the payment.
  void Open(const ProviderAdapter& adapter) {
    auto intent = [](const PhaseContext&) { return PaymentIntent{1050, "usd", "cus_7", "card_7", "Ride", "", ""}; };
    ForeignPhase charge = ChargeWith(adapter, gateway_, intent, kCharged);
    // The phase as declared, plus a record of the policy each run saw.
    ForeignPhase observed = [this, charge](const PhaseContext& ctx) {
      {
        std::lock_guard lock(mu_);
        policies_.push_back(ctx.send_policy());
      }
      return charge(ctx);
    };
    const Flow::ForeignOptions declared{ChargePhaseTimeout(adapter, {}), ChargePhaseRetention(adapter),
                                        adapter.info().has_lookup};
    auto flow =
        Flow::Builder("ride")
            .Atomic(kStarted, "create_ride", [](AtomicContext&) -> PhaseResult { return GoTo{kReady}; }, {kReady})
            .Foreign(kReady, "charge", observed, {kCharged}, declared)
            .Atomic(kCharged, "respond",
                    [](AtomicContext& ctx) -> PhaseResult { return Respond{JsonResponse(201, ctx.Outcome(kCharged))}; },
                    {kFinished})
            .Build();
    ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
    RunnerOptions o;
    o.backoff_base = milliseconds(1);
    o.backoff_cap = milliseconds(2);
    o.give_up_after = hours(48);  // only the provider's memory is at stake here
    auto keys = std::make_unique<MemoryKeyStore>();
    keys_ = keys.get();
    runner_ = std::make_unique<runner::RunnerImpl>(
        o, std::map<std::string, std::shared_ptr<const Flow>>{{"ride", *flow}}, std::move(keys));
  }

  // The key an earlier holder left at the charge 25 hours ago, its charge
  // perhaps made (the answer lost with the holder).
  void LeftAtTheCharge25HoursAgo(const std::string& key) {
    auto fp = FingerprintJson(kBody);
    MemoryKeyStore::Row row;
    row.account = kAccount;
    row.idempotency_key = key;
    row.flow = "ride";
    row.method = "POST";
    row.path = "/rides";
    row.canonical_body = fp->canonical;
    row.fingerprint_hex = fp->sha256_hex;
    row.recovery_point = "ready";
    row.created_at = row.point_reached_at = keys_->Now() - hours(25);
    keys_->Put(row);
  }

  Reply Post(const std::string& key) {
    return runner_->Execute("ride", Request{kAccount, key, "POST", "/rides", kBody});
  }

  // The policies the charge phase ran under, in order.
  std::vector<SendPolicy> Policies() {
    std::lock_guard lock(mu_);
    return policies_;
  }

  FakeGateway gateway_;
  std::unique_ptr<ProviderAdapter> stripe_, square_;
  MemoryKeyStore* keys_ = nullptr;  // owned by runner_
  std::unique_ptr<runner::RunnerImpl> runner_;
  std::mutex mu_;
  std::vector<SendPolicy> policies_;  // GUARDED_BY(mu_)
};

TEST_F(ChargeUnderTheRetentionRuleTest, PastTheProvidersMemoryTheRetryLooksUpFirstAndFinishesWithTheEarlierCharge) {
  Open(*stripe_);
  LeftAtTheCharge25HoursAgo("k-found");
  const Reply r = Post("k-found");
  ASSERT_EQ(r.kind, Reply::Kind::kCompleted) << r.detail;
  EXPECT_EQ(nlohmann::json::parse(r.response.body)["payment_id"], "ch_first");
  EXPECT_EQ(nlohmann::json::parse(r.response.body)["reconciled"], true);
  EXPECT_EQ(gateway_.Posts(), 0);
  EXPECT_EQ(Policies(), std::vector<SendPolicy>{SendPolicy::kLookUpFirst}) << "the engine's retention rule decided";
}

TEST_F(ChargeUnderTheRetentionRuleTest, PastTheProvidersMemoryAFailingLookupNeverLeadsToAResendUnderAForgottenKey) {
  Open(*stripe_);
  gateway_.search = FakeGateway::Search::kFails;
  LeftAtTheCharge25HoursAgo("k-inconclusive");
  const Reply r = Post("k-inconclusive");
  EXPECT_EQ(r.kind, Reply::Kind::kRetryLater) << r.detail;
  // Under kSend the key would make the resend safe, so the phase would
  // charge: only the rule keeps a forgotten key from charging again.
  EXPECT_EQ(gateway_.Posts(), 0) << "resent under a key the provider may have forgotten";
  ASSERT_FALSE(Policies().empty());
  for (SendPolicy p : Policies()) EXPECT_EQ(p, SendPolicy::kLookUpFirst);
}

TEST_F(ChargeUnderTheRetentionRuleTest, PastTheProvidersMemoryAChargeTheLookupCannotFindIsMadeOnce) {
  Open(*stripe_);
  gateway_.search = FakeGateway::Search::kFindsNothing;  // the earlier holder died before sending
  LeftAtTheCharge25HoursAgo("k-never-sent");
  const Reply r = Post("k-never-sent");
  ASSERT_EQ(r.kind, Reply::Kind::kCompleted) << r.detail;
  EXPECT_EQ(gateway_.calls(), (std::vector<std::string>{"GET /v1/charges/search", "POST /v1/charges"}));
  EXPECT_EQ(Policies(), std::vector<SendPolicy>{SendPolicy::kLookUpFirst});
}

TEST_F(ChargeUnderTheRetentionRuleTest, PastTheProvidersMemoryAKeyWhosePhaseCannotLookUpIsParkedForThatReason) {
  Open(*square_);
  LeftAtTheCharge25HoursAgo("k-square");
  const Reply r = Post("k-square");
  ASSERT_EQ(r.kind, Reply::Kind::kNeedsOperator) << r.detail;
  EXPECT_TRUE(gateway_.calls().empty()) << "nothing sent to a provider that may have forgotten the key";
  EXPECT_TRUE(Policies().empty()) << "the engine parked the key before running the phase";
  const auto row = keys_->Find(kAccount, "k-square");
  ASSERT_TRUE(row.has_value());
  ASSERT_TRUE(row->last_error.has_value());
  EXPECT_NE(row->last_error->find("must look up first"), std::string::npos)
      << "parked by the retention rule, not for another reason: " << *row->last_error;
}

}  // namespace
}  // namespace phasekey::phases
