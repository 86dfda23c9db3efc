#include "phasekey/reaper.h"

#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "phasekey/runner.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

class ReaperTest : public ::testing::Test {
 protected:
  // Inserts `n` keys in `state`, created and (if finished) finished `age` ago.
  void Seed(const std::string& prefix, int n, const std::string& state, const std::string& age) {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    const bool finished = state == "finished";
    tx.exec_params0(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, request_path,"
        " request_body, request_fingerprint, state, recovery_point, response_status, response_headers, response_body,"
        " created_at, finished_at)"
        " SELECT 'acct', $1 || i, $2, 'f', 'POST', '/x', '{}', decode(repeat('00', 32), 'hex'), $3::phasekey.key_state,"
        " CASE WHEN $4 THEN 'finished' ELSE 'started' END, CASE WHEN $4 THEN 201 END, CASE WHEN $4 THEN '[]'::jsonb END,"
        " CASE WHEN $4 THEN '\\x7b7d'::bytea END, now() - $5::interval, CASE WHEN $4 THEN now() - $5::interval END"
        " FROM generate_series(1, $6) AS i",
        prefix, AccountBucket("acct", 16), state, finished, age, n);
    tx.commit();
  }
  int Count(const std::string& where) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    return tx.exec1("SELECT count(*) FROM phasekey.idempotency_keys WHERE " + where)[0].as<int>();
  }
  TestDatabase db_;
};

TEST_F(ReaperTest, DeletesOldFinishedKeysInBatchesAndKeepsEverythingElse) {
  Seed("old-finished-", 25, "finished", "100 hours");
  Seed("new-finished-", 5, "finished", "1 hour");
  Seed("old-active-", 3, "active", "100 hours");
  Seed("old-dead-", 2, "dead", "100 hours");
  DatabaseOptions db;
  db.url = db_.url();
  ReaperOptions o;
  o.batch_size = 10;  // three batches for the 25 old finished keys
  auto reaper = Reaper::Open(db, o);
  ASSERT_TRUE(reaper.has_value()) << reaper.error().ToString();
  auto report = (*reaper)->RunOnce();
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->deleted, 25u);
  EXPECT_EQ(report->kept_unfinished, 3u);
  EXPECT_EQ(report->kept_dead, 2u);
  EXPECT_EQ(Count("idempotency_key LIKE 'old-finished-%'"), 0);
  EXPECT_EQ(Count("idempotency_key LIKE 'new-finished-%'"), 5);
  EXPECT_EQ(Count("state = 'active'"), 3);
  EXPECT_EQ(Count("state = 'dead'"), 2);
  EXPECT_EQ((*reaper)->RunOnce()->deleted, 0u);
}

TEST_F(ReaperTest, DeletesOldAppliedInboxEventsButNeverParkedOnes) {
  {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    // 31 days old applied, 1 day old applied, 40 days old parked.
    tx.exec0(
        "INSERT INTO phasekey.inbox_events (provider, event_id, object_id, event_type, payload, state, park_reason,"
        " received_at, applied_at) SELECT 'stripe', 'old-' || i, 'ch', 't', '', 'applied', NULL,"
        " now() - interval '31 days', now() - interval '31 days' FROM generate_series(1, 12) AS i");
    tx.exec0(
        "INSERT INTO phasekey.inbox_events (provider, event_id, object_id, event_type, payload, state, applied_at)"
        " VALUES ('stripe', 'new', 'ch', 't', '', 'applied', now() - interval '1 day')");
    tx.exec0(
        "INSERT INTO phasekey.inbox_events (provider, event_id, object_id, event_type, payload, state, park_reason,"
        " received_at) VALUES ('stripe', 'parked', 'ch', 't', '', 'parked', 'waiting', now() - interval '40 days')");
    tx.commit();
  }
  DatabaseOptions db;
  db.url = db_.url();
  ReaperOptions o;
  o.batch_size = 5;  // three batches for the 12 old applied events
  o.metrics = Metrics::Create();
  auto reaper = Reaper::Open(db, o);
  ASSERT_TRUE(reaper.has_value()) << reaper.error().ToString();
  auto report = (*reaper)->RunOnce();
  ASSERT_TRUE(report.has_value()) << report.error().ToString();
  EXPECT_EQ(report->inbox_deleted, 12u);
  EXPECT_EQ(report->inbox_parked, 1u);
  EXPECT_NE(o.metrics->Exposition().find("phasekey_inbox_parked_events 1"), std::string::npos)
      << o.metrics->Exposition();
  pqxx::connection conn(db_.url());
  pqxx::nontransaction tx(conn);
  EXPECT_EQ(tx.exec1("SELECT string_agg(event_id, ',' ORDER BY event_id) FROM phasekey.inbox_events")[0]
                .as<std::string>(),
            "new,parked");
}

TEST_F(ReaperTest, RefusesNonsenseOptions) {
  DatabaseOptions db;
  db.url = db_.url();
  ReaperOptions o;
  o.batch_size = 0;
  EXPECT_FALSE(Reaper::Open(db, o).has_value());
  ReaperOptions no_inbox_retention;
  no_inbox_retention.inbox_retention = std::chrono::seconds(0);
  EXPECT_FALSE(Reaper::Open(db, no_inbox_retention).has_value());
}

}  // namespace
}  // namespace phasekey
