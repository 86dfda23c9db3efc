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
#include <pqxx/pqxx>

#include "phasekey/runner.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;

constexpr RecoveryPoint kPlaced{"placed"};
constexpr RecoveryPoint kPaid{"paid"};
const std::string kBody = R"({"amount": 1200})";

class PgKeyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_.Exec("CREATE TABLE effects (key text, phase text)");
    db_.Exec("CREATE EXTENSION pageinspect");
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 2;
    o.backoff_base = milliseconds(1);
    o.backoff_cap = milliseconds(2);
    auto r = Runner::Open(o, {OrderFlow(), NoteFlow()});
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    runner_ = std::move(*r);
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

  static void Effect(AtomicContext& ctx, const std::string& phase) {
    ctx.tx().exec_params0("INSERT INTO effects (key, phase) VALUES ($1, $2)", ctx.idempotency_key(), phase);
  }

  Reply Send(const std::string& flow, const std::string& key) {
    return runner_->Execute(flow, Request{"acct", key, "POST", "/" + flow, kBody});
  }

  // Versions of key rows on the table's first page, dead ones included
  // (nothing vacuums a table this small during a test).
  std::string RowVersions() {
    return db_.Value(
        "SELECT count(*) FROM heap_page_items(get_raw_page('phasekey.idempotency_keys', 0)) "
        "WHERE lp_flags = 1");
  }


  TestDatabase db_;
  std::unique_ptr<Runner> runner_;
  std::function<void(AtomicContext&)> in_place;
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

// Another claimant commits the key while our first phase runs (as one whose
// claim passed the gate just after our snapshot would): our row's insert at
// COMMIT meets the unique index and nothing of our transaction is kept.
TEST_F(PgKeyStoreTest, AClaimantThatLosesTheKeyAtCommitKeepsNothingOfItsFirstPhase) {
  in_place = [&](AtomicContext& ctx) {
    in_place = nullptr;
    pqxx::connection other(db_.url());
    pqxx::work w(other);
    w.exec_params0(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, "
        "request_path, request_body, request_fingerprint, state, recovery_point, response_status, "
        "response_headers, response_body, finished_at) "
        "VALUES ('acct', $1, $2, 'order', 'POST', '/order', '{}', decode(repeat('00', 32), 'hex'), 'finished', "
        "'finished', 201, '[]', convert_to('{\"by\":\"other\"}', 'UTF8'), now())",
        ctx.idempotency_key(), ctx.bucket());
    w.commit();
  };
  const Reply lost = Send("order", "o-3");
  EXPECT_EQ(lost.kind, Reply::Kind::kInProgress) << lost.detail;
  EXPECT_EQ(db_.Value("SELECT count(*) FROM effects"), "0") << "the first phase's work rolled back with the claim";
  EXPECT_EQ(point_while_paying, "") << "the provider was never called";
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys"), "1");
  const Reply next = Send("order", "o-3");
  EXPECT_EQ(next.kind, Reply::Kind::kMismatch) << "the other claimant's row answers (its fingerprint differs)";
}

}  // namespace
}  // namespace phasekey
