// The key row over PostgreSQL (runner/pg_key_store.cc), counted in row
// versions: a new key whose first phase is atomic is written once by that
// phase's fenced move or finish, not inserted by the claim and rewritten at
// commit. The unique index still decides who holds the key: a claimant that
// loses it at commit keeps nothing of its first phase.
//
// The flows: an order paid at a provider,
//   started --(atomic place)--> placed --(foreign pay)--> paid --(atomic confirm)--> finished
// and a note taken in one atomic phase,
//   started --(atomic take)--> finished.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <pqxx/pqxx>

#include "pg/pool.h"
#include "phasekey/metrics.h"
#include "phasekey/runner.h"
#include "runner/key_store.h"
#include "runner/pg_key_store.h"
#include "support/exposition.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;

constexpr RecoveryPoint kPlaced{"placed"};
constexpr RecoveryPoint kPaid{"paid"};
constexpr RecoveryPoint kRideCreated{"ride_created"};
constexpr RecoveryPoint kCharged{"charged"};
const std::string kBody = R"({"amount": 1200})";

class PgKeyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // one_message: the effect's statement arrived in the message that began
    // its transaction (now() is when BEGIN arrived, statement_timestamp()
    // when the statement's message did).
    db_.Exec("CREATE TABLE effects (key text, phase text, one_message bool)");
    db_.Exec("CREATE TABLE rides (account text, idem_key text, UNIQUE (account, idem_key))");
    db_.Exec("CREATE EXTENSION pageinspect");
    Open();
  }

  // A runner of `flows`; none: the order, note and ride flows below.
  void Open(std::vector<std::shared_ptr<const Flow>> flows = {}) {
    if (flows.empty()) flows = {OrderFlow(), NoteFlow(), RideFlow()};
    runner_.reset();
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 2;
    o.backoff_base = milliseconds(1);
    o.backoff_cap = milliseconds(2);
    metrics_ = Metrics::Create();
    o.metrics = metrics_;
    auto r = Runner::Open(o, std::move(flows));
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    runner_ = std::move(*r);
  }

  // Makes a claimant that finds the claim's gate taken wait for it instead
  // of answering busy, then pass it: the claim statement's own text
  // (KeyClaimDeferred) calls pg_try_advisory_xact_lock, which resolves to
  // the function below once public comes before pg_catalog in the
  // search_path; it waits for the key's advisory lock, then tries it as the
  // gate does. Such a claimant's snapshot is taken before the holder
  // commits and its try comes just after: the window the gate leaves open
  // (a claimant between its snapshot and its try while the holder commits),
  // widened from microseconds to the holder's whole first phase. Runners
  // opened before this call keep their sessions; Open() is called again.
  void WaitAtTheGate() {
    db_.Exec(
        "CREATE FUNCTION public.pg_try_advisory_xact_lock(key bigint) RETURNS boolean LANGUAGE plpgsql AS $$ "
        "BEGIN PERFORM pg_catalog.pg_advisory_xact_lock(key); RETURN pg_catalog.pg_try_advisory_xact_lock(key); "
        "END $$");
    db_.Exec("ALTER DATABASE \"" + db_.name() + "\" SET search_path = public, pg_catalog");
    Open();
  }

  // True once a session of this database waits for an advisory lock (a
  // claimant at the gate, after WaitAtTheGate()).
  bool SomeoneWaitsAtTheGate() {
    return db_.WaitForValue(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
        "1");
  }

  std::shared_ptr<const Flow> OrderFlow() {
    auto place = [this](AtomicContext& ctx) -> PhaseResult {
      if (in_place) in_place(ctx);
      Effect(ctx, "place");
      return GoTo{kPlaced};
    };
    auto pay = [this](const PhaseContext& ctx) -> PhaseResult {
      point_while_paying = db_.Value("SELECT recovery_point FROM phasekey.idempotency_keys WHERE idempotency_key = '" +
                                     ctx.idempotency_key() + "'");
      return GoTo{kPaid, {{"payment_id", "pay_1"}}};
    };
    auto confirm = [this](AtomicContext& ctx) -> PhaseResult {
      Effect(ctx, "confirm");
      return Respond{JsonResponse(201, {{"payment_id", "pay_1"}})};
    };
    Flow::ForeignOptions pay_options;
    pay_options.timeout = milliseconds(2000);
    auto flow = Flow::Builder("order")
                    .Atomic(kStarted, "place", place, {kPlaced})
                    .Foreign(kPlaced, "pay", pay, {kPaid}, pay_options)
                    .Atomic(kPaid, "confirm", confirm, {kFinished})
                    .Build();
    EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
    return *flow;
  }

  std::shared_ptr<const Flow> NoteFlow() {
    auto take = [this](AtomicContext& ctx) -> PhaseResult {
      Effect(ctx, "take");
      return Respond{JsonResponse(201, {{"noted", true}})};
    };
    auto flow = Flow::Builder("note").Atomic(kStarted, "take", take, {kFinished}).Build();
    EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
    return *flow;
  }

  // A ride as the example books it (examples/ride_booking/ride_flow.cc):
  // the first phase inserts the ride into a table of its own, unique on
  // the account and the key, so a second claimant's first phase meets the
  // first one's ride (23505) before it reaches the key row's insert;
  //   started --(atomic create_ride)--> ride_created --(foreign charge)--> charged
  //   --(atomic receipt)--> finished.
  std::shared_ptr<const Flow> RideFlow() {
    auto create_ride = [this](AtomicContext& ctx) -> PhaseResult {
      if (in_create_ride) in_create_ride(ctx);
      try {
        ctx.tx().exec_params0("INSERT INTO rides (account, idem_key) VALUES ($1, $2)", ctx.account(),
                              ctx.idempotency_key());
      } catch (const pqxx::unique_violation&) {
        ++ride_unique_violations;
        throw;
      }
      return GoTo{kRideCreated};
    };
    auto charge = [this](const PhaseContext&) -> PhaseResult {
      if (in_charge) in_charge();
      return GoTo{kCharged};
    };
    auto receipt = [](AtomicContext&) -> PhaseResult { return Respond{JsonResponse(201, {{"ride", true}})}; };
    Flow::ForeignOptions charge_options;
    charge_options.timeout = milliseconds(2000);
    auto flow = Flow::Builder("ride")
                    .Atomic(kStarted, "create_ride", create_ride, {kRideCreated})
                    .Foreign(kRideCreated, "charge", charge, {kCharged}, charge_options)
                    .Atomic(kCharged, "receipt", receipt, {kFinished})
                    .Build();
    EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
    return *flow;
  }

  // The phase's effect: run at once through tx(), or queued to travel with
  // COMMIT (AtomicContext::ExecAtCommit) when queue_effects.
  void Effect(AtomicContext& ctx, const std::string& phase) const {
    const char* insert = "INSERT INTO effects (key, phase, one_message) SELECT $1, $2, now() = statement_timestamp()";
    if (queue_effects) {
      ctx.ExecAtCommit(insert, ctx.idempotency_key(), phase);
    } else {
      ctx.tx().exec_params0(insert, ctx.idempotency_key(), phase);
    }
  }

  Reply Send(const std::string& flow, const std::string& key) {
    return runner_->Execute(flow, Request{"acct", key, "POST", "/" + flow, kBody});
  }

  // The race of the lost-claim tests (AClaimantThatLosesTheKeyAtCommit...),
  // on key `key`.
  void LoseTheKeyAtCommit(const std::string& key) {
    WaitAtTheGate();
    std::promise<void> winner_placing;
    std::atomic<int> placings{0};
    std::string rows_seen_by_loser;
    in_place = [&](AtomicContext& ctx) {
      if (placings++ == 0) {  // the winner, holding the gate
        winner_placing.set_value();
        EXPECT_TRUE(SomeoneWaitsAtTheGate()) << "the loser's claim reached the gate while the winner held it";
        return;
      }
      rows_seen_by_loser =
          ctx.tx()
              .exec_params1("SELECT count(*) FROM phasekey.idempotency_keys WHERE idempotency_key = $1",
                            ctx.idempotency_key())[0]
              .as<std::string>();
    };
    auto winner = std::async(std::launch::async, [&] { return Send("order", key); });
    winner_placing.get_future().wait();
    const Reply lost = Send("order", key);
    const Reply won = winner.get();
    ASSERT_EQ(placings.load(), 2) << "the loser passed the gate and ran its first phase";
    ASSERT_EQ(rows_seen_by_loser, "1") << "the loser's first phase ran after the winner's commit";

    ASSERT_EQ(testing::SampleOf(metrics_->Exposition(), R"(phasekey_fencing_rejections_total{flow="order"})"), 1)
        << "the loser's row insert at COMMIT found the winner's key (PK001)";

    EXPECT_EQ(won.kind, Reply::Kind::kCompleted) << won.detail;
    EXPECT_EQ(lost.kind, Reply::Kind::kInProgress) << lost.detail;
    EXPECT_EQ(db_.Value("SELECT string_agg(phase, ' ' ORDER BY phase) FROM effects"), "confirm place")
        << "the winner's two phases; the loser's first phase rolled back with its claim";
    EXPECT_EQ(db_.Value("SELECT count(*) || ' ' || state || ' ' || attempts FROM phasekey.idempotency_keys "
                        "GROUP BY state, attempts"),
              "1 finished 1");
    const Reply next = Send("order", key);
    EXPECT_EQ(next.kind, Reply::Kind::kReplayed) << "the loser's retry finds the winner's row";
    EXPECT_EQ(db_.Value("SELECT count(*) FROM effects"), "2");
  }

  // Versions of key rows on the table's first page, dead ones included
  // (nothing vacuums a table this small during a test).
  std::string RowVersions() {
    return db_.Value(
        "SELECT count(*) FROM heap_page_items(get_raw_page('phasekey.idempotency_keys', 0)) "
        "WHERE lp_flags = 1");
  }

  TestDatabase db_;
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<Runner> runner_;
  std::function<void(AtomicContext&)> in_place;
  bool queue_effects = false;
  std::function<void(AtomicContext&)> in_create_ride;
  std::function<void()> in_charge;
  std::atomic<int> ride_unique_violations{0};
  std::string point_while_paying;
};

TEST_F(PgKeyStoreTest, AnOrderWritesItsKeyRowTwiceOnceBeforeThePaymentAndOnceWithTheResponse) {
  ASSERT_EQ(Send("order", "o-1").kind, Reply::Kind::kCompleted);
  EXPECT_EQ(point_while_paying, "placed") << "the key was committed at its first move before the provider was called";
  EXPECT_EQ(RowVersions(), "2") << "the first move inserts the row; the finish is the only update";
  EXPECT_EQ(db_.Value("SELECT state || ' ' || attempts FROM phasekey.idempotency_keys"), "finished 1");
  EXPECT_EQ(db_.Value("SELECT count(*) FROM effects"), "2");
}

TEST_F(PgKeyStoreTest, AOnePhaseFlowWritesItsKeyRowOnceAlreadyFinished) {
  ASSERT_EQ(Send("note", "n-1").kind, Reply::Kind::kCompleted);
  EXPECT_EQ(RowVersions(), "1");
  EXPECT_EQ(db_.Value("SELECT state || ' ' || response_status || ' ' || (owner_token IS NULL) "
                      "FROM phasekey.idempotency_keys"),
            "finished 201 true");
  ASSERT_EQ(Send("note", "n-1").kind, Reply::Kind::kReplayed);
  EXPECT_EQ(db_.Value("SELECT count(*) FROM effects"), "1");
}

TEST_F(PgKeyStoreTest, TheRowIdAndStableIdDrawnAtTheClaimAreTheRowsOwn) {
  std::string seen_stable_id;
  in_place = [&](AtomicContext& ctx) { seen_stable_id = ctx.ProviderKey(); };
  ASSERT_EQ(Send("order", "o-2").kind, Reply::Kind::kCompleted);
  const std::string stable_id = db_.Value("SELECT stable_id FROM phasekey.idempotency_keys");
  EXPECT_NE(seen_stable_id.find(stable_id), std::string::npos)
      << "the first phase's provider key (" << seen_stable_id << ") derives from the stored stable_id " << stable_id;
  EXPECT_EQ(db_.Value("SELECT id FROM phasekey.idempotency_keys"),
            db_.Value("SELECT last_value FROM pg_sequences WHERE sequencename = 'idempotency_keys_id_seq'"));
}

// Two requests with the same new key race for real: the winner claims and,
// while it runs its first phase, the loser's claim starts and finds nothing
// committed; the winner commits, the loser passes the gate after it and
// runs its whole first phase after the winner's commit. Its row's insert at
// COMMIT meets the winner's in the unique index (PK001): nothing of its
// transaction is kept and it answers 409.
TEST_F(PgKeyStoreTest, AClaimantThatLosesTheKeyAtCommitKeepsNothingOfItsFirstPhase) { LoseTheKeyAtCommit("o-3"); }

// The same when the first phase's statements travel with COMMIT: they run
// in the message that meets the winner's key, and go with it.
TEST_F(PgKeyStoreTest, AClaimantThatLosesTheKeyAtCommitKeepsNothingOfItsQueuedFirstPhase) {
  queue_effects = true;
  LoseTheKeyAtCommit("o-4");
}

// A later atomic phase whose statements all wait for COMMIT sends BEGIN,
// them, the key's finish and COMMIT as one message: one round trip. The
// first phase's BEGIN went with the claim, before the phase ran.
TEST_F(PgKeyStoreTest, ALaterPhaseWhoseStatementsAllWaitForCommitIsOneMessageWithItsBegin) {
  queue_effects = true;
  ASSERT_EQ(Send("order", "o-5").kind, Reply::Kind::kCompleted);
  EXPECT_EQ(db_.Value("SELECT string_agg(phase || ' ' || one_message, ', ' ORDER BY phase) FROM effects"),
            "confirm true, place false");
  EXPECT_EQ(db_.Value("SELECT state || ' ' || attempts FROM phasekey.idempotency_keys"), "finished 1");
}

// A later atomic phase's transaction sends BEGIN only when a statement needs
// it; a statement run at once through tx() is inside the block all the same,
// so a phase that answers Retry keeps nothing, queued or not.
TEST_F(PgKeyStoreTest, ALaterPhaseThatAnswersRetryKeepsNothingOfItsStatementsQueuedOrRunAtOnce) {
  std::atomic<int> confirms{0};
  auto flow = Flow::Builder("twice")
                  .Atomic(kStarted, "place", [](AtomicContext&) -> PhaseResult { return GoTo{kPlaced}; }, {kPlaced})
                  .Atomic(kPlaced, "confirm",
                          [&](AtomicContext& ctx) -> PhaseResult {
                            Effect(ctx, "confirm");
                            if (confirms++ % 2 == 0) return Retry("not yet");
                            return Respond{JsonResponse(201, {{"confirmed", true}})};
                          },
                          {kFinished})
                  .Build();
  ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
  Open({*flow});
  for (const bool queued : {false, true}) {
    queue_effects = queued;
    const std::string key = queued ? "t-queued" : "t-at-once";
    const Reply reply = Send("twice", key);
    EXPECT_EQ(reply.kind, Reply::Kind::kCompleted) << reply.detail;
    EXPECT_EQ(db_.Value("SELECT count(*) FROM effects WHERE key = '" + key + "'"), "1")
        << "the run that answered Retry kept nothing";
  }
  EXPECT_EQ(confirms.load(), 4);
}

// A queued statement commits only as tx()'s would: a phase that answers
// Retry keeps nothing of what it queued.
TEST_F(PgKeyStoreTest, AStatementQueuedByAPhaseThatAnswersRetryIsNotKept) {
  queue_effects = true;
  std::atomic<int> places{0};
  auto flow = Flow::Builder("retrying")
                  .Atomic(kStarted, "place",
                          [&](AtomicContext& ctx) -> PhaseResult {
                            if (places++ == 0) {
                              ctx.ExecAtCommit("INSERT INTO effects (key, phase) VALUES ($1, 'retried')",
                                               ctx.idempotency_key());
                              return Retry("not yet");
                            }
                            Effect(ctx, "place");
                            return Respond{JsonResponse(201, {{"placed", true}})};
                          },
                          {kFinished})
                  .Build();
  ASSERT_TRUE(flow.has_value()) << flow.error().ToString();
  Open({*flow});
  const Reply reply = Send("retrying", "q-1");
  ASSERT_EQ(places.load(), 2) << "the phase answered Retry once and ran again";
  EXPECT_EQ(reply.kind, Reply::Kind::kCompleted) << reply.detail;
  EXPECT_EQ(db_.Value("SELECT string_agg(phase, ' ') FROM effects"), "place");
}

// A queued statement the server refuses fails the phase as a refused tx()
// statement does: nothing of the transaction is kept, the claim with it,
// and the phase runs again; a text with a second statement is refused
// before anything is sent.
TEST_F(PgKeyStoreTest, AQueuedStatementThatFailsOrHoldsTwoStatementsKeepsNothingAndThePhaseRunsAgain) {
  queue_effects = true;
  const std::pair<const char*, const char*> cases[] = {{"bad-table", "INSERT INTO no_such_table VALUES ($1)"},
                                                       {"bad-two", "INSERT INTO effects (key) VALUES ($1); COMMIT"}};
  for (const auto& [key, bad] : cases) {
    SCOPED_TRACE(bad);
    db_.Exec("TRUNCATE effects");
    std::atomic<int> places{0};
    in_place = [&](AtomicContext& ctx) {
      if (places++ == 0) ctx.ExecAtCommit(bad, ctx.idempotency_key());
    };
    const Reply reply = Send("order", key);
    ASSERT_EQ(places.load(), 2) << "the failed first run was tried again";
    EXPECT_EQ(reply.kind, Reply::Kind::kCompleted) << reply.detail;
    EXPECT_EQ(db_.Value("SELECT string_agg(phase, ' ' ORDER BY phase) FROM effects"), "confirm place");
    EXPECT_EQ(db_.Value(std::string("SELECT attempts || ' ' || failures FROM phasekey.idempotency_keys WHERE "
                                    "idempotency_key = '") +
                        key + "'"),
              "1 0")
        << "the failed run's claim was not kept";
  }
}

// The same race when the first phase has a unique row of its own, as the
// ride example's does: the loser's first phase meets the winner's ride
// (23505) before its key row's insert. The claim is tried again, finds the
// winner's row and answers 409 while the winner charges (a replay once it
// has answered); the loser keeps nothing.
TEST_F(PgKeyStoreTest, AClaimantWhoseFirstPhaseMeetsTheWinnersRowAnswersFromTheWinnersKeyAndKeepsNothing) {
  WaitAtTheGate();
  std::promise<void> winner_creating, winner_charging, charge;
  std::shared_future<void> charge_may_go = charge.get_future().share();
  std::atomic<int> creations{0};
  std::string rides_seen_by_loser;
  in_create_ride = [&](AtomicContext& ctx) {
    if (creations++ == 0) {  // the winner, holding the gate
      winner_creating.set_value();
      EXPECT_TRUE(SomeoneWaitsAtTheGate()) << "the loser's claim reached the gate while the winner held it";
      return;
    }
    rides_seen_by_loser = ctx.tx().exec("SELECT count(*) FROM rides")[0][0].as<std::string>();
  };
  in_charge = [&, charge_may_go] {
    winner_charging.set_value();
    charge_may_go.wait();
  };
  auto winner = std::async(std::launch::async, [&] { return Send("ride", "r-1"); });
  winner_creating.get_future().wait();
  const Reply lost = Send("ride", "r-1");
  const bool charging = winner_charging.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  const std::string key_while_charging =
      db_.Value("SELECT recovery_point || ' ' || attempts FROM phasekey.idempotency_keys");
  charge.set_value();
  const Reply won = winner.get();
  ASSERT_EQ(creations.load(), 2) << "the loser passed the gate and ran its first phase";
  ASSERT_EQ(rides_seen_by_loser, "1") << "after the winner's commit";
  ASSERT_EQ(ride_unique_violations.load(), 1) << "the loser's ride insert failed with 23505";
  ASSERT_TRUE(charging);

  EXPECT_EQ(lost.kind, Reply::Kind::kInProgress) << "the winner holds the key while it charges: " << lost.detail;
  EXPECT_GE(lost.retry_after_s, 1);
  EXPECT_EQ(key_while_charging, "ride_created 1") << "the winner's row, as the winner committed it";
  EXPECT_EQ(won.kind, Reply::Kind::kCompleted) << won.detail;
  EXPECT_EQ(Send("ride", "r-1").kind, Reply::Kind::kReplayed);
  EXPECT_EQ(creations.load(), 2) << "no claim after the loser's first ran a phase";
  EXPECT_EQ(db_.Value("SELECT count(*) FROM rides"), "1");
  EXPECT_EQ(db_.Value("SELECT count(*) || ' ' || state || ' ' || attempts FROM phasekey.idempotency_keys "
                      "GROUP BY state, attempts"),
            "1 finished 1");
}

// Fencing on its own, through the KeyStore: holder A's lease runs out and B
// takes the key over at the same recovery point, `started`, and has not
// moved yet. Nothing but the owner token tells A's writes from B's then (the
// point and the state still match A's fence), so each of A's fenced writes
// must be refused by the token alone, and the row must stay B's.
class StaleHolderTest : public ::testing::Test {
 protected:
  static constexpr char kStale[] = "00000000-0000-4000-8000-00000000000a";
  static constexpr char kLive[] = "00000000-0000-4000-8000-00000000000b";

  void SetUp() override {
    db_.Exec("CREATE TABLE effects (holder text)");
    DatabaseOptions o;
    o.url = db_.url();
    o.pool_size = 2;
    auto pool = pg::Pool::Open(o);
    ASSERT_TRUE(pool.has_value()) << pool.error().ToString();
    keys_ = runner::NewPgKeyStore(std::move(*pool), std::make_shared<seal::Sealer>());

    runner::ClaimParams p;
    p.account = "acct";
    p.idempotency_key = "k-1";
    p.flow = "order";
    p.method = "POST";
    p.path = "/order";
    p.canonical_body = "{}";
    p.fingerprint_hex = std::string(64, '0');
    p.owner_token = kStale;
    p.lease = milliseconds(1);  // runs out at once
    std::optional<runner::ClaimedRow> claimed;
    ASSERT_TRUE(
        Transact([&](runner::KeyTx& tx) { claimed = tx.KeyClaim(p).claimed; }, pg::Tx::Start::kWithFirstStatement)
            .ok());
    ASSERT_TRUE(claimed.has_value());
    ASSERT_TRUE(db_.WaitForValue("SELECT (lease_expires_at <= now())::text FROM phasekey.idempotency_keys", "true"));

    std::optional<int> taken;
    ASSERT_TRUE(Transact([&](runner::KeyTx& tx) {
                  ASSERT_TRUE(tx.KeyGetForUpdate(0, "acct", "k-1").has_value());
                  taken = tx.KeyTakeOver(0, "acct", "k-1", kLive, milliseconds(60000));
                }).ok());
    ASSERT_EQ(taken, 2) << "B took the expired lease over";
    stale_ = runner::Fence{0, "acct", "k-1", claimed->id, kStale, "started"};
    live_ = stale_;
    live_.owner_token = kLive;
    ASSERT_EQ(Row(), Held(kLive, "started"));
    lease_before_ = Lease();
  }

  Status Transact(const std::function<void(runner::KeyTx&)>& fn, pg::Tx::Start start = pg::Tx::Start::kAtOnce) {
    return keys_->Transact(fn, start);
  }

  // The holder's phase work, in its transaction.
  static void Work(runner::KeyTx& tx, const std::string& holder) {
    tx.phase_tx()->exec_params0("INSERT INTO effects (holder) VALUES ($1)", holder);
  }

  std::string Row() {
    return db_.Value(
        "SELECT concat_ws(' ', owner_token, state, recovery_point, response_status, last_error, failures) "
        "FROM phasekey.idempotency_keys");
  }
  static std::string Held(const std::string& token, const std::string& point) {
    return token + " active " + point + " 0";
  }
  std::string Lease() { return db_.Value("SELECT lease_expires_at::text FROM phasekey.idempotency_keys"); }
  std::string Effects() { return db_.Value("SELECT coalesce(string_agg(holder, ' '), '') FROM effects"); }

  TestDatabase db_;
  std::unique_ptr<runner::KeyStore> keys_;
  runner::Fence stale_, live_;
  std::string lease_before_;
};

TEST_F(StaleHolderTest, AStaleHoldersMoveIsRefusedWhileTheNewHolderIsStillAtTheSamePoint) {
  const Status s = Transact([&](runner::KeyTx& tx) {
    Work(tx, "A");
    tx.KeyMove(stale_, "placed", {{"placed", "by A"}}, milliseconds(60000));
  });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(Row(), Held(kLive, "started"));
  EXPECT_EQ(db_.Value("SELECT outcomes::text FROM phasekey.idempotency_keys"), "{}");
  EXPECT_EQ(Effects(), "") << "nothing of A's phase was kept";

  const Status b = Transact([&](runner::KeyTx& tx) {
    Work(tx, "B");
    tx.KeyMove(live_, "placed", {}, milliseconds(60000));
  });
  ASSERT_TRUE(b.ok()) << "the same move under B's token commits: " << b.ToString();
  EXPECT_EQ(Row(), Held(kLive, "placed"));
  EXPECT_EQ(Effects(), "B");
}

TEST_F(StaleHolderTest, AStaleHoldersFinishIsRefusedWhileTheNewHolderIsStillAtTheSamePoint) {
  const Status s = Transact([&](runner::KeyTx& tx) {
    Work(tx, "A");
    tx.KeyFinish(stale_, {}, JsonResponse(201, {{"by", "A"}}), std::nullopt, runner::ErrorClass::kTerminal);
  });
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(Row(), Held(kLive, "started")) << "no response stored, still B's";
  EXPECT_EQ(Effects(), "");

  ASSERT_TRUE(Transact([&](runner::KeyTx& tx) {
                tx.KeyFinish(live_, {}, JsonResponse(201, {{"by", "B"}}), std::nullopt, runner::ErrorClass::kTerminal);
              }).ok());
  EXPECT_EQ(Row(), "finished finished 201 0");
}

TEST_F(StaleHolderTest, AStaleHoldersReleaseIsRefusedWhileTheNewHolderIsStillAtTheSamePoint) {
  bool released = true;
  ASSERT_TRUE(Transact([&](runner::KeyTx& tx) {
                released = tx.KeyRelease(stale_, runner::Leftover{"started"}, "A failed",
                                         runner::ErrorClass::kUnclassified, milliseconds(1));
              }).ok());
  EXPECT_FALSE(released);
  EXPECT_EQ(Row(), Held(kLive, "started")) << "B keeps its lease; no error or failure counted";
  EXPECT_EQ(Lease(), lease_before_);

  ASSERT_TRUE(Transact([&](runner::KeyTx& tx) {
                released = tx.KeyRelease(live_, runner::Leftover{"started"}, "B failed",
                                         runner::ErrorClass::kUnclassified, milliseconds(1));
              }).ok());
  EXPECT_TRUE(released);
  EXPECT_EQ(Row(), "active started B failed 1");
}

TEST_F(StaleHolderTest, AStaleHoldersStopIsRefusedWhileTheNewHolderIsStillAtTheSamePoint) {
  bool stopped = true;
  ASSERT_TRUE(Transact([&](runner::KeyTx& tx) {
                stopped = tx.KeyStop(stale_, runner::Leftover{"started"}, runner::KeyState::kDead, "A gave up",
                                     runner::ErrorClass::kGivenUp);
              }).ok());
  EXPECT_FALSE(stopped);
  EXPECT_EQ(Row(), Held(kLive, "started")) << "still active and B's";
  EXPECT_EQ(Lease(), lease_before_);

  ASSERT_TRUE(Transact([&](runner::KeyTx& tx) {
                stopped = tx.KeyStop(live_, runner::Leftover{"started"}, runner::KeyState::kDead, "B gave up",
                                     runner::ErrorClass::kGivenUp);
              }).ok());
  EXPECT_TRUE(stopped);
  EXPECT_EQ(Row(), "dead started B gave up 0");
}

TEST_F(StaleHolderTest, AStaleHoldersLeaseRenewalIsRefusedWhileTheNewHolderIsStillAtTheSamePoint) {
  bool renewed = true;
  ASSERT_TRUE(Transact([&](runner::KeyTx& tx) { renewed = tx.KeyRenewLease(stale_, milliseconds(600000)); }).ok());
  EXPECT_FALSE(renewed);
  EXPECT_EQ(Row(), Held(kLive, "started"));
  EXPECT_EQ(Lease(), lease_before_) << "B's lease is neither renewed nor changed by A";

  ASSERT_TRUE(Transact([&](runner::KeyTx& tx) { renewed = tx.KeyRenewLease(live_, milliseconds(600000)); }).ok());
  EXPECT_TRUE(renewed);
  EXPECT_NE(Lease(), lease_before_);
}

}  // namespace
}  // namespace phasekey
