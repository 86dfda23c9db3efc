#include "phasekey/workers.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include <pqxx/pqxx>

#include "admin/key_admin.h"
#include "phasekey/runner.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

class ReaperTest : public ::testing::Test {
 protected:
  // Inserts `n` keys in `state`, created and (if finished) finished `age`
  // ago, last updated (for a dead or parked key: stopped) `updated` ago.
  void Seed(const std::string& prefix, int n, const std::string& state, const std::string& age,
            const std::string& updated = "0 seconds") {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    const bool finished = state == "finished";
    tx.exec_params0(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, request_path,"
        " request_body, request_fingerprint, state, recovery_point, response_status, response_headers, response_body,"
        " created_at, finished_at, updated_at)"
        " SELECT 'acct', $1 || i, $2, 'f', 'POST', '/x', '{}', decode(repeat('00', 32), 'hex'), $3::phasekey.key_state,"
        " CASE WHEN $4 THEN 'finished' ELSE 'started' END, CASE WHEN $4 THEN 201 END, CASE WHEN $4 THEN '[]'::jsonb "
        "END,"
        " CASE WHEN $4 THEN '\\x7b7d'::bytea END, now() - $5::interval, CASE WHEN $4 THEN now() - $5::interval END,"
        " now() - $7::interval"
        " FROM generate_series(1, $6) AS i",
        prefix, AccountBucket("acct", 16), state, finished, age, n, updated);
    tx.commit();
  }
  std::unique_ptr<Reaper> Open(const ReaperOptions& o) {
    DatabaseOptions db;
    db.url = db_.url();
    auto reaper = Reaper::Open(db, o);
    if (!reaper) throw std::runtime_error(reaper.error().ToString());
    return std::move(*reaper);
  }
  ReapReport Sweep(Reaper& reaper) {
    auto report = reaper.RunOnce();
    if (!report) throw std::runtime_error(report.error().ToString());
    return *report;
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

TEST_F(ReaperTest, DeletesDeadKeysPastTheDeadRetentionFromWhenTheyDied) {
  Seed("old-dead-", 12, "dead", "40 days", "31 days");   // died 31 days ago: past the 30 days
  Seed("young-dead-", 3, "dead", "40 days", "29 days");  // created as long ago, died 29 days ago
  Seed("fresh-dead-", 2, "dead", "1 hour", "1 hour");    // younger than every retention
  Seed("ancient-active-", 2, "active", "400 days", "400 days");
  Seed("ancient-parked-", 4, "needs_operator", "400 days", "365 days");
  ReaperOptions o;
  o.batch_size = 5;  // three batches for the 12 old dead keys
  auto reaper = Open(o);
  ReapReport report = Sweep(*reaper);
  EXPECT_EQ(report.deleted_dead, 12u);
  EXPECT_EQ(report.deleted_needs_operator, 0u) << "parked keys stay until an operator resolves them";
  EXPECT_EQ(report.deleted, 0u);
  EXPECT_EQ(report.kept_dead, 3u) << "dead keys created before the 72 h retention and still kept";
  EXPECT_EQ(report.kept_unfinished, 2u);
  EXPECT_EQ(report.dead, 5u);
  EXPECT_EQ(report.needs_operator, 4u);
  EXPECT_EQ(report.active, 2u);
  EXPECT_EQ(Count("idempotency_key LIKE 'old-dead-%'"), 0);
  EXPECT_EQ(Count("idempotency_key LIKE 'young-dead-%'"), 3);
  EXPECT_EQ(Count("idempotency_key LIKE 'fresh-dead-%'"), 2);
  EXPECT_EQ(Count("state = 'active'"), 2) << "an active key is never deleted, however old";
  EXPECT_EQ(Count("state = 'needs_operator'"), 4);
  EXPECT_EQ(Sweep(*reaper).deleted_dead, 0u);
}

TEST_F(ReaperTest, KeepsDeadKeysForeverWithADeadRetentionOfZero) {
  Seed("ancient-dead-", 3, "dead", "3650 days", "3650 days");
  ReaperOptions o;
  o.dead_retention = std::chrono::seconds(0);
  auto reaper = Open(o);
  ReapReport report = Sweep(*reaper);
  EXPECT_EQ(report.deleted_dead, 0u);
  EXPECT_EQ(report.kept_dead, 3u);
  EXPECT_EQ(Count("state = 'dead'"), 3);
}

TEST_F(ReaperTest, KeepsParkedKeysUntilResolvedUnlessTheirRetentionIsSet) {
  Seed("old-parked-", 7, "needs_operator", "30 days", "10 days");
  Seed("young-parked-", 2, "needs_operator", "30 days", "1 day");
  Seed("ancient-active-", 2, "active", "400 days", "400 days");
  Seed("old-finished-", 1, "finished", "100 hours", "100 hours");
  {
    ReaperOptions defaults;
    ReapReport report = Sweep(*Open(defaults));
    EXPECT_EQ(report.deleted_needs_operator, 0u);
    EXPECT_EQ(report.deleted, 1u) << "finished keys go as before";
    EXPECT_EQ(report.needs_operator, 9u);
    EXPECT_EQ(Count("state = 'needs_operator'"), 9) << "by default a parked key is kept, however old";
  }
  ReaperOptions o;
  o.needs_operator_retention = std::chrono::hours(7 * 24);
  o.batch_size = 3;  // three batches for the 7 parked 10 days ago
  ReapReport report = Sweep(*Open(o));
  EXPECT_EQ(report.deleted_needs_operator, 7u);
  EXPECT_EQ(report.deleted_dead, 0u);
  EXPECT_EQ(report.needs_operator, 2u);
  EXPECT_EQ(Count("idempotency_key LIKE 'old-parked-%'"), 0);
  EXPECT_EQ(Count("idempotency_key LIKE 'young-parked-%'"), 2);
  EXPECT_EQ(Count("state = 'active'"), 2) << "an active key is never deleted, however old";
}

// phasekey reap --dry-run counts what a sweep with the same options deletes.
TEST_F(ReaperTest, ThePreviewCountsWhatTheSweepDeletes) {
  Seed("old-finished-", 4, "finished", "100 hours");
  Seed("old-dead-", 3, "dead", "40 days", "31 days");
  Seed("young-dead-", 2, "dead", "40 days", "29 days");
  Seed("old-parked-", 5, "needs_operator", "30 days", "10 days");
  Seed("ancient-active-", 1, "active", "400 days", "400 days");
  ReaperOptions o;
  o.needs_operator_retention = std::chrono::hours(7 * 24);
  auto preview = admin::AdminReapPreview(db_.url(), o.retention, o.dead_retention, o.needs_operator_retention);
  ASSERT_TRUE(preview.has_value()) << preview.error().ToString();
  auto by_default = admin::AdminReapPreview(db_.url(), o.retention, o.dead_retention, std::chrono::seconds(0));
  ASSERT_TRUE(by_default.has_value()) << by_default.error().ToString();
  EXPECT_EQ((*by_default)["would_delete_needs_operator"], 0);
  ReapReport report = Sweep(*Open(o));
  EXPECT_EQ((*preview)["would_delete"], report.deleted);
  EXPECT_EQ((*preview)["would_delete_dead"], report.deleted_dead);
  EXPECT_EQ((*preview)["would_delete_needs_operator"], report.deleted_needs_operator);
  EXPECT_EQ((*preview)["kept_dead"], report.kept_dead);
  EXPECT_EQ((*preview)["kept_unfinished"], report.kept_unfinished);
  EXPECT_EQ(report.deleted, 4u);
  EXPECT_EQ(report.deleted_dead, 3u);
  EXPECT_EQ(report.deleted_needs_operator, 5u);
  EXPECT_EQ(report.kept_dead, 2u);
  EXPECT_EQ(report.kept_unfinished, 1u);
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
  EXPECT_EQ(
      tx.exec1("SELECT string_agg(event_id, ',' ORDER BY event_id) FROM phasekey.inbox_events")[0].as<std::string>(),
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
  ReaperOptions negative_dead_retention;
  negative_dead_retention.dead_retention = std::chrono::seconds(-1);
  EXPECT_FALSE(Reaper::Open(db, negative_dead_retention).has_value());
  ReaperOptions negative_needs_operator_retention;
  negative_needs_operator_retention.needs_operator_retention = std::chrono::seconds(-1);
  EXPECT_FALSE(Reaper::Open(db, negative_needs_operator_retention).has_value());
  ReaperOptions keep_forever;
  keep_forever.dead_retention = std::chrono::seconds(0);
  EXPECT_TRUE(Reaper::Open(db, keep_forever).has_value()) << "0 keeps dead keys forever";
}

}  // namespace
}  // namespace phasekey
