// The runner's decisions over the in-memory key store (no database): claim,
// replay, 409, 422, take-over, release, finish past the cap, stop, lease
// lost, a lost commit answer. tests/pg/runner_test.cc runs the same paths
// against PostgreSQL.
#include "runner/runner_impl.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>

#include "phasekey/fingerprint.h"
#include "phasekey/metrics.h"
#include "support/exposition.h"
#include "support/memory_key_store.h"

namespace phasekey::runner {
namespace {

using testing::MemoryKeyStore;
using Kind = Reply::Kind;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr RecoveryPoint kRideCreated{"ride_created"};
constexpr RecoveryPoint kCharged{"charged"};
constexpr char kAccount[] = "acct_1";
constexpr char kBody[] = R"({"origin":"A","destination":"B"})";

class RunnerDecisionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    charge_ = [](const PhaseContext&) -> PhaseResult { return GoTo{kCharged, {{"charge_id", "ch_1"}}}; };
    auto flow = Flow::Builder("create_ride")
                    .Atomic(kStarted, "create_ride",
                            [this](AtomicContext&) -> PhaseResult {
                              ++creates_;
                              if (create_throws_) throw std::runtime_error("create_ride: null dereference, say");
                              return GoTo{kRideCreated};
                            },
                            {kRideCreated})
                    .Foreign(
                        kRideCreated, "charge",
                        [this](const PhaseContext& ctx) {
                          ++charges_;
                          return charge_(ctx);
                        },
                        {kCharged}, seconds(1))
                    .Atomic(kCharged, "send_receipt",
                            [](AtomicContext& ctx) -> PhaseResult {
                              const std::string charge = ctx.Outcome(kCharged).at("charge_id");
                              return Respond{Response{
                                  201, {{"Content-Type", "application/json"}}, R"({"charge_id":")" + charge + R"("})"}};
                            },
                            {kFinished})
                    .Build();
    ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
    options_.backoff_base = milliseconds(1);
    options_.backoff_cap = milliseconds(2);
    options_.metrics = Metrics::Create();
    auto keys = std::make_unique<MemoryKeyStore>();
    keys_ = keys.get();
    runner_ = std::make_unique<RunnerImpl>(
        options_, std::map<std::string, std::shared_ptr<const Flow>>{{"create_ride", *flow}}, std::move(keys));
  }

  Reply Post(const std::string& key, const std::string& body = kBody, const std::string& path = "/rides") {
    return runner_->Execute("create_ride", Request{kAccount, key, "POST", path, body});
  }

  // A key some earlier holder left at `point`, for `body`.
  MemoryKeyStore::Row Seed(const std::string& key, const std::string& point) {
    auto fp = FingerprintJson(kBody);
    MemoryKeyStore::Row row;
    row.account = kAccount;
    row.idempotency_key = key;
    row.flow = "create_ride";
    row.method = "POST";
    row.path = "/rides";
    row.canonical_body = fp->canonical;
    row.fingerprint_hex = fp->sha256_hex;
    row.recovery_point = point;
    row.created_at = row.point_reached_at = keys_->Now();
    return row;
  }

  std::size_t Transactions() const { return keys_->transactions().size(); }

  RunnerOptions options_;
  MemoryKeyStore* keys_ = nullptr;  // owned by runner_
  std::unique_ptr<RunnerImpl> runner_;
  std::function<PhaseResult(const PhaseContext&)> charge_;
  std::atomic<int> creates_{0}, charges_{0};
  bool create_throws_ = false;  // create_ride throws (a bug before any foreign phase)
};

TEST_F(RunnerDecisionsTest, ANewKeyRunsEveryPhaseInTwoCommitsAndStoresTheResponse) {
  Reply r = Post("key-new");
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(r.response.status, 201);
  EXPECT_EQ(r.response.body, R"({"charge_id":"ch_1"})");
  EXPECT_EQ(creates_, 1);
  EXPECT_EQ(charges_, 1);

  auto row = keys_->Find(kAccount, "key-new");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->state, KeyState::kFinished);
  EXPECT_EQ(row->recovery_point, "finished");
  EXPECT_FALSE(row->owner_token.has_value());
  EXPECT_EQ(row->outcomes.at("charged").at("charge_id"), "ch_1");
  ASSERT_TRUE(row->response.has_value());
  EXPECT_EQ(row->response->body, r.response.body);

  // The claim carries BEGIN and the first phase's move carries COMMIT; the
  // charge's outcome is recorded with the last phase's finish, whose
  // transaction sends BEGIN with its first statement too (here, with COMMIT).
  const auto txs = keys_->transactions();
  ASSERT_EQ(txs.size(), 2u);
  EXPECT_EQ(txs[0].start, pg::Tx::Start::kWithFirstStatement);
  EXPECT_EQ(txs[1].start, pg::Tx::Start::kWithFirstStatement);
  EXPECT_EQ(txs[0].statements, (std::vector<std::string>{"KeyClaim", "KeyMove with COMMIT"}));
  EXPECT_EQ(txs[1].statements, (std::vector<std::string>{"KeyFinish with COMMIT"}));
  EXPECT_EQ(testing::SampleOf(options_.metrics->Exposition(), "phasekey_commits_total"), 2);
}

TEST_F(RunnerDecisionsTest, ARetryReplaysTheStoredResponseWithoutRunningAPhase) {
  Reply first = Post("key-replay");
  ASSERT_EQ(first.kind, Kind::kCompleted) << first.detail;
  Reply again = Post("key-replay");
  ASSERT_EQ(again.kind, Kind::kReplayed) << again.detail;
  EXPECT_EQ(again.response.status, first.response.status);
  EXPECT_EQ(again.response.body, first.response.body);
  EXPECT_EQ(again.response.headers, first.response.headers);
  EXPECT_EQ(creates_, 1);
  EXPECT_EQ(charges_, 1);
  EXPECT_EQ(keys_->transactions().back().statements, std::vector<std::string>{"KeyClaim"});
}

TEST_F(RunnerDecisionsTest, TheSameKeyWithAnotherBodyOrPathIsAMismatch) {
  ASSERT_EQ(Post("key-422").kind, Kind::kCompleted);
  Reply body = Post("key-422", R"({"origin":"A","destination":"C"})");
  EXPECT_EQ(body.kind, Kind::kMismatch);
  EXPECT_EQ(body.detail, "It was first used with a different request body.");
  Reply path = Post("key-422", kBody, "/other");
  EXPECT_EQ(path.kind, Kind::kMismatch);
  EXPECT_EQ(path.detail, "It was first used with path /rides.");
  // A body that differs only in member order or spacing is the same request.
  EXPECT_EQ(Post("key-422", R"({ "destination": "B", "origin": "A" })").kind, Kind::kReplayed);
  EXPECT_EQ(creates_, 1);
}

TEST_F(RunnerDecisionsTest, UsesTheCanonicalBodyTheRequestCarriesAndNeverParsesItsBytesAgain) {
  Result<std::shared_ptr<const CanonicalBody>> body = CanonicalBody::Of(kBody);
  ASSERT_TRUE(body.has_value());
  const nlohmann::json* seen = nullptr;
  charge_ = [&seen](const PhaseContext& ctx) -> PhaseResult {
    seen = &ctx.request();
    return GoTo{kCharged, {{"charge_id", "ch_1"}}};
  };
  Request carried{kAccount, "key-carried", "POST", "/rides", "not JSON: the runner must not read it"};
  carried.canonical_body = *body;
  Reply r = runner_->Execute("create_ride", carried);
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(seen, &(*body)->document());  // the phase reads the carried document, not a parse of its own
  auto row = keys_->Find(kAccount, "key-carried");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->canonical_body, (*body)->fingerprint().canonical);
  EXPECT_EQ(row->fingerprint_hex, (*body)->fingerprint().sha256_hex);
  // The same body sent as bytes is the same request.
  EXPECT_EQ(Post("key-carried").kind, Kind::kReplayed);
}

TEST_F(RunnerDecisionsTest, AKeyUnderSomeoneElsesLiveLeaseIsInProgressWithTheLeaseLeft) {
  MemoryKeyStore::Row row = Seed("key-409", "ride_created");
  row.owner_token = "11111111-1111-4111-8111-111111111111";
  row.lease_expires_at = keys_->Now() + seconds(30);
  keys_->Put(row);
  Reply r = Post("key-409");
  EXPECT_EQ(r.kind, Kind::kInProgress);
  EXPECT_GE(r.retry_after_s, 29);
  EXPECT_LE(r.retry_after_s, 30);
  EXPECT_EQ(charges_, 0);
  EXPECT_EQ(keys_->Find(kAccount, "key-409")->owner_token, row.owner_token);
}

TEST_F(RunnerDecisionsTest, AnExpiredLeaseIsTakenOverAndTheFlowResumesAtItsRecoveryPoint) {
  MemoryKeyStore::Row row = Seed("key-take", "ride_created");
  row.owner_token = "11111111-1111-4111-8111-111111111111";
  row.lease_expires_at = keys_->Now() - seconds(1);
  keys_->Put(row);
  Reply r = Post("key-take");
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(creates_, 0);  // ride_created was committed by the earlier holder
  EXPECT_EQ(charges_, 1);
  auto after = keys_->Find(kAccount, "key-take");
  EXPECT_EQ(after->attempts, 2);  // a take-over is a claim
  EXPECT_EQ(after->failures, 0);  // never a failure
  EXPECT_EQ(after->state, KeyState::kFinished);
}

TEST_F(RunnerDecisionsTest, ARetryableForeignFailureReleasesTheKeyForARetryAndWakesTheRedrive) {
  charge_ = [](const PhaseContext&) -> PhaseResult { return Retry("gateway timed out"); };
  Reply r = Post("key-release");
  EXPECT_EQ(r.kind, Kind::kRetryLater);
  EXPECT_GE(r.retry_after_s, 1);
  EXPECT_EQ(charges_, options_.attempts_per_request);  // retried inside the request first
  auto row = keys_->Find(kAccount, "key-release");
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->state, KeyState::kActive);
  EXPECT_EQ(row->recovery_point, "ride_created");
  EXPECT_FALSE(row->owner_token.has_value());
  EXPECT_TRUE(row->next_attempt_at.has_value());
  EXPECT_EQ(row->failures, 0);  // retryable failures do not count towards the cap
  EXPECT_NE(row->last_error.value_or("").find("gateway timed out"), std::string::npos);
  EXPECT_EQ(keys_->notifications().size(), 1u);

  // The next request takes the released key and finishes it without
  // creating the ride again.
  charge_ = [](const PhaseContext&) -> PhaseResult { return GoTo{kCharged, {{"charge_id", "ch_2"}}}; };
  Reply retry = Post("key-release");
  ASSERT_EQ(retry.kind, Kind::kCompleted) << retry.detail;
  EXPECT_EQ(retry.response.body, R"({"charge_id":"ch_2"})");
  EXPECT_EQ(creates_, 1);
}

TEST_F(RunnerDecisionsTest, UnclassifiedFailuresBeforeAnyForeignPhaseFinishTheKeyWithAStored500AtTheCap) {
  create_throws_ = true;
  Reply first = Post("key-cap");
  EXPECT_EQ(first.kind, Kind::kRetryLater);
  EXPECT_EQ(keys_->Find(kAccount, "key-cap")->failures, 1);

  // A client retry at once (the key is released); at max_attempts the
  // runner stops retrying and, nothing having left the database, stores a
  // 500.
  Reply last;
  for (int i = 1; i < options_.max_attempts; ++i) last = Post("key-cap");
  ASSERT_EQ(last.kind, Kind::kCompleted) << last.detail;
  EXPECT_EQ(last.response.status, 500);
  auto row = keys_->Find(kAccount, "key-cap");
  EXPECT_EQ(row->state, KeyState::kFinished);
  EXPECT_NE(row->last_error.value_or("").find("null dereference"), std::string::npos);
  EXPECT_EQ(Post("key-cap").kind, Kind::kReplayed);
  EXPECT_EQ(charges_, 0);
}

TEST_F(RunnerDecisionsTest, UnclassifiedFailuresOfAForeignPhaseParkTheKeyAtTheCapNeverAStored500) {
  // The phase may have charged before it threw: nobody knows.
  charge_ = [](const PhaseContext&) -> PhaseResult { throw std::runtime_error("null dereference, say"); };
  Reply last;
  for (int i = 0; i < options_.max_attempts; ++i) last = Post("key-cap");
  EXPECT_EQ(charges_, options_.max_attempts * options_.attempts_per_request) << "the fault happened on every attempt";
  EXPECT_EQ(last.kind, Kind::kNeedsOperator) << last.detail;
  auto row = keys_->Find(kAccount, "key-cap");
  EXPECT_EQ(row->state, KeyState::kNeedsOperator);
  EXPECT_FALSE(row->response.has_value()) << "no final answer was stored";
  EXPECT_NE(row->last_error.value_or("").find("parked for an operator"), std::string::npos);
  EXPECT_EQ(Post("key-cap").kind, Kind::kNeedsOperator) << "the client is told so, not that it failed";
}

TEST_F(RunnerDecisionsTest, AForeignPhaseThatCannotTellStopsTheKeyForAnOperator) {
  charge_ = [](const PhaseContext&) -> PhaseResult { return NeedsOperator("the gateway lost track of the charge"); };
  Reply r = Post("key-stop");
  EXPECT_EQ(r.kind, Kind::kNeedsOperator);
  auto row = keys_->Find(kAccount, "key-stop");
  EXPECT_EQ(row->state, KeyState::kNeedsOperator);
  EXPECT_FALSE(row->owner_token.has_value());
  EXPECT_NE(row->last_error.value_or("").find("lost track"), std::string::npos);
  // Nothing is sent again: a retry only reads the row.
  EXPECT_EQ(Post("key-stop").kind, Kind::kNeedsOperator);
  EXPECT_EQ(charges_, 1);
}

TEST_F(RunnerDecisionsTest, ALostFenceFailsTheCommitKeepsNothingAndAnswersInProgress) {
  // While the charge is out, another holder takes the key over (our lease
  // expired, say): our finish must not commit.
  const std::string thief = "22222222-2222-4222-8222-222222222222";
  charge_ = [&](const PhaseContext&) -> PhaseResult {
    MemoryKeyStore::Row row = *keys_->Find(kAccount, "key-fence");
    row.owner_token = thief;
    row.attempts += 1;
    keys_->Put(row);
    return GoTo{kCharged, {{"charge_id", "ch_1"}}};
  };
  Reply r = Post("key-fence");
  EXPECT_EQ(r.kind, Kind::kInProgress);
  EXPECT_EQ(r.detail, "another holder took over this key");
  EXPECT_EQ(keys_->transactions().back().status.code(), StatusCode::kFailedPrecondition);
  auto row = keys_->Find(kAccount, "key-fence");
  EXPECT_EQ(row->state, KeyState::kActive);
  EXPECT_EQ(row->recovery_point, "ride_created");
  EXPECT_EQ(row->owner_token, thief);
  EXPECT_FALSE(row->outcomes.contains("charged"));  // the thief's to record
}

TEST_F(RunnerDecisionsTest, ACommitWhoseAnswerWasLostIsSettledByClaimingAgainNotByRedoingPhases) {
  keys_->FailNextCommit(Status::OutcomeUnknown("connection lost during COMMIT"), /*applied=*/true);
  Reply r = Post("key-unknown");
  ASSERT_EQ(r.kind, Kind::kCompleted) << r.detail;
  EXPECT_EQ(creates_, 1);  // the lost commit had moved the key: ride_created is not run again
  EXPECT_EQ(charges_, 1);
  const auto txs = keys_->transactions();
  ASSERT_GE(txs.size(), 2u);
  EXPECT_EQ(txs[1].statements.front(), "KeyClaim");              // the same owner token claims again
  EXPECT_EQ(keys_->Find(kAccount, "key-unknown")->attempts, 1);  // as its holder, not a take-over
}

TEST_F(RunnerDecisionsTest, AKeyOlderThanGiveUpAfterWithNothingStartedIsGivenUp) {
  MemoryKeyStore::Row row = Seed("key-old", "started");
  row.created_at = row.point_reached_at = keys_->Now() - options_.give_up_after - hours(1);
  keys_->Put(row);
  Reply r = Post("key-old");
  EXPECT_EQ(r.kind, Kind::kDeadLettered);
  EXPECT_EQ(creates_, 0);
  EXPECT_EQ(keys_->Find(kAccount, "key-old")->state, KeyState::kDead);
  EXPECT_EQ(Post("key-old").kind, Kind::kDeadLettered);
}

TEST_F(RunnerDecisionsTest, AnAtomicPhaseWithoutADatabaseFailsUnclassifiedRatherThanCrashing) {
  auto flow = Flow::Builder("uses_tx")
                  .Atomic(kStarted, "insert",
                          [](AtomicContext& ctx) -> PhaseResult {
                            ctx.tx();
                            return Respond{Response{200, {}, "{}"}};
                          },
                          {kFinished})
                  .Build();
  ASSERT_TRUE(flow.has_value());
  auto keys = std::make_unique<MemoryKeyStore>();
  RunnerImpl runner(options_, {{"uses_tx", *flow}}, std::move(keys));
  Reply r = runner.Execute("uses_tx", Request{kAccount, "key-tx", "POST", "/x", "{}"});
  EXPECT_EQ(r.kind, Kind::kRetryLater);
  EXPECT_NE(r.detail.find("no database transaction"), std::string::npos) << r.detail;
}

}  // namespace
}  // namespace phasekey::runner
