// The keep-alive pool of the shared HTTP exchange (net/src/net/http_exchange.h)
// against a loopback server (support/loopback_http_server.h), plain or TLS,
// that counts the connections it accepts and the requests it reads, and
// behaves on each connection as the test says: keeps it, closes it after
// each answer (saying so or not), drops it when the next request comes, or
// stalls on the next request.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>

#include "net/http_exchange.h"
#include "support/loopback_http_server.h"
#include "support/test_certificates.h"

namespace phasekey::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Clock::time_point In(milliseconds ms) { return Clock::now() + ms; }

// What the server does on each connection.
enum class Behaviour {
  kKeep,              // answers every request, keeps the connection
  kCloseSaying,       // answers with "Connection: close", waits (1 s at most) for the client to close, closes
  kCloseSilently,     // answers (keep-alive by default), then closes at once
  kDropNextRequest,   // answers the first request; reads the next, closes without answering
  kStallNextRequest,  // answers the first request; reads the next, answers nothing for 2 s
};

// A loopback server (support/loopback_http_server.h), over TLS when given a
// certificate, that behaves on each connection as `behaviour` says.
class CountingServer : public testing::LoopbackHttpServer {
 public:
  explicit CountingServer(Behaviour behaviour, const std::string& cert = "", const std::string& key = "")
      : LoopbackHttpServer([behaviour](const testing::LoopbackRequest& r) { return Act(behaviour, r); }, cert, key) {}

  HttpPeer Peer() const { return HttpPeer{tls(), "127.0.0.1", port(), ""}; }

 private:
  static testing::LoopbackAnswer Act(Behaviour behaviour, const testing::LoopbackRequest& r) {
    using Then = testing::LoopbackAnswer::Then;
    testing::LoopbackAnswer answer = testing::Answer(200, "ok");
    switch (behaviour) {
      case Behaviour::kKeep: break;
      case Behaviour::kCloseSaying:
        answer = testing::AnswerAndClose(200, "ok");
        answer.then = Then::kCloseWhenTheClientDoes;
        break;
      case Behaviour::kCloseSilently: answer.then = Then::kClose; break;
      case Behaviour::kDropNextRequest:
        if (r.on_connection > 0) answer = testing::HangUp();
        break;
      case Behaviour::kStallNextRequest:
        if (r.on_connection > 0) answer = testing::HangUp(milliseconds(2000));
        break;
    }
    return answer;
  }
};

HttpRequest Charge(bool retry_on_stale_connection = false) {
  HttpRequest r;
  r.method = "POST";
  r.target = "/v1/charges";
  r.headers = {{"Idempotency-Key", "k-1"}};
  r.body = "amount=1050";
  r.retry_on_stale_connection = retry_on_stale_connection;
  return r;
}

TEST(HttpPoolTest, TwoExchangesToOneServerUseOneConnection) {
  CountingServer server(Behaviour::kKeep);
  const HttpExchanger exchanger;
  for (int i = 0; i < 2; ++i) {
    const HttpResult r = exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000)));
    ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
    EXPECT_EQ(r.body, "ok");
  }
  EXPECT_EQ(server.accepts(), 1);
  EXPECT_EQ(exchanger.stats().opened, 1u);
  EXPECT_EQ(exchanger.stats().reused, 1u);
  EXPECT_EQ(server.last_request().find("Connection"), std::string::npos) << server.last_request();
}

TEST(HttpPoolTest, APooledConnectionServesAnExchangeOnAnotherThread) {
  CountingServer server(Behaviour::kKeep);
  const HttpExchanger exchanger;
  for (int i = 0; i < 3; ++i) {
    std::thread([&] {
      const HttpResult r = exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000)));
      EXPECT_EQ(r.stage, HttpStage::kDone) << r.error;
    }).join();
  }
  EXPECT_EQ(server.accepts(), 1);
  EXPECT_EQ(exchanger.stats().reused, 2u);
}

TEST(HttpPoolTest, WithKeepAliveOffEveryExchangeSaysConnectionCloseOnAConnectionOfItsOwn) {
  CountingServer server(Behaviour::kKeep);
  HttpExchangerOptions options;
  options.keep_alive = false;
  const HttpExchanger exchanger(options);
  for (int i = 0; i < 2; ++i) {
    const HttpResult r = exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000)));
    ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  }
  EXPECT_EQ(server.accepts(), 2);
  EXPECT_EQ(exchanger.stats().reused, 0u);
  EXPECT_NE(server.last_request().find("Connection: close\r\n"), std::string::npos) << server.last_request();
}

TEST(HttpPoolTest, AConnectionIdlePastTheIdleTimeoutIsNotUsed) {
  CountingServer server(Behaviour::kKeep);
  HttpExchangerOptions options;
  options.idle_timeout = milliseconds(100);
  const HttpExchanger exchanger(options);
  ASSERT_TRUE(exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000))).answered());
  ASSERT_TRUE(exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000))).answered());
  EXPECT_EQ(server.accepts(), 1);  // within the idle timeout: reused
  std::this_thread::sleep_for(milliseconds(250));
  const HttpResult r = exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000)));
  ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_EQ(server.accepts(), 2);
  EXPECT_EQ(exchanger.stats().reused, 1u);
}

TEST(HttpPoolTest, AProviderThatClosesAfterEachAnswerGetsANewConnectionEveryTimeAndAllSucceed) {
  CountingServer server(Behaviour::kCloseSaying);
  const HttpExchanger exchanger;
  for (int i = 0; i < 3; ++i) {
    const HttpResult r = exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000)));
    ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  }
  EXPECT_EQ(server.accepts(), 3);
  EXPECT_EQ(exchanger.stats().opened, 3u);
  EXPECT_EQ(exchanger.stats().reused, 0u);
}

TEST(HttpPoolTest, AConnectionTheServerClosedWhileIdleIsNotUsed) {
  CountingServer server(Behaviour::kCloseSilently);
  const HttpExchanger exchanger;
  ASSERT_TRUE(exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000))).answered());
  std::this_thread::sleep_for(milliseconds(100));  // the server's close arrives
  const HttpResult r = exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000)));
  ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_EQ(server.accepts(), 2);
  EXPECT_EQ(exchanger.stats().resent, 0u);
}

TEST(HttpPoolTest, ARequestThatMeetsADroppedConnectionIsSentOnceMoreOnANewOneWhenItMayBe) {
  CountingServer server(Behaviour::kDropNextRequest);
  const HttpExchanger exchanger;
  ASSERT_TRUE(exchanger.Exchange(server.Peer(), Charge(true), In(milliseconds(5000))).answered());
  int sent = 0;
  const HttpResult r = exchanger.Exchange(server.Peer(), Charge(true), In(milliseconds(5000)), [&] { ++sent; });
  ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(sent, 1);  // on_sent once, after the first whole write
  EXPECT_EQ(server.accepts(), 2);
  EXPECT_EQ(server.requests(), 3);  // the first exchange's, then the second's twice
  EXPECT_EQ(exchanger.stats().resent, 1u);
  EXPECT_EQ(r.bytes_written, 2 * server.last_request().size());
}

TEST(HttpPoolTest, WithoutTheOptInARequestThatMeetsADroppedConnectionFailsAtReadWithBytesWritten) {
  CountingServer server(Behaviour::kDropNextRequest);
  const HttpExchanger exchanger;
  ASSERT_TRUE(exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000))).answered());
  int sent = 0;
  const HttpResult r = exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000)), [&] { ++sent; });
  EXPECT_EQ(r.stage, HttpStage::kRead);
  EXPECT_FALSE(r.timed_out);
  EXPECT_GT(r.bytes_written, 0u);
  EXPECT_FALSE(r.error.empty());
  EXPECT_EQ(sent, 1);
  EXPECT_EQ(server.accepts(), 1);
  EXPECT_EQ(exchanger.stats().resent, 0u);
}

TEST(HttpPoolTest, TheDeadlineBoundsAnExchangeOnAPooledConnectionAndIsNotFollowedByAResend) {
  CountingServer server(Behaviour::kStallNextRequest);
  const HttpExchanger exchanger;
  ASSERT_TRUE(exchanger.Exchange(server.Peer(), Charge(true), In(milliseconds(5000))).answered());
  const auto start = Clock::now();
  const HttpResult r = exchanger.Exchange(server.Peer(), Charge(true), In(milliseconds(300)));
  EXPECT_LT(Clock::now() - start, milliseconds(1200));
  EXPECT_EQ(r.stage, HttpStage::kRead);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(exchanger.stats().reused, 1u);
  EXPECT_EQ(exchanger.stats().resent, 0u);
  EXPECT_EQ(server.accepts(), 1);
}

class HttpPoolTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::signal(SIGPIPE, SIG_IGN);
    dir_ = (std::filesystem::temp_directory_path() / ("phasekey-pool-" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir_);
    testing::MakeTestCertificates(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  HttpExchangerOptions TrustTheTestCa() const {
    HttpExchangerOptions options;
    options.system_trust_store = false;
    options.ca_file = dir_ + "/ca.pem";
    return options;
  }

  std::string dir_;
};

TEST_F(HttpPoolTlsTest, TwoExchangesUseOneConnectionAndTheNextNewConnectionResumesTheSession) {
  CountingServer server(Behaviour::kKeep, dir_ + "/good.pem", dir_ + "/good.key");
  const HttpExchanger exchanger(TrustTheTestCa());
  for (int i = 0; i < 2; ++i) {
    const HttpResult r = exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000)));
    ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  }
  EXPECT_EQ(server.accepts(), 1);
  EXPECT_EQ(exchanger.stats().tls_resumed, 0u);

  server.CloseConnections();
  std::this_thread::sleep_for(milliseconds(100));
  const HttpResult r = exchanger.Exchange(server.Peer(), Charge(), In(milliseconds(5000)));
  ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_EQ(server.accepts(), 2);
  EXPECT_EQ(exchanger.stats().tls_resumed, 1u);
  EXPECT_EQ(server.resumed(), 1);
}

}  // namespace
}  // namespace phasekey::net
