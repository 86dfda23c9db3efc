// The engine's upgrade history, against a real PostgreSQL: a database made
// at the baseline (sql/migrations/0001_baseline.sql) and holding keys in
// every state is taken through every later migration, one at a time; the
// finished keys still replay, the dead and parked stay so, and the
// unfinished are finished by the re-drive worker without charging twice
// (docs/upgrading.md). A binary older than its database refuses it and
// changes nothing.
//
// The history after the baseline is empty until the first upgrade
// migration (0002) lands: the walk then takes it, with the rows the baseline
// stores in place. A migration that needs a row shape of its own to prove
// (a column it fills, a constraint it adds) adds its rows and checks here.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "phasekey/fingerprint.h"
#include "phasekey/migrate.h"
#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "support/ride_flow.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;
using testing::TestGateway;

const std::string kBody = R"({"origin_lat": 1.5})";
constexpr int kBaseline = 1;

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
  void SetUp() override {
    auto baseline = Migrate(db_.url(), UpTo(kBaseline));
    ASSERT_TRUE(baseline.has_value()) << baseline.error().ToString();
    ASSERT_EQ(baseline->applied, std::vector<int>{kBaseline});
  }

  // A key row as the baseline stores it, claimed an hour ago under the
  // ride flow's current graph, not leased, encryption off. A finished key
  // keeps no request body.
  void InsertKey(const std::string& key, const std::string& state, const std::string& point,
                 const std::string& extra_columns = "", const std::string& extra_values = "") {
    auto fp = FingerprintJson(kBody);
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec_params0(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, flow_version, "
        "request_method, request_path, request_body, request_fingerprint, state, recovery_point, "
        "attempts, created_at, updated_at, point_reached_at" +
            extra_columns +
            ") VALUES ('acct', $1, $2, "
            "'create_ride', $7, 'POST', '/rides', CASE WHEN $5::text = 'finished' THEN NULL ELSE convert_to($3, "
            "'UTF8') END, decode($4, 'hex'), $5::phasekey.key_state, $6, 1, now() - interval '1 hour', "
            "now() - interval '1 hour', now() - interval '1 hour'" +
            extra_values + ")",
        key, AccountBucket("acct", 16), fp->canonical, fp->sha256_hex, state, point, flow_->version());
    tx.commit();
  }

  // One key in every state the baseline knows.
  void InsertKeysInEveryState() {
    InsertKey("k-finished", "finished", "finished", ", response_status, response_headers, response_body, finished_at",
              ", 201, '[[\"Content-Type\", \"application/json\"]]', '{\"ride\":1}', now() - interval '1 hour'");
    InsertKey("k-dead", "dead", "ride_created", ", last_error", ", 'given up: past give_up_after'");
    InsertKey("k-parked", "needs_operator", "charge_created", ", last_error",
              ", 'the provider may have forgotten the key and the phase cannot look it up'");
    InsertKey("k-started", "active", "started");
    InsertKey("k-ride", "active", "ride_created");
    InsertKey("k-charged", "active", "charge_created", ", outcomes",
              ", '{\"charge_created\": {\"charge_id\": \"ch_old\"}}'");
  }

  std::string KeyStates() const {
    return db_.Value(
        "SELECT string_agg(idempotency_key || ':' || state, ',' ORDER BY idempotency_key) "
        "FROM phasekey.idempotency_keys");
  }

  TestDatabase db_{TestDatabase::Schema::kEmpty};
  TestGateway gateway_;
  std::shared_ptr<const Flow> flow_ = testing::MakeRideFlow(&gateway_, milliseconds(2000));
};

TEST_F(UpgradeTest, KeysInEveryStateAtTheBaselineSurviveEachLaterMigrationAndTheUnfinishedAreFinishedOnce) {
  InsertKeysInEveryState();
  const std::string before = KeyStates();

  // Each migration after the baseline, one at a time, over the same rows.
  for (const Migration& m : EngineMigrations().migrations) {
    if (m.version <= kBaseline) continue;
    auto step = Migrate(db_.url(), UpTo(m.version));
    ASSERT_TRUE(step.has_value()) << m.version << "_" << m.name << ": " << step.error().ToString();
    EXPECT_EQ(step->applied, std::vector<int>{m.version}) << m.name;
    EXPECT_EQ(KeyStates(), before) << m.version << "_" << m.name << " changed a key's state";
  }
  auto newest = Migrate(db_.url(), EngineMigrations());
  ASSERT_TRUE(newest.has_value()) << newest.error().ToString();
  EXPECT_TRUE(newest->applied.empty()) << "the walk above applied every migration";
  EXPECT_EQ(newest->version_after, EngineMigrations().LatestVersion());

  testing::CreateRideTables(db_.url());
  db_.Exec(
      "INSERT INTO rides (account, idem_key, origin_lat) VALUES ('acct', 'k-ride', 1.5), ('acct', 'k-charged', 1.5)");
  RunnerOptions o;
  o.database.url = db_.url();
  o.redrive_delay = milliseconds(1);
  auto runner = Runner::Open(o, {flow_});
  ASSERT_TRUE(runner.has_value()) << runner.error().ToString();
  EXPECT_EQ((*runner)->options().buckets, 16);
  auto worker = RedriveWorker::Open(runner->get(), RedriveOptions{});
  ASSERT_TRUE(worker.has_value()) << worker.error().ToString();
  auto round = (*worker)->RunOnce();
  ASSERT_TRUE(round.has_value()) << round.error().ToString();
  EXPECT_EQ(round->finished, 3u);
  EXPECT_EQ(KeyStates(),
            "k-charged:finished,k-dead:dead,k-finished:finished,k-parked:needs_operator,"
            "k-ride:finished,k-started:finished");
  EXPECT_EQ(gateway_.charges(), 2) << "k-started and k-ride charged once each; k-charged used its recorded charge";
  EXPECT_EQ(db_.Value("SELECT charge_id FROM rides WHERE idem_key = 'k-charged'"), "ch_old");

  Reply replay = (*runner)->Execute("create_ride", Request{"acct", "k-finished", "POST", "/rides", kBody});
  EXPECT_EQ(replay.kind, Reply::Kind::kReplayed);
  EXPECT_EQ(replay.response.body, "{\"ride\":1}");
}

TEST_F(UpgradeTest, MigratingAnUpToDateDatabaseAgainChangesNothing) {
  ASSERT_TRUE(Migrate(db_.url(), EngineMigrations()).has_value());
  InsertKeysInEveryState();
  const std::string before = KeyStates();
  const std::string history =
      "SELECT string_agg(version || '_' || name, ',' ORDER BY version) "
      "FROM phasekey.schema_migrations WHERE component = 'phasekey'";
  const std::string recorded = db_.Value(history);

  auto again = Migrate(db_.url(), EngineMigrations());
  ASSERT_TRUE(again.has_value()) << again.error().ToString();
  EXPECT_TRUE(again->applied.empty());
  EXPECT_EQ(again->version_before, EngineMigrations().LatestVersion());
  EXPECT_EQ(again->version_after, EngineMigrations().LatestVersion());
  EXPECT_EQ(db_.Value(history), recorded);
  EXPECT_EQ(KeyStates(), before);
}

// A binary rolled back behind a migration it does not know (a newer
// binary's) refuses the database before it applies anything.
TEST_F(UpgradeTest, AnOlderBinaryRefusesADatabaseANewerOneMigratedAndChangesNothing) {
  ASSERT_TRUE(Migrate(db_.url(), EngineMigrations()).has_value());
  InsertKeysInEveryState();
  const int newer = EngineMigrations().LatestVersion() + 1;
  db_.Exec("INSERT INTO phasekey.schema_migrations (component, version, name) VALUES ('phasekey', " +
           std::to_string(newer) + ", 'from_a_newer_binary')");
  const std::string before = KeyStates();

  auto report = Migrate(db_.url(), EngineMigrations());
  ASSERT_FALSE(report.has_value());
  EXPECT_EQ(report.error().code(), StatusCode::kFailedPrecondition) << report.error().ToString();
  EXPECT_NE(report.error().message().find("version " + std::to_string(newer)), std::string::npos)
      << report.error().ToString();
  EXPECT_EQ(db_.Value("SELECT max(version) FROM phasekey.schema_migrations WHERE component = 'phasekey'"),
            std::to_string(newer));
  EXPECT_EQ(KeyStates(), before);
}

}  // namespace
}  // namespace phasekey
