// fake_gateway: the charges logic through the transport-free Gateway, then
// the real binary over loopback HTTP.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fake_gateway/gateway.h"
#include "support/wait.h"

namespace fake_gateway {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr char kRide[] = "amount=2000&currency=usd&customer=7&description=ride+1";

std::filesystem::path MakeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "fake_gateway_test.XXXXXX").string();
  EXPECT_NE(::mkdtemp(pattern.data()), nullptr);
  return pattern;
}

GatewayResponse Charge(Gateway& gateway, std::string_view key, std::string_view body) {
  Headers headers = {{"Content-Type", "application/x-www-form-urlencoded"}};
  if (!key.empty()) headers.emplace_back("idempotency-key", std::string(key));  // any case
  return gateway.Handle("POST", "/v1/charges", headers, body);
}

json LedgerOf(Gateway& gateway) { return json::parse(gateway.Handle("GET", "/_ledger", {}, "").body); }

json ErrorOf(const GatewayResponse& response) { return json::parse(response.body).at("error"); }

class FakeGatewayTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Gateway> Open(Faults faults = {}, std::chrono::seconds retention = std::chrono::hours(24)) {
    GatewayOptions options;
    options.data_dir = dir_;
    options.faults = faults;
    options.retention = retention;
    options.seed = 42;
    options.clock = [this] {
      ++clock_reads_;
      return std::chrono::system_clock::time_point(milliseconds(now_ms_.load()));
    };
    std::string error;
    std::unique_ptr<Gateway> gateway = Gateway::Open(std::move(options), &error);
    EXPECT_NE(gateway, nullptr) << error;
    return gateway;
  }

  std::atomic<int64_t> now_ms_{1'700'000'000'000};
  std::atomic<int> clock_reads_{0};  // calls of the gateway's clock, from any thread
  std::filesystem::path dir_;
};

TEST_F(FakeGatewayTest, ChargesAndAnswersWithTheChargeObject) {
  auto gateway = Open();
  GatewayResponse response = Charge(*gateway, "k1", kRide);
  ASSERT_EQ(response.status, 200) << response.body;
  EXPECT_FALSE(response.drop_connection);
  EXPECT_EQ(FindHeader(response.headers, "content-type"), "application/json");
  EXPECT_EQ(FindHeader(response.headers, "Idempotent-Replayed"), std::nullopt);
  json charge = json::parse(response.body);
  EXPECT_TRUE(charge.at("id").get<std::string>().starts_with("ch_"));
  EXPECT_EQ(charge.at("object"), "charge");
  EXPECT_EQ(charge.at("amount"), 2000);
  EXPECT_EQ(charge.at("currency"), "usd");
  EXPECT_EQ(charge.at("customer"), "7");
  EXPECT_EQ(charge.at("description"), "ride 1");
  EXPECT_EQ(charge.at("status"), "succeeded");
  EXPECT_EQ(charge.at("created"), 1'700'000'000);
  json ledger = LedgerOf(*gateway);
  ASSERT_EQ(ledger.size(), 1u);
  EXPECT_EQ(ledger[0], json({{"id", charge["id"]},
                             {"idempotency_key", "k1"},
                             {"amount", 2000},
                             {"currency", "usd"},
                             {"customer", "7"},
                             {"created_at", 1'700'000'000}}));
}

TEST_F(FakeGatewayTest, ReplaysTheStoredResponseByteForByteWithIdempotentReplayed) {
  auto gateway = Open();
  GatewayResponse first = Charge(*gateway, "k1", kRide);
  now_ms_ += 5000;
  GatewayResponse again = Charge(*gateway, "k1", "description=ride+1&customer=7&currency=usd&amount=2000");
  EXPECT_EQ(again.status, first.status);
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(FindHeader(again.headers, "Idempotent-Replayed"), "true");
  EXPECT_EQ(LedgerOf(*gateway).size(), 1u);
}

TEST_F(FakeGatewayTest, AcceptsStripeMetadataFieldsAndComparesThemUnderTheKey) {
  // The phases/ Stripe v1 adapter sends these two.
  const std::string body =
      std::string(kRide) + "&metadata%5Bphasekey_reference%5D=abc%3Acharge&metadata[order_reference]=ride-1";
  auto gateway = Open();
  GatewayResponse first = Charge(*gateway, "k1", body);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(Charge(*gateway, "k1", body).body, first.body);
  GatewayResponse other = Charge(*gateway, "k1", std::string(kRide) + "&metadata[order_reference]=ride-2");
  EXPECT_EQ(other.status, 400);
  EXPECT_EQ(ErrorOf(other).at("type"), "idempotency_error");
  GatewayResponse empty_key = Charge(*gateway, "k2", std::string(kRide) + "&metadata[]=x");
  EXPECT_EQ(empty_key.status, 400);
  EXPECT_EQ(LedgerOf(*gateway).size(), 1u);
}

TEST_F(FakeGatewayTest, WithASecretRefusesRequestsWithoutItAndNeverQuotesWhatItGot) {
  GatewayOptions options;
  options.data_dir = dir_;
  options.secret = "sk_test_4eC39HqLyjWDarjtT1zdp7dc";
  std::string error;
  auto gateway = Gateway::Open(std::move(options), &error);
  ASSERT_NE(gateway, nullptr) << error;
  auto charge = [&](Headers extra) {
    Headers h = {{"Content-Type", "application/x-www-form-urlencoded"}, {"Idempotency-Key", "k-auth"}};
    h.insert(h.end(), extra.begin(), extra.end());
    return gateway->Handle("POST", "/v1/charges", h, kRide);
  };
  for (const Headers& refused : {Headers{}, Headers{{"Authorization", "Bearer sk_test_wrong_guess"}},
                                 Headers{{"Authorization", "Bearer sk_test_4eC39HqLyjWDarjtT1zdp7d"}},
                                 Headers{{"X-API-Key", "sk_test_wrong_guess"}}}) {
    GatewayResponse r = charge(refused);
    EXPECT_EQ(r.status, 401) << r.body;
    EXPECT_EQ(ErrorOf(r).at("type"), "authentication_error");
    EXPECT_EQ(r.body.find("wrong_guess"), std::string::npos) << "the answer quotes the credential: " << r.body;
  }
  EXPECT_EQ(LedgerOf(*gateway).size(), 0u) << "nothing charged without the credential; /_ledger needs none";
  // Each dialect's way of sending it: Stripe's bearer, Moyasar's basic
  // (base64 of "<secret>:"), Adyen's X-API-Key.
  EXPECT_EQ(charge({{"Authorization", "Bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc"}}).status, 200);
  EXPECT_EQ(charge({{"Authorization", "Basic c2tfdGVzdF80ZUMzOUhxTHlqV0Rhcmp0VDF6ZHA3ZGM6"}}).status, 200);
  EXPECT_EQ(charge({{"X-API-Key", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"}}).status, 200);
  EXPECT_EQ(LedgerOf(*gateway).size(), 1u) << "one key, one charge";
}

TEST_F(FakeGatewayTest, RefusesAnUnknownDialect) {
  GatewayOptions options;
  options.data_dir = dir_;
  options.dialect = "paypal";
  std::string error;
  EXPECT_EQ(Gateway::Open(options, &error), nullptr);
  EXPECT_NE(error.find("unknown dialect"), std::string::npos) << error;
}

TEST_F(FakeGatewayTest, RejectsAKeyReusedWithOtherParametersWithAnIdempotencyError) {
  auto gateway = Open();
  ASSERT_EQ(Charge(*gateway, "k1", kRide).status, 200);
  GatewayResponse other = Charge(*gateway, "k1", "amount=2500&currency=usd&customer=7&description=ride+1");
  EXPECT_EQ(other.status, 400);
  EXPECT_EQ(ErrorOf(other).at("type"), "idempotency_error");
  EXPECT_EQ(LedgerOf(*gateway).size(), 1u);
}

TEST_F(FakeGatewayTest, AnswersConflictWhileTheSameKeyIsStillRunning) {
  auto gateway = Open({.latency_ms = 1500});
  const int reads = clock_reads_.load();
  auto first = std::async(std::launch::async, [&] { return Charge(*gateway, "k1", kRide); });
  // The gateway reads its clock to check a key's stored answer, under the
  // lock under which it then marks the key in flight: once the first
  // request has read it, the key is the first's (and asleep in flight for
  // 1.5 s) by the time the second can look.
  ASSERT_TRUE(phasekey::testing::WaitUntil([&] { return clock_reads_.load() > reads; }, milliseconds(10000)));
  GatewayResponse second = Charge(*gateway, "k1", kRide);
  EXPECT_EQ(second.status, 409);
  EXPECT_EQ(ErrorOf(second).at("type"), "idempotency_error");
  EXPECT_EQ(ErrorOf(second).at("code"), "idempotency_key_in_use");
  EXPECT_EQ(first.get().status, 200);
  GatewayResponse after = Charge(*gateway, "k1", kRide);
  EXPECT_EQ(FindHeader(after.headers, "Idempotent-Replayed"), "true");
  EXPECT_EQ(LedgerOf(*gateway).size(), 1u);
}

TEST_F(FakeGatewayTest, ChargesOnceWhenManyRequestsRaceWithOneKey) {
  auto gateway = Open({.latency_ms = 20});
  std::vector<std::future<GatewayResponse>> racers;
  for (int i = 0; i < 16; ++i) {
    racers.push_back(std::async(std::launch::async, [&] { return Charge(*gateway, "k1", kRide); }));
  }
  int charged = 0;
  for (auto& racer : racers) {
    GatewayResponse response = racer.get();
    ASSERT_TRUE(response.status == 200 || response.status == 409) << response.body;
    charged += response.status == 200 && !FindHeader(response.headers, "Idempotent-Replayed");
  }
  EXPECT_EQ(charged, 1);
  EXPECT_EQ(LedgerOf(*gateway).size(), 1u);
}

TEST_F(FakeGatewayTest, DeclinesCustomer13AndStoresAndReplaysTheDecline) {
  auto gateway = Open();
  GatewayResponse decline = Charge(*gateway, "k13", "amount=2000&currency=usd&customer=13");
  ASSERT_EQ(decline.status, 402);
  EXPECT_EQ(ErrorOf(decline),
            json({{"type", "card_error"}, {"code", "card_declined"}, {"message", "Your card was declined."}}));
  GatewayResponse replay = Charge(*gateway, "k13", "amount=2000&currency=usd&customer=13");
  EXPECT_EQ(replay.status, 402);
  EXPECT_EQ(replay.body, decline.body);
  EXPECT_EQ(FindHeader(replay.headers, "Idempotent-Replayed"), "true");
  EXPECT_EQ(Charge(*gateway, "", "amount=2000&currency=usd&customer=cus_13").status, 402);
  EXPECT_TRUE(LedgerOf(*gateway).empty());  // declines are not charges
}

TEST_F(FakeGatewayTest, FailRateOneAnswers500WithoutChargingAndALaterRetryChargesOnce) {
  auto gateway = Open({.fail_rate = 1.0});
  GatewayResponse failed = Charge(*gateway, "k1", kRide);
  EXPECT_EQ(failed.status, 500);
  EXPECT_EQ(ErrorOf(failed).at("type"), "api_error");
  EXPECT_TRUE(LedgerOf(*gateway).empty());
  GatewayResponse settings = gateway->Handle("POST", "/_faults", {}, R"({"fail_rate": 0})");
  ASSERT_EQ(settings.status, 200) << settings.body;
  GatewayResponse retry = Charge(*gateway, "k1", kRide);
  EXPECT_EQ(retry.status, 200);
  EXPECT_EQ(FindHeader(retry.headers, "Idempotent-Replayed"), std::nullopt);  // it ran again
  EXPECT_EQ(Charge(*gateway, "k1", kRide).body, retry.body);
  EXPECT_EQ(LedgerOf(*gateway).size(), 1u);
}

TEST_F(FakeGatewayTest, DropResponseMakesAndStoresTheChargeThenAsksToDropTheConnection) {
  auto gateway = Open({.drop_response_rate = 1.0});
  GatewayResponse dropped = Charge(*gateway, "k1", kRide);
  EXPECT_TRUE(dropped.drop_connection);
  EXPECT_EQ(LedgerOf(*gateway).size(), 1u);
  GatewayResponse retry = Charge(*gateway, "k1", kRide);  // replays are never dropped
  EXPECT_FALSE(retry.drop_connection);
  EXPECT_EQ(retry.body, dropped.body);
  EXPECT_EQ(FindHeader(retry.headers, "Idempotent-Replayed"), "true");
  EXPECT_EQ(LedgerOf(*gateway).size(), 1u);
}

TEST_F(FakeGatewayTest, ChargesAgainWhenAKeyIsReusedAfterTheRetention) {
  auto gateway = Open({}, std::chrono::seconds(1));
  GatewayResponse first = Charge(*gateway, "k1", kRide);
  now_ms_ += 999;
  EXPECT_EQ(Charge(*gateway, "k1", kRide).body, first.body);
  now_ms_ += 2;
  GatewayResponse later = Charge(*gateway, "k1", kRide);
  EXPECT_EQ(later.status, 200);
  EXPECT_EQ(FindHeader(later.headers, "Idempotent-Replayed"), std::nullopt);
  EXPECT_NE(later.body, first.body);
  EXPECT_EQ(LedgerOf(*gateway).size(), 2u);  // Stripe's hazard: a second charge
}

TEST_F(FakeGatewayTest, KeepsTheLedgerAndStoredResponsesAcrossARestart) {
  GatewayResponse charged, declined;
  {
    auto gateway = Open();
    charged = Charge(*gateway, "k1", kRide);
    declined = Charge(*gateway, "k13", "amount=2000&currency=usd&customer=13");
    ASSERT_EQ(Charge(*gateway, "", kRide).status, 200);
  }
  auto gateway = Open();
  EXPECT_EQ(LedgerOf(*gateway).size(), 2u);
  GatewayResponse replay = Charge(*gateway, "k1", kRide);
  EXPECT_EQ(FindHeader(replay.headers, "Idempotent-Replayed"), "true");
  EXPECT_EQ(replay.body, charged.body);
  EXPECT_EQ(Charge(*gateway, "k13", "amount=2000&currency=usd&customer=13").body, declined.body);
  EXPECT_EQ(Charge(*gateway, "k1", "amount=1&currency=usd&customer=7").status, 400);
}

TEST_F(FakeGatewayTest, CutsOffATornLastLedgerLineButRefusesACorruptEarlierOne) {
  { ASSERT_EQ(Charge(*Open(), "k1", kRide).status, 200); }
  std::filesystem::path file = dir_ / "ledger.jsonl";
  { std::ofstream(file, std::ios::app) << R"({"key":"k2","params":)"; }
  {
    auto gateway = Open();
    EXPECT_EQ(LedgerOf(*gateway).size(), 1u);
    EXPECT_EQ(Charge(*gateway, "k2", kRide).status, 200);  // appended after the cut
  }
  std::string text;
  {
    std::ifstream in(file);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  { std::ofstream(file, std::ios::trunc) << "garbage\n" << text; }
  std::string error;
  EXPECT_EQ(Gateway::Open({.data_dir = dir_}, &error), nullptr);
  EXPECT_NE(error.find("corrupt"), std::string::npos) << error;
}

TEST_F(FakeGatewayTest, RefusesASecondGatewayOnTheSameDataDir) {
  auto gateway = Open();
  std::string error;
  EXPECT_EQ(Gateway::Open({.data_dir = dir_}, &error), nullptr);
  EXPECT_NE(error.find("lock"), std::string::npos) << error;
}

TEST_F(FakeGatewayTest, ChargesEveryTimeWithoutAnIdempotencyKey) {
  auto gateway = Open();
  EXPECT_NE(Charge(*gateway, "", kRide).body, Charge(*gateway, "", kRide).body);
  json ledger = LedgerOf(*gateway);
  ASSERT_EQ(ledger.size(), 2u);
  EXPECT_TRUE(ledger[0].at("idempotency_key").is_null());
}

TEST_F(FakeGatewayTest, RejectsBadInputWithAnInvalidRequestErrorAndStoresNothing) {
  auto gateway = Open();
  struct Case {
    const char* body;
    const char* param;
  } cases[] = {{"currency=usd&customer=7", "amount"},
               {"amount=-5&currency=usd&customer=7", "amount"},
               {"amount=0&currency=usd&customer=7", "amount"},
               {"amount=12x&currency=usd&customer=7", "amount"},
               {"amount=2000&currency=USD&customer=7", "currency"},
               {"amount=2000&currency=usdx&customer=7", "currency"},
               {"amount=2000&currency=usd", "customer"},
               {"amount=2000&currency=usd&customer=7&color=red", "color"}};
  for (const Case& c : cases) {
    GatewayResponse response = Charge(*gateway, "k1", c.body);
    EXPECT_EQ(response.status, 400) << c.body;
    EXPECT_EQ(ErrorOf(response).at("type"), "invalid_request_error") << c.body;
    EXPECT_EQ(ErrorOf(response).at("param"), c.param) << c.body;
  }
  EXPECT_EQ(Charge(*gateway, std::string(256, 'k'), kRide).status, 400);
  EXPECT_EQ(Charge(*gateway, "k1", kRide).status, 200);  // the key was never stored
  EXPECT_EQ(gateway->Handle("DELETE", "/v1/charges", {}, "").status, 405);
  EXPECT_EQ(gateway->Handle("GET", "/v2/nothing", {}, "").status, 404);
}

TEST_F(FakeGatewayTest, FaultsEndpointMergesMembersAndRejectsBadValues) {
  auto gateway = Open({.fail_rate = 0.25});
  GatewayResponse set = gateway->Handle("POST", "/_faults", {}, R"({"latency_ms": 5})");
  ASSERT_EQ(set.status, 200);
  EXPECT_EQ(json::parse(set.body),
            json({{"fail_rate", 0.25}, {"drop_response_rate", 0.0}, {"latency_ms", 5}, {"lookup_fail_rate", 0.0}}));
  EXPECT_EQ(gateway->Handle("POST", "/_faults", {}, R"({"fail_rate": 2})").status, 400);
  EXPECT_EQ(gateway->Handle("POST", "/_faults", {}, R"({"fail_rat": 0})").status, 400);
  EXPECT_EQ(gateway->Handle("POST", "/_faults", {}, "not json").status, 400);
  EXPECT_EQ(gateway->faults().fail_rate, 0.25);
  EXPECT_EQ(gateway->faults().latency_ms, 5);
}

// ---- The real binary over loopback.

// A child fake_gateway; killed with SIGKILL if a test ends early.
struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

// Starts the binary on an ephemeral port; returns its port, 0 on failure.
int StartGateway(const std::filesystem::path& dir, Child* child) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return 0;  // dup2 gives the child a stdout without O_CLOEXEC
  child->pid = ::fork();
  if (child->pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::execl(FAKE_GATEWAY_PATH, "fake_gateway", "--listen", "127.0.0.1:0", "--data-dir", dir.c_str(), "--seed", "1",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string line;
  char c;
  pollfd ready = {out[0], POLLIN, 0};
  while (::poll(&ready, 1, 10'000) == 1 && ::read(out[0], &c, 1) == 1 && c != '\n') line.push_back(c);
  ::close(out[0]);
  const std::string prefix = "listening on 127.0.0.1:";
  if (!line.starts_with(prefix)) return 0;
  return std::atoi(line.c_str() + prefix.size());
}

// Sends one request (Connection: close) and returns everything read until
// the server closed the connection: "" if it closed without answering.
std::string Exchange(int port, const std::string& method, const std::string& target, const std::string& headers,
                     const std::string& body) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout = {10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + headers +
                        "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;) reply.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return reply;
}

std::string BodyOf(const std::string& reply) { return reply.substr(reply.find("\r\n\r\n") + 4); }

TEST_F(FakeGatewayTest, BinaryServesHttpOverLoopbackDropsResponsesOnDemandAndExitsCleanlyOnSigterm) {
  Child child;
  int port = StartGateway(dir_, &child);
  ASSERT_GT(port, 0);
  const std::string form = "Content-Type: application/x-www-form-urlencoded\r\nIdempotency-Key: ";
  std::string charged = Exchange(port, "POST", "/v1/charges", form + "e2e-1\r\n", kRide);
  ASSERT_TRUE(charged.starts_with("HTTP/1.1 200 OK\r\n")) << charged;
  EXPECT_EQ(json::parse(BodyOf(charged)).at("object"), "charge");
  std::string replayed = Exchange(port, "POST", "/v1/charges", form + "e2e-1\r\n", kRide);
  EXPECT_NE(replayed.find("Idempotent-Replayed: true\r\n"), std::string::npos) << replayed;
  EXPECT_EQ(BodyOf(replayed), BodyOf(charged));
  EXPECT_EQ(json::parse(BodyOf(Exchange(port, "GET", "/_ledger", "", ""))).size(), 1u);

  std::string faults = Exchange(port, "POST", "/_faults", "", R"({"drop_response_rate": 1})");
  ASSERT_TRUE(faults.starts_with("HTTP/1.1 200 OK\r\n")) << faults;
  EXPECT_EQ(Exchange(port, "POST", "/v1/charges", form + "e2e-2\r\n", kRide), "");
  json ledger = json::parse(BodyOf(Exchange(port, "GET", "/_ledger", "", "")));
  ASSERT_EQ(ledger.size(), 2u);  // the dropped charge was made
  EXPECT_EQ(ledger[1].at("idempotency_key"), "e2e-2");

  ASSERT_EQ(::kill(child.pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
  child.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace fake_gateway
