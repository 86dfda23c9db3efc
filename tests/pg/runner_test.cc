// The runner against a real PostgreSQL: the claim protocol, replay, mismatch,
// leases, fencing, resume, failure kinds, commit count and races.
#include "phasekey/runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <pqxx/pqxx>
#include <thread>

#include "phasekey/metrics.h"
#include "support/exposition.h"
#include "support/ride_flow.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;
using testing::TestGateway;
using Kind = Reply::Kind;

const std::string kBody = R"({"origin_lat": 1.5, "origin_lon": 2, "target_lat": 3, "target_lon": 4})";

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::CreateRideTables(db_.url());
    hooks_ = std::make_shared<testing::RideHooks>();
    Open(RunnerOptions{});
  }

  void Open(RunnerOptions o) {
    o.database.url = db_.url();
    o.database.pool_size = 16;
    o.lease = milliseconds(10000);
    o.backoff_base = milliseconds(5);
    o.backoff_cap = milliseconds(20);
    options_ = o;
    auto r = Runner::Open(o, {testing::MakeRideFlow(&gateway_, milliseconds(2000), hooks_)});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    runner_ = std::move(*r);
  }

  Reply Post(const std::string& key, const std::string& body = kBody, const std::string& account = "acct_1",
             const std::string& path = "/rides", const std::string& method = "POST") {
    return runner_->Execute("create_ride", Request{account, key, method, path, body});
  }

  int Count(const std::string& sql) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    return tx.exec1(sql)[0].as<int>();
  }

  std::string KeyColumn(const std::string& key, const std::string& column) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    auto f = tx.exec_params1("SELECT " + column + "::text FROM phasekey.idempotency_keys WHERE idempotency_key = $1",
                             key)[0];
    return f.is_null() ? "<null>" : f.as<std::string>();
  }

  TestDatabase db_;
  TestGateway gateway_;
  std::shared_ptr<testing::RideHooks> hooks_;
  RunnerOptions options_;
  std::unique_ptr<Runner> runner_;
};

TEST_F(RunnerTest, AFirstRequestRunsEveryPhaseOnceAndStoresTheResponse) {
  Reply r = Post("key-first");
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(r.response.status, 201);
  EXPECT_NE(r.response.body.find("\"charge_id\":\"ch_1\""), std::string::npos) << r.response.body;
  EXPECT_EQ(Count("SELECT count(*) FROM rides WHERE charge_id = 'ch_1'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM staged_jobs"), 1);
  EXPECT_EQ(gateway_.charges(), 1);
  EXPECT_EQ(KeyColumn("key-first", "state"), "finished");
  EXPECT_EQ(KeyColumn("key-first", "owner_token"), "<null>");
}

TEST_F(RunnerTest, TheRideFlowCostsTwoCommitsAndAReplayOne) {
  RunnerOptions o;
  o.metrics = Metrics::Create();
  Open(o);
  const auto commits = [&] { return testing::SampleOf(o.metrics->Exposition(), "phasekey_commits_total"); };
  ASSERT_EQ(Post("key-commits").kind, Kind::kCompleted);
  EXPECT_EQ(commits(), 2);
  ASSERT_EQ(Post("key-commits").kind, Kind::kReplayed);
  EXPECT_EQ(commits(), 3);
}

TEST_F(RunnerTest, ARetryReplaysTheStoredResponseByteForByteWithoutRunningAgain) {
  Reply first = Post("key-replay");
  ASSERT_EQ(first.kind, Kind::kCompleted);
  // Same request, different spelling: member order, whitespace, 1.5 vs 15e-1.
  Reply again = Post("key-replay", R"({"target_lon":4,"target_lat":3,"origin_lon":2.0,"origin_lat":15e-1})");
  ASSERT_EQ(again.kind, Kind::kReplayed) << again.detail;
  EXPECT_EQ(again.response.status, first.response.status);
  EXPECT_EQ(again.response.body, first.response.body);
  EXPECT_EQ(again.response.headers, first.response.headers);
  EXPECT_EQ(gateway_.calls(), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 1);
}

TEST_F(RunnerTest, AKeyReusedWithADifferentRequestIsAMismatch) {
  ASSERT_EQ(Post("key-mismatch").kind, Kind::kCompleted);
  Reply body = Post("key-mismatch", R"({"origin_lat": 9})");
  EXPECT_EQ(body.kind, Kind::kMismatch);
  EXPECT_EQ(body.detail, "It was first used with a different request body.");
  EXPECT_EQ(Post("key-mismatch", kBody, "acct_1", "/other").kind, Kind::kMismatch);
  EXPECT_EQ(Post("key-mismatch", kBody, "acct_1", "/rides", "PUT").kind, Kind::kMismatch);
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 1);
}

TEST_F(RunnerTest, AKeyUsedForAnotherFlowIsAMismatch) {
  ASSERT_EQ(Post("key-flow").kind, Kind::kCompleted);
  db_.Exec("UPDATE phasekey.idempotency_keys SET flow = 'other_flow'");
  EXPECT_EQ(Post("key-flow").kind, Kind::kMismatch);
}

TEST_F(RunnerTest, ASecondRequestWhileTheFirstHoldsTheLeaseGetsInProgress) {
  std::promise<void> in_call, release;
  auto released = release.get_future().share();
  gateway_.set_before_call([&, released] {
    in_call.set_value();
    released.wait();
  });
  auto first = std::async(std::launch::async, [&] { return Post("key-busy"); });
  in_call.get_future().wait();
  gateway_.set_before_call(nullptr);
  Reply second = Post("key-busy");
  EXPECT_EQ(second.kind, Kind::kInProgress);
  EXPECT_GE(second.retry_after_s, 1);
  release.set_value();
  EXPECT_EQ(first.get().kind, Kind::kCompleted);
  EXPECT_EQ(gateway_.charges(), 1);
}

// The first request is still inside its claim transaction (create_ride runs
// with the claim, uncommitted). A second request must not queue behind that
// transaction's commit: it answers 409 while the first is still blocked. Before
// the claim's advisory gate it waited in the INSERT for the first to commit,
// so this test hung until the first was released.
TEST_F(RunnerTest, ASecondRequestWhileTheFirstIsStillClaimingGets409WithoutWaitingForItsCommit) {
  std::promise<void> claiming, release;
  auto released = release.get_future().share();
  std::atomic<int> entered{0};
  hooks_->in_create_ride = [&, released](AtomicContext&) {
    if (entered++ > 0) return;
    claiming.set_value();
    released.wait();
  };
  auto first = std::async(std::launch::async, [&] { return Post("key-claiming"); });
  claiming.get_future().wait();
  ASSERT_EQ(Count("SELECT count(*) FROM phasekey.idempotency_keys WHERE idempotency_key = 'key-claiming'"), 0)
      << "the first claim must still be uncommitted";

  auto second = std::async(std::launch::async, [&] { return Post("key-claiming"); });
  const bool answered = second.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  release.set_value();
  ASSERT_TRUE(answered) << "the second request waited for the first one's transaction";
  Reply busy = second.get();
  EXPECT_EQ(busy.kind, Kind::kInProgress);
  EXPECT_GE(busy.retry_after_s, 1);
  EXPECT_EQ(first.get().kind, Kind::kCompleted);
  EXPECT_EQ(entered.load(), 1);
  EXPECT_EQ(gateway_.charges(), 1);
}

TEST_F(RunnerTest, AnExpiredLeaseIsTakenOverAndTheStaleHolderCannotCommit) {
  std::promise<void> in_call, release;
  auto released = release.get_future().share();
  gateway_.set_before_call([&, released] {
    in_call.set_value();
    released.wait();
  });
  auto stale = std::async(std::launch::async, [&] { return Post("key-fence"); });
  in_call.get_future().wait();
  gateway_.set_before_call(nullptr);
  // The stale holder's lease runs out while it is inside the gateway call.
  db_.Exec("UPDATE phasekey.idempotency_keys SET lease_expires_at = now() - interval '1 second'");
  Reply thief = Post("key-fence");
  ASSERT_EQ(thief.kind, Kind::kCompleted) << thief.detail;
  EXPECT_EQ(KeyColumn("key-fence", "attempts"), "2");
  release.set_value();
  Reply stale_reply = stale.get();
  EXPECT_EQ(stale_reply.kind, Kind::kInProgress) << "a fenced-out holder stops without writing";
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM staged_jobs"), 1);
  EXPECT_EQ(gateway_.charges(), 1) << "both holders used the same provider key";
  EXPECT_EQ(Post("key-fence").response.body, thief.response.body);
}

TEST_F(RunnerTest, ResumesFromEveryRecoveryPoint) {
  // ride_created: the gateway keeps failing, the key is released there.
  gateway_.fail_retryable = 100;
  ASSERT_EQ(Post("key-at-ride").kind, Kind::kRetryLater);
  EXPECT_EQ(KeyColumn("key-at-ride", "recovery_point"), "ride_created");
  EXPECT_EQ(KeyColumn("key-at-ride", "owner_token"), "<null>");
  gateway_.fail_retryable = 0;
  // ride_created: the retry skips create_ride and charges.
  Reply r = Post("key-at-ride");
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 1);

  // started (key recorded, no phase committed): seeded directly.
  ASSERT_EQ(Post("key-seed").kind, Kind::kCompleted);
  db_.Exec(
      "DELETE FROM rides WHERE idem_key = 'key-seed'; DELETE FROM staged_jobs;"
      "UPDATE phasekey.idempotency_keys SET state = 'active', recovery_point = 'started', response_status = NULL,"
      " response_headers = NULL, response_body = NULL, finished_at = NULL, outcomes = '{}'"
      " WHERE idempotency_key = 'key-seed'");
  ASSERT_EQ(Post("key-seed").kind, Kind::kCompleted);
  EXPECT_EQ(Count("SELECT count(*) FROM rides WHERE idem_key = 'key-seed' AND charge_id IS NOT NULL"), 1);

  // charge_created (the charge's outcome recorded): only send_receipt runs.
  const int calls = gateway_.calls();
  db_.Exec(
      "DELETE FROM staged_jobs;"
      "UPDATE phasekey.idempotency_keys SET state = 'active', recovery_point = 'charge_created', response_status = "
      "NULL,"
      " response_headers = NULL, response_body = NULL, finished_at = NULL,"
      " outcomes = '{\"charge_created\": {\"charge_id\": \"ch_seeded\"}}' WHERE idempotency_key = 'key-seed'");
  Reply last = Post("key-seed");
  ASSERT_EQ(last.kind, Kind::kCompleted) << last.detail;
  EXPECT_NE(last.response.body.find("ch_seeded"), std::string::npos);
  EXPECT_EQ(gateway_.calls(), calls) << "no gateway call when resuming at charge_created";
  EXPECT_EQ(Count("SELECT count(*) FROM staged_jobs"), 1);
}

// A real 40001 under READ COMMITTED (an atomic phase's isolation): the
// phase updates a seat that another transaction has moved to another
// partition of a partitioned table and commits while the phase waits on it;
// PostgreSQL cannot follow the row there and fails the phase's statement
// with a serialization failure. The engine must re-run the transaction, not
// answer 409.
class SerializationFailureTest : public RunnerTest {
 protected:
  void SetUp() override {
    RunnerTest::SetUp();
    db_.Exec(
        "CREATE TABLE seats (id int NOT NULL, zone text NOT NULL, holder text) PARTITION BY LIST (zone);"
        "CREATE TABLE seats_front PARTITION OF seats FOR VALUES IN ('front');"
        "CREATE TABLE seats_back PARTITION OF seats FOR VALUES IN ('back');"
        "INSERT INTO seats VALUES (1, 'front', NULL)");
  }

  // The phase's work: takes seat 1. The first time, another transaction
  // moves the seat to the back partition meanwhile (40001, counted).
  void TakeTheSeat(AtomicContext& ctx) {
    if (runs++ > 0) {
      ctx.tx().exec_params0("UPDATE seats SET holder = $1 WHERE id = 1", ctx.idempotency_key());
      return;
    }
    pqxx::connection other(db_.url());
    pqxx::work mover(other);
    mover.exec0("UPDATE seats SET zone = 'back' WHERE id = 1");  // moves the row; not committed yet
    const std::string pid = ctx.tx().exec1("SELECT pg_backend_pid()")[0].as<std::string>();
    std::thread commit_when_waited_on([&] {
      EXPECT_TRUE(db_.WaitForValue("SELECT wait_event_type FROM pg_stat_activity WHERE pid = " + pid, "Lock"));
      mover.commit();
    });
    try {
      ctx.tx().exec_params0("UPDATE seats SET holder = $1 WHERE id = 1", ctx.idempotency_key());
    } catch (const pqxx::failure& e) {
      commit_when_waited_on.join();
      // libpqxx 6.4 throws serialization_failure for SQLSTATE 40001 alone.
      if (dynamic_cast<const pqxx::serialization_failure*>(&e) != nullptr) ++serialization_failures;
      throw;
    }
    commit_when_waited_on.join();
  }

  std::atomic<int> runs{0};
  std::atomic<int> serialization_failures{0};
};

// In the first phase, which runs in the claim's transaction: the claim and
// the phase run again together.
TEST_F(SerializationFailureTest, ASerializationFailureInsideAPhaseIsRetriedNotAnswered409) {
  hooks_->in_create_ride = [&](AtomicContext& ctx) { TakeTheSeat(ctx); };
  Reply r = Post("key-serial");
  ASSERT_EQ(serialization_failures.load(), 1) << "the phase's update failed with 40001";
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(r.response.status, 201);
  EXPECT_EQ(runs.load(), 2) << "the transaction ran again, once";
  EXPECT_EQ(Count("SELECT count(*) FROM seats WHERE holder = 'key-serial' AND zone = 'back'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 1);
  EXPECT_EQ(gateway_.charges(), 1);
  EXPECT_EQ(KeyColumn("key-serial", "state"), "finished");
  EXPECT_EQ(KeyColumn("key-serial", "attempts"), "1") << "one claim committed: the failed one kept nothing";
}

// In a later phase (send_receipt, after the charge): the phase's attempt is
// counted as a retry, not as an unclassified failure, and runs again
// without charging again.
TEST_F(SerializationFailureTest, ASerializationFailureInALaterPhaseIsCountedAsARetryAndRunsItAgain) {
  RunnerOptions o;
  o.metrics = Metrics::Create();
  Open(o);
  hooks_->in_send_receipt = [&](AtomicContext& ctx) { TakeTheSeat(ctx); };
  Reply r = Post("key-serial-2");
  ASSERT_EQ(serialization_failures.load(), 1) << "the phase's update failed with 40001";
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  const std::string exposition = o.metrics->Exposition();
  const auto outcomes = [&](const char* kind) {
    return testing::SampleOf(exposition, std::string(R"(phasekey_phase_outcomes_total{flow="create_ride",kind=")") +
                                             kind + R"(",phase="send_receipt"})");
  };
  EXPECT_EQ(outcomes("retry"), 1);
  EXPECT_EQ(outcomes("unclassified"), 0);
  EXPECT_EQ(outcomes("finished"), 1);
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(gateway_.charges(), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM seats WHERE holder = 'key-serial-2' AND zone = 'back'"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM staged_jobs"), 1);
  EXPECT_EQ(KeyColumn("key-serial-2", "failures"), "0");
}

TEST_F(RunnerTest, ATerminalFailureIsStoredAndReplayed) {
  gateway_.decline = true;
  Reply r = Post("key-declined");
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(r.response.status, 402);
  gateway_.decline = false;
  Reply again = Post("key-declined");
  EXPECT_EQ(again.kind, Kind::kReplayed);
  EXPECT_EQ(again.response.status, 402);
  EXPECT_EQ(KeyColumn("key-declined", "last_error"), "phase 'charge': card declined");
}

TEST_F(RunnerTest, ARetryableFailureReleasesTheKeyWithoutStoringAnything) {
  gateway_.fail_retryable = 100;
  std::atomic<int> tries{0};
  gateway_.set_before_call([&] { ++tries; });
  Reply r = Post("key-retry");
  EXPECT_EQ(r.kind, Kind::kRetryLater);
  EXPECT_GE(r.retry_after_s, 1);
  EXPECT_EQ(tries.load(), options_.attempts_per_request) << "retried inside the request first";
  EXPECT_EQ(gateway_.charges(), 0);
  EXPECT_EQ(KeyColumn("key-retry", "state"), "active");
  EXPECT_EQ(KeyColumn("key-retry", "response_status"), "<null>");
  EXPECT_EQ(KeyColumn("key-retry", "last_error"), "phase 'charge': gateway unavailable");
  EXPECT_EQ(Count("SELECT count(*) FROM phasekey.idempotency_keys WHERE next_attempt_at > now()"), 1);
  gateway_.fail_retryable = 0;
  EXPECT_EQ(Post("key-retry").kind, Kind::kCompleted) << "a client retry may come at once";
}

TEST_F(RunnerTest, AnUnknownOutcomeReRunsThePhaseWithTheSameProviderKey) {
  gateway_.fail_unknown = 1;
  Reply r = Post("key-unknown");
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(gateway_.calls(), 2);
  EXPECT_EQ(gateway_.charges(), 1);
  ASSERT_EQ(gateway_.keys().size(), 1u);
  EXPECT_NE(gateway_.keys().begin()->find(":charge"), std::string::npos);
}

// A commit whose outcome is unknown (the link died while COMMIT was on its
// way, as when the primary fails over mid-commit) is settled by claiming the
// key again with the same owner token and reading its recovery point. Here
// the lost commit carried the charge's outcome and the receipt (one commit
// in the ride flow), so the row still says ride_created: the ride is not
// created again, and the charge's outcome, held by this request, is carried
// over the settling: the provider is not called again (before the edges of
// exactly-once, it was resent and relied on the provider still remembering
// the key). The server itself cuts the link at
// COMMIT: a deferred trigger on the receipt's UPDATE terminates its own
// backend, once (a sequence counts; rollbacks do not undo it).
TEST_F(RunnerTest, AnUnknownCommitIsSettledByReadingTheKeyRowNotByRedoingPhases) {
  db_.Exec("CREATE SEQUENCE die_once");
  db_.Exec(
      "CREATE FUNCTION die_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
      "IF nextval('die_once') = 1 THEN PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(5); END IF; "
      "RETURN NULL; END $$");
  db_.Exec(
      "CREATE CONSTRAINT TRIGGER die_at_commit AFTER UPDATE ON rides DEFERRABLE INITIALLY DEFERRED "
      "FOR EACH ROW EXECUTE FUNCTION die_at_commit()");
  RunnerOptions o;
  o.metrics = Metrics::Create();
  Open(o);
  Reply r = Post("key-unknown-commit");
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(r.response.status, 201);
  EXPECT_EQ(Count("SELECT last_value::int FROM die_once"), 2) << "the receipt's commit failed once, then succeeded";
  EXPECT_EQ(gateway_.calls(), 1) << "the charge's outcome survived the lost commit: not sent again";
  EXPECT_EQ(gateway_.charges(), 1);
  EXPECT_EQ(gateway_.keys().size(), 1u);
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 1) << "the committed create_ride phase did not run again";
  EXPECT_EQ(Count("SELECT count(*) FROM rides WHERE charge_id IS NOT NULL"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM staged_jobs"), 1) << "the lost receipt commit left nothing behind";
  EXPECT_EQ(KeyColumn("key-unknown-commit", "state"), "finished");
  EXPECT_NE(o.metrics->Exposition().find("kind=\"unknown_commit\""), std::string::npos)
      << "the lost commit must be taken as outcome unknown, not as a plain retry:\n"
      << o.metrics->Exposition();
}

TEST_F(RunnerTest, AnUnclassifiedExceptionInAForeignPhaseIsRetryableUntilTheAttemptCapThenParkedNotStoredAs500) {
  RunnerOptions o;
  o.max_attempts = 2;
  Open(o);
  gateway_.throw_next = 1000;
  Reply first = Post("key-throws");
  EXPECT_EQ(first.kind, Kind::kRetryLater) << first.detail;
  EXPECT_EQ(KeyColumn("key-throws", "attempts"), "1");
  Reply second = Post("key-throws");
  ASSERT_EQ(second.kind, Kind::kNeedsOperator) << second.detail;
  EXPECT_EQ(KeyColumn("key-throws", "state"), "needs_operator");
  EXPECT_EQ(KeyColumn("key-throws", "response_status"), "<null>") << "the gateway may have charged: no stored 500";
  EXPECT_NE(KeyColumn("key-throws", "last_error").find("gateway client bug"), std::string::npos);
  gateway_.throw_next = 0;
  EXPECT_EQ(Post("key-throws").kind, Kind::kNeedsOperator);
}

TEST_F(RunnerTest, SixtyFourThreadsRacingOnOneKeyRunThePhasesExactlyOnce) {
  constexpr int kThreads = 64;
  std::vector<std::future<Reply>> replies;
  std::promise<void> go;
  auto start = go.get_future().share();
  for (int i = 0; i < kThreads; ++i) {
    replies.push_back(std::async(std::launch::async, [&, start] {
      start.wait();
      return Post("key-race");
    }));
  }
  go.set_value();
  int completed = 0, replayed = 0, busy = 0, other = 0;
  for (auto& f : replies) {
    Reply r = f.get();
    if (r.kind == Kind::kCompleted)
      ++completed;
    else if (r.kind == Kind::kReplayed)
      ++replayed;
    else if (r.kind == Kind::kInProgress)
      ++busy;
    else
      ++other;
  }
  EXPECT_EQ(completed, 1);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(completed + replayed + busy, kThreads);
  EXPECT_EQ(gateway_.calls(), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 1);
  EXPECT_EQ(Count("SELECT count(*) FROM staged_jobs"), 1);
}

TEST_F(RunnerTest, KeysAreScopedToTheAccount) {
  Reply a = Post("shared-key", kBody, "acct_a");
  Reply b = Post("shared-key", R"({"origin_lat": 7})", "acct_b");
  ASSERT_EQ(a.kind, Kind::kCompleted);
  ASSERT_EQ(b.kind, Kind::kCompleted) << "account B starts its own operation";
  EXPECT_NE(a.response.body, b.response.body);
  EXPECT_EQ(gateway_.charges(), 2);
  EXPECT_EQ(Count("SELECT count(*) FROM rides"), 2);
}

TEST_F(RunnerTest, AnInvalidBodyIsRejectedBeforeAnyKeyIsRecorded) {
  EXPECT_EQ(Post("key-bad", R"({"a": 1, "a": 2})").kind, Kind::kInvalidRequest);
  EXPECT_EQ(Post("key-bad", "not json").kind, Kind::kInvalidRequest);
  EXPECT_EQ(Count("SELECT count(*) FROM phasekey.idempotency_keys"), 0);
}

TEST_F(RunnerTest, FieldsBeyondTheKeyRowsLimitsAreRejectedBeforeAnyKeyIsRecorded) {
  const std::string at_limit(200, 'a');
  EXPECT_EQ(Post("key-limit", kBody, at_limit).kind, Kind::kCompleted) << "200 characters fit";
  // Characters, not bytes: 200 two-byte characters fit too.
  std::string two_byte;
  for (int i = 0; i < 200; ++i) two_byte += "\xc3\xa9";
  EXPECT_EQ(Post("key-limit-utf8", kBody, two_byte).kind, Kind::kCompleted);
  const int recorded = Count("SELECT count(*) FROM phasekey.idempotency_keys");
  const Reply long_account = Post("key-over", kBody, at_limit + "a");
  EXPECT_EQ(long_account.kind, Kind::kInvalidRequest);
  EXPECT_NE(long_account.detail.find("account must have 1 to 200 characters"), std::string::npos)
      << long_account.detail;
  EXPECT_EQ(Post(std::string(256, 'k')).kind, Kind::kInvalidRequest);
  EXPECT_EQ(Post("key-over", kBody, "acct_1", "/" + std::string(2000, 'p')).kind, Kind::kInvalidRequest);
  EXPECT_EQ(Post("key-over", kBody, "acct_1", "/rides", "PROPFINDPROPFINDX").kind, Kind::kInvalidRequest);
  EXPECT_EQ(Post("key-over", kBody, "acct_1", "", "POST").kind, Kind::kInvalidRequest);
  EXPECT_EQ(Post("key-over", kBody, "").kind, Kind::kInvalidRequest);
  EXPECT_EQ(Count("SELECT count(*) FROM phasekey.idempotency_keys"), recorded);
}

TEST_F(RunnerTest, APhaseAnsweringANonHttpStatusIsABugAndStoresNothing) {
  auto answer = [](AtomicContext&) -> PhaseResult { return Respond{Response{0, {}, "no status"}}; };
  auto flow = Flow::Builder("bad_status").Atomic(kStarted, "answer", answer, {kFinished}).Build();
  ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
  RunnerOptions o = options_;
  auto runner = Runner::Open(o, {*flow});
  ASSERT_TRUE(runner.has_value()) << runner.error().ToString();
  const Reply r = (*runner)->Execute("bad_status", Request{"acct_1", "key-status", "POST", "/x", "{}"});
  EXPECT_EQ(r.kind, Kind::kInternalError);
  EXPECT_NE(r.detail.find("status 0, which is not an HTTP status"), std::string::npos) << r.detail;
  // The phase shares the claim's transaction, so the bug rolls the claim
  // back with it: no key stored, nothing locked, and a retry meets the same
  // bug rather than a stored answer.
  EXPECT_EQ(Count("SELECT count(*) FROM phasekey.idempotency_keys WHERE idempotency_key = 'key-status'"), 0);
  EXPECT_EQ((*runner)->Execute("bad_status", Request{"acct_1", "key-status", "POST", "/x", "{}"}).kind,
            Kind::kInternalError);
}

TEST_F(RunnerTest, PhasesSeeTheAttemptCountAndTheKeysAge) {
  int attempts = 0;
  std::chrono::seconds age{-1};
  hooks_->in_send_receipt = [&](AtomicContext& ctx) {
    attempts = ctx.attempts();
    age = ctx.key_age();
  };
  gateway_.fail_retryable = 100;
  ASSERT_EQ(Post("key-age").kind, Kind::kRetryLater);
  gateway_.fail_retryable = 0;
  db_.Exec("UPDATE phasekey.idempotency_keys SET created_at = now() - interval '1 hour'");
  ASSERT_EQ(Post("key-age").kind, Kind::kCompleted);
  EXPECT_EQ(attempts, 2);
  EXPECT_GE(age.count(), 3600);
  EXPECT_LT(age.count(), 3700);
}

TEST(RunnerOpenTest, RefusesALeaseThatDoesNotOutlastTheLongestForeignCall) {
  TestGateway gateway;
  RunnerOptions o;
  o.database.url = "postgresql://unused@127.0.0.1:1/none";
  o.lease = milliseconds(10000);
  o.lease_margin = milliseconds(5000);
  auto r = Runner::Open(o, {testing::MakeRideFlow(&gateway, milliseconds(6000))});
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("must outlast"), std::string::npos) << r.error().ToString();
}

}  // namespace
}  // namespace phasekey
