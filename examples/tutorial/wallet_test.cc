// The wallet service as its clients see it: fake_gateway, `wallet serve` and
// `wallet worker` run as processes on a database of their own (created in
// the server at $DATABASE_URL), and the test talks HTTP to them.
//   - a top-up runs once: one charge, the wallet credited once;
//   - a retry with the same key gets the stored answer, byte for byte;
//   - the same key with another body is refused with 422;
//   - a top-up whose client gave up mid-flow (the gateway failed, the
//     client got 503 and never came back) is finished by the worker.
// Environment: WALLET_BINARY, FAKE_GATEWAY (set by CMakeLists.txt) and
// DATABASE_URL (e.g. under `phasekey embedded-postgres -- ctest`).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <thread>

#include "phasekey/phases/http_client.h"
#include "test_process.h"

namespace wallet {
namespace {

using phasekey::phases::ProviderAnswer;
using phasekey::phases::ProviderRequest;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// `url` with its database name replaced by `db`.
std::string WithDatabase(const std::string& url, const std::string& db) {
  const auto query = url.find('?');
  const auto slash = url.rfind('/', query);
  return url.substr(0, slash + 1) + db + (query == std::string::npos ? "" : url.substr(query));
}

class WalletTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string server = Env("DATABASE_URL");
    ASSERT_FALSE(server.empty()) << "set DATABASE_URL (or run under `phasekey embedded-postgres --`)";
    ASSERT_FALSE(Env("WALLET_BINARY").empty() || Env("FAKE_GATEWAY").empty()) << "set WALLET_BINARY, FAKE_GATEWAY";
    // A database and a folder of this test's own.
    const std::string name = "wallet_test_" + std::to_string(getpid()) + "_" + std::to_string(++count_);
    admin_url_ = server;
    db_name_ = name;
    Admin("CREATE DATABASE " + db_name_);
    db_url_ = WithDatabase(server, db_name_);
    dir_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::create_directories(dir_);

    gateway_ = std::make_unique<Child>(
        std::vector<std::string>{Env("FAKE_GATEWAY"), "--listen", "127.0.0.1:0", "--data-dir", dir_ / "gateway"},
        dir_ / "gateway.out");
    auto gateway_at = gateway_->WaitForLine("listening on ", std::chrono::seconds(60));
    ASSERT_TRUE(gateway_at) << "fake_gateway did not start";
    gateway_url_ = "http://" + *gateway_at;

    serve_ = StartWallet({"serve", "--listen", "127.0.0.1:0"}, "serve.out");
    auto wallet_at = serve_->WaitForLine("listening on ", std::chrono::seconds(60));
    ASSERT_TRUE(wallet_at) << "wallet serve did not start";
    wallet_url_ = "http://" + *wallet_at;
    worker_ = StartWallet({"worker"}, "worker.out");
    ASSERT_TRUE(worker_->WaitForLine("worker running", std::chrono::seconds(60))) << "wallet worker did not start";
  }

  void TearDown() override {
    // Each stops cleanly on SIGTERM (exit status 0: no sanitizer report).
    for (auto* child : {&worker_, &serve_, &gateway_}) {
      if (*child == nullptr) continue;
      const int status = (*child)->Stop(SIGTERM);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
      child->reset();
    }
    if (!db_name_.empty()) Admin("DROP DATABASE IF EXISTS " + db_name_ + " WITH (FORCE)");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<Child> StartWallet(std::vector<std::string> args, const std::string& out) {
    args.insert(args.begin(), Env("WALLET_BINARY"));
    args.insert(args.end(), {"--database-url", db_url_, "--gateway-url", gateway_url_});
    return std::make_unique<Child>(args, dir_ / out);
  }

  void Admin(const std::string& sql) {
    pqxx::connection c(admin_url_);
    pqxx::nontransaction tx(c);
    tx.exec0(sql);
  }

  ProviderAnswer Call(const std::string& base, ProviderRequest request) {
    return http_->Send(base, request, std::chrono::seconds(30));
  }

  // POST /topups as alice with `key` and `body`.
  ProviderAnswer TopUp(const std::string& key, const std::string& body) {
    ProviderRequest r;
    r.method = "POST";
    r.path = "/topups";
    r.headers = {{"Authorization", "Bearer tok_alice"}, {"Idempotency-Key", key}};
    r.content_type = "application/json";
    r.body = body;
    return Call(wallet_url_, r);
  }

  long long Balance() {
    ProviderRequest r;
    r.method = "GET";
    r.path = "/wallet";
    r.headers = {{"Authorization", "Bearer tok_alice"}};
    const ProviderAnswer a = Call(wallet_url_, r);
    if (a.status != 200) throw std::runtime_error("GET /wallet: " + std::to_string(a.status) + " " + a.error);
    return nlohmann::json::parse(a.body).at("balance").get<long long>();
  }

  // Every charge the gateway made.
  nlohmann::json Ledger() {
    ProviderRequest r;
    r.method = "GET";
    r.path = "/_ledger";
    return nlohmann::json::parse(Call(gateway_url_, r).body);
  }

  void SetGatewayFaults(const std::string& json) {
    ProviderRequest r;
    r.path = "/_faults";
    r.content_type = "application/json";
    r.body = json;
    ASSERT_EQ(Call(gateway_url_, r).status, 200);
  }

  // The state of alice's top-up row with `key` ("" when there is none).
  std::string TopupState(const std::string& key) {
    pqxx::connection c(db_url_);
    pqxx::read_transaction tx(c);
    const pqxx::result r =
        tx.exec_params("SELECT state FROM topups WHERE account = 'alice' AND idempotency_key = $1", key);
    return r.empty() ? "" : r[0][0].as<std::string>();
  }

  static inline int count_ = 0;
  std::string admin_url_, db_name_, db_url_, gateway_url_, wallet_url_;
  std::filesystem::path dir_;
  std::unique_ptr<Child> gateway_, serve_, worker_;
  std::unique_ptr<phasekey::phases::HttpClient> http_ = phasekey::phases::NewBeastHttpClient();
};

TEST_F(WalletTest, ATopUpRunsOnce) {
  const ProviderAnswer a = TopUp("topup-1", R"({"amount": 2500})");
  ASSERT_EQ(a.status, 201) << a.body << a.error;
  const auto body = nlohmann::json::parse(a.body);
  EXPECT_EQ(body["amount"], 2500);
  EXPECT_EQ(body["balance"], 2500);
  const nlohmann::json ledger = Ledger();
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0]["id"], body["charge_id"]);
  EXPECT_EQ(ledger[0]["amount"], 2500);
  EXPECT_EQ(ledger[0]["customer"], "alice");
  EXPECT_EQ(Balance(), 2500);
  EXPECT_EQ(TopupState("topup-1"), "credited");
}

TEST_F(WalletTest, ARetryWithTheSameKeyReplaysTheStoredAnswer) {
  const ProviderAnswer first = TopUp("topup-2", R"({"amount": 2500})");
  ASSERT_EQ(first.status, 201) << first.body << first.error;
  EXPECT_EQ(first.FindHeader("Idempotent-Replayed"), nullptr);
  const ProviderAnswer retry = TopUp("topup-2", R"({"amount": 2500})");
  EXPECT_EQ(retry.status, 201);
  EXPECT_EQ(retry.body, first.body);
  ASSERT_NE(retry.FindHeader("Idempotent-Replayed"), nullptr);
  EXPECT_EQ(*retry.FindHeader("Idempotent-Replayed"), "true");
  EXPECT_EQ(Ledger().size(), 1u);
  EXPECT_EQ(Balance(), 2500);
}

TEST_F(WalletTest, TheSameKeyWithAnotherBodyIsRefused) {
  ASSERT_EQ(TopUp("topup-3", R"({"amount": 2500})").status, 201);
  const ProviderAnswer other = TopUp("topup-3", R"({"amount": 9900})");
  EXPECT_EQ(other.status, 422);
  EXPECT_NE(other.body.find("#key-reused"), std::string::npos) << other.body;
  EXPECT_EQ(Ledger().size(), 1u);
  EXPECT_EQ(Balance(), 2500);
}

TEST_F(WalletTest, TheWorkerFinishesATopUpItsClientAbandoned) {
  // The gateway fails every charge: the request records its top-up, cannot
  // charge, and answers 503. The client never comes back.
  SetGatewayFaults(R"({"fail_rate": 1.0})");
  const ProviderAnswer abandoned = TopUp("topup-4", R"({"amount": 1500})");
  ASSERT_EQ(abandoned.status, 503) << abandoned.body << abandoned.error;
  ASSERT_NE(abandoned.FindHeader("Retry-After"), nullptr);
  // The fault happened mid-flow: phase 1 committed, nothing was charged.
  ASSERT_EQ(TopupState("topup-4"), "pending");
  ASSERT_TRUE(Ledger().empty());

  // The gateway recovers; the worker, not a client, finishes the top-up.
  SetGatewayFaults(R"({"fail_rate": 0.0})");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (TopupState("topup-4") != "credited" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(TopupState("topup-4"), "credited") << "the worker did not finish the top-up";
  EXPECT_EQ(Ledger().size(), 1u);
  EXPECT_EQ(Balance(), 1500);
  // Had the client come back, it would get the worker's answer.
  const ProviderAnswer late = TopUp("topup-4", R"({"amount": 1500})");
  EXPECT_EQ(late.status, 201);
  ASSERT_NE(late.FindHeader("Idempotent-Replayed"), nullptr);
  EXPECT_EQ(nlohmann::json::parse(late.body)["balance"], 1500);
}

}  // namespace
}  // namespace wallet
