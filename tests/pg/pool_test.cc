#include "pg/pool.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <pqxx/pqxx>

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
  ASSERT_TRUE(pool->Transact([](pqxx::work& tx) { tx.exec0("CREATE TABLE t (v int)"); }).ok());
  ASSERT_TRUE(pool->Transact([](pqxx::work& tx) { tx.exec0("INSERT INTO t VALUES (1)"); }).ok());
  int count = 0;
  ASSERT_TRUE(pool->Transact([&](pqxx::work& tx) { count = tx.exec1("SELECT count(*) FROM t")[0].as<int>(); }).ok());
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
  Status s = pool->Transact([](pqxx::work& tx) { tx.exec("SELECT pg_sleep(30)"); });
  const auto took = steady_clock::now() - start;
  EXPECT_TRUE(s.IsDeadlineExceeded()) << s.ToString();
  EXPECT_LT(took, milliseconds(2000));
  EXPECT_EQ(pool->open_connections(), 0u) << "the timed-out connection must be thrown away";
  // The pool recovers with a fresh connection.
  EXPECT_TRUE(pool->Transact([](pqxx::work& tx) { tx.exec1("SELECT 1"); }).ok());
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
    EXPECT_NO_THROW(conn.prepare_now(q.name)) << q.name;
  }
}

}  // namespace
}  // namespace phasekey::pg
