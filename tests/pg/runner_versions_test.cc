// Deploying a changed flow while keys are in flight (issue 28), against a
// real PostgreSQL: a key at a point the running version neither has nor maps
// is left alone and never failed; Renamed and Retired points resume where
// the new version says; the failure cap never answers "failed" for a charge
// that may have happened; a phase cannot end the engine's transaction; a
// re-drive never creates a key. The flow is an order paid at a provider:
//
//   v1  started -(atomic place)-> placed -(foreign pay)-> paid -(atomic confirm)-> finished
//   v2  the same, with `paid` renamed `charged`
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <vector>

#include "phasekey/metrics.h"
#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "support/exposition.h"
#include "support/memory_provider.h"
#include "support/stderr_capture.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::MemoryProvider;
using testing::SampleOf;
using testing::TestDatabase;

constexpr RecoveryPoint kPlaced{"placed"};
constexpr RecoveryPoint kPaid{"paid"};
constexpr RecoveryPoint kCharged{"charged"};
const std::string kBody = R"({"amount": 1200})";

class RunnerVersionsTest : public ::testing::Test {
 protected:
  void SetUp() override { db_.Exec("CREATE TABLE orders (key text PRIMARY KEY, payment_id text)"); }

  // The order flow, its paid point called `paid_point`; `declare` adds the
  // older points of a later version.
  std::shared_ptr<const Flow> OrderFlow(RecoveryPoint paid_point,
                                        const std::function<void(Flow::Builder&)>& declare = nullptr) {
    auto place = [this](AtomicContext& ctx) -> PhaseResult {
      ctx.tx().exec_params0("INSERT INTO orders (key) VALUES ($1)", ctx.idempotency_key());
      if (end_tx_in_place == "commit") ctx.tx().commit();
      if (end_tx_in_place == "abort") ctx.tx().abort();
      return GoTo{kPlaced};
    };
    auto pay = [this, paid_point](const PhaseContext& ctx) -> PhaseResult {
      if (ctx.send_policy() != SendPolicy::kSend) {  // only with pay_looks_up
        policies_seen.push_back(ctx.send_policy());
        const std::string found = provider.Lookup(ctx.ProviderKey());
        if (!found.empty()) return GoTo{paid_point, {{"payment_id", found}, {"reconciled", true}}};
        return NotTaken("no payment under " + ctx.ProviderKey());
      }
      if (pay_throws_before_sending) throw std::runtime_error("the client library crashed before sending");
      const std::string id = provider.Charge(ctx.ProviderKey());
      if (pay_throws) throw std::runtime_error("the client library crashed after sending");
      return GoTo{paid_point, {{"payment_id", id}}};
    };
    auto confirm = [this, paid_point](AtomicContext& ctx) -> PhaseResult {
      if (confirm_retries) return Retry("confirm: not now");
      const std::string id = ctx.Outcome(paid_point)["payment_id"].get<std::string>();
      ctx.tx().exec_params0("UPDATE orders SET payment_id = $2 WHERE key = $1", ctx.idempotency_key(), id);
      return Respond{JsonResponse(201, {{"payment_id", id}})};
    };
    Flow::Builder b("order");
    b.Atomic(kStarted, "place_order", place, {kPlaced})
        .Foreign(kPlaced, "pay", pay, {paid_point},
                 Flow::ForeignOptions{milliseconds(2000), Flow::kDefaultKeyRetention, pay_looks_up})
        .Atomic(paid_point, "confirm", confirm, {kFinished});
    if (declare) declare(b);
    auto flow = b.Build();
    EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
    return *flow;
  }

  RunnerOptions Options() {
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 4;
    o.lease = milliseconds(10000);
    o.backoff_base = milliseconds(1);
    o.backoff_cap = milliseconds(2);
    o.redrive_delay = milliseconds(1);
    o.redrive_delay_cap = milliseconds(2);
    o.metrics = metrics;
    return o;
  }

  std::unique_ptr<Runner> Open(std::shared_ptr<const Flow> flow, RunnerOptions o) {
    auto r = Runner::Open(o, {std::move(flow)});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }
  std::unique_ptr<Runner> Open(std::shared_ptr<const Flow> flow) { return Open(std::move(flow), Options()); }

  Reply Order(Runner* runner, const std::string& key) {
    return runner->Execute("order", Request{"acct", key, "POST", "/orders", kBody});
  }

  // Leaves `key` paid under v1 and waiting at `paid` (its confirm phase
  // failed retryably), due at once.
  void PaidUnderV1(const std::string& key) {
    auto v1 = Open(OrderFlow(kPaid));
    confirm_retries = true;
    ASSERT_EQ(Order(v1.get(), key).kind, Reply::Kind::kRetryLater);
    confirm_retries = false;
    ASSERT_EQ(db_.Value("SELECT recovery_point FROM phasekey.idempotency_keys WHERE idempotency_key = '" + key + "'"),
              "paid");
    db_.Exec("UPDATE phasekey.idempotency_keys SET next_attempt_at = now()");
  }

  // The key row's columns that any touch would change.
  std::string Untouched(const std::string& key) {
    return db_.Value(
        "SELECT concat_ws(',', state, recovery_point, attempts, failures, owner_token, updated_at) "
        "FROM phasekey.idempotency_keys WHERE idempotency_key = '" +
        key + "'");
  }

  TestDatabase db_;
  MemoryProvider provider;
  std::shared_ptr<Metrics> metrics = Metrics::Create();
  bool confirm_retries = false, pay_throws = false, pay_throws_before_sending = false, pay_looks_up = false;
  std::vector<SendPolicy> policies_seen;  // by pay, other than kSend
  std::string end_tx_in_place;            // "commit" or "abort": the place phase ends the engine's transaction
};

TEST_F(RunnerVersionsTest, EveryKeyRemembersTheVersionOfTheGraphItWasClaimedUnder) {
  const auto v1 = OrderFlow(kPaid);
  auto runner = Open(v1);
  ASSERT_EQ(Order(runner.get(), "k-version").kind, Reply::Kind::kCompleted);
  EXPECT_EQ(db_.Value("SELECT flow_version FROM phasekey.idempotency_keys"), v1->version());
  EXPECT_NE(v1->version(), OrderFlow(kCharged)->version());
}

TEST_F(RunnerVersionsTest, AKeyAtAPointTheVersionDoesNotKnowIsLeftAloneAndNeverFailed) {
  PaidUnderV1("k-stranded");
  ASSERT_EQ(provider.payments(), 1u) << "the fault happened: v1 charged and left the key at 'paid'";
  RunnerOptions o = Options();
  o.max_attempts = 2;
  auto v2 = Open(OrderFlow(kCharged), o);  // renames paid to charged but does not say so
  const std::string before = Untouched("k-stranded");
  for (int i = 0; i < 5; ++i) {
    const Reply r = Order(v2.get(), "k-stranded");
    ASSERT_EQ(r.kind, Reply::Kind::kRetryLater) << r.detail;
    EXPECT_NE(r.detail.find("recovery point 'paid'"), std::string::npos) << r.detail;
    EXPECT_GT(r.retry_after_s, 0);
  }
  EXPECT_EQ(Untouched("k-stranded"), before) << "no lease taken, no failure counted, nothing written";
  EXPECT_EQ(SampleOf(metrics->Exposition(), R"(phasekey_stranded_answers_total{flow="order"})"), 5);

  RedriveOptions w;
  w.max_attempts = 1;
  auto worker = RedriveWorker::Open(v2.get(), w);
  ASSERT_TRUE(worker.has_value()) << worker.error().ToString();
  auto round = (*worker)->RunOnce();
  ASSERT_TRUE(round.has_value()) << round.error().ToString();
  EXPECT_EQ(round->claimed, 0u);
  EXPECT_EQ(round->stranded, 1u);
  EXPECT_EQ(round->dead_lettered + round->needs_operator, 0u);
  EXPECT_EQ(SampleOf(metrics->Exposition(), R"(phasekey_stranded_keys{flow="order",recovery_point="paid"})"), 1);
  EXPECT_EQ(Untouched("k-stranded"), before) << "the worker left it alone too";
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE response_status IS NOT NULL"), "0")
      << "no stored answer, least of all a 500";
  EXPECT_EQ(provider.posts(), 1) << "nothing sent again";

  // v1 comes back (a rolling deploy has both): it finishes the key.
  auto v1 = Open(OrderFlow(kPaid));
  const Reply done = Order(v1.get(), "k-stranded");
  ASSERT_EQ(done.kind, Reply::Kind::kCompleted) << done.detail;
  EXPECT_EQ(done.response.body, R"({"payment_id":"pay_1"})");
  EXPECT_EQ((*worker)->RunOnce()->stranded, 0u);
  EXPECT_EQ(SampleOf(metrics->Exposition(), R"(phasekey_stranded_keys{flow="order",recovery_point="paid"})"), 0)
      << "the gauge forgets a point with no key left";
}

TEST_F(RunnerVersionsTest, AStrandedKeyIsParkedForAnOperatorOnceItWaitedLongerThanStrandedAfter) {
  PaidUnderV1("k-client");
  PaidUnderV1("k-worker");
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET point_reached_at = now() - interval '2 hours', "
      "trace_parent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'");
  auto v2 = Open(OrderFlow(kCharged));  // stranded_after: 1 hour by default
  testing::StderrCapture log;
  const Reply r = Order(v2.get(), "k-client");
  ASSERT_EQ(r.kind, Reply::Kind::kNeedsOperator) << r.detail;
  EXPECT_NE(r.detail.find("stranded"), std::string::npos) << r.detail;
  auto worker = RedriveWorker::Open(v2.get(), {});
  ASSERT_TRUE(worker.has_value());
  auto round = (*worker)->RunOnce();
  ASSERT_TRUE(round.has_value()) << round.error().ToString();
  EXPECT_EQ(round->needs_operator, 1u);
  EXPECT_EQ(round->claimed, 0u);
  EXPECT_EQ(db_.Value("SELECT string_agg(state::text || ':' || recovery_point, ',' ORDER BY idempotency_key) "
                      "FROM phasekey.idempotency_keys"),
            "needs_operator:paid,needs_operator:paid");
  EXPECT_EQ(db_.Value("SELECT string_agg(error_class::text, ',') FROM phasekey.idempotency_keys"), "stranded,stranded")
      << "parked by the runner and by the re-drive worker alike";
  EXPECT_NE(db_.Value("SELECT last_error FROM phasekey.idempotency_keys WHERE idempotency_key = 'k-worker'")
                .find("stranded: waited at recovery point 'paid'"),
            std::string::npos);
  EXPECT_EQ(provider.posts(), 2) << "one charge each, nothing sent again";
  // Both parkings are logged with the key's trace id: the client's request
  // stopped one, the worker the other.
  const auto by_client = log.lines("key stopped");
  ASSERT_EQ(by_client.size(), 1u);
  EXPECT_EQ(by_client[0].value("trace_id", ""), "4bf92f3577b34da6a3ce929d0e0e4736") << by_client[0].dump();
  const auto by_worker = log.lines("stranded key parked for an operator");
  ASSERT_EQ(by_worker.size(), 1u);
  EXPECT_EQ(by_worker[0].value("trace_id", ""), "4bf92f3577b34da6a3ce929d0e0e4736") << by_worker[0].dump();
  EXPECT_EQ(by_worker[0].value("account", ""), "acct") << by_worker[0].dump();
}

TEST_F(RunnerVersionsTest, ARenamedPointResumesUnderItsNewNameWithItsOutcome) {
  PaidUnderV1("k-renamed");
  auto v2 = Open(OrderFlow(kCharged, [](Flow::Builder& b) { b.Renamed(kPaid, kCharged); }));
  const Reply r = Order(v2.get(), "k-renamed");
  ASSERT_EQ(r.kind, Reply::Kind::kCompleted) << r.detail;
  EXPECT_EQ(r.response.body, R"({"payment_id":"pay_1"})") << "the outcome recorded under 'paid' read as 'charged'";
  EXPECT_EQ(provider.posts(), 1) << "charged once, by v1";
  EXPECT_EQ(db_.Value("SELECT payment_id FROM orders"), "pay_1");
}

TEST_F(RunnerVersionsTest, ARetiredPointResumesWhereTheNewVersionSaysOrStopsForAnOperator) {
  PaidUnderV1("k-resumed");
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET recovery_point = 'placed_v0', outcomes = '{}' "
      "WHERE idempotency_key = 'k-resumed'");
  auto v2 = Open(OrderFlow(kPaid, [](Flow::Builder& b) {
    b.Retired(RecoveryPoint("placed_v0"), Retirement::ResumeAt(kPlaced))
        .Retired(RecoveryPoint("audited"), Retirement::StopForOperator());
  }));
  const Reply resumed = Order(v2.get(), "k-resumed");
  ASSERT_EQ(resumed.kind, Reply::Kind::kCompleted) << resumed.detail;
  EXPECT_EQ(provider.payments(), 1u) << "the same provider key: v1's payment, not a second one";

  PaidUnderV1("k-audited");
  db_.Exec("UPDATE phasekey.idempotency_keys SET recovery_point = 'audited' WHERE idempotency_key = 'k-audited'");
  const Reply parked = Order(v2.get(), "k-audited");
  ASSERT_EQ(parked.kind, Reply::Kind::kNeedsOperator) << parked.detail;
  EXPECT_NE(parked.detail.find("retired"), std::string::npos) << parked.detail;
  EXPECT_EQ(db_.Value("SELECT state || ' ' || error_class FROM phasekey.idempotency_keys WHERE idempotency_key = "
                      "'k-audited'"),
            "needs_operator retired_point");
}

TEST_F(RunnerVersionsTest, AForeignPhaseThatChargesThenThrowsIsParkedAtTheCapNeverAStored500) {
  RunnerOptions o = Options();
  o.max_attempts = 8;
  auto runner = Open(OrderFlow(kPaid), o);
  pay_throws = true;
  Reply last;
  for (int i = 0; i < o.max_attempts; ++i) last = Order(runner.get(), "k-throws");
  const int calls = o.max_attempts * o.attempts_per_request;  // a throw is retried inside the request too
  ASSERT_EQ(provider.posts(), calls) << "the fault happened: each attempt charged, then threw";
  ASSERT_EQ(provider.payments(), 1u) << "the provider key made them one payment";
  EXPECT_EQ(last.kind, Reply::Kind::kNeedsOperator) << last.detail;
  EXPECT_EQ(db_.Value("SELECT state || ',' || coalesce(response_status::text, 'none') FROM phasekey.idempotency_keys"),
            "needs_operator,none");
  EXPECT_NE(db_.Value("SELECT last_error FROM phasekey.idempotency_keys").find("gave up after 8 unclassified"),
            std::string::npos);
  pay_throws = false;
  EXPECT_EQ(Order(runner.get(), "k-throws").kind, Reply::Kind::kNeedsOperator) << "never answered as failed";
  EXPECT_EQ(provider.posts(), calls) << "and never charged again by itself";
}

TEST_F(RunnerVersionsTest, AtTheCapAPhaseThatCanLookUpFindsTheChargeItMadeAndTheFlowFinishesWithIt) {
  pay_looks_up = true;
  RunnerOptions o = Options();
  o.max_attempts = 8;
  auto runner = Open(OrderFlow(kPaid), o);
  pay_throws = true;
  Reply last;
  for (int i = 0; i < o.max_attempts; ++i) last = Order(runner.get(), "k-reconciled");
  ASSERT_EQ(provider.posts(), o.max_attempts * o.attempts_per_request) << "the fault happened on every attempt";
  ASSERT_EQ(policies_seen, std::vector<SendPolicy>{SendPolicy::kLookUpOnly}) << "one lookup, at the cap, nothing sent";
  ASSERT_EQ(last.kind, Reply::Kind::kCompleted) << last.detail;
  EXPECT_EQ(last.response.body, R"({"payment_id":"pay_1"})") << "the real outcome, not a 500";
  EXPECT_EQ(db_.Value("SELECT payment_id FROM orders"), "pay_1");
  EXPECT_EQ(provider.payments(), 1u);
}

TEST_F(RunnerVersionsTest, AtTheCapALookupThatFindsNothingGivesTheKeyUpWithNothingOwed) {
  pay_looks_up = true;
  RunnerOptions o = Options();
  o.max_attempts = 3;
  auto runner = Open(OrderFlow(kPaid), o);
  pay_throws_before_sending = true;
  Reply last;
  for (int i = 0; i < o.max_attempts; ++i) last = Order(runner.get(), "k-not-taken");
  EXPECT_EQ(policies_seen, std::vector<SendPolicy>{SendPolicy::kLookUpOnly});
  ASSERT_EQ(last.kind, Reply::Kind::kDeadLettered) << last.detail;
  EXPECT_NE(last.detail.find("at the failure cap"), std::string::npos) << last.detail;
  EXPECT_EQ(db_.Value("SELECT state || ',' || coalesce(response_status::text, 'none') || ',' || error_class FROM "
                      "phasekey.idempotency_keys"),
            "dead,none,not_taken");
  EXPECT_EQ(provider.posts(), 0);
}

TEST_F(RunnerVersionsTest, AFirstPhaseThatCommitsOrAbortsTheEnginesTransactionFailsCleanly) {
  auto runner = Open(OrderFlow(kPaid));
  for (const std::string how : {"commit", "abort"}) {
    end_tx_in_place = how;
    for (int i = 0; i < 2; ++i) {
      const Reply r = Order(runner.get(), "k-" + how);
      EXPECT_EQ(r.kind, Reply::Kind::kInternalError) << how << ": " << r.detail;
      EXPECT_NE(r.detail.find("committed or aborted the engine's transaction"), std::string::npos) << r.detail;
    }
  }
  EXPECT_EQ(provider.posts(), 0) << "nothing charged";
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys"), "0") << "no key row, first or second";
  EXPECT_EQ(db_.Value("SELECT count(*) FROM orders"), "0") << "nothing of the phase kept";
  end_tx_in_place.clear();
  const Reply ok = Order(runner.get(), "k-commit");
  ASSERT_EQ(ok.kind, Reply::Kind::kCompleted) << ok.detail << " (the connection went back clean)";
  EXPECT_EQ(provider.posts(), 1);
}

TEST_F(RunnerVersionsTest, AReDriveNeverCreatesAKeyThatNoLongerExists) {
  auto runner = Open(OrderFlow(kPaid));
  ClaimedKey gone;
  gone.bucket = AccountBucket("acct", runner->options().buckets);
  gone.account = "acct";
  gone.idempotency_key = "k-vanished";
  gone.flow = "order";
  gone.method = "POST";
  gone.path = "/orders";
  gone.owner_token = "8f0e6c1e-0000-4000-8000-000000000001";
  const Reply r = runner->Resume(gone);
  EXPECT_EQ(r.kind, Reply::Kind::kInternalError) << r.detail;
  EXPECT_NE(r.detail.find("no longer exists"), std::string::npos) << r.detail;
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys"), "0");
  EXPECT_EQ(provider.posts(), 0);
}

TEST(RunnerOpenVersionsTest, RefusesACallDeadlineThatTheLeaseMarginDoesNotCover) {
  RunnerOptions o;
  o.database.url = "postgresql://unused@127.0.0.1:1/none";
  o.lease_margin = milliseconds(1000);
  o.database.call_deadline = milliseconds(1000);
  auto flow =
      Flow::Builder("noop")
          .Atomic(kStarted, "noop", [](AtomicContext&) -> PhaseResult { return Respond{Response{}}; }, {kFinished})
          .Build();
  ASSERT_TRUE(flow.has_value());
  auto r = Runner::Open(o, {*flow});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("call_deadline (1000 ms) must be below lease_margin (1000 ms)"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(r.error().message().find('\n'), std::string::npos) << "one line";
}

}  // namespace
}  // namespace phasekey
