// Upgrading a database populated at the oldest schema (keys in every state)
// to the newest, against a real PostgreSQL: the finished keys still replay,
// the dead stay dead, and the unfinished are finished by the re-drive worker
// without charging twice (docs/upgrading.md).
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "phasekey/fingerprint.h"
#include "phasekey/migrate.h"
#include "phasekey/redrive_worker.h"
#include "phasekey/runner.h"
#include "support/ride_flow.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;
using testing::TestGateway;

const std::string kBody = R"({"origin_lat": 1.5})";

// The engine's migrations up to `version`.
MigrationSet UpTo(int version) {
  MigrationSet set{EngineMigrations().component, {}};
  for (const Migration& m : EngineMigrations().migrations) {
    if (m.version <= version) set.migrations.push_back(m);
  }
  return set;
}

class UpgradeTest : public ::testing::Test {
 protected:

  // A key row as the oldest schema stores it, an hour old.
  void InsertKey(const std::string& key, const std::string& state, const std::string& point,
                 const std::string& extra_columns = "", const std::string& extra_values = "") {
    auto fp = FingerprintJson(kBody);
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec_params0("INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, "
                    "request_path, request_body, request_fingerprint, state, recovery_point, attempts, created_at, "
                    "updated_at" + extra_columns + ") VALUES ('acct', $1, $2, 'create_ride', 'POST', '/rides', $3, "
                    "decode($4, 'hex'), $5::phasekey.key_state, $6, 1, now() - interval '1 hour', now() - interval "
                    "'1 hour'" + extra_values + ")",
                    key, AccountBucket("acct", 16), fp->canonical, fp->sha256_hex, state, point);
    tx.commit();
  }

  TestDatabase db_{TestDatabase::Schema::kEmpty};
};

TEST_F(UpgradeTest, KeysInEveryStateOfTheOldestSchemaSurviveTheUpgradeAndTheUnfinishedAreFinishedOnce) {
  auto oldest = Migrate(db_.url(), UpTo(1));
  ASSERT_TRUE(oldest.has_value()) << oldest.error().ToString();
  ASSERT_EQ(oldest->version_after, 1);
  InsertKey("k-finished", "finished", "finished", ", response_status, response_headers, response_body, finished_at",
            ", 201, '[[\"Content-Type\", \"application/json\"]]', '{\"ride\":1}', now() - interval '1 hour'");
  InsertKey("k-dead", "dead", "ride_created", ", last_error", ", 'dead-lettered: 10 attempts'");
  InsertKey("k-started", "active", "started");
  InsertKey("k-ride", "active", "ride_created");
  InsertKey("k-charged", "active", "charge_created", ", outcomes", ", '{\"charge_created\": {\"charge_id\": \"ch_old\"}}'");

  auto newest = Migrate(db_.url(), EngineMigrations());
  ASSERT_TRUE(newest.has_value()) << newest.error().ToString();
  EXPECT_EQ(newest->version_after, EngineMigrations().LatestVersion());
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'active' AND "
                      "point_reached_at = created_at"),
            "3")
      << "keys in progress count their provider's memory from their creation, never from the upgrade";

  testing::CreateRideTables(db_.url());
  db_.Exec("INSERT INTO rides (account, idem_key, origin_lat) VALUES ('acct', 'k-ride', 1.5), ('acct', 'k-charged', 1.5)");
  TestGateway gateway;
  RunnerOptions o;
  o.database.url = db_.url();
  o.redrive_delay = milliseconds(1);
  auto runner = Runner::Open(o, {testing::MakeRideFlow(&gateway, milliseconds(2000))});
  ASSERT_TRUE(runner.has_value()) << runner.error().ToString();
  EXPECT_EQ((*runner)->options().buckets, 16);
  auto worker = RedriveWorker::Open(runner->get(), RedriveOptions{});
  ASSERT_TRUE(worker.has_value()) << worker.error().ToString();
  auto round = (*worker)->RunOnce();
  ASSERT_TRUE(round.has_value()) << round.error().ToString();
  EXPECT_EQ(round->finished, 3u);
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'finished'"), "4");
  EXPECT_EQ(db_.Value("SELECT state FROM phasekey.idempotency_keys WHERE idempotency_key = 'k-dead'"), "dead");
  EXPECT_EQ(gateway.charges(), 2) << "k-started and k-ride charged once each; k-charged used its recorded charge";
  EXPECT_EQ(db_.Value("SELECT charge_id FROM rides WHERE idem_key = 'k-charged'"), "ch_old");

  Reply replay = (*runner)->Execute("create_ride", Request{"acct", "k-finished", "POST", "/rides", kBody});
  EXPECT_EQ(replay.kind, Reply::Kind::kReplayed);
  EXPECT_EQ(replay.response.body, "{\"ride\":1}");
}

}  // namespace
}  // namespace phasekey
