// Security of the ride service, with real processes:
//   - accounts are isolated: the same Idempotency-Key under two accounts is
//     two operations (two rides, two charges, no 409 or 422 across them),
//     a replay never returns another account's response, and GET /rides
//     lists only the caller's rides;
//   - secrets never leak: no API token (tok_user_*) and no database
//     password appears in any log line of the service or the worker, in a
//     stored response or anywhere else on the key rows, in the staged jobs,
//     or at the gateway;
//   - the provider's API credential, for every provider the example speaks,
//     reaches the gateway (which refuses requests without it) and nowhere
//     else: not the logs, the key rows, the stored responses or the jobs;
//     nor does a wrong credential the gateway refused.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <sstream>
#include <thread>

#include "pg/conninfo.h"
#include "support/ride_world.h"
#include "support/tcp_probe.h"
#include "support/test_database.h"
#include "support/wait.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::HttpCall;
using testing::HttpResult;
using testing::RideWorld;

const std::string kKey = "shared-key-0001";

testing::RideWorldOptions Options(const std::string& url, const std::string& log_dir = "") {
  testing::RideWorldOptions o{.database_url = url, .log_dir = log_dir};
  return o;
}

HttpResult ListRides(std::uint16_t port, int user) {
  return HttpCall(port, "GET", "/rides", {{"Authorization", "Bearer tok_user_" + std::to_string(user)}}, "");
}

TEST(SecurityTest, KeysReplaysRidesAndListsNeverCrossAccounts) {
  testing::TestDatabase db;
  RideWorld w(Options(db.url()));
  std::uint16_t port = 0;
  auto service = w.StartService(&port);
  ASSERT_NE(port, 0);

  // User 1's request is still charging (slow gateway) when user 2 sends the
  // same key: user 2 is not told the key is in progress.
  ASSERT_TRUE(w.SetGatewayFaults({{"latency_ms", 700}}));
  auto first = std::async(std::launch::async, [&] { return w.PostRide(port, 1, kKey); });
  ASSERT_TRUE(
      testing::WaitUntil([&] { return testing::DeliveredTo(service->pid(), w.gateway_port()); }, milliseconds(10000)))
      << "user 1's charge request never reached the gateway";
  HttpResult two = w.PostRide(port, 2, kKey);
  HttpResult one = first.get();
  ASSERT_TRUE(w.SetGatewayFaults({{"latency_ms", 0}}));
  ASSERT_EQ(one.status, 201) << one.body;
  ASSERT_EQ(two.status, 201) << "the same key under another account is another operation: " << two.body;
  EXPECT_EQ(two.Header("idempotent-replayed"), "") << "user 2 got a replay";
  const auto b1 = nlohmann::json::parse(one.body), b2 = nlohmann::json::parse(two.body);
  EXPECT_NE(b1["ride_id"], b2["ride_id"]);
  EXPECT_NE(b1["charge_id"], b2["charge_id"]);

  // Each account's retry replays its own response, byte for byte.
  HttpResult again1 = w.PostRide(port, 1, kKey), again2 = w.PostRide(port, 2, kKey);
  EXPECT_EQ(again1.body, one.body);
  EXPECT_EQ(again2.body, two.body);
  EXPECT_EQ(again1.Header("idempotent-replayed"), "true");
  EXPECT_EQ(again2.Header("idempotent-replayed"), "true");
  // Another body under the key is a mismatch for its own account only: user
  // 3 may use the key with any body.
  const std::string other = R"({"origin_lat": 5, "origin_lon": 6, "target_lat": 7, "target_lon": 8})";
  EXPECT_EQ(w.PostRide(port, 1, kKey, other).status, 422);
  HttpResult three = w.PostRide(port, 3, kKey, other);
  EXPECT_EQ(three.status, 201) << three.body;

  // The rows: one key and one ride per account, each charged to its user.
  EXPECT_EQ(w.Rows("SELECT account FROM phasekey.idempotency_keys ORDER BY account"),
            (std::vector<std::string>{"user_1", "user_2", "user_3"}));
  EXPECT_EQ(
      w.Rows("SELECT user_id || ':' || charge_id FROM rides ORDER BY user_id"),
      (std::vector<std::string>{"1:" + b1["charge_id"].get<std::string>(), "2:" + b2["charge_id"].get<std::string>(),
                                "3:" + nlohmann::json::parse(three.body)["charge_id"].get<std::string>()}));
  const nlohmann::json ledger = w.Ledger();
  ASSERT_EQ(ledger.size(), 3u);
  for (const auto& c : ledger) {
    const std::string expected_customer = c["id"] == b1["charge_id"] ? "1" : c["id"] == b2["charge_id"] ? "2" : "3";
    EXPECT_EQ(c["customer"], expected_customer) << c.dump();
  }

  // GET /rides: the caller's rides and nobody else's; no way to name
  // another user's.
  const auto list1 = nlohmann::json::parse(ListRides(port, 1).body);
  const auto list2 = nlohmann::json::parse(ListRides(port, 2).body);
  ASSERT_EQ(list1.size(), 1u);
  ASSERT_EQ(list2.size(), 1u);
  EXPECT_EQ(list1[0]["id"], b1["ride_id"]);
  EXPECT_EQ(list2[0]["id"], b2["ride_id"]);
  EXPECT_EQ(nlohmann::json::parse(ListRides(port, 4).body).size(), 0u);
  for (const char* target : {"/rides?user_id=1", "/rides/1", "/rides?account=user_1"}) {
    HttpResult r = HttpCall(port, "GET", target, {{"Authorization", "Bearer tok_user_2"}}, "");
    EXPECT_NE(r.status, 200) << target << ": " << r.body;
    EXPECT_EQ(r.body.find(b1["charge_id"].get<std::string>()), std::string::npos) << target;
  }
  EXPECT_EQ(HttpCall(port, "GET", "/rides", {}, "").status, 401);
}

// Every occurrence of `needle` in `haystack`, as "where: line".
void FindLeaks(const std::string& where, const std::string& haystack, const std::vector<std::string>& needles,
               std::vector<std::string>* leaks) {
  std::istringstream lines(haystack);
  for (std::string line; std::getline(lines, line);) {
    for (const auto& n : needles) {
      if (line.find(n) != std::string::npos) leaks->push_back(where + ": " + line.substr(0, 200));
    }
  }
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every place a secret of `secrets` shows, one line each ("" when none):
// every file in `log_dir` (their total size goes to *log_bytes), every key
// row with its stored response and headers, the staged jobs, receipts and
// audit records, and the gateway's ledger.
std::string Leaks(const RideWorld& w, const std::string& log_dir, const std::vector<std::string>& secrets,
                  std::size_t* log_bytes) {
  std::vector<std::string> leaks;
  for (const auto& entry : std::filesystem::directory_iterator(log_dir)) {
    const std::string text = ReadFile(entry.path().string());
    *log_bytes += text.size();
    FindLeaks(entry.path().filename().string(), text, secrets, &leaks);
  }
  const std::vector<std::pair<std::string, std::string>> tables = {
      {"key row",
       "SELECT k::text || ' ' || coalesce(convert_from(k.response_body, 'UTF8'), '') FROM phasekey.idempotency_keys k"},
      {"staged job", "SELECT j::text FROM phasekey.staged_jobs j"},
      {"receipt", "SELECT r::text FROM receipts r"},
      {"audit record", "SELECT a::text FROM audit_records a"}};
  for (const auto& [where, sql] : tables) {
    for (const auto& row : w.Rows(sql)) FindLeaks(where, row, secrets, &leaks);
  }
  FindLeaks("gateway ledger", w.Ledger().dump(), secrets, &leaks);
  std::string report;
  for (const auto& l : leaks) report += "  " + l + "\n";
  return report;
}

// `url` with a password, and that password: the one the URL carries (the
// embedded test server's generated password, or DATABASE_URL's), else
// `fallback` added as libpq's password parameter (a server that trusts local
// connections gets it without needing it).
std::pair<std::string, std::string> WithPassword(const std::string& url, const std::string& fallback) {
  if (const auto given = pg::ParseConnInfo(url); given && given->contains("password")) {
    return {url, given->at("password")};
  }
  if (url.rfind("postgres", 0) == 0) {
    return {url + (url.find('?') == std::string::npos ? "?" : "&") + "password=" + fallback, fallback};
  }
  return {url + " password=" + fallback, fallback};
}

TEST(SecurityTest, TokensAndPasswordsNeverReachLogsStoredResponsesOrTheGateway) {
  testing::TestDatabase db;
  std::random_device rd;
  const auto with_password = WithPassword(db.url(), "pk-db-secret-" + std::to_string(rd()));
  const std::string& url = with_password.first;
  const std::string& password = with_password.second;  // the secret the scan looks for
  const std::string logs = std::string(PHASEKEY_TEST_BINARY_DIR) + "/security-logs-" + std::to_string(::getpid());
  RideWorld w(Options(url, logs));
  std::uint16_t port = 0;
  auto service = w.StartService(&port);
  ASSERT_NE(port, 0);
  auto worker = w.StartWorker();

  // Successes, replays, a declined card (user 13: a stored 402 quoting the
  // provider), a mismatch, bad bodies, bad and unknown tokens, a gateway
  // that fails (503) and one that loses answers (the worker re-drives).
  for (int user : {1, 2, 13}) EXPECT_NE(w.PostRide(port, user, "sec-" + std::to_string(user)).status, 0);
  w.PostRide(port, 1, "sec-1");
  w.PostRide(port, 1, "sec-1", R"({"origin_lat": 9, "origin_lon": 9, "target_lat": 9, "target_lon": 9})");
  w.PostRide(port, 1, "sec-bad", "{not json");
  HttpCall(port, "POST", "/rides", {{"Authorization", "Bearer tok_user_999999"}, {"Idempotency-Key", "k"}},
           testing::kRideBody);
  HttpCall(port, "POST", "/rides", {{"Authorization", "tok_user_5"}, {"Idempotency-Key", "k"}}, testing::kRideBody);
  ASSERT_TRUE(w.SetGatewayFaults({{"fail_rate", 1.0}}));
  w.PostRide(port, 4, "sec-gateway-down");
  ASSERT_TRUE(w.SetGatewayFaults({{"fail_rate", 0.0}, {"drop_response_rate", 1.0}}));
  w.PostRide(port, 5, "sec-lost-answer");
  ASSERT_TRUE(w.SetGatewayFaults({{"drop_response_rate", 0.0}}));
  ASSERT_TRUE(testing::WaitUntilAllKeysFinished(w, milliseconds(30000)));
  // The receipts are sent (the enqueuer ran) before anything is scanned.
  for (int i = 0; i < 100 && w.Value("SELECT count(*) FROM phasekey.staged_jobs") != "0"; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  // A service and a worker that cannot reach their database report it,
  // without the password in the URL they were given.
  const std::string unreachable = "postgresql://postgres:" + password + "@127.0.0.1:1/postgres?connect_timeout=2";
  for (const char* command : {"serve", "worker"}) {
    std::vector<std::string> args = {RIDE_BOOKING_PATH, command, "--database-url", unreachable};
    if (std::string(command) == "serve") args.insert(args.end(), {"--listen", "127.0.0.1:0"});
    testing::ChildProcess bad(args, {}, w.LogPath(std::string("unreachable-") + command));
    EXPECT_EQ(bad.Wait(), 1) << command << " must fail to start";
  }
  service->Signal(SIGTERM);
  worker->Signal(SIGTERM);
  service->Wait();
  worker->Wait();

  std::size_t log_bytes = 0;
  const std::string report = Leaks(w, logs, {"tok_user_", password}, &log_bytes);
  EXPECT_TRUE(report.empty()) << "secrets leaked:\n" << report;
  // The scan looked at something: the logs hold the requests and the failed
  // starts, the stored responses include the 402 and the 201s.
  EXPECT_GT(log_bytes, 500u);
  EXPECT_EQ(w.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE response_status = 402"), "1");
  std::printf("[ secrets ] scanned %zu bytes of logs, every key row, job, receipt and the ledger\n", log_bytes);
  std::error_code ec;
  if (!HasFailure()) std::filesystem::remove_all(logs, ec);
}

// The scan itself: a secret planted in a log file and in a key row is found.
TEST(SecurityTest, TheLeakScanFindsAPlantedSecret) {
  testing::TestDatabase db;
  const std::string logs = std::string(PHASEKEY_TEST_BINARY_DIR) + "/planted-logs-" + std::to_string(::getpid());
  RideWorld w(Options(db.url(), logs));
  std::uint16_t port = 0;
  auto service = w.StartService(&port);
  ASSERT_NE(port, 0);
  ASSERT_EQ(w.PostRide(port, 1, "planted").status, 201);
  std::ofstream(logs + "/planted.log") << "a line\nAuthorization: Bearer sk_planted_123\n";
  std::size_t log_bytes = 0;
  std::string report = Leaks(w, logs, {"sk_planted_123"}, &log_bytes);
  EXPECT_NE(report.find("planted.log: Authorization: Bearer sk_planted_123"), std::string::npos) << report;
  w.Value("UPDATE phasekey.idempotency_keys SET last_error = 'sk_planted_456' RETURNING 1");
  report = Leaks(w, logs, {"sk_planted_456"}, &log_bytes);
  EXPECT_NE(report.find("key row: "), std::string::npos) << report;
  std::error_code ec;
  std::filesystem::remove_all(logs, ec);
}

// The provider credential: sent on every charge (the gateway refuses
// requests without it, so the 201s prove it was sent), then looked for
// everywhere the service and the worker write. A second service with a wrong
// credential is refused by the gateway; that credential must not leak either.
class ProviderSecretTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ProviderSecretTest, TheCredentialReachesTheGatewayAndNothingElse) {
  testing::TestDatabase db;
  std::random_device rd;
  const std::string secret = "sk_live_pk" + std::to_string(rd()) + std::to_string(rd());
  const std::string wrong = "sk_live_wrong" + std::to_string(rd()) + std::to_string(rd());
  const std::string logs =
      std::string(PHASEKEY_TEST_BINARY_DIR) + "/provider-secret-logs-" + GetParam() + "-" + std::to_string(::getpid());
  testing::RideWorldOptions o = Options(db.url(), logs);
  o.provider = GetParam();
  o.provider_secret = secret;
  RideWorld w(o);
  std::uint16_t port = 0, wrong_port = 0;
  auto service = w.StartService(&port);
  ASSERT_NE(port, 0);
  auto worker = w.StartWorker();
  auto wrong_service =
      w.StartService(&wrong_port, {.name = "wrong-credential", .env = {"RIDE_BOOKING_PROVIDER_SECRET=" + wrong}});
  ASSERT_NE(wrong_port, 0);

  EXPECT_EQ(w.PostRide(port, 1, "ps-ok").status, 201);
  EXPECT_EQ(w.PostRide(port, 13, "ps-declined").status, 402);
  ASSERT_TRUE(w.SetGatewayFaults({{"fail_rate", 1.0}}));
  EXPECT_EQ(w.PostRide(port, 4, "ps-gateway-down").status, 503);
  ASSERT_TRUE(w.SetGatewayFaults({{"fail_rate", 0.0}, {"drop_response_rate", 1.0}}));
  w.PostRide(port, 5, "ps-lost-answer");
  ASSERT_TRUE(w.SetGatewayFaults({{"drop_response_rate", 0.0}}));
  const HttpResult refused = w.PostRide(wrong_port, 2, "ps-wrong-credential");
  EXPECT_GE(refused.status, 500) << "a credential the gateway refuses is the service's failure, not the client's: "
                                 << refused.body;
  ASSERT_TRUE(testing::WaitUntilAllKeysFinished(w, milliseconds(30000)));
  EXPECT_EQ(w.Value("SELECT count(*) FROM rides WHERE charge_id IS NOT NULL"), "3") << "ok, gateway-down, lost-answer";
  EXPECT_EQ(w.Ledger().size(), 3u) << "the wrong credential charged nothing";
  for (auto* p : {&service, &worker, &wrong_service}) {
    (*p)->Signal(SIGTERM);
    (*p)->Wait();
  }

  std::size_t log_bytes = 0;
  const std::string report = Leaks(w, logs, {secret, wrong}, &log_bytes);
  EXPECT_TRUE(report.empty()) << "provider credential leaked:\n" << report;
  EXPECT_GT(log_bytes, 200u);
  std::error_code ec;
  if (!HasFailure()) std::filesystem::remove_all(logs, ec);
}

INSTANTIATE_TEST_SUITE_P(EveryProvider, ProviderSecretTest,
                         ::testing::Values("stripe", "adyen", "square", "tap", "moyasar", "hyperpay"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace phasekey
