// `ride_booking chaos` as a real process (a short run with one SIGKILL of the
// service), and the invariant checker on hand-made rows: it must see a double
// charge, a charge without its ride and a replay that differs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <pqxx/pqxx>

#include "chaos/payments.h"
#include "chaos/report.h"
#include "phasekey/client/uuid7.h"
#include "phasekey/crash_point.h"
#include "ride_store.h"
#include "support/child_process.h"
#include "support/prerequisites.h"
#include "support/test_certificates.h"
#include "support/test_database.h"

namespace ride_booking {
namespace {

using phasekey::testing::TestDatabase;

using Outcome = phasekey::testing::RunResult;
using phasekey::testing::RunToEnd;

TEST(ChaosTest, ShortRunWithAKillPassesEveryInvariant) {
  TestDatabase db(TestDatabase::Schema::kMigrated);
  const Outcome o = RunToEnd({RIDE_BOOKING_PATH, "chaos", "--database-url", db.url(), "--clients", "4", "--requests",
                              "10", "--kills", "1", "--seed", "42", "--no-progress"});
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("chaos: PASS"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(4 clients x 10)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("replays                 40  (identical 40)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("restarts                 1"), std::string::npos) << o.out;
  // Some of the 40 were bookings by reference (POST /bookings, no key header).
  const auto at = o.out.find("by reference");
  ASSERT_NE(at, std::string::npos) << o.out;
  EXPECT_GT(std::stol(o.out.substr(at + std::string("by reference").size())), 0) << o.out;
  EXPECT_NE(o.out.find("match the ledger via webhooks"), std::string::npos) << o.out;
}

// The deployed shape: fake_gateway serves https only, with a certificate
// the test makes, and every service, worker and the harness trust its CA.
// Every charge then went over TLS, and the run still keeps every invariant.
// RunToEnd with the command's stderr in `out` too.
Outcome RunWithStderr(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"/bin/sh", "-c", "exec \"$@\" 2>&1", "sh"});
  return RunToEnd(argv);
}

TEST(ChaosTest, ARunWithItsGatewayOverTlsPassesEveryInvariant) {
  TestDatabase db(TestDatabase::Schema::kMigrated);
  const std::string certs = ::testing::TempDir() + "chaos-tls-" + std::to_string(::getpid());
  std::filesystem::create_directories(certs);
  phasekey::testing::MakeTestCertificates(certs);
  const Outcome o =
      RunToEnd({RIDE_BOOKING_PATH, "chaos", "--database-url", db.url(), "--clients", "3", "--requests", "8", "--kills",
                "1", "--seed", "43", "--no-progress", "--gateway-cert", certs + "/good.pem", "--gateway-key",
                certs + "/good.key", "--gateway-ca", certs + "/ca.pem"});
  EXPECT_NE(o.out.find("  gateway             https://127.0.0.1:"), std::string::npos) << o.out;
  const auto charges = o.out.find("  charges ");
  ASSERT_NE(charges, std::string::npos) << o.out;
  EXPECT_GT(std::stol(o.out.substr(charges + std::string("  charges ").size())), 0)
      << "rides were charged, so over TLS: " << o.out;
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("chaos: PASS"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("match the ledger via webhooks"), std::string::npos) << o.out;
  // A certificate without its key and CA, or a file that is not there, is
  // refused before anything starts.
  const Outcome alone = RunWithStderr({RIDE_BOOKING_PATH, "chaos", "--gateway-cert", certs + "/good.pem"});
  EXPECT_NE(alone.exit_code, 0) << alone.out;
  EXPECT_NE(alone.out.find("--gateway-key"), std::string::npos) << alone.out;
  const Outcome missing = RunWithStderr({RIDE_BOOKING_PATH, "chaos", "--gateway-cert", certs + "/none.pem",
                                         "--gateway-key", certs + "/good.key", "--gateway-ca", certs + "/ca.pem"});
  EXPECT_NE(missing.exit_code, 0) << missing.out;
  EXPECT_EQ(missing.out.find("chaos: fake_gateway"), std::string::npos) << "nothing started: " << missing.out;
  std::filesystem::remove_all(certs);
}

// A run without requests checks no ride: it must end FAIL with exit status
// 1, never PASS.
TEST(ChaosTest, ARunThatCheckedNothingFails) {
  TestDatabase db(TestDatabase::Schema::kMigrated);
  const Outcome o = RunToEnd({RIDE_BOOKING_PATH, "chaos", "--database-url", db.url(), "--clients", "1", "--requests",
                              "0", "--kills", "0", "--seed", "42", "--no-progress"});
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("VIOLATED: nothing was checked"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("chaos: FAIL"), std::string::npos) << o.out;
}

// The soak, short: bounded by time, each start of the service and the worker
// armed with a random crash point. The seed comes from the clock, so each run
// explores other points and moments; a failure's output names the seed.
TEST(ChaosTest, ShortSoakWithRandomCrashPointsPassesEveryInvariant) {
  if (!phasekey::CrashPointsCompiledIn()) {
    PHASEKEY_SKIP_OR_FAIL_IN_CI() << "this build has no crash points (PHASEKEY_CRASH_POINTS=OFF)";
  }
  TestDatabase db(TestDatabase::Schema::kMigrated);
  const Outcome o =
      RunToEnd({RIDE_BOOKING_PATH, "chaos", "--database-url", db.url(), "--clients", "6", "--duration-s", "12",
                "--crash-points", "--crash-every", "40", "--give-up-after", "3", "--kills", "1", "--no-progress"});
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("chaos: PASS"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("(6 clients for 12 s)"), std::string::npos) << o.out;
  const auto at = o.out.find("crash-point deaths");
  ASSERT_NE(at, std::string::npos) << o.out;
  EXPECT_GT(std::stol(o.out.substr(at + std::string("crash-point deaths").size())), 0)
      << "no crash point fired: the soak tested nothing\n"
      << o.out;
}

// A database with the example's tables and one finished key per call to
// AddKey, as the service would leave them.
class ChaosCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RideStore store(db_.url());
    ASSERT_TRUE(store.Migrate().ok());
    ASSERT_TRUE(store.EnsureDemoUsers().has_value());
  }

  // A finished key answering `status`/`body`, and its ride carrying
  // `charge_id` (none if empty). Returns the key's provider key.
  std::string AddKey(const std::string& key, long long user, int status, const std::string& body,
                     const std::string& charge_id) {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    const std::string stable_id =
        tx.exec_params1(
              "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, "
              "request_path, request_body, request_fingerprint, state, recovery_point, response_status, "
              "response_body, finished_at) VALUES ($1, $2, 0, 'create_ride', 'POST', '/rides', '{}', "
              "decode(repeat('00', 32), 'hex'), 'finished', 'finished', $3, convert_to($4, 'UTF8'), now()) "
              "RETURNING stable_id::text",
              "user_" + std::to_string(user), key, status, body)[0]
            .as<std::string>();
    tx.exec_params0(
        "INSERT INTO rides (user_id, idempotency_key, origin_lat, origin_lon, target_lat, target_lon, charge_id) "
        "VALUES ($1, $2, 0, 0, 1, 1, NULLIF($3, ''))",
        user, key, charge_id);
    tx.commit();
    return stable_id + ":charge";
  }

  static ChaosRequestRecord Answered(const std::string& key, long long user, int status, const std::string& body) {
    ChaosRequestRecord r;
    r.key = key;
    r.user_id = user;
    r.attempts = 1;
    r.first = ChaosAnswer{true, status, body, false};
    r.replay = ChaosAnswer{true, status, body, true};
    return r;
  }

  static std::string Charge(const std::string& id, const std::string& provider_key) {
    return R"({"id":")" + id + R"(","idempotency_key":")" + provider_key +
           R"(","amount":2000,"currency":"usd","customer":"7","created_at":1})";
  }

  static bool Mentions(const ChaosFindings& f, const std::string& text) {
    return std::any_of(f.violations.begin(), f.violations.end(),
                       [&text](const std::string& v) { return v.find(text) != std::string::npos; });
  }

  TestDatabase db_{TestDatabase::Schema::kMigrated};
  // The run's keys, as the library makes them: UUIDv7 from first_ on.
  const std::string first_ = ChaosFirstKey(std::chrono::system_clock::now());
  std::string NewKey() const { return phasekey::client::NewUuidV7Text(); }
};

TEST_F(ChaosCheckTest, AcceptsOneChargedRidePerKey) {
  const std::string body = R"({"charge_id":"ch_1","ride_id":1})";
  const std::string k0 = NewKey(), k1 = ChaosStoredKey(NewKey(), true);
  const std::string pk = AddKey(k0, 7, 201, body, "ch_1");
  const std::string declined = R"({"error":"card_declined"})";
  AddKey(k1, 13, 402, declined, "");
  auto f = CheckChaosRun(db_.url(), first_, {Answered(k0, 7, 201, body), Answered(k1, 13, 402, declined)},
                         "[" + Charge("ch_1", pk) + "]");
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_TRUE(f->violations.empty()) << ::testing::PrintToString(f->violations);
  EXPECT_EQ(f->charges, 1);
  EXPECT_EQ(f->replays_identical, 2);
  EXPECT_EQ(f->checked, 2);
  EXPECT_TRUE(ChaosFailures(ChaosTotals{}, *f).empty());
}

// The run's keys are those from its first key on, bare or booked: a key
// made before the run is not one of them, so its charge belongs to no key
// of this run.
TEST_F(ChaosCheckTest, KeysMadeBeforeTheRunAreNotTheRuns) {
  const std::string body = R"({"charge_id":"ch_1","ride_id":1})";
  const std::string before = phasekey::client::FormatUuid(
      phasekey::client::MinUuidV7(std::chrono::system_clock::now() - std::chrono::hours(1)));
  const std::string pk_bare = AddKey(before, 7, 201, body, "ch_1");
  const std::string pk_booked = AddKey(ChaosStoredKey(before, true), 7, 201, body, "ch_2");
  const std::string now = ChaosStoredKey(NewKey(), true);
  const std::string now_body = R"({"charge_id":"ch_3","ride_id":3})";
  const std::string pk_now = AddKey(now, 7, 201, now_body, "ch_3");
  auto f = CheckChaosRun(
      db_.url(), first_, {Answered(now, 7, 201, now_body)},
      "[" + Charge("ch_1", pk_bare) + "," + Charge("ch_2", pk_booked) + "," + Charge("ch_3", pk_now) + "]");
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_EQ(f->checked, 1);
  EXPECT_TRUE(Mentions(*f, "charge ch_1 (provider key")) << ::testing::PrintToString(f->violations);
  EXPECT_TRUE(Mentions(*f, "charge ch_2 (provider key")) << ::testing::PrintToString(f->violations);
  EXPECT_FALSE(Mentions(*f, "ch_3")) << ::testing::PrintToString(f->violations);
  EXPECT_EQ(f->violations.size(), 2u) << ::testing::PrintToString(f->violations);
}

// Requests that never reached the service break no invariant, but a run made
// only of them checked nothing: it fails.
TEST_F(ChaosCheckTest, ARunWithNoKeyRowToCheckFails) {
  ChaosRequestRecord never;
  never.key = NewKey();
  never.user_id = 7;
  auto f = CheckChaosRun(db_.url(), first_, {never}, "[]");
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_TRUE(f->violations.empty()) << ::testing::PrintToString(f->violations);
  EXPECT_EQ(f->checked, 0);
  ChaosTotals totals;
  totals.requests = 1;
  const std::vector<std::string> failures = ChaosFailures(totals, *f);
  ASSERT_EQ(failures.size(), 1u) << ::testing::PrintToString(failures);
  EXPECT_NE(failures[0].find("nothing was checked"), std::string::npos) << failures[0];
}

TEST_F(ChaosCheckTest, FlagsADoubleChargeAChargeWithoutItsRideAndADifferentReplay) {
  const std::string body = R"({"charge_id":"ch_1","ride_id":1})";
  const std::string key = NewKey();
  const std::string pk = AddKey(key, 7, 201, body, "ch_1");
  ChaosRequestRecord r = Answered(key, 7, 201, body);
  r.replay.body = R"({"charge_id":"ch_2","ride_id":1})";
  auto f = CheckChaosRun(db_.url(), first_, {r}, "[" + Charge("ch_1", pk) + "," + Charge("ch_2", pk) + "]");
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_TRUE(Mentions(*f, "2 charges in the ledger")) << ::testing::PrintToString(f->violations);
  EXPECT_TRUE(Mentions(*f, "charge ch_2 has no ride carrying it")) << ::testing::PrintToString(f->violations);
  EXPECT_TRUE(Mentions(*f, "the replay got 201")) << ::testing::PrintToString(f->violations);
}

TEST_F(ChaosCheckTest, FlagsAMissingRideAndAChargedDeclinedUser) {
  const std::string body = R"({"charge_id":"ch_9","ride_id":1})";
  const std::string k0 = NewKey(), k1 = NewKey();
  const std::string pk = AddKey(k0, 13, 201, body, "ch_9");
  auto f = CheckChaosRun(db_.url(), first_, {Answered(k0, 13, 201, body), Answered(k1, 7, 201, body)},
                         "[" + Charge("ch_9", pk) + "]");
  ASSERT_TRUE(f.has_value()) << f.error().ToString();
  EXPECT_TRUE(Mentions(*f, "declined user ended with 201")) << ::testing::PrintToString(f->violations);
  EXPECT_TRUE(Mentions(*f, k1 + " (user 7): answered 201 but has no key row"))
      << ::testing::PrintToString(f->violations);
}

TEST_F(ChaosCheckTest, PaymentStatesMatchingTheLedgerPassAndOthersAreNamed) {
  {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec0(
        "INSERT INTO ride_payments (charge_id, state) VALUES ('ch_1', 'succeeded'), ('ch_2', 'refunded'),"
        " ('ch_3', 'succeeded')");
    tx.commit();
  }
  const std::string agreeing = R"([{"id":"ch_1","refunded":false},{"id":"ch_2","refunded":true}])";
  auto ok = WaitForPaymentStates(db_.url(), agreeing, std::chrono::milliseconds(0));
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_TRUE(ok->mismatches.empty()) << ::testing::PrintToString(ok->mismatches);
  EXPECT_EQ(ok->matched, 2);
  EXPECT_EQ(ok->refunded, 1);
  const std::string disagreeing =
      R"([{"id":"ch_1","refunded":true},{"id":"ch_3","refunded":false},{"id":"ch_4","refunded":false}])";
  auto bad = WaitForPaymentStates(db_.url(), disagreeing, std::chrono::milliseconds(300));
  ASSERT_TRUE(bad.has_value()) << bad.error().ToString();
  EXPECT_EQ(bad->matched, 1);
  EXPECT_EQ(bad->mismatches,
            (std::vector<std::string>{"payment state of ch_1 is succeeded but the gateway's ledger says refunded",
                                      "payment state of ch_4 is missing but the gateway's ledger says succeeded"}));
}

}  // namespace
}  // namespace ride_booking
