// The re-drive worker against a real PostgreSQL with the test ride flow.
#include "phasekey/workers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <pqxx/pqxx>
#include <thread>

#include "phasekey/fingerprint.h"
#include "support/ride_flow.h"
#include "support/stderr_capture.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;
using testing::TestGateway;

const std::string kBody = R"({"origin_lat": 1.5})";
const std::string kTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
const std::string kTraceParent = "00-" + kTrace + "-00f067aa0ba902b7-01";

class RedriveWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { testing::CreateRideTables(db_.url()); }

  std::unique_ptr<Runner> OpenRunner(TestGateway* gateway, milliseconds redrive_delay = milliseconds(1)) {
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 8;
    o.lease = milliseconds(10000);
    o.backoff_base = milliseconds(2);
    o.backoff_cap = milliseconds(5);
    o.redrive_delay = redrive_delay;
    o.log_requests = true;
    auto r = Runner::Open(o, {testing::MakeRideFlow(gateway, milliseconds(2000), hooks_)});
    EXPECT_TRUE(r.has_value()) << r.error().ToString();
    return r ? std::move(*r) : nullptr;
  }

  std::unique_ptr<RedriveWorker> OpenWorker(Runner* runner, RedriveOptions o = {}) {
    o.poll_interval = o.poll_interval == RedriveOptions{}.poll_interval ? milliseconds(50) : o.poll_interval;
    auto w = RedriveWorker::Open(runner, o);
    EXPECT_TRUE(w.has_value()) << w.error().ToString();
    return w ? std::move(*w) : nullptr;
  }

  // Leaves a key released at ride_created: the gateway is down. The
  // request carries `traceparent` (Request::traceparent).
  void Abandon(Runner* runner, TestGateway* gateway, const std::string& key, const std::string& traceparent = "") {
    gateway->fail_retryable = 1000;
    Request request{"acct", key, "POST", "/rides", kBody};
    request.traceparent = traceparent;
    ASSERT_EQ(runner->Execute("create_ride", request).kind, Reply::Kind::kRetryLater);
    gateway->fail_retryable = 0;
  }

  std::string Value(const std::string& sql) const { return db_.Value(sql); }

  TestDatabase db_;
  std::shared_ptr<testing::RideHooks> hooks_ = std::make_shared<testing::RideHooks>();
};

TEST_F(RedriveWorkerTest, FinishesAKeyAbandonedAtRideCreated) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  Abandon(runner.get(), &gateway, "k-ride");
  ASSERT_TRUE(db_.WaitForValue("SELECT next_attempt_at <= now() FROM phasekey.idempotency_keys", "t"));  // due
  auto worker = OpenWorker(runner.get());
  auto round = worker->RunOnce();
  ASSERT_TRUE(round.has_value()) << round.error().ToString();
  EXPECT_EQ(round->claimed, 1u);
  EXPECT_EQ(round->finished, 1u);
  EXPECT_EQ(Value("SELECT state FROM phasekey.idempotency_keys"), "finished");
  EXPECT_EQ(gateway.charges(), 1);
  Reply replay = runner->Execute("create_ride", Request{"acct", "k-ride", "POST", "/rides", kBody});
  EXPECT_EQ(replay.kind, Reply::Kind::kReplayed);
  EXPECT_EQ(replay.response.status, 201);
}

TEST_F(RedriveWorkerTest, ARedriveLogsTheTraceIdStoredWithTheKeyAndItsPhasesSeeTheTraceparent) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  std::vector<std::string> seen;
  hooks_->in_send_receipt = [&](AtomicContext& ctx) { seen.push_back(ctx.traceparent()); };
  Abandon(runner.get(), &gateway, "k-traced", kTraceParent);
  ASSERT_EQ(Value("SELECT trace_parent FROM phasekey.idempotency_keys"), kTraceParent);
  ASSERT_TRUE(db_.WaitForValue("SELECT next_attempt_at <= now() FROM phasekey.idempotency_keys", "t"));  // due
  auto worker = OpenWorker(runner.get());
  testing::StderrCapture log;
  ASSERT_EQ(worker->RunOnce()->finished, 1u);
  const auto lines = log.lines("request");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].value("redrive", false)) << lines[0].dump();
  EXPECT_EQ(lines[0].value("reply", ""), "completed");
  EXPECT_EQ(lines[0].value("trace_id", ""), kTrace) << lines[0].dump();
  EXPECT_FALSE(lines[0].contains("retry_trace_id")) << "the worker's run is the key's own: " << lines[0].dump();
  EXPECT_EQ(seen, std::vector<std::string>{kTraceParent}) << "the phase the worker ran sees the stored traceparent";
}

TEST_F(RedriveWorkerTest, FinishesAKeyAbandonedAtStarted) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  std::atomic<int> throws{3};
  hooks_->in_create_ride = [&](AtomicContext&) {
    if (throws-- > 0) throw std::runtime_error("create_ride bug");
  };
  ASSERT_EQ(runner->Execute("create_ride", Request{"acct", "k-start", "POST", "/rides", kBody}).kind,
            Reply::Kind::kRetryLater);
  EXPECT_EQ(Value("SELECT recovery_point FROM phasekey.idempotency_keys"), "started");
  ASSERT_TRUE(db_.WaitForValue("SELECT next_attempt_at <= now() FROM phasekey.idempotency_keys", "t"));  // due
  auto worker = OpenWorker(runner.get());
  ASSERT_EQ(worker->RunOnce()->finished, 1u);
  EXPECT_EQ(Value("SELECT count(*) FROM rides WHERE charge_id IS NOT NULL"), "1");
}

TEST_F(RedriveWorkerTest, FinishesAKeyAbandonedAtChargeCreatedWithoutCallingTheGateway) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  ASSERT_EQ(runner->Execute("create_ride", Request{"acct", "k-charge", "POST", "/rides", kBody}).kind,
            Reply::Kind::kCompleted);
  // Back to before the finish, request body included (a finished key keeps
  // none).
  db_.Exec(
      "DELETE FROM staged_jobs; UPDATE phasekey.idempotency_keys SET state = 'active', recovery_point = "
      "'charge_created', response_status = NULL, response_headers = NULL, response_body = NULL, "
      "finished_at = NULL, next_attempt_at = now(), request_body = convert_to('{\"origin_lat\":1.5}', 'UTF8')");
  const int calls = gateway.calls();
  auto worker = OpenWorker(runner.get());
  ASSERT_EQ(worker->RunOnce()->finished, 1u);
  EXPECT_EQ(gateway.calls(), calls);
  EXPECT_EQ(Value("SELECT count(*) FROM staged_jobs"), "1");
}

TEST_F(RedriveWorkerTest, HonoursTheNextAttemptTimeAndBacksOffExponentially) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway, milliseconds(60000));
  Abandon(runner.get(), &gateway, "k-later");
  auto worker = OpenWorker(runner.get());
  EXPECT_EQ(worker->RunOnce()->claimed, 0u) << "not due for a minute";
  // The delay doubles with the attempts: at 3 attempts it would be 4 x 60 s;
  // the default cap (60 s) holds it, scaled by a jitter factor in [0.5, 1].
  db_.Exec("UPDATE phasekey.idempotency_keys SET attempts = 2, next_attempt_at = now()");
  gateway.fail_retryable = 1000;
  EXPECT_EQ(worker->RunOnce()->released, 1u);
  const double due_in =
      std::stod(Value("SELECT extract(epoch FROM next_attempt_at - now()) FROM phasekey.idempotency_keys"));
  EXPECT_GE(due_in, 0.5 * 60 - 2);
  EXPECT_LE(due_in, 60);
  EXPECT_EQ(Value("SELECT attempts FROM phasekey.idempotency_keys"), "3");
}

TEST_F(RedriveWorkerTest, ParksAKeyPastTheUnclassifiedFailureCapWhenAForeignPhaseMayHaveRun) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  Abandon(runner.get(), &gateway, "k-cap");  // left at ride_created: the charge may have been sent
  db_.Exec("UPDATE phasekey.idempotency_keys SET failures = 5, next_attempt_at = now()");
  RedriveOptions o;
  o.max_attempts = 5;
  auto worker = OpenWorker(runner.get(), o);
  auto round = worker->RunOnce();
  EXPECT_EQ(round->dead_lettered, 0u) << "never given up while a provider may hold an effect";
  EXPECT_EQ(round->needs_operator, 1u);
  EXPECT_EQ(round->claimed, 0u);
  EXPECT_EQ(Value("SELECT state FROM phasekey.idempotency_keys"), "needs_operator");
  EXPECT_NE(Value("SELECT last_error FROM phasekey.idempotency_keys").find("parked for an operator after 5"),
            std::string::npos);
  EXPECT_EQ(worker->RunOnce()->needs_operator, 0u) << "never touched again by itself";
  EXPECT_EQ(runner->Execute("create_ride", Request{"acct", "k-cap", "POST", "/rides", kBody}).kind,
            Reply::Kind::kNeedsOperator);
  EXPECT_EQ(gateway.charges(), 0);
}

TEST_F(RedriveWorkerTest, AKeyParkedOrDeadLetteredAtTheCapIsLoggedWithItsTraceId) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  Abandon(runner.get(), &gateway, "k-parked", kTraceParent);  // at ride_created: parked
  Abandon(runner.get(), &gateway, "k-dead", kTraceParent);
  db_.Exec("UPDATE phasekey.idempotency_keys SET failures = 5, next_attempt_at = now()");
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET recovery_point = 'started', outcomes = '{}' "
      "WHERE idempotency_key = 'k-dead'");
  RedriveOptions o;
  o.max_attempts = 5;
  auto worker = OpenWorker(runner.get(), o);
  testing::StderrCapture log;
  ASSERT_TRUE(worker->RunOnce().has_value());
  auto lines = log.lines("key stopped");
  ASSERT_EQ(lines.size(), 2u);
  std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a["state"] < b["state"]; });
  EXPECT_EQ(lines[0].value("state", ""), "dead");
  EXPECT_EQ(lines[1].value("state", ""), "needs_operator");
  for (const auto& line : lines) {
    EXPECT_EQ(line.value("trace_id", ""), kTrace) << line.dump();
    EXPECT_EQ(line.value("account", ""), "acct") << line.dump();
    EXPECT_NE(line.value("reason", "").find("unclassified failures"), std::string::npos) << line.dump();
  }
}

TEST_F(RedriveWorkerTest, DeadLettersAKeyPastTheUnclassifiedFailureCapOnlyWhenNothingLeftTheDatabase) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  Abandon(runner.get(), &gateway, "k-cap");
  // As if its first (atomic) phase had kept failing: still at started, no
  // outcome recorded.
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET recovery_point = 'started', outcomes = '{}', failures = 5, "
      "next_attempt_at = now()");
  RedriveOptions o;
  o.max_attempts = 5;
  auto worker = OpenWorker(runner.get(), o);
  auto round = worker->RunOnce();
  EXPECT_EQ(round->dead_lettered, 1u);
  EXPECT_EQ(round->needs_operator, 0u);
  EXPECT_EQ(Value("SELECT state FROM phasekey.idempotency_keys"), "dead");
  EXPECT_NE(Value("SELECT last_error FROM phasekey.idempotency_keys").find("dead-lettered: 5 unclassified failures"),
            std::string::npos);
  EXPECT_EQ(runner->Execute("create_ride", Request{"acct", "k-cap", "POST", "/rides", kBody}).kind,
            Reply::Kind::kDeadLettered);
  EXPECT_EQ(gateway.charges(), 0);
}

TEST_F(RedriveWorkerTest, AKeyClaimedManyTimesByClientRetriesIsStillFinished) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  Abandon(runner.get(), &gateway, "k-busy");
  for (int i = 0; i < 12; ++i) Abandon(runner.get(), &gateway, "k-busy");  // twelve client take-overs
  ASSERT_EQ(Value("SELECT attempts >= 13 FROM phasekey.idempotency_keys"), "t");
  ASSERT_EQ(Value("SELECT failures FROM phasekey.idempotency_keys"), "0") << "retryable failures are not counted";
  db_.Exec("UPDATE phasekey.idempotency_keys SET next_attempt_at = now()");
  auto worker = OpenWorker(runner.get());  // max_attempts 10
  auto round = worker->RunOnce();
  EXPECT_EQ(round->dead_lettered, 0u);
  EXPECT_EQ(round->finished, 1u);
  EXPECT_EQ(Value("SELECT state FROM phasekey.idempotency_keys"), "finished");
  EXPECT_EQ(gateway.charges(), 1);
}

TEST_F(RedriveWorkerTest, PastGiveUpAfterAKeyAtAForeignPhaseWithoutLookupIsParkedNotCharged) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  Abandon(runner.get(), &gateway, "k-old");
  db_.Exec("UPDATE phasekey.idempotency_keys SET created_at = now() - interval '13 hours', next_attempt_at = now()");
  auto worker = OpenWorker(runner.get());
  auto round = worker->RunOnce();
  EXPECT_EQ(round->needs_operator, 1u);
  EXPECT_EQ(Value("SELECT state FROM phasekey.idempotency_keys"), "needs_operator");
  EXPECT_NE(Value("SELECT last_error FROM phasekey.idempotency_keys").find("no lookup"), std::string::npos);
  EXPECT_EQ(gateway.charges(), 0);
  EXPECT_EQ(runner->Execute("create_ride", Request{"acct", "k-old", "POST", "/rides", kBody}).kind,
            Reply::Kind::kNeedsOperator);
  EXPECT_EQ(worker->RunOnce()->claimed, 0u) << "a parked key waits for its operator";
}

TEST_F(RedriveWorkerTest, PastGiveUpAfterAKeyWithNothingStartedIsGivenUp) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  hooks_->in_create_ride = [&](AtomicContext&) { throw pqxx::serialization_failure("injected"); };
  ASSERT_EQ(runner->Execute("create_ride", Request{"acct", "k-none", "POST", "/rides", kBody}).kind,
            Reply::Kind::kRetryLater);
  hooks_->in_create_ride = nullptr;
  ASSERT_EQ(Value("SELECT recovery_point FROM phasekey.idempotency_keys"), "started");
  db_.Exec("UPDATE phasekey.idempotency_keys SET created_at = now() - interval '13 hours', next_attempt_at = now()");
  auto worker = OpenWorker(runner.get());
  auto round = worker->RunOnce();
  EXPECT_EQ(round->dead_lettered, 1u);
  EXPECT_EQ(Value("SELECT state FROM phasekey.idempotency_keys"), "dead");
  EXPECT_EQ(Value("SELECT count(*) FROM rides"), "0");
  EXPECT_EQ(gateway.calls(), 0);
}

TEST_F(RedriveWorkerTest, FourWorkersFinishTwoThousandAbandonedKeysEachExactlyOnce) {
  constexpr int kKeys = 2000, kWorkers = 4;
  TestGateway gateway;
  {
    auto fp = FingerprintJson(kBody);
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec_params0(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, request_path,"
        " request_body, request_fingerprint, recovery_point)"
        " SELECT 'acct_' || (i % 50), 'key-' || i, 0, 'create_ride', 'POST', '/rides', $1, decode($2, 'hex'), 'started'"
        " FROM generate_series(1, $3) AS i",
        fp->canonical, fp->sha256_hex, kKeys);
    // The bucket is a function of the account (AccountBucket).
    for (int a = 0; a < 50; ++a) {
      const std::string acct = "acct_" + std::to_string(a);
      tx.exec_params0("UPDATE phasekey.idempotency_keys SET bucket = $2 WHERE account = $1", acct,
                      AccountBucket(acct, RunnerOptions{}.buckets));
    }
    tx.commit();
  }
  std::vector<std::unique_ptr<Runner>> runners;
  std::vector<std::unique_ptr<RedriveWorker>> workers;
  for (int i = 0; i < kWorkers; ++i) {
    runners.push_back(OpenRunner(&gateway));
    workers.push_back(OpenWorker(runners.back().get()));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::future<std::size_t>> done;
  for (auto& w : workers) {
    done.push_back(std::async(std::launch::async, [&w] {
      std::size_t claimed = 0;
      for (int round = 0; round < 200; ++round) {
        auto r = w->RunOnce();
        if (!r || r->claimed == 0) break;
        claimed += r->claimed;
      }
      return claimed;
    }));
  }
  std::size_t claimed = 0;
  for (auto& f : done) claimed += f.get();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ report ] %d keys re-driven by %d workers in %.2f s: %.0f keys/s\n", kKeys, kWorkers, seconds,
              kKeys / seconds);
  EXPECT_EQ(claimed, static_cast<std::size_t>(kKeys)) << "no key claimed twice";
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'finished'"), std::to_string(kKeys));
  EXPECT_EQ(gateway.charges(), kKeys);
  EXPECT_EQ(gateway.calls(), kKeys) << "no key driven by two holders";
  EXPECT_EQ(Value("SELECT count(*) FROM rides"), std::to_string(kKeys));
}

TEST_F(RedriveWorkerTest, ANotificationWakesTheWorkerLongBeforeThePollInterval) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway, milliseconds(10));
  RedriveOptions o;
  o.poll_interval = milliseconds(60000);
  auto worker = OpenWorker(runner.get(), o);
  std::thread loop([&] { worker->Run(); });
  EXPECT_TRUE(
      db_.WaitForValue("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND query ILIKE 'LISTEN%phasekey_redrive%'",
                       "1"));  // a release now wakes it
  const auto start = std::chrono::steady_clock::now();
  Abandon(runner.get(), &gateway, "k-notify");
  while (Value("SELECT state FROM phasekey.idempotency_keys") != "finished" &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  const auto took = std::chrono::steady_clock::now() - start;
  worker->Stop();
  loop.join();
  EXPECT_EQ(Value("SELECT state FROM phasekey.idempotency_keys"), "finished");
  EXPECT_LT(took, std::chrono::seconds(5)) << "woken by NOTIFY, not by the 60 s poll";
}

TEST_F(RedriveWorkerTest, StopLetsTheKeysInFlightFinishAndReturns) {
  TestGateway gateway;
  auto runner = OpenRunner(&gateway);
  Abandon(runner.get(), &gateway, "k-stop");
  ASSERT_TRUE(db_.WaitForValue("SELECT next_attempt_at <= now() FROM phasekey.idempotency_keys", "t"));  // due
  std::promise<void> in_call, release;
  auto released = release.get_future().share();
  gateway.set_before_call([&, released] {
    in_call.set_value();
    released.wait();
  });
  auto worker = OpenWorker(runner.get());
  std::thread loop([&] { worker->Run(); });
  in_call.get_future().wait();
  worker->Stop();
  release.set_value();
  loop.join();
  EXPECT_EQ(Value("SELECT owner_token FROM phasekey.idempotency_keys"), "<null>") << "nothing left leased";
  EXPECT_EQ(Value("SELECT state FROM phasekey.idempotency_keys"), "finished");
}

}  // namespace
}  // namespace phasekey
