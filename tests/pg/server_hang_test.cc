// A database server that hangs: every PostgreSQL process stopped with
// SIGSTOP, sockets open, nothing answering (a frozen VM, a stuck storage
// layer). libpq alone would wait forever; the engine's deadlines must turn
// the hang into a prompt, retryable failure, and the key must converge once
// the server runs again.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <pqxx/pqxx>
#include <thread>

#include "pg/pool.h"
#include "phasekey/migrate.h"
#include "phasekey/runner.h"
#include "support/child_process.h"
#include "support/dedicated_postgres.h"
#include "support/ride_flow.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::DedicatedPostgres;
using testing::ProcessState;
using testing::TestGateway;

constexpr milliseconds kDeadline{1000};
const std::string kBody = R"({"origin_lat": 1, "origin_lon": 2, "target_lat": 3, "target_lon": 4})";

class ServerHangTest : public ::testing::Test {
 protected:
  ServerHangTest() : server_(Named("server-hang")) {}

  static testing::DedicatedPostgresOptions Named(const std::string& name) {
    testing::DedicatedPostgresOptions o;
    o.name = name;
    return o;
  }

  void SetUp() override {
    const Status started = server_.Start();
    ASSERT_TRUE(started.ok()) << started.ToString();
    auto migrated = Migrate(server_.url(), EngineMigrations());
    ASSERT_TRUE(migrated.has_value()) << migrated.error().ToString();
    testing::CreateRideTables(server_.url());
  }

  void TearDown() override { server_.Thaw(); }

  DatabaseOptions Options() const {
    DatabaseOptions o;
    o.url = server_.url();
    o.call_deadline = kDeadline;
    o.connect_timeout_s = 2;  // libpq's smallest
    o.checkout_timeout = milliseconds(500);
    return o;
  }

  DedicatedPostgres server_;
};

TEST_F(ServerHangTest, ACallOnAHungServerFailsWithinTheDeadlinePlusOneSecond) {
  auto pool = pg::Pool::Open(Options());
  ASSERT_TRUE(pool.has_value()) << pool.error().ToString();
  ASSERT_TRUE((*pool)->Transact([](pqxx::transaction_base& tx) { tx.exec1("SELECT 1"); }).ok());

  server_.Freeze();
  ASSERT_EQ(ProcessState(server_.pid()), 'T') << "the server was not stopped: no hang to survive";
  const auto start = steady_clock::now();
  Status s = (*pool)->Transact([](pqxx::transaction_base& tx) { tx.exec1("SELECT 1"); });
  const auto took = steady_clock::now() - start;
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsDeadlineExceeded() || s.IsRetryable()) << s.ToString();
  EXPECT_LT(took, kDeadline + milliseconds(1000)) << "the call hung past its deadline";
  EXPECT_EQ((*pool)->open_connections(), 0u) << "the hung connection must be thrown away";

  server_.Thaw();
  EXPECT_TRUE((*pool)->Transact([](pqxx::transaction_base& tx) { tx.exec1("SELECT 1"); }).ok()) << "the pool recovers";
}

// The server hangs while a request is inside its gateway call: recording
// the charge cannot commit. The request answers a retryable 503 promptly
// (every attempt bounded by the deadline or the connect timeout), nothing is
// charged twice, and the retry after the server resumes finishes the key.
TEST_F(ServerHangTest, ARequestCaughtByTheHangAnswersRetryLaterAndItsKeyConvergesAfterSigcont) {
  TestGateway gateway;
  RunnerOptions o;
  o.database = Options();
  o.lease = milliseconds(5000);
  o.lease_margin = milliseconds(1500);  // above the call deadline (Runner::Open checks)
  o.backoff_base = milliseconds(10);
  o.backoff_cap = milliseconds(50);
  auto runner = Runner::Open(o, {testing::MakeRideFlow(&gateway, milliseconds(2000))});
  ASSERT_TRUE(runner.has_value()) << runner.error().ToString();

  std::promise<void> inside_charge, frozen;
  auto frozen_future = frozen.get_future().share();
  std::atomic<bool> first_call{true};
  gateway.set_before_call([&] {
    if (!first_call.exchange(false)) return;
    inside_charge.set_value();
    frozen_future.wait();
  });
  const Request request{"acct_1", "hang-key-1", "POST", "/rides", kBody};
  auto first = std::async(std::launch::async, [&] { return (*runner)->Execute("create_ride", request); });
  inside_charge.get_future().wait();
  server_.Freeze();
  EXPECT_EQ(ProcessState(server_.pid()), 'T') << "the server was not stopped: no hang to survive";
  const auto start = steady_clock::now();
  frozen.set_value();
  const Reply during = first.get();
  const auto took = steady_clock::now() - start;
  EXPECT_EQ(during.kind, Reply::Kind::kRetryLater) << during.detail;
  // At most attempts_per_request + 1 rounds, each bounded by a deadline or a
  // connect timeout: far below an HTTP client's patience.
  EXPECT_LT(took, milliseconds(20000));
  std::printf("[ hang ] the request answered retry-later after %lld ms: %s\n",
              static_cast<long long>(std::chrono::duration_cast<milliseconds>(took).count()), during.detail.c_str());

  server_.Thaw();
  Reply after;
  for (int i = 0; i < 100; ++i) {
    after = (*runner)->Execute("create_ride", request);
    if (after.kind != Reply::Kind::kInProgress && after.kind != Reply::Kind::kRetryLater) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(after.kind, Reply::Kind::kCompleted) << after.detail;
  EXPECT_EQ(after.response.status, 201);
  EXPECT_EQ(gateway.charges(), 1);
  pqxx::connection conn(server_.url());
  pqxx::nontransaction tx(conn);
  EXPECT_EQ(tx.exec1("SELECT count(*) FROM rides")[0].as<int>(), 1);
  EXPECT_EQ(tx.exec1("SELECT state::text FROM phasekey.idempotency_keys")[0].as<std::string>(), "finished");
}

}  // namespace
}  // namespace phasekey
