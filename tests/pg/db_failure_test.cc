// Each class of the failure classifier, produced by a real induced failure
// on a real server and observed through Pool::Transact.
#include <gtest/gtest.h>

#include <future>
#include <pqxx/pqxx>

#include "pg/pool.h"
#include "support/test_database.h"

namespace phasekey::pg {
namespace {

using testing::TestDatabase;

// Terminates backend `pid` and waits (up to 10 s) until it has ended, so
// whatever the test sends next meets a dead session; true if it ended.
bool TerminateBackend(pqxx::connection* admin, int pid) {
  pqxx::nontransaction a(*admin);
  return a.exec1("SELECT pg_terminate_backend(" + std::to_string(pid) + ", 10000)")[0].as<bool>();
}

class DbFailureOnServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec0("CREATE TABLE acct (id int PRIMARY KEY, balance int NOT NULL)");
    tx.exec0("INSERT INTO acct VALUES (1, 100), (2, 100)");
    tx.commit();
    DatabaseOptions o;
    o.url = db_.url();
    o.pool_size = 4;
    pool_ = std::move(*Pool::Open(o));
  }
  TestDatabase db_;
  std::unique_ptr<Pool> pool_;
};

TEST_F(DbFailureOnServerTest, ARealSerializationConflictIsRetryable) {
  pqxx::connection other(db_.url());
  Status s = pool_->Transact([&](pqxx::transaction_base& tx) {
    tx.exec0("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    tx.exec1("SELECT balance FROM acct WHERE id = 1");  // takes the snapshot
    pqxx::work o(other);
    o.exec0("UPDATE acct SET balance = balance + 1 WHERE id = 1");
    o.commit();
    tx.exec0("UPDATE acct SET balance = balance - 1 WHERE id = 1");
  });
  EXPECT_TRUE(s.IsRetryable()) << s.ToString();
  EXPECT_NE(s.message().find("40001"), std::string::npos) << s.ToString();
}

TEST_F(DbFailureOnServerTest, ARealDeadlockIsRetryableForTheVictim) {
  std::promise<void> first_locked, second_locked;
  auto other = std::async(std::launch::async, [&] {
    return pool_->Transact([&](pqxx::transaction_base& tx) {
      tx.exec0("UPDATE acct SET balance = 0 WHERE id = 2");
      second_locked.set_value();
      first_locked.get_future().wait();
      tx.exec0("UPDATE acct SET balance = 0 WHERE id = 1");
    });
  });
  Status mine = pool_->Transact([&](pqxx::transaction_base& tx) {
    tx.exec0("UPDATE acct SET balance = 1 WHERE id = 1");
    second_locked.get_future().wait();
    first_locked.set_value();
    tx.exec0("UPDATE acct SET balance = 1 WHERE id = 2");
  });
  Status theirs = other.get();
  // Exactly one of the two is chosen as the victim.
  EXPECT_NE(mine.ok(), theirs.ok()) << mine.ToString() << " / " << theirs.ToString();
  const Status& victim = mine.ok() ? theirs : mine;
  EXPECT_TRUE(victim.IsRetryable()) << victim.ToString();
  EXPECT_NE(victim.message().find("40P01"), std::string::npos) << victim.ToString();
}

TEST_F(DbFailureOnServerTest, ATerminatedBackendBeforeCommitIsRetryableAndTheConnectionIsDropped) {
  pqxx::connection admin(db_.url());
  Status s = pool_->Transact([&](pqxx::transaction_base& tx) {
    const int pid = tx.exec1("SELECT pg_backend_pid()")[0].as<int>();
    EXPECT_TRUE(TerminateBackend(&admin, pid)) << "the backend was not terminated";
    tx.exec0("UPDATE acct SET balance = 7 WHERE id = 1");
  });
  EXPECT_TRUE(s.IsRetryable()) << s.ToString();
  EXPECT_EQ(pool_->open_connections(), 0u);
  int balance = 0;
  ASSERT_TRUE(pool_
                  ->Transact([&](pqxx::transaction_base& tx) {
                    balance = tx.exec1("SELECT balance FROM acct WHERE id = 1")[0].as<int>();
                  })
                  .ok());
  EXPECT_EQ(balance, 100) << "nothing was committed";
}

TEST_F(DbFailureOnServerTest, ABackendLostWhileCommittingIsOutcomeUnknown) {
  pqxx::connection admin(db_.url());
  // The backend dies after the UPDATE, so COMMIT goes to a dead socket.
  Status s = pool_->Transact([&](pqxx::transaction_base& tx) {
    const int pid = tx.exec1("SELECT pg_backend_pid()")[0].as<int>();
    tx.exec0("UPDATE acct SET balance = 7 WHERE id = 1");
    EXPECT_TRUE(TerminateBackend(&admin, pid)) << "the backend was not terminated";
  });
  EXPECT_TRUE(s.IsOutcomeUnknown()) << s.ToString();
}

TEST_F(DbFailureOnServerTest, ALockNotAvailableIsRetryable) {
  pqxx::connection holder(db_.url());
  pqxx::work h(holder);
  h.exec("SELECT 1 FROM acct WHERE id = 1 FOR UPDATE");
  Status s =
      pool_->Transact([](pqxx::transaction_base& tx) { tx.exec("SELECT 1 FROM acct WHERE id = 1 FOR UPDATE NOWAIT"); });
  EXPECT_TRUE(s.IsRetryable()) << s.ToString();
  EXPECT_NE(s.message().find("55P03"), std::string::npos) << s.ToString();
}

// `url` with its user and password replaced (URL or key/value form).
std::string UrlWithUser(const std::string& url, const std::string& user, const std::string& password) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url + " user=" + user + " password=" + password;
  const auto host = scheme + 3;
  const auto at = url.find('@', host);
  const auto slash = url.find('/', host);
  const auto start = (at != std::string::npos && (slash == std::string::npos || at < slash)) ? at + 1 : host;
  return url.substr(0, host) + user + ":" + password + "@" + url.substr(start);
}

TEST_F(DbFailureOnServerTest, TooManyConnectionsIsRetryable) {
  // Connection limits do not apply to superusers: use a plain role.
  const std::string role = db_.name() + "_r";
  {
    pqxx::connection admin(testing::ServerUrl());
    pqxx::nontransaction a(admin);
    a.exec0("CREATE ROLE " + role + " LOGIN PASSWORD 'pw' CONNECTION LIMIT 1");
  }
  const std::string url = UrlWithUser(db_.url(), role, "pw");
  pqxx::connection hog(url);  // the only one allowed
  DatabaseOptions o;
  o.url = url;
  auto pool = Pool::Open(o);
  ASSERT_FALSE(pool.has_value());
  EXPECT_TRUE(pool.error().IsRetryable()) << pool.error().ToString();
  EXPECT_NE(pool.error().message().find("too many connections"), std::string::npos) << pool.error().ToString();
  hog.disconnect();
  pqxx::connection admin(testing::ServerUrl());
  pqxx::nontransaction a(admin);
  a.exec0("DROP ROLE " + role);
}

TEST_F(DbFailureOnServerTest, AConstraintViolationIsTerminal) {
  Status s = pool_->Transact([](pqxx::transaction_base& tx) { tx.exec0("INSERT INTO acct VALUES (1, 5)"); });
  EXPECT_TRUE(s.IsTerminal()) << s.ToString();
  EXPECT_NE(s.message().find("23505"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace phasekey::pg
