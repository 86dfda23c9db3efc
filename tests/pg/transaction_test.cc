// pg::Tx: BEGIN with the first statement, queued statements with COMMIT,
// what a failing statement leaves behind, and a phase that ends work().
//
// "Same round trip" is checked on the server: statement_timestamp() is when
// the server received the client's latest message and now() when the
// transaction's BEGIN was received, so the two are equal exactly when BEGIN
// and the statement arrived in one message.
#include "pg/transaction.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <pqxx/pqxx>

#include "pg/pool.h"
#include "support/child_process.h"
#include "support/prerequisites.h"
#include "support/test_database.h"
#include "support/wait.h"

namespace phasekey::pg {
namespace {

using testing::TestDatabase;

constexpr const char* kSameMessage = "SELECT now() = statement_timestamp()";

TEST(TxTest, ABeginThatWaitsForTheFirstStatementTravelsInTheSameMessage) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  Tx tx(conn, Tx::Start::kWithFirstStatement);
  EXPECT_TRUE(tx.begin_pending());
  EXPECT_TRUE(tx.ExecFirst(kSameMessage)[0][0].as<bool>());
  EXPECT_FALSE(tx.begin_pending());
  // A block is open: a later statement belongs to the transaction begun
  // then (outside a block, each statement would start its own).
  EXPECT_FALSE(tx.work().exec1(kSameMessage)[0].as<bool>());
  tx.commit();
}

TEST(TxTest, ABeginSentAtOnceArrivesInAMessageOfItsOwn) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  Tx tx(conn, Tx::Start::kAtOnce);
  EXPECT_FALSE(tx.begin_pending());
  EXPECT_FALSE(tx.ExecFirst(kSameMessage)[0][0].as<bool>());  // the check can fail
  tx.commit();
}

TEST(TxTest, QueuedStatementsRunWithCommitAndAloneMakeOneMessage) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  pqxx::nontransaction(conn).exec0("CREATE TABLE seen (same_message bool)");
  {
    Tx tx(conn, Tx::Start::kWithFirstStatement);
    tx.ExecWithCommit("INSERT INTO seen SELECT now() = statement_timestamp()");
    tx.commit();
  }
  EXPECT_EQ(db.Value("SELECT string_agg(same_message::text, ',') FROM seen"), "true");
}

TEST(TxTest, AFailingQueuedStatementCommitsNothingAndLeavesTheConnectionIdle) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  pqxx::nontransaction(conn).exec0("CREATE TABLE t (v int)");
  {
    Tx tx(conn, Tx::Start::kAtOnce);
    tx.work().exec0("INSERT INTO t VALUES (1)");
    tx.ExecWithCommit("SELECT 1 / 0");
    EXPECT_THROW(tx.commit(), pqxx::sql_error);
  }
  EXPECT_EQ(db.Value("SELECT count(*) FROM t"), "0");
  // No block left open or aborted on the connection: the next one works.
  pqxx::work next(conn);
  EXPECT_EQ(next.exec1("SELECT 1")[0].as<int>(), 1);
  next.commit();
}

TEST(TxTest, AStatementThroughWorkBeforeTheFirstBeginsTheBlockSoARollbackUndoesIt) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  pqxx::nontransaction(conn).exec0("CREATE TABLE t (v int)");
  {
    Tx tx(conn, Tx::Start::kWithFirstStatement);
    tx.work().exec0("INSERT INTO t VALUES (1)");
    EXPECT_FALSE(tx.begin_pending());
    tx.abort();
  }
  // Outside a block the INSERT would have committed by itself.
  EXPECT_EQ(db.Value("SELECT count(*) FROM t"), "0");
}

TEST(TxTest, AQueuedStatementEndingInALineCommentDoesNotHideCommit) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  pqxx::nontransaction(conn).exec0("CREATE TABLE t (v int)");
  {
    Tx tx(conn, Tx::Start::kWithFirstStatement);
    tx.ExecWithCommit("INSERT INTO t VALUES (1) -- the first ride");
    tx.ExecWithCommit("INSERT INTO t VALUES (2)");
    tx.commit();
  }
  EXPECT_EQ(db.Value("SELECT string_agg(v::text, ',' ORDER BY v) FROM t"), "1,2");
  pqxx::work next(conn);  // COMMIT ran: no block is left open on the connection
  EXPECT_EQ(next.exec1("SELECT 1")[0].as<int>(), 1);
  next.commit();
}

TEST(TxTest, ATransactionAbortedBeforeItsFirstStatementSendsNothing) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  { Tx tx(conn, Tx::Start::kWithFirstStatement); }  // aborted by its destructor
  pqxx::work next(conn);
  EXPECT_EQ(next.exec1("SELECT 1")[0].as<int>(), 1);
  next.commit();
}

// A handle for the statement "Echo" that these tests prepare themselves
// (prepared mode: its text is never asked of the catalog).
constexpr sql::QueryRef<3> kEcho{"Echo", 0};

TEST(TxTest, ExecuteTextQuotesEveryArgumentAsALiteral) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  pqxx::nontransaction(conn).exec0(
      "PREPARE \"Echo\" AS SELECT $1::text || '|' || $2::int || '|' || coalesce($3, 'null')");
  Tx tx(conn, Tx::Start::kWithFirstStatement);
  const std::string hostile = "a'); DROP TABLE x; -- \\' \\\\ '' \xc3\xa9 \t\n";
  const std::string text = ExecuteText(tx, kEcho, hostile, 7, std::optional<std::string>());
  EXPECT_EQ(tx.ExecFirst(text)[0][0].as<std::string>(), hostile + "|7|null");
  tx.commit();
}

TEST(TxTest, ExecuteTextRefusesTextThatIsNotValidInTheConnectionsEncoding) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  ASSERT_EQ(std::string(conn.get_client_encoding()), "UTF8");
  Tx tx(conn, Tx::Start::kWithFirstStatement);
  const std::string broken = "ok \xc3' OR '1'='1";  // a lead byte without its continuation, then a quote
  EXPECT_THROW(ExecuteText(tx, kEcho, broken, 7, std::optional<std::string>()), pqxx::argument_error);
}

TEST(TxTest, AFencedStatementThatMatchesNoRowIsALostLeaseForThePool) {
  TestDatabase db;
  DatabaseOptions o;
  o.url = db.url();
  o.pool_size = 1;
  auto pool = Pool::Open(o);
  ASSERT_TRUE(pool.has_value()) << pool.error().ToString();
  Status s = (*pool)->Transact([](Tx& tx) { tx.ExecWithCommit("SELECT phasekey.fence_held(0)"); },
                               Tx::Start::kWithFirstStatement);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("PK001"), std::string::npos) << s.ToString();
  Status ok = (*pool)->Transact([](Tx& tx) { tx.ExecWithCommit("SELECT phasekey.fence_held(1)"); });
  EXPECT_TRUE(ok.ok()) << ok.ToString();
}

// A body that catches a failed statement and goes on: the block is aborted,
// so COMMIT would only roll it back. commit() says so instead of returning.
TEST(TxTest, ACommitAfterACaughtFailureThrowsInsteadOfReportingTheRollbackAsACommit) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  pqxx::nontransaction(conn).exec0("CREATE TABLE t (v int)");
  {
    Tx tx(conn, Tx::Start::kAtOnce);
    tx.work().exec0("INSERT INTO t VALUES (1)");
    EXPECT_THROW(tx.work().exec("SELECT 1 / 0"), pqxx::sql_error);
    try {
      tx.commit();
      ADD_FAILURE() << "commit() of an aborted block returned";
    } catch (const pqxx::sql_error& e) {
      EXPECT_EQ(e.sqlstate(), "25P02") << e.what();
    }
  }
  EXPECT_EQ(db.Value("SELECT count(*) FROM t"), "0");
  pqxx::work next(conn);
  EXPECT_EQ(next.exec1("SELECT 1")[0].as<int>(), 1) << "the block was left open";
  next.commit();
}

// What AtomicContext::tx() hands a phase is work(). A phase that commits or
// aborts it ends nothing on the server; EndPhase() finds out and rolls the
// block back, so nothing of it is kept and the connection is idle again.
TEST(TxTest, APhaseThatCommitsOrAbortsWorkIsFoundAndRolledBack) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  pqxx::nontransaction(conn).exec0("CREATE TABLE t (v int)");
  for (const std::string how : {"commit", "abort"}) {
    {
      Tx tx(conn, Tx::Start::kWithFirstStatement);
      tx.ExecFirst("INSERT INTO t VALUES (1)");
      pqxx::transaction_base& phase = tx.work();
      phase.exec0("INSERT INTO t VALUES (2)");
      if (how == "commit") phase.commit();
      if (how == "abort") phase.abort();
      EXPECT_THROW(phase.exec0("INSERT INTO t VALUES (3)"), pqxx::usage_error) << how;
      EXPECT_TRUE(tx.EndPhase()) << how;
      EXPECT_TRUE(tx.phase_ended_it()) << how;
      EXPECT_THROW(tx.commit(), pqxx::usage_error) << how;
    }
    EXPECT_EQ(db.Value("SELECT count(*) FROM t"), "0") << how;
    pqxx::work next(conn);
    EXPECT_EQ(next.exec1("SELECT 1")[0].as<int>(), 1) << how << ": the block was left open";
    next.commit();
  }
}

// The check after every phase costs no round trip: it returns while the
// backend is frozen by SIGSTOP. The transaction then goes on as usual.
TEST(TxTest, APhaseThatLeavesWorkOpenIsToldSoWithoutAskingTheServer) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  pqxx::nontransaction(conn).exec0("CREATE TABLE t (v int)");
  {
    Tx tx(conn, Tx::Start::kWithFirstStatement);
    const pid_t backend = tx.ExecFirst("SELECT pg_backend_pid()")[0][0].as<int>();
    tx.work().exec0("INSERT INTO t VALUES (1)");
    if (kill(backend, SIGSTOP) != 0) {
      PHASEKEY_SKIP_OR_FAIL_IN_CI() << "cannot stop backend " << backend << ": " << std::strerror(errno);
    }
    ASSERT_TRUE(testing::WaitUntil([&] { return testing::ProcessState(backend) == 'T'; }, std::chrono::seconds(10)))
        << "the backend was not stopped";
    auto ended = std::async(std::launch::async, [&] { return tx.EndPhase(); });
    const bool returned = ended.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
    kill(backend, SIGCONT);
    ASSERT_TRUE(returned) << "EndPhase() waited for the frozen server";
    EXPECT_FALSE(ended.get());
    EXPECT_FALSE(tx.phase_ended_it());
    tx.ExecWithCommit("INSERT INTO t VALUES (2)");
    tx.commit();
  }
  EXPECT_EQ(db.Value("SELECT string_agg(v::text, ',' ORDER BY v) FROM t"), "1,2");
}

// A Tx converts to the libpqxx transaction it runs its statements in, so
// code written for pqxx::transaction_base& (pg::Exec, the pool's callers)
// takes one.
TEST(TxTest, ATxIsUsedWhereALibpqxxTransactionIsExpected) {
  TestDatabase db(TestDatabase::Schema::kEmpty);
  pqxx::connection conn(db.url());
  Tx tx(conn, Tx::Start::kAtOnce);
  pqxx::transaction_base& base = tx;
  EXPECT_EQ(&base, &tx.work());
  EXPECT_EQ(base.exec1("SELECT 6 * 7")[0].as<int>(), 42);
  tx.commit();
}

}  // namespace
}  // namespace phasekey::pg
