// Exactly once at the edges (issue 15), end to end: real fake_gateway,
// `ride_booking serve` and `ride_booking worker` processes, real HTTP over
// loopback, a real PostgreSQL. Two everyday situations:
//
//   1. A 40-second gateway outage loses no ride. Twenty clients retry their
//      own key once a second while the gateway answers 500, then give up.
//      The worker finishes every ride once the gateway is back, each charged
//      exactly once, however often its key was claimed.
//   2. A retry past the provider's memory does not charge twice. The service
//      is SIGKILLed while the gateway makes the charge, so the charge exists
//      but the key never recorded it; the key row is then 25 hours old and
//      the gateway has forgotten its idempotency keys. Where the charge phase
//      cannot look the charge up (Square) the key is parked for an operator
//      and the client gets a 500 operation-unverified; where it can (Stripe,
//      the example's default, Moyasar, HyperPay) the retry finds the
//      original charge.
//
// Each test first proves that its fault happened (a SIGKILL, 503s, the
// ledger's state), then that nothing was lost and nothing charged twice.
//
// The binaries run with their default flags except:
//   --database-url           the test's own database (instead of
//                            $DATABASE_URL or an embedded server)
//   --listen 127.0.0.1:0     any free port, so test processes can run side
//                            by side
//   --gateway-url            where this test's gateway listens
//   --data-dir (gateway)     a fresh ledger per test (the default directory
//                            is shared by every gateway on the host)
//   --provider / --dialect   only in the tests of a retry past the provider's
//                            memory, which name the provider
//   --give-up-after-hours 48 only in those tests too: their keys are 25 h
//                            old, and under the default 12 h the give-up
//                            rule, not the provider's memory, would decide
//   --lookup-window-ms 0     (RideWorld) the fake gateway's lookups do not lag
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/child_process.h"
#include "support/http_client.h"
#include "support/ride_world.h"
#include "support/tcp_probe.h"
#include "support/test_database.h"
#include "support/wait.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::ChildProcess;
using testing::HttpCall;
using testing::HttpResult;
using testing::RunToEnd;
using testing::TestDatabase;
using testing::WaitUntil;

const std::string kRide = R"({"origin_lat": 52.52, "origin_lon": 13.40, "target_lat": 48.85, "target_lon": 2.35})";

// The engine's attempt cap before issue 15: a key claimed this often was
// dead-lettered, however its attempts had failed.
constexpr int kOldAttemptCap = 10;

// The inodes of the sockets process `pid` holds open.
std::set<ino_t> SocketInodes(pid_t pid) {
  std::set<ino_t> inodes;
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(it->path(), link_ec).string();
    if (link_ec || !target.starts_with("socket:[")) continue;
    inodes.insert(static_cast<ino_t>(std::stoull(target.substr(8))));
  }
  return inodes;
}

// How many of the connections process `pid` holds to the server on `port`
// have delivered bytes to it: requests that are at the server, whatever
// happens to `pid` now.
int RequestsDeliveredTo(pid_t pid, std::uint16_t port) {
  const std::vector<testing::TcpEnd> all = testing::EstablishedTcpEnds();
  const std::set<ino_t> mine = SocketInodes(pid);
  int delivered = 0;
  for (const testing::TcpEnd& client : all) {
    if (client.remote_port != port || !mine.contains(client.inode)) continue;
    for (const testing::TcpEnd& server : all) {
      if (server.local_port == port && server.remote_port == client.local_port && server.bytes_received > 0) {
        ++delivered;
        break;
      }
    }
  }
  return delivered;
}

// Whether `value` is a Retry-After of whole seconds, at least one.
bool IsDelaySeconds(const std::string& value) {
  if (value.empty() || value.size() > 9 || value.find_first_not_of("0123456789") != std::string::npos) return false;
  return std::stoi(value) >= 1;
}

// A flag that wakes whoever waits on it: clients wait out their second
// between retries on it, so they give up the moment they are told to.
class GiveUp {
 public:
  void Now() {
    {
      std::lock_guard lock(mu_);
      given_up_ = true;
    }
    cv_.notify_all();
  }
  // Waits until `when` or until told to give up; true if told.
  bool WaitUntil(std::chrono::steady_clock::time_point when) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, when, [this] { return given_up_; });
  }
  bool given_up() {
    std::lock_guard lock(mu_);
    return given_up_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool given_up_ = false;
};

// What one client saw.
struct ClientLog {
  std::map<int, int> statuses;              // answers by status (0: no answer)
  int retry_later_without_retry_after = 0;  // 503s without a valid Retry-After header
  std::vector<std::string> unexpected;      // answers other than 503 and 409
};

class ExactlyOnceEdgesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("pk-edges-" + db_.name());
    std::filesystem::create_directories(dir_);
  }

  void TearDown() override {
    worker_.reset();
    service_.reset();
    world_.reset();
    if (HasFailure()) {
      std::printf("the processes' stderr is kept in %s\n", dir_.c_str());
    } else {
      std::filesystem::remove_all(dir_);
    }
  }

  // Starts fake_gateway speaking `provider`'s API ("" : its default, Stripe).
  // The processes get the service's own lease and charge timeout.
  void StartGateway(const std::string& provider = "") {
    testing::RideWorldOptions o{.database_url = db_.url(), .lease_seconds = 0, .charge_timeout_ms = 0};
    if (!provider.empty()) o.provider = provider;
    o.log_dir = dir_.string();
    world_ = std::make_unique<testing::RideWorld>(o);
    gw_port_ = world_->gateway_port();
  }

  // Starts (or, after a kill, starts again) `ride_booking serve`.
  void StartService() {
    service_ = world_->StartService(&port_, {.args = process_args_});
    ASSERT_NE(port_, 0) << "ride_booking serve did not start";
  }

  // Starts `ride_booking worker` (re-drive, reaper, receipts).
  void StartWorker() {
    worker_ = world_->StartWorker({.args = process_args_});
    ASSERT_FALSE(worker_->WaitForLine("metrics on", milliseconds(30000)).empty())
        << "ride_booking worker did not start";
  }

  HttpResult PostRide(int user, const std::string& key, milliseconds timeout = milliseconds(10000)) const {
    return HttpCall(port_, "POST", "/rides",
                    {{"Authorization", "Bearer tok_user_" + std::to_string(user)},
                     {"Content-Type", "application/json"},
                     {"Idempotency-Key", key}},
                    kRide, timeout);
  }
  bool SetFaults(const nlohmann::json& faults) const { return world_->SetGatewayFaults(faults); }
  nlohmann::json Ledger() const { return world_->Ledger(); }
  // The ids of every charge in the ledger, a charge made twice under the
  // same id (Moyasar's given_id is the payment's id) counted twice.
  std::multiset<std::string> LedgerIds() const {
    std::multiset<std::string> ids;
    for (const auto& charge : Ledger()) ids.insert(charge["id"].get<std::string>());
    return ids;
  }

  std::string Value(const std::string& sql) const { return db_.Value(sql); }
  // Every row of `sql`, each as its columns (NULL as "<null>").
  std::vector<std::vector<std::string>> Rows(const std::string& sql) const {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : tx.exec(sql)) {
      std::vector<std::string> columns;
      for (const auto& field : row) columns.push_back(field.is_null() ? "<null>" : field.c_str());
      rows.push_back(std::move(columns));
    }
    return rows;
  }
  // A column of the key row of `key`.
  std::string KeyColumn(const std::string& key, const std::string& column) const {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    const auto row =
        tx.exec_params1("SELECT " + column + "::text FROM phasekey.idempotency_keys WHERE idempotency_key = $1", key);
    return row[0].is_null() ? "<null>" : row[0].c_str();
  }

  TestDatabase db_;
  std::filesystem::path dir_;
  std::unique_ptr<testing::RideWorld> world_;
  std::unique_ptr<ChildProcess> service_, worker_;
  std::uint16_t gw_port_ = 0, port_ = 0;
  std::vector<std::string> process_args_;  // more flags for every service and worker
};

// ---------------------------------------------------------------------------
// 1. A 40-second gateway outage loses no ride.

constexpr int kOutageClients = 20;
constexpr seconds kOutage{40};
// Users 20..39: one ride each, never user 13 (whose card is declined).
int OutageUser(int client) { return 20 + client; }
std::string OutageKey(int client) { return "outage-ride-" + std::to_string(100 + client) + "-a1b2c3"; }

TEST_F(ExactlyOnceEdgesTest, AFortySecondGatewayOutageWithClientsThatGiveUpLosesNoRide) {
  StartGateway();
  StartService();
  // The worker runs throughout, as it would in production: during the outage
  // it re-drives the keys too, and before issue 15 it dead-lettered them at
  // their 10th claim.
  StartWorker();
  ASSERT_TRUE(SetFaults({{"fail_rate", 1.0}}));

  // Each client retries its own key once a second until it gives up; none
  // ever gets an answer it can stop on.
  GiveUp give_up;
  std::vector<ClientLog> logs(kOutageClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kOutageClients; ++i) {
    clients.emplace_back([&, i] {
      ClientLog& log = logs[i];
      for (auto next = std::chrono::steady_clock::now(); !give_up.given_up();) {
        const HttpResult r = PostRide(OutageUser(i), OutageKey(i));
        const int status = r.ok ? r.status : 0;
        ++log.statuses[status];
        if (status == 503 && !IsDelaySeconds(r.Header("retry-after"))) ++log.retry_later_without_retry_after;
        if (status != 503 && status != 409) {
          log.unexpected.push_back(std::to_string(status) + " " + (r.ok ? r.body : r.error));
          if (r.ok) return;  // a final answer: a client would stop here
        }
        next += seconds(1);
        if (give_up.WaitUntil(next)) return;
      }
    });
  }
  // The outage itself: how long it lasts is the scenario, not a guess at
  // how long something takes.
  std::this_thread::sleep_for(kOutage);
  give_up.Now();
  for (std::thread& client : clients) client.join();

  // The fault happened: every client was told to retry later (with a
  // Retry-After), no client got a final answer, the gateway charged nothing,
  // and every key was claimed more often than the old attempt cap.
  int retry_later = 0;
  for (int i = 0; i < kOutageClients; ++i) {
    const ClientLog& log = logs[i];
    const int answered_503 = log.statuses.contains(503) ? log.statuses.at(503) : 0;
    retry_later += answered_503;
    EXPECT_GT(answered_503, 0) << OutageKey(i) << " never saw the outage";
    EXPECT_EQ(log.retry_later_without_retry_after, 0) << OutageKey(i) << ": a 503 without a valid Retry-After";
    EXPECT_TRUE(log.unexpected.empty()) << OutageKey(i)
                                        << " got a final answer during the outage: " << log.unexpected.front();
  }
  EXPECT_GE(retry_later, kOutageClients * 10) << "the clients were not retrying once a second";
  ASSERT_TRUE(Ledger().empty()) << "the gateway charged during the outage: " << Ledger().dump();
  const auto keys = Rows("SELECT idempotency_key, attempts, failures, state FROM phasekey.idempotency_keys");
  ASSERT_EQ(keys.size(), static_cast<std::size_t>(kOutageClients));
  for (const auto& key : keys) {
    EXPECT_GT(std::stoi(key[1]), kOldAttemptCap) << key[0] << " was claimed only " << key[1] << " times";
    // Gateway 500s are retryable: none counts towards the failure cap.
    EXPECT_EQ(key[2], "0") << key[0] << " counted the outage as unclassified failures";
    EXPECT_EQ(key[3], "active") << key[0] << " was given up during the outage";
  }

  // The gateway recovers; the clients have gone. The worker alone must
  // finish every ride.
  ASSERT_TRUE(SetFaults({{"fail_rate", 0.0}}));
  const auto recovered = std::chrono::steady_clock::now();
  const bool settled =
      WaitUntil([&] { return Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'active'") == "0"; },
                milliseconds(120000), milliseconds(250));
  ASSERT_TRUE(settled) << "the worker did not finish the rides within 120 s: "
                       << Value(
                              "SELECT string_agg(idempotency_key || ' at ' || recovery_point || ': ' || "
                              "coalesce(last_error, ''), E'\\n') FROM phasekey.idempotency_keys WHERE state = "
                              "'active'");

  std::printf("outage: %d answers 503, attempts per key %s..%s; the worker settled every key %.1f s after recovery\n",
              retry_later, Value("SELECT min(attempts) FROM phasekey.idempotency_keys").c_str(),
              Value("SELECT max(attempts) FROM phasekey.idempotency_keys").c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - recovered).count());

  // Nothing lost: every key finished, none given up or parked.
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'finished'"),
            std::to_string(kOutageClients));
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state IN ('dead', 'needs_operator')"), "0")
      << Value(
             "SELECT string_agg(idempotency_key || ': ' || coalesce(last_error, ''), E'\\n') "
             "FROM phasekey.idempotency_keys WHERE state <> 'finished'");
  // Nothing charged twice: one charge per ride, each ride's own.
  const nlohmann::json ledger = Ledger();
  ASSERT_EQ(ledger.size(), static_cast<std::size_t>(kOutageClients)) << ledger.dump(2);
  std::map<std::string, std::string> charge_of_customer;
  for (const auto& charge : ledger) {
    const bool first = charge_of_customer.emplace(charge["customer"].get<std::string>(), charge["id"]).second;
    EXPECT_TRUE(first) << "customer " << charge["customer"] << " charged twice";
  }
  const auto rides = Rows("SELECT user_id, idempotency_key, coalesce(charge_id, '<none>') FROM rides");
  ASSERT_EQ(rides.size(), static_cast<std::size_t>(kOutageClients));
  for (const auto& ride : rides) {
    EXPECT_EQ(charge_of_customer[ride[0]], ride[2]) << "ride of " << ride[1] << " is not its user's one charge";
  }
  // A later retry gets the stored 201 and charges nothing more.
  for (int i = 0; i < kOutageClients; ++i) {
    const HttpResult again = PostRide(OutageUser(i), OutageKey(i));
    ASSERT_EQ(again.status, 201) << OutageKey(i) << ": " << again.body;
    EXPECT_EQ(again.Header("idempotent-replayed"), "true") << OutageKey(i);
    EXPECT_EQ(nlohmann::json::parse(again.body)["charge_id"], charge_of_customer[std::to_string(OutageUser(i))]);
  }
  EXPECT_EQ(Ledger().size(), static_cast<std::size_t>(kOutageClients));
}

// ---------------------------------------------------------------------------
// 2. A retry past the provider's memory does not charge twice.

constexpr int kForgottenRides = 6;
// Users 40..45, one ride each.
int ForgottenUser(int ride) { return 40 + ride; }
std::string ForgottenKey(int ride) { return "forgotten-ride-" + std::to_string(100 + ride) + "-d4e5f6"; }
// The ride the worker, not a client, takes up after the service's restart.
constexpr int kWorkerRide = kForgottenRides - 1;

class RetryPastTheProvidersMemoryTest : public ExactlyOnceEdgesTest {
 protected:
  // Keys older than the provider's memory but younger than give_up_after:
  // only the engine's retention rule (SendPolicy::kLookUpFirst) is at stake.
  RetryPastTheProvidersMemoryTest() { process_args_ = {"--give-up-after-hours", "48"}; }

  // Books kForgottenRides rides and SIGKILLs the service while the gateway
  // is making their charges, so each charge lands in the ledger and no key
  // records it. Then 25 hours pass for the key rows (longer than the
  // provider's 24 h key retention, shorter than the 48 h give-up time), the
  // gateway forgets every idempotency key it stored, and the service starts
  // again. Returns the charges made.
  std::multiset<std::string> ChargeThenKillThenForget() {
    StartService();
    if (HasFatalFailure()) return {};
    // Slow enough that the kill lands while every charge is being made.
    EXPECT_TRUE(SetFaults({{"latency_ms", 2500}}));
    std::vector<std::future<HttpResult>> doomed;
    for (int i = 0; i < kForgottenRides; ++i) {
      doomed.push_back(
          std::async(std::launch::async, [this, i] { return PostRide(ForgottenUser(i), ForgottenKey(i)); }));
    }
    const pid_t service = service_->pid();
    const bool all_sent =
        WaitUntil([&] { return RequestsDeliveredTo(service, gw_port_) >= kForgottenRides; }, milliseconds(20000));
    EXPECT_TRUE(all_sent) << "only " << RequestsDeliveredTo(service, gw_port_)
                          << " charge requests reached the gateway";
    service_->Signal(SIGKILL);
    // The fault happened: the service died of SIGKILL with every request in
    // flight, and the gateway still made every charge.
    EXPECT_EQ(service_->Wait(), 128 + SIGKILL);
    for (auto& answer : doomed) EXPECT_FALSE(answer.get().ok) << "a client got an answer before the kill";
    EXPECT_TRUE(WaitUntil([&] { return Ledger().size() >= static_cast<std::size_t>(kForgottenRides); },
                          milliseconds(10000), milliseconds(100)));
    const std::multiset<std::string> charges = LedgerIds();
    EXPECT_EQ(charges.size(), static_cast<std::size_t>(kForgottenRides));
    EXPECT_EQ(std::set<std::string>(charges.begin(), charges.end()).size(), charges.size()) << "an id charged twice";
    // ... and no key recorded its charge: every one is still at the point
    // before the charge, held by the dead service.
    EXPECT_EQ(Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'active' AND recovery_point = "
                    "'ride_created' AND owner_token IS NOT NULL AND NOT outcomes ? 'charge_created'"),
              std::to_string(kForgottenRides));
    EXPECT_EQ(Value("SELECT count(*) FROM rides WHERE charge_id IS NULL"), std::to_string(kForgottenRides));
    EXPECT_TRUE(SetFaults({{"latency_ms", 0}}));

    // 25 hours pass for the key rows: every timestamp of theirs moves back,
    // the dead service's lease with them (else the retry would wait out the
    // dead holder's lease first).
    const std::string aged = Value(
        "WITH aged AS (UPDATE phasekey.idempotency_keys SET created_at = created_at - interval '25 hours', "
        "point_reached_at = point_reached_at - interval '25 hours', locked_at = locked_at - interval '25 hours', "
        "lease_expires_at = lease_expires_at - interval '25 hours', "
        "next_attempt_at = next_attempt_at - interval '25 hours', updated_at = updated_at - interval '25 hours' "
        "RETURNING 1) SELECT count(*) FROM aged");
    EXPECT_EQ(aged, std::to_string(kForgottenRides));
    // ... and for the gateway, which no longer remembers any key it answered.
    const HttpResult forgot = HttpCall(gw_port_, "POST", "/_forget_keys", {}, "");
    EXPECT_EQ(forgot.status, 200) << forgot.body;
    StartService();
    return charges;
  }

  // Polls until `key` has left the state 'active'; its state then.
  std::string WaitUntilSettled(const std::string& key) {
    WaitUntil([&] { return KeyColumn(key, "state") != "active"; }, milliseconds(30000), milliseconds(100));
    return KeyColumn(key, "state");
  }
};

TEST_F(RetryPastTheProvidersMemoryTest, WithoutALookupTheKeyIsParkedForAnOperatorAndNothingIsChargedTwice) {
  // Square: its charge phase declares no lookup, and it keeps keys 24 h.
  StartGateway("square");
  const std::multiset<std::string> charges = ChargeThenKillThenForget();
  ASSERT_FALSE(HasFailure());

  // Client retries: the engine will not re-send a charge the provider may
  // have forgotten, and cannot ask whether it was made.
  for (int i = 0; i < kWorkerRide; ++i) {
    const HttpResult r = PostRide(ForgottenUser(i), ForgottenKey(i));
    EXPECT_EQ(r.status, 500) << ForgottenKey(i) << ": " << r.body;
    EXPECT_EQ(r.Header("content-type"), "application/problem+json");
    const auto problem = nlohmann::json::parse(r.body, nullptr, false);
    EXPECT_TRUE(problem.is_object() && problem.value("type", "").ends_with("operation-unverified")) << r.body;
    EXPECT_EQ(KeyColumn(ForgottenKey(i), "state"), "needs_operator");
    // Parked by the retention rule (the provider may have forgotten the
    // key), not by another one; without the rule the key would make a
    // resend look safe, and Square would charge again.
    EXPECT_NE(KeyColumn(ForgottenKey(i), "last_error").find("must look up first"), std::string::npos)
        << KeyColumn(ForgottenKey(i), "last_error");
  }
  EXPECT_EQ(LedgerIds(), charges) << "a client retry charged again: " << Ledger().dump(2);
  // The worker's path: the same rule, the same parking.
  StartWorker();
  EXPECT_EQ(WaitUntilSettled(ForgottenKey(kWorkerRide)), "needs_operator");

  // An operator's retry without having verified at the provider is refused
  // (exit 3) and changes nothing.
  const auto retried = RunToEnd({PHASEKEY_CLI_PATH, "keys", "retry", "--database-url", db_.url(),
                                 "user_" + std::to_string(ForgottenUser(0)), ForgottenKey(0)});
  EXPECT_EQ(retried.exit_code, 3) << retried.out;
  EXPECT_EQ(KeyColumn(ForgottenKey(0), "state"), "needs_operator");

  // Every key stays parked, every retry gets the same answer, and the
  // gateway still holds exactly the charges made before the kill.
  for (int i = 0; i < kForgottenRides; ++i) {
    const HttpResult r = PostRide(ForgottenUser(i), ForgottenKey(i));
    EXPECT_EQ(r.status, 500) << ForgottenKey(i) << ": " << r.body;
    EXPECT_NE(r.body.find("operation-unverified"), std::string::npos) << r.body;
  }
  EXPECT_EQ(Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'needs_operator'"),
            std::to_string(kForgottenRides));
  EXPECT_EQ(LedgerIds(), charges) << "a charge was made again: " << Ledger().dump(2);
}

class RetryPastTheProvidersMemoryWithALookupTest : public RetryPastTheProvidersMemoryTest,
                                                   public ::testing::WithParamInterface<std::string> {};

TEST_P(RetryPastTheProvidersMemoryWithALookupTest, TheRetryFindsTheOriginalChargeAndChargesNothingMore) {
  StartGateway(GetParam());
  const std::multiset<std::string> charges = ChargeThenKillThenForget();
  ASSERT_FALSE(HasFailure());

  // While the gateway's lookups fail, a client retry learns nothing and
  // sends nothing: past the provider's memory the key no longer makes a
  // resend safe (SendPolicy::kLookUpFirst). Were the key still trusted
  // (kSend), Stripe and Moyasar would be charged again here; HyperPay takes
  // no key, so its phase never resends on an inconclusive lookup anyway.
  ASSERT_TRUE(SetFaults({{"lookup_fail_rate", 1.0}}));
  for (int i = 0; i < kWorkerRide; ++i) {
    const HttpResult r = PostRide(ForgottenUser(i), ForgottenKey(i));
    EXPECT_EQ(r.status, 503) << ForgottenKey(i) << ": " << r.body;
  }
  EXPECT_EQ(LedgerIds(), charges) << "a retry resent under a forgotten key: " << Ledger().dump(2);
  ASSERT_TRUE(SetFaults({{"lookup_fail_rate", 0.0}}));

  // Client retries: the charge phase looks the payment up instead of
  // sending it again, and finishes the ride with the charge it finds.
  std::set<std::string> answered;
  for (int i = 0; i < kWorkerRide; ++i) {
    const HttpResult r = PostRide(ForgottenUser(i), ForgottenKey(i));
    EXPECT_EQ(r.status, 201) << ForgottenKey(i) << ": " << r.body;
    if (r.status == 201) answered.insert(nlohmann::json::parse(r.body)["charge_id"].get<std::string>());
  }
  EXPECT_EQ(LedgerIds(), charges) << "a client retry charged again: " << Ledger().dump(2);
  // The worker's path finds its charge the same way.
  StartWorker();
  EXPECT_EQ(WaitUntilSettled(ForgottenKey(kWorkerRide)), "finished")
      << KeyColumn(ForgottenKey(kWorkerRide), "last_error");

  for (int i = 0; i < kForgottenRides; ++i) {
    EXPECT_EQ(KeyColumn(ForgottenKey(i), "outcomes->'charge_created'->'reconciled'"), "true")
        << ForgottenKey(i) << " was not settled by the lookup: " << KeyColumn(ForgottenKey(i), "outcomes");
    const HttpResult replay = PostRide(ForgottenUser(i), ForgottenKey(i));
    EXPECT_EQ(replay.status, 201) << replay.body;
    EXPECT_EQ(replay.Header("idempotent-replayed"), "true");
    if (replay.status == 201) answered.insert(nlohmann::json::parse(replay.body)["charge_id"].get<std::string>());
  }
  // Each ride has its own original charge; the gateway made none more.
  EXPECT_EQ(answered, std::set<std::string>(charges.begin(), charges.end()));
  EXPECT_EQ(Value("SELECT count(DISTINCT charge_id) FROM rides"), std::to_string(kForgottenRides));
  EXPECT_EQ(LedgerIds(), charges) << "a charge was made again: " << Ledger().dump(2);
}

std::string Name(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

// Stripe: keys the gateway forgets, and a search by the metadata reference.
// Moyasar: keys (given_id) the gateway forgets, and a lookup by given_id.
// HyperPay: no keys at all, a lookup by merchant reference.
INSTANTIATE_TEST_SUITE_P(ProvidersWithALookup, RetryPastTheProvidersMemoryWithALookupTest,
                         ::testing::Values("stripe", "moyasar", "hyperpay"), Name);

}  // namespace
}  // namespace phasekey
