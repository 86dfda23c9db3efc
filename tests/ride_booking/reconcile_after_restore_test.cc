// `phasekey keys reconcile` after a real restore: a PostgreSQL of the test's
// own, the fake gateway and `ride_booking serve` book a first batch of rides;
// pg_basebackup copies the server; a second batch is booked (its charges
// land in the gateway's ledger); a second server starts from the base
// backup, which lacks the second batch's keys. Reconcile against the
// restored server must report exactly the second batch's charges, and
// against the original none (docs/operations.md, "Backup and restore").
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/dedicated_postgres.h"
#include "support/prerequisites.h"
#include "support/ride_world.h"

namespace phasekey {
namespace {

using nlohmann::json;
using testing::DedicatedPostgres;
using testing::RideWorld;

constexpr char kPgBin[] = "/usr/lib/postgresql/15/bin";
constexpr char kSecret[] = "sk_test_reconcile";
constexpr int kRidesPerBatch = 3;

std::string Value(const std::string& url, const std::string& sql) {
  pqxx::connection c(url);
  pqxx::nontransaction tx(c);
  const pqxx::row r = tx.exec1(sql);
  return r[0].is_null() ? "<null>" : r[0].as<std::string>();
}

// The ids of the gateway's ledger.
std::set<std::string> LedgerIds(const RideWorld& world) {
  std::set<std::string> ids;
  for (const json& charge : world.Ledger()) ids.insert(charge.at("id").get<std::string>());
  return ids;
}

testing::DedicatedPostgresOptions Named(const std::string& name) {
  testing::DedicatedPostgresOptions o;
  o.name = name;
  return o;
}

// Hands `path` to the server's user when we are root (the server runs as
// "postgres" then, embedded_postgres.h).
void HandToServerUser(const std::string& path) {
  if (::geteuid() != 0) return;
  const passwd* pw = ::getpwnam("postgres");
  ASSERT_NE(pw, nullptr) << "no postgres user";
  ASSERT_EQ(::chown(path.c_str(), pw->pw_uid, pw->pw_gid), 0) << path;
}

// The command line that runs `argv` as the server's user (as root) with
// PGPASSFILE set.
std::vector<std::string> AsServerUser(const std::string& passfile, std::vector<std::string> argv) {
  std::vector<std::string> out = {"/usr/bin/env", "PGPASSFILE=" + passfile};
  if (::geteuid() == 0) out = {"/usr/sbin/runuser", "-u", "postgres", "--", "/usr/bin/env", "PGPASSFILE=" + passfile};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

class ReconcileAfterRestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(std::string(kPgBin) + "/pg_basebackup")) {
      PHASEKEY_SKIP_OR_FAIL_IN_CI() << "needs " << kPgBin << "/pg_basebackup (Debian postgresql-15)";
    }
    if (::geteuid() == 0 && !std::filesystem::exists("/usr/sbin/runuser")) {
      PHASEKEY_SKIP_OR_FAIL_IN_CI() << "needs runuser to run pg_basebackup as the server's user";
    }
    primary_ = std::make_unique<DedicatedPostgres>(Named("reconcile-primary"));
    const Status started = primary_->Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    world_ = std::make_unique<RideWorld>(testing::RideWorldOptions{.database_url = primary_->url(),
                                                                   .charge_timeout_ms = 5000,
                                                                   .provider_secret = kSecret,
                                                                   .log_dir = primary_->files_dir() + "/logs"});
    service_ = world_->StartService(&port_, {.lease_seconds = 10});
    ASSERT_NE(port_, 0) << "the service did not start";
  }

  void Book(const std::string& prefix) {
    for (int i = 0; i < kRidesPerBatch; ++i) {
      const testing::HttpResult r = world_->PostRide(port_, 20 + i, prefix + std::to_string(i));
      ASSERT_EQ(r.status, 201) << r.body;
    }
  }

  // pg_basebackup of the primary into `restored`'s data directory (WAL
  // streamed with it, so it starts consistent), and the primary's password
  // file beside it (the backup keeps the role's password).
  void BaseBackup(const DedicatedPostgres& restored) {
    const std::string base = restored.base_dir();
    std::filesystem::create_directories(base);
    std::filesystem::permissions(base, std::filesystem::perms::owner_all);
    HandToServerUser(base);
    const std::string passfile = primary_->base_dir() + "/pgpass";
    const testing::RunResult r = testing::RunToEnd(AsServerUser(
        passfile, {std::string(kPgBin) + "/pg_basebackup", "-D", base + "/data", "-X", "stream", "-c", "fast", "-d",
                   "host=127.0.0.1 port=" + std::to_string(primary_->port()) + " user=postgres"}));
    ASSERT_EQ(r.exit_code, 0) << "pg_basebackup failed (its stderr is in the test's log)";
    std::filesystem::copy_file(passfile, base + "/pgpass");
    HandToServerUser(base + "/pgpass");
  }

  // `phasekey keys reconcile` against `database_url` and the gateway, as JSON.
  testing::RunResult Reconcile(const std::string& database_url, const std::string& created_after) {
    return testing::RunToEnd({PHASEKEY_CLI_PATH, "keys", "reconcile", "--database-url", database_url, "--flows", flows_,
                              "--provider", "stripe_v1", "--stripe-api", "payment_intents", "--base-url",
                              "http://127.0.0.1:" + std::to_string(world_->gateway_port()), "--secret-file",
                              secret_file_, "--created-after", created_after, "--json"});
  }

  void WriteFlowsAndSecret() {
    flows_ = primary_->files_dir() + "/flows.json";
    ASSERT_EQ(testing::RunToEnd({RIDE_BOOKING_PATH, "flows", "describe", "--output", flows_}).exit_code, 0);
    secret_file_ = primary_->files_dir() + "/provider-secret";
    std::ofstream(secret_file_) << kSecret << "\n";
    std::filesystem::permissions(secret_file_,
                                 std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }

  std::unique_ptr<DedicatedPostgres> primary_;
  std::unique_ptr<RideWorld> world_;
  std::unique_ptr<testing::ChildProcess> service_;
  std::uint16_t port_ = 0;
  std::string flows_;
  std::string secret_file_;
};

TEST_F(ReconcileAfterRestoreTest, ReportsExactlyTheChargesMadeAfterTheBaseBackupThatTheRestoredDatabaseLacks) {
  WriteFlowsAndSecret();
  const auto t = std::chrono::system_clock::now() - std::chrono::seconds(2);
  const std::string created_after =
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  Book("before-backup-");
  const std::set<std::string> first = LedgerIds(*world_);
  ASSERT_EQ(first.size(), static_cast<std::size_t>(kRidesPerBatch));

  DedicatedPostgres restored(Named("reconcile-restored"));
  BaseBackup(restored);
  if (HasFatalFailure()) return;
  Book("after-backup-");
  std::set<std::string> second;
  std::map<std::string, std::string> key_of;
  for (const json& charge : world_->Ledger()) {
    key_of[charge.at("id")] = charge.at("idempotency_key");
    if (!first.contains(charge.at("id"))) second.insert(charge.at("id"));
  }
  ASSERT_EQ(second.size(), static_cast<std::size_t>(kRidesPerBatch));

  const Status started = restored.Start();
  ASSERT_TRUE(started.ok()) << started.ToString();
  // The fault is real: the restored database lacks the second batch's keys.
  const std::string count = "SELECT count(*) FROM phasekey.idempotency_keys WHERE idempotency_key LIKE ";
  ASSERT_EQ(Value(restored.url(), count + "'before-backup-%'"), std::to_string(kRidesPerBatch));
  ASSERT_EQ(Value(restored.url(), count + "'after-backup-%'"), "0");
  ASSERT_EQ(Value(primary_->url(), count + "'after-backup-%'"), std::to_string(kRidesPerBatch));

  const testing::RunResult lost = Reconcile(restored.url(), created_after);
  EXPECT_EQ(lost.exit_code, 5) << lost.out;
  const json report = json::parse(lost.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << lost.out;
  EXPECT_EQ(report.at("operations"), 2 * kRidesPerBatch) << "the first batch is listed and matched too";
  std::set<std::string> reported;
  for (const json& op : report.at("unmatched")) {
    reported.insert(op.at("provider_id"));
    // Stripe's reference is the provider key, the key the ledger shows.
    EXPECT_EQ(op.at("reference"), key_of[op.at("provider_id")]) << op;
    EXPECT_EQ(op.at("amount"), 2000) << op;
  }
  EXPECT_EQ(reported, second);

  const testing::RunResult clean = Reconcile(primary_->url(), created_after);
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  const json all_known = json::parse(clean.out, nullptr, false);
  ASSERT_TRUE(all_known.is_object()) << clean.out;
  EXPECT_EQ(all_known.at("unmatched"), json::array());
  EXPECT_EQ(all_known.at("operations"), 2 * kRidesPerBatch);
}

TEST(ReconcileCommandTest, ReportsAnAdapterThatCannotListAsUncheckedNotClean) {
  const testing::RunResult r =
      testing::RunToEnd({PHASEKEY_CLI_PATH, "keys", "reconcile", "--database-url", "postgresql://nobody@127.0.0.1:1/x",
                         "--flows", "/nonexistent", "--provider", "hyperpay", "--created-after", "0"});
  EXPECT_EQ(r.exit_code, 6) << r.out;
  EXPECT_NE(r.out.find("hyperpay cannot list its operations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing was checked"), std::string::npos) << r.out;
}

TEST(ReconcileCommandTest, RefusesASecretFileOthersMayReadAndATimeItCannotRead) {
  const std::string dir = std::filesystem::temp_directory_path() / ("reconcile-secret-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string secret = dir + "/secret";
  std::ofstream(secret) << "sk_test\n";
  std::filesystem::permissions(secret, std::filesystem::perms(0644));
  const std::vector<std::string> args = {
      PHASEKEY_CLI_PATH, "keys",         "reconcile",  "--database-url", "postgresql://nobody@127.0.0.1:1/x",
      "--flows",         "/nonexistent", "--provider", "stripe_v1"};
  std::vector<std::string> open_secret = args;
  open_secret.insert(open_secret.end(), {"--secret-file", secret, "--created-after", "2026-12-03T07:00:00Z"});
  EXPECT_EQ(testing::RunToEnd(open_secret).exit_code, 2);
  std::vector<std::string> bad_time = args;
  bad_time.insert(bad_time.end(), {"--created-after", "yesterday"});
  EXPECT_EQ(testing::RunToEnd(bad_time).exit_code, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace phasekey
