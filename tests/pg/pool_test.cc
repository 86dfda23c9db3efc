#include "pg/pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <pqxx/pqxx>
#include <thread>

#include "sql/sql_catalog.h"
#include "support/test_database.h"

namespace phasekey::pg {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::TestDatabase;

std::unique_ptr<Pool> OpenPool(const std::string& url, std::size_t size, milliseconds checkout = milliseconds(200),
                               milliseconds deadline = milliseconds(5000)) {
  DatabaseOptions o;
  o.url = url;
  o.pool_size = size;
  o.checkout_timeout = checkout;
  o.call_deadline = deadline;
  auto pool = Pool::Open(o);
  EXPECT_TRUE(pool.has_value()) << (pool ? "" : pool.error().ToString());
  return pool ? std::move(*pool) : nullptr;
}

TEST(PoolTest, CommitsATransaction) {
  TestDatabase db;
  auto pool = OpenPool(db.url(), 2);
  ASSERT_TRUE(pool);
  ASSERT_TRUE(pool->Transact([](pqxx::transaction_base& tx) { tx.exec0("CREATE TABLE t (v int)"); }).ok());
  ASSERT_TRUE(pool->Transact([](pqxx::transaction_base& tx) { tx.exec0("INSERT INTO t VALUES (1)"); }).ok());
  int count = 0;
  ASSERT_TRUE(
      pool->Transact([&](pqxx::transaction_base& tx) { count = tx.exec1("SELECT count(*) FROM t")[0].as<int>(); })
          .ok());
  EXPECT_EQ(count, 1);
}

TEST(PoolTest, CheckoutTimesOutWhenEveryConnectionIsLeased) {
  TestDatabase db;
  auto pool = OpenPool(db.url(), 1, milliseconds(300));
  ASSERT_TRUE(pool);
  auto held = pool->Acquire();
  ASSERT_TRUE(held.has_value());
  const auto start = steady_clock::now();
  auto second = pool->Acquire();
  const auto waited = steady_clock::now() - start;
  ASSERT_FALSE(second.has_value());
  EXPECT_TRUE(second.error().IsRetryable()) << second.error().ToString();
  EXPECT_NE(second.error().message().find("no free database connection"), std::string::npos);
  EXPECT_GE(waited, milliseconds(290));
  EXPECT_LT(waited, milliseconds(3000));
}

TEST(PoolTest, AReturnedConnectionServesTheNextWaiter) {
  TestDatabase db;
  auto pool = OpenPool(db.url(), 1, milliseconds(5000));
  ASSERT_TRUE(pool);
  std::thread releaser;
  {
    auto held = pool->Acquire();
    ASSERT_TRUE(held.has_value());
    releaser = std::thread([h = std::move(*held)]() mutable {
      std::this_thread::sleep_for(milliseconds(200));
      (void)h;  // returned when the thread's copy dies
    });
  }
  auto next = pool->Acquire();
  EXPECT_TRUE(next.has_value());
  releaser.join();
}

TEST(PoolTest, AQueryHeldPastItsDeadlineFailsWithinDeadlinePlusOneSecond) {
  TestDatabase db;
  auto pool = OpenPool(db.url(), 1, milliseconds(1000), milliseconds(1000));
  ASSERT_TRUE(pool);
  const auto start = steady_clock::now();
  Status s = pool->Transact([](pqxx::transaction_base& tx) { tx.exec("SELECT pg_sleep(30)"); });
  const auto took = steady_clock::now() - start;
  EXPECT_TRUE(s.IsDeadlineExceeded()) << s.ToString();
  EXPECT_LT(took, milliseconds(2000));
  EXPECT_EQ(pool->open_connections(), 0u) << "the timed-out connection must be thrown away";
  // The pool recovers with a fresh connection.
  EXPECT_TRUE(pool->Transact([](pqxx::transaction_base& tx) { tx.exec1("SELECT 1"); }).ok());
}

// What a write meets on the old primary after a failover: a server that has
// become a standby is read-only (SQLSTATE 25006). Here one session is made
// read-only, which the server answers the same way.
TEST(PoolTest, AConnectionToAReadOnlyServerIsDiscardedNotReused) {
  TestDatabase db;
  auto pool = OpenPool(db.url(), 2);
  ASSERT_TRUE(pool);
  ASSERT_TRUE(pool->Transact([](pqxx::transaction_base& tx) { tx.exec0("CREATE TABLE t (v int)"); }).ok());
  ASSERT_TRUE(pool->Run([](pqxx::connection& c) {
                    pqxx::nontransaction n(c);
                    n.exec0("SET SESSION default_transaction_read_only = on");
                  })
                  .ok());
  ASSERT_EQ(pool->open_connections(), 1u);
  Status s = pool->Transact([](pqxx::transaction_base& tx) { tx.exec0("INSERT INTO t VALUES (1)"); });
  EXPECT_TRUE(s.IsRetryable()) << s.ToString();
  EXPECT_NE(s.message().find("25006"), std::string::npos) << s.ToString();
  EXPECT_EQ(pool->open_connections(), 0u) << "the read-only connection must not go back to the pool";
  EXPECT_EQ(pool->discards(), 1u);
  Status again = pool->Transact([](pqxx::transaction_base& tx) { tx.exec0("INSERT INTO t VALUES (2)"); });
  EXPECT_TRUE(again.ok()) << "a fresh connection serves the retry: " << again.ToString();
}

// A failover or a server restart ends every connection at once: after the
// first call that finds its connection dead, the pool drops the idle ones
// too, so the retry (and every later call) gets a new connection instead of
// failing once per stale one.
TEST(PoolTest, AServerThatDroppedItsConnectionsEmptiesThePoolAtTheFirstFailure) {
  TestDatabase db;
  auto pool = OpenPool(db.url(), 3);
  ASSERT_TRUE(pool);
  {
    auto a = pool->Acquire(), b = pool->Acquire(), c = pool->Acquire();
    ASSERT_TRUE(a && b && c);
  }
  ASSERT_EQ(pool->open_connections(), 3u);
  {
    pqxx::connection admin(db.url());
    pqxx::nontransaction n(admin);
    const auto killed = n.exec1(
                             "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                             "WHERE datname = current_database() AND pid <> pg_backend_pid()")[0]
                            .as<int>();
    ASSERT_EQ(killed, 3);
  }
  Status s = pool->Transact([](pqxx::transaction_base& tx) { tx.exec1("SELECT 1"); });
  EXPECT_TRUE(s.IsRetryable()) << s.ToString();
  EXPECT_EQ(pool->open_connections(), 0u) << "the two idle connections to the gone server must be dropped too";
  for (int i = 0; i < 3; ++i) {
    Status next = pool->Transact([](pqxx::transaction_base& tx) { tx.exec1("SELECT 1"); });
    EXPECT_TRUE(next.ok()) << "call " << i << ": " << next.ToString();
  }
}

TEST(PoolTest, AConnectionLeasedWhenTheServerFailedIsClosedWhenReturned) {
  TestDatabase db;
  auto pool = OpenPool(db.url(), 2);
  ASSERT_TRUE(pool);
  {
    auto held = pool->Acquire();
    ASSERT_TRUE(held.has_value());
    pool->DiscardAllConnections();
    EXPECT_EQ(pool->open_connections(), 1u) << "a leased connection is not closed under its user";
  }
  EXPECT_EQ(pool->open_connections(), 0u);
  EXPECT_TRUE(pool->Transact([](pqxx::transaction_base& tx) { tx.exec1("SELECT 1"); }).ok());
  EXPECT_EQ(pool->open_connections(), 1u) << "connections opened after the discard are kept";
}

// A multi-host URL (docs/deployment.md) whose first server is down: libpq
// moves on to the next, for the first connection and for every later one.
TEST(PoolTest, AMultiHostUrlReachesTheServerPastADownOne) {
  TestDatabase db;
  const std::string& url = db.url();
  const auto at = url.find('@');
  if (!url.starts_with("postgresql://") || at == std::string::npos || url.find(',') != std::string::npos) {
    GTEST_SKIP() << "needs a single-host postgresql://user@host:port/db test URL, got another form";
  }
  // Port 1 on loopback: nothing listens there, the connection is refused.
  const std::string multi = url.substr(0, at + 1) + "127.0.0.1:1," + url.substr(at + 1);
  auto pool = OpenPool(multi, 2);
  ASSERT_TRUE(pool);
  for (int i = 0; i < 3; ++i) {
    Status s = pool->Transact([](pqxx::transaction_base& tx) { tx.exec1("SELECT 1"); });
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
}

TEST(PoolTest, OpenFailsClearlyOnAnUnreachableServer) {
  DatabaseOptions o;
  o.url = "postgresql://nobody@127.0.0.1:1/none";
  auto pool = Pool::Open(o);
  ASSERT_FALSE(pool.has_value());
  EXPECT_NE(pool.error().message().find("cannot connect"), std::string::npos) << pool.error().ToString();
}

TEST(PoolTest, EveryEngineQueryPreparesAgainstTheMigratedSchema) {
  TestDatabase db;
  pqxx::connection conn(db.url());
  Pool::PrepareEngineQueries(conn);
  for (const auto& q : sql::EngineQueries()) {
    if (q.name.rfind("Migration", 0) == 0) continue;  // bootstrap DDL runs unprepared
    // The embedded server's own set-up, run through postgres --single before
    // the server listens (a utility statement: nothing to prepare).
    if (q.name.rfind("EmbeddedPostgres", 0) == 0) continue;
    if (q.simple) {  // prepared with SQL PREPARE by PrepareEngineQueries itself
      pqxx::nontransaction n(conn);
      EXPECT_EQ(n.exec_params1("SELECT count(*) FROM pg_prepared_statements WHERE name = $1", q.name)[0].as<int>(), 1)
          << q.name;
      continue;
    }
    EXPECT_NO_THROW(conn.prepare_now(q.name)) << q.name;
  }
}

// The generator of the typed handles (sql/generate_query_handles.py) counts
// each query's parameters from its text; the compiler then holds every call
// to that count. Here the server says how many it found, for every query it
// can prepare: the two must agree, or a call could compile with an argument
// too few (the server would fail it) or too many.
TEST(PoolTest, EveryHandlesParameterCountIsTheServers) {
  TestDatabase db;
  pqxx::connection conn(db.url());
  Pool::PrepareEngineQueries(conn);  // the simple-protocol ones with SQL PREPARE
  std::size_t compared = 0;
  for (const sql::QueryInfo& q : sql::q::kAll) {
    // Run through postgres --single with literals in place, never prepared.
    if (q.name.starts_with("EmbeddedPostgres")) continue;
    const std::string name(q.name);
    if (!q.simple) conn.prepare_now(name);
    pqxx::nontransaction n(conn);
    const pqxx::result r =
        n.exec_params("SELECT cardinality(parameter_types) FROM pg_prepared_statements WHERE name = $1", name);
    ASSERT_EQ(r.size(), 1u) << name << " is not prepared";
    EXPECT_EQ(r[0][0].as<std::size_t>(), q.parameters) << name << ": the handle's count differs from the server's";
    ++compared;
  }
  EXPECT_GE(compared, sql::q::kAll.size() - 1);
}

// A pool connection whose client stops talking inside a transaction that
// holds an advisory lock (as a claim holds its key's gate), as if the
// client had vanished behind a partition: its socket stays open and nothing
// is sent. Returns whether the server ended that session, and with it the
// transaction, within `wait`. Asserts first that the fault is in place: the
// session idles in its transaction and holds the lock against others.
bool ServerEndsAnAbandonedTransaction(const std::string& url, milliseconds idle_timeout, milliseconds wait) {
  DatabaseOptions o;
  o.url = url;
  o.pool_size = 1;
  o.call_deadline = milliseconds(500);
  o.idle_in_transaction_timeout = idle_timeout;
  auto pool = Pool::Open(o);
  EXPECT_TRUE(pool.has_value()) << (pool ? "" : pool.error().ToString());
  if (!pool) return false;
  auto lease = (*pool)->Acquire();
  EXPECT_TRUE(lease.has_value());
  if (!lease) return false;
  int pid = 0;
  {
    pqxx::nontransaction n(lease->conn());
    pid = n.exec1("SELECT pg_backend_pid()")[0].as<int>();
    n.exec0("BEGIN");
    n.exec("SELECT pg_advisory_xact_lock(4242)");
  }
  pqxx::connection watcher(url);
  auto state = [&] {
    pqxx::nontransaction n(watcher);
    pqxx::result r = n.exec_params("SELECT state FROM pg_stat_activity WHERE pid = $1", pid);
    return r.empty() ? std::string("gone") : r[0][0].as<std::string>("");
  };
  auto lock_taken = [&] {
    pqxx::nontransaction n(watcher);
    const bool got = n.exec1("SELECT pg_try_advisory_lock(4242)")[0].as<bool>();
    if (got) n.exec("SELECT pg_advisory_unlock(4242)");
    return !got;
  };
  EXPECT_EQ(state(), "idle in transaction") << "the fault is not in place";
  EXPECT_TRUE(lock_taken()) << "the abandoned transaction does not hold its lock";
  const auto deadline = steady_clock::now() + wait;
  while (steady_clock::now() < deadline) {
    if (state() == "gone" && !lock_taken()) return true;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return false;
}

TEST(PoolTest, TheServerEndsATransactionItsClientAbandoned) {
  TestDatabase db;
  EXPECT_TRUE(ServerEndsAnAbandonedTransaction(db.url(), milliseconds(1000), milliseconds(5000)))
      << "the abandoned session still holds its lock 5 s later";
}

// The control: without the setting the same orphan outlives the wait, so the
// test above passes because of it.
TEST(PoolTest, WithoutTheIdleTimeoutAnAbandonedTransactionKeepsItsLock) {
  TestDatabase db;
  EXPECT_FALSE(ServerEndsAnAbandonedTransaction(db.url(), milliseconds(0), milliseconds(2500)));
}

TEST(PoolTest, OpenRejectsAnIdleTimeoutThatACallCouldReach) {
  TestDatabase db;
  DatabaseOptions o;
  o.url = db.url();
  o.call_deadline = milliseconds(5000);
  o.idle_in_transaction_timeout = milliseconds(5000);
  auto pool = Pool::Open(o);
  ASSERT_FALSE(pool.has_value());
  EXPECT_EQ(pool.error().code(), StatusCode::kInvalidArgument) << pool.error().ToString();
  EXPECT_NE(pool.error().message().find("must exceed call_deadline"), std::string::npos) << pool.error().ToString();
  o.idle_in_transaction_timeout = milliseconds(0);
  EXPECT_TRUE(Pool::Open(o).has_value());
}

}  // namespace
}  // namespace phasekey::pg
