// The edges of exactly-once (issue 15), against a real PostgreSQL: a
// provider that forgets its keys, an outcome that must survive every exit,
// the deployment's bucket count, and leases measured from when they are
// granted. The flow is an order paid at a provider:
//
//   started --(atomic place_order)--> placed --(foreign pay)--> paid
//           --(atomic confirm)--> finished
//
// MemoryProvider plays a keyed payment API: it replays a key's first answer
// while it remembers the key, forgets keys on request (its retention
// passing), and can look a payment up by the provider key for ever.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <pqxx/pqxx>
#include <thread>
#include <vector>

#include "admin/key_admin.h"
#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "support/memory_provider.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::MemoryProvider;
using testing::TestDatabase;

constexpr RecoveryPoint kPlaced{"placed"};
constexpr RecoveryPoint kPaid{"paid"};
const std::string kBody = R"({"amount": 1200})";

// The foreign phase: honours SendPolicy when it can look up.
PhaseResult Pay(MemoryProvider* provider, const PhaseContext& ctx) {
  const std::string key = ctx.ProviderKey();
  if (ctx.send_policy() != SendPolicy::kSend) {
    if (std::string found = provider->Lookup(key); !found.empty()) {
      return GoTo{kPaid, {{"payment_id", found}, {"reconciled", true}}};
    }
    if (ctx.send_policy() == SendPolicy::kLookUpOnly) return NotTaken("no payment under " + key);
  }
  return GoTo{kPaid, {{"payment_id", provider->Charge(key)}, {"reconciled", false}}};
}

class RunnerEdgesTest : public ::testing::Test {
 protected:
  void SetUp() override { db_.Exec("CREATE TABLE orders (key text PRIMARY KEY, payment_id text)"); }

  // The order flow; `looks_up`: whether its pay phase declares a lookup.
  std::shared_ptr<const Flow> OrderFlow(bool looks_up) {
    auto place = [this](AtomicContext& ctx) -> PhaseResult {
      if (in_place) in_place(ctx);
      ctx.tx().exec_params0("INSERT INTO orders (key) VALUES ($1)", ctx.idempotency_key());
      return GoTo{kPlaced};
    };
    auto pay = [this](const PhaseContext& ctx) -> PhaseResult {
      if (before_pay) before_pay(ctx);
      if (fail_pay.load() > 0) {
        --fail_pay;
        return Retry("provider down");
      }
      return Pay(&provider, ctx);
    };
    auto confirm = [this](AtomicContext& ctx) -> PhaseResult {
      if (fail_confirm.load() > 0) {
        --fail_confirm;
        return Retry("confirm: database busy");
      }
      const std::string id = ctx.Outcome(kPaid)["payment_id"].get<std::string>();
      ctx.tx().exec_params0("UPDATE orders SET payment_id = $2 WHERE key = $1", ctx.idempotency_key(), id);
      return Respond{JsonResponse(201, {{"payment_id", id}})};
    };
    Flow::ForeignOptions pay_options;
    pay_options.timeout = milliseconds(2000);
    pay_options.looks_up = looks_up;
    auto flow = Flow::Builder("order")
                    .Atomic(kStarted, "place_order", place, {kPlaced})
                    .Foreign(kPlaced, "pay", pay, {kPaid}, pay_options)
                    .Atomic(kPaid, "confirm", confirm, {kFinished})
                    .Build();
    EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
    return *flow;
  }

  RunnerOptions Options() {
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 4;
    o.lease = milliseconds(10000);
    o.lease_margin = milliseconds(1000);
    o.database.call_deadline = milliseconds(900);  // below the margin (Runner::Open checks)
    o.backoff_base = milliseconds(1);
    o.backoff_cap = milliseconds(2);
    o.redrive_delay = milliseconds(1);
    o.metrics = metrics;
    return o;
  }

  std::unique_ptr<Runner> Open(bool looks_up, RunnerOptions o) {
    auto r = Runner::Open(o, {OrderFlow(looks_up)});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }
  std::unique_ptr<Runner> Open(bool looks_up) { return Open(looks_up, Options()); }

  Reply Order(Runner* runner, const std::string& key) {
    return runner->Execute("order", Request{"acct", key, "POST", "/orders", kBody});
  }

  // Leaves `key` paid at the provider but unrecorded, as after a crash
  // between the charge and its record, and then 25 hours old: the provider
  // has forgotten the key.
  void PaidButUnrecordedAndForgotten(Runner* runner, const std::string& key) {
    before_pay = [this](const PhaseContext& ctx) {
      provider.Charge(ctx.ProviderKey());  // the charge happens; its answer is lost
      before_pay = nullptr;
      fail_pay = 1000;
    };
    ASSERT_EQ(Order(runner, key).kind, Reply::Kind::kRetryLater);
    fail_pay = 0;
    ASSERT_EQ(provider.payments(), 1u) << "the fault happened: a payment the key does not know";
    ASSERT_EQ(db_.Value("SELECT recovery_point FROM phasekey.idempotency_keys"), "placed");
    db_.Exec(
        "UPDATE phasekey.idempotency_keys SET created_at = created_at - interval '25 hours', "
        "point_reached_at = point_reached_at - interval '25 hours', next_attempt_at = now()");
    provider.ForgetKeys();
  }

  TestDatabase db_;
  MemoryProvider provider;
  std::shared_ptr<Metrics> metrics = Metrics::Create();
  std::atomic<int> fail_pay{0}, fail_confirm{0};
  std::function<void(const PhaseContext&)> before_pay;
  std::function<void(AtomicContext&)> in_place;  // runs first in place_order
};

// --- The provider's memory bounds every path -------------------------------

TEST_F(RunnerEdgesTest, AClientRetryPastTheProvidersMemoryLooksUpAndDoesNotChargeTwice) {
  RunnerOptions o = Options();
  o.give_up_after = std::chrono::hours(48);  // only the provider's memory is at stake here
  auto runner = Open(/*looks_up=*/true, o);
  PaidButUnrecordedAndForgotten(runner.get(), "k-retry");
  const Reply r = Order(runner.get(), "k-retry");
  ASSERT_EQ(r.kind, Reply::Kind::kCompleted) << r.detail;
  EXPECT_EQ(r.response.status, 201);
  EXPECT_EQ(provider.payments(), 1u) << "charged once";
  EXPECT_EQ(provider.lookups(), 1);
  EXPECT_EQ(db_.Value("SELECT outcomes->'paid'->>'reconciled' FROM phasekey.idempotency_keys"), "true");
}

TEST_F(RunnerEdgesTest, AClientRetryPastTheProvidersMemoryParksAKeyWhosePhaseCannotLookUp) {
  RunnerOptions o = Options();
  o.give_up_after = std::chrono::hours(48);
  auto runner = Open(/*looks_up=*/false, o);
  PaidButUnrecordedAndForgotten(runner.get(), "k-park");
  const int posts = provider.posts();
  const Reply r = Order(runner.get(), "k-park");
  ASSERT_EQ(r.kind, Reply::Kind::kNeedsOperator) << r.detail;
  EXPECT_EQ(provider.posts(), posts) << "nothing sent to a provider that forgot the key";
  EXPECT_EQ(provider.payments(), 1u);
  EXPECT_EQ(db_.Value("SELECT state FROM phasekey.idempotency_keys"), "needs_operator");
  EXPECT_NE(metrics->Exposition().find("phasekey_keys_stopped_total{flow=\"order\",state=\"needs_operator\"} 1"),
            std::string::npos)
      << metrics->Exposition();
  EXPECT_EQ(Order(runner.get(), "k-park").kind, Reply::Kind::kNeedsOperator) << "every later retry hears the same";
}

TEST_F(RunnerEdgesTest, TheReDriveWorkerHonoursTheProvidersMemoryToo) {
  RunnerOptions o = Options();
  o.give_up_after = std::chrono::hours(48);  // only the provider's memory is at stake here
  auto runner = Open(/*looks_up=*/true, o);
  PaidButUnrecordedAndForgotten(runner.get(), "k-worker");
  std::mutex mu;
  std::vector<SendPolicy> policies;  // what the worker's run of the pay phase was allowed
  before_pay = [&](const PhaseContext& ctx) {
    std::lock_guard lock(mu);
    policies.push_back(ctx.send_policy());
  };
  auto worker = RedriveWorker::Open(runner.get(), RedriveOptions{});
  ASSERT_TRUE(worker.has_value()) << worker.error().ToString();
  auto round = (*worker)->RunOnce();
  ASSERT_TRUE(round.has_value()) << round.error().ToString();
  EXPECT_EQ(round->finished, 1u) << "found by the lookup, so the order is completed with it";
  std::lock_guard lock(mu);
  // The worker's run looked up because the retention rule said the provider
  // may have forgotten the key (under kSend the phase would have charged).
  EXPECT_EQ(policies, std::vector<SendPolicy>{SendPolicy::kLookUpFirst});
  EXPECT_EQ(provider.lookups(), 1);
  EXPECT_EQ(provider.payments(), 1u);
  EXPECT_EQ(db_.Value("SELECT payment_id FROM orders"), "pay_1");
  EXPECT_EQ(db_.Value("SELECT outcomes->'paid'->>'reconciled' FROM phasekey.idempotency_keys"), "true");
}

TEST_F(RunnerEdgesTest, PastGiveUpAfterAKeyWhosePaymentNeverHappenedIsGivenUpWithoutCharging) {
  auto runner = Open(/*looks_up=*/true);
  fail_pay = 1000;
  ASSERT_EQ(Order(runner.get(), "k-never").kind, Reply::Kind::kRetryLater);
  fail_pay = 0;
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET created_at = created_at - interval '13 hours', next_attempt_at = now()");
  const Reply r = Order(runner.get(), "k-never");
  EXPECT_EQ(r.kind, Reply::Kind::kDeadLettered) << r.detail;
  EXPECT_EQ(provider.posts(), 0) << "looked up only, never sent";
  EXPECT_EQ(provider.lookups(), 1);
  EXPECT_EQ(db_.Value("SELECT state FROM phasekey.idempotency_keys"), "dead");
}

TEST_F(RunnerEdgesTest, AnOperatorRetryOfADeadKeyStillHonoursTheProvidersMemory) {
  auto runner = Open(/*looks_up=*/false);
  PaidButUnrecordedAndForgotten(runner.get(), "k-operator");
  db_.Exec("UPDATE phasekey.idempotency_keys SET state = 'dead'");  // given up earlier
  auto point = admin::AdminKeyRetry(db_.url(), 0, "acct", "k-operator", false, admin::Actor{"test"});
  ASSERT_TRUE(point.has_value()) << point.error().ToString();
  const int posts = provider.posts();
  EXPECT_EQ(Order(runner.get(), "k-operator").kind, Reply::Kind::kNeedsOperator);
  EXPECT_EQ(provider.posts(), posts) << "the operator's retry did not make the key a new request";
  EXPECT_EQ(provider.payments(), 1u);
}

// --- Outcomes are durable ---------------------------------------------------

TEST_F(RunnerEdgesTest, APaymentIsRecordedWhenTheNextPhaseFailsAndIsNotMadeAgain) {
  auto runner = Open(/*looks_up=*/false);
  fail_confirm = 1000;
  const Reply first = Order(runner.get(), "k-durable");
  ASSERT_EQ(first.kind, Reply::Kind::kRetryLater) << first.detail;
  EXPECT_EQ(provider.posts(), 1);
  EXPECT_EQ(db_.Value("SELECT recovery_point FROM phasekey.idempotency_keys"), "paid");
  EXPECT_EQ(db_.Value("SELECT outcomes->'paid'->>'payment_id' FROM phasekey.idempotency_keys"), "pay_1");
  provider.ForgetKeys();  // nothing now depends on the provider's memory
  fail_confirm = 0;
  const Reply second = Order(runner.get(), "k-durable");
  ASSERT_EQ(second.kind, Reply::Kind::kCompleted) << second.detail;
  EXPECT_EQ(provider.posts(), 1) << "the recorded payment was used, not made again";
  EXPECT_EQ(db_.Value("SELECT payment_id FROM orders"), "pay_1");
}

TEST_F(RunnerEdgesTest, APaymentIsRecordedWhenItsKeyIsFinishedForRepeatedBugs) {
  RunnerOptions o = Options();
  o.max_attempts = 1;
  auto runner = Open(/*looks_up=*/false, o);
  fail_confirm = 0;
  auto flow_with_bug = runner->flows();
  // confirm throws: an unclassified failure, past the cap at once.
  db_.Exec("CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'bug'; END $$");
  db_.Exec("CREATE TRIGGER boom BEFORE UPDATE ON orders FOR EACH ROW EXECUTE FUNCTION boom()");
  const Reply r = Order(runner.get(), "k-bug");
  EXPECT_EQ(provider.posts(), 1);
  EXPECT_EQ(db_.Value("SELECT outcomes->'paid'->>'payment_id' FROM phasekey.idempotency_keys"), "pay_1")
      << "reply " << static_cast<int>(r.kind) << ": " << r.detail;
}

// --- The bucket count lives in the database ---------------------------------

TEST_F(RunnerEdgesTest, AProcessWithAnotherBucketCountRefusesToStart) {
  auto runner = Open(/*looks_up=*/false);
  EXPECT_EQ(runner->options().buckets, 16) << "the first process records the default";
  EXPECT_EQ(db_.Value("SELECT buckets FROM phasekey.deployment"), "16");
  RunnerOptions o = Options();
  o.buckets = 32;
  auto other = Runner::Open(o, {OrderFlow(false)});
  ASSERT_FALSE(other.has_value());
  EXPECT_EQ(other.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.error().message().find("set up with 16"), std::string::npos) << other.error().message();
  EXPECT_EQ(other.error().message().find('\n'), std::string::npos) << "one line";
  ReaperOptions ro;
  ro.buckets = 32;
  auto reaper = Reaper::Open(o.database, ro);
  ASSERT_FALSE(reaper.has_value());
  EXPECT_EQ(reaper.error().code(), StatusCode::kFailedPrecondition);
  auto reaper_default = Reaper::Open(o.database, ReaperOptions{});
  EXPECT_TRUE(reaper_default.has_value()) << "0 takes the stored count";
}

TEST_F(RunnerEdgesTest, AResumeUsesTheStoredBucketAndNeverMakesASecondRow) {
  auto runner = Open(/*looks_up=*/false);
  fail_pay = 1000;
  ASSERT_EQ(Order(runner.get(), "k-bucket").kind, Reply::Kind::kRetryLater);
  fail_pay = 0;
  // A row written under another bucket count (as before the count was
  // stored): the worker finds it in its stored bucket.
  const int home = AccountBucket("acct", 16);
  const int other = (home + 1) % 16;
  db_.Exec("UPDATE phasekey.idempotency_keys SET bucket = " + std::to_string(other) + ", next_attempt_at = now()");
  auto worker = RedriveWorker::Open(runner.get(), RedriveOptions{});
  ASSERT_TRUE(worker.has_value());
  auto round = (*worker)->RunOnce();
  ASSERT_TRUE(round.has_value());
  EXPECT_EQ(round->finished, 1u);
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys"), "1") << "no second row, no second key";
  EXPECT_EQ(db_.Value("SELECT state FROM phasekey.idempotency_keys"), "finished");
  EXPECT_EQ(provider.payments(), 1u);
}

// --- Leases --------------------------------------------------------------

// How much of the holder's lease is left, read from another connection.
double LeaseLeft(const TestDatabase& db) {
  return std::stod(
      db.Value("SELECT extract(epoch FROM lease_expires_at - clock_timestamp()) "
               "FROM phasekey.idempotency_keys"));
}

TEST_F(RunnerEdgesTest, ATakeOverThatWaitedOnALockGetsItsWholeLease) {
  auto runner = Open(/*looks_up=*/false);
  fail_pay = 1000;
  ASSERT_EQ(Order(runner.get(), "k-wait").kind, Reply::Kind::kRetryLater);  // released at 'placed'
  fail_pay = 0;
  std::atomic<double> left{0};
  before_pay = [&](const PhaseContext&) { left = LeaseLeft(db_); };
  // Another transaction holds the key's row lock for 2 s; the retry's
  // take-over waits for it, and its lease must start when it is granted.
  pqxx::connection blocker(db_.url());
  pqxx::work hold(blocker);
  hold.exec1("SELECT 1 FROM phasekey.idempotency_keys WHERE idempotency_key = 'k-wait' FOR UPDATE");
  std::thread client([&] { EXPECT_EQ(Order(runner.get(), "k-wait").kind, Reply::Kind::kCompleted); });
  ASSERT_TRUE(db_.WaitForValue("SELECT count(*) > 0 FROM pg_locks WHERE NOT granted", "t"))
      << "the fault happened: the take-over waits on the lock";
  std::this_thread::sleep_for(milliseconds(2000));  // the wait under test
  hold.abort();
  client.join();
  EXPECT_GT(left.load(), 8.5) << "a lease of 10 s measured from the transaction's start would have ~8 s left";
}

TEST_F(RunnerEdgesTest, AReDriveRenewsTheLeaseItTookBeforeCallingTheProvider) {
  auto runner = Open(/*looks_up=*/false);
  fail_pay = 1000;
  ASSERT_EQ(Order(runner.get(), "k-lease").kind, Reply::Kind::kRetryLater);
  fail_pay = 0;
  // A worker claimed the key 8 s ago with a 10 s lease: 2 s are left, less
  // than the call (2 s) and the margin (1 s).
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET owner_token = '00000000-0000-4000-8000-000000000001', "
      "locked_at = clock_timestamp() - interval '8 seconds', lease_expires_at = clock_timestamp() + interval "
      "'2 seconds'");
  std::atomic<double> left{0};
  before_pay = [&](const PhaseContext&) { left = LeaseLeft(db_); };
  ClaimedKey key{
      AccountBucket("acct", 16), "acct", "k-lease", "order", "POST", "/orders", "00000000-0000-4000-8000-000000000001"};
  const Reply r = runner->Resume(key);
  ASSERT_EQ(r.kind, Reply::Kind::kCompleted) << r.detail;
  EXPECT_GT(left.load(), 3.0) << "the call started with the call's time and the margin left on the lease";
}

}  // namespace
}  // namespace phasekey
