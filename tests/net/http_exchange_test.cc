// The shared HTTP exchange (net/src/net/http_exchange.h)
// against loopback servers (support/loopback_http_server.h) that answer,
// hang up, stall or answer too much, plain or over TLS with certificates the
// test makes with OpenSSL's API. The point is what the result says: the
// stage reached, whether the deadline ended it, and how many request bytes
// the socket accepted (0: no byte can have reached the server).
#include "net/http_exchange.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/loopback_http_server.h"
#include "support/ride_world.h"
#include "support/test_certificates.h"

namespace phasekey::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A loopback server (support/loopback_http_server.h) that reads one whole
// request and behaves.
class PlainServer : public testing::LoopbackHttpServer {
 public:
  enum class Behaviour { kAnswer, kHangUp, kStall, kHugeAnswer };

  explicit PlainServer(Behaviour behaviour)
      : LoopbackHttpServer([behaviour](const testing::LoopbackRequest&) { return Act(behaviour); }) {}

  HttpPeer Peer() const { return HttpPeer{false, "127.0.0.1", port(), ""}; }
  bool got_whole_request() const { return requests() > 0; }
  std::string request() const { return last_request(); }

 private:
  static testing::LoopbackAnswer Act(Behaviour behaviour) {
    switch (behaviour) {
      case Behaviour::kAnswer: return testing::Answer(201, "hello", "X-Test: yes\r\nX-Test: again\r\n");
      case Behaviour::kHangUp: return testing::HangUp();
      case Behaviour::kStall: return testing::HangUp(milliseconds(1500));
      case Behaviour::kHugeAnswer: break;
    }
    testing::LoopbackAnswer huge;  // 2.5 MiB of a 10 MB body, then the end (the client hangs up first)
    huge.raw = "HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n" + std::string(40 * 65536, 'x');
    huge.then = testing::LoopbackAnswer::Then::kClose;
    return huge;
  }
};

HttpRequest Post() {
  HttpRequest r;
  r.method = "POST";
  r.target = "/v1/charges?x=1";
  r.headers = {{"X-Repeat", "one"}, {"X-Repeat", "two"}, {"Connection", "keep-alive"}};
  r.body = "amount=1050";
  return r;
}

Clock::time_point In(milliseconds ms) { return Clock::now() + ms; }

TEST(HttpExchangeTest, AnAnswerComesBackWithStatusHeadersAndBody) {
  PlainServer server(PlainServer::Behaviour::kAnswer);
  const HttpResult r = HttpExchanger().Exchange(server.Peer(), Post(), In(milliseconds(5000)));
  ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_TRUE(r.answered());
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "hello");
  ASSERT_EQ(r.headers.size(), 3u);
  EXPECT_EQ(r.headers[0], Header("X-Test", "yes"));
  EXPECT_EQ(r.headers[1], Header("X-Test", "again"));
  EXPECT_EQ(r.bytes_written, server.request().size());
}

TEST(HttpExchangeTest, TheRequestCarriesItsHeadersInOrderWithRepeatsAndConnectionCloseWhenKeepAliveIsOff) {
  PlainServer server(PlainServer::Behaviour::kAnswer);
  HttpExchangerOptions options;
  options.user_agent = "net-test/1";
  options.keep_alive = false;
  (void)HttpExchanger(options).Exchange(server.Peer(), Post(), In(milliseconds(5000)));
  const std::string r = server.request();
  EXPECT_TRUE(r.starts_with("POST /v1/charges?x=1 HTTP/1.1\r\n")) << r;
  EXPECT_NE(r.find("Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("User-Agent: net-test/1\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("X-Repeat: one\r\nX-Repeat: two\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("Connection: close\r\n"), std::string::npos) << r;
  EXPECT_EQ(r.find("keep-alive"), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Length: 11\r\n"), std::string::npos) << r;
  EXPECT_TRUE(r.ends_with("\r\n\r\namount=1050")) << r;
}

TEST(HttpExchangeTest, WithKeepAliveTheRequestCarriesNoConnectionHeaderEvenIfOneWasGiven) {
  PlainServer server(PlainServer::Behaviour::kAnswer);
  const HttpResult r = HttpExchanger().Exchange(server.Peer(), Post(), In(milliseconds(5000)));
  ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_EQ(server.request().find("Connection"), std::string::npos) << server.request();
}

TEST(HttpExchangeTest, AServerThatClosesBeforeAnsweringFailsAtReadWithTheRequestWritten) {
  PlainServer server(PlainServer::Behaviour::kHangUp);
  const HttpResult r = HttpExchanger().Exchange(server.Peer(), Post(), In(milliseconds(5000)));
  EXPECT_EQ(r.stage, HttpStage::kRead) << r.error;
  EXPECT_FALSE(r.timed_out);
  EXPECT_GT(r.bytes_written, 0u);
  EXPECT_FALSE(r.error.empty());
  EXPECT_TRUE(server.got_whole_request());
}

TEST(HttpExchangeTest, ARefusedConnectionFailsAtConnectWithNothingWritten) {
  int sent = 0;
  const HttpResult r = HttpExchanger().Exchange(HttpPeer{false, "127.0.0.1", testing::FreeLoopbackPort(), ""}, Post(),
                                                In(milliseconds(5000)), [&] { ++sent; });
  EXPECT_EQ(r.stage, HttpStage::kConnect);
  EXPECT_EQ(r.bytes_written, 0u);
  EXPECT_FALSE(r.timed_out);
  EXPECT_NE(r.error.find("refused"), std::string::npos) << r.error;
  EXPECT_EQ(sent, 0);
}

TEST(HttpExchangeTest, AStallingServerEndsTheExchangeAtTheDeadlineAsTimedOut) {
  PlainServer server(PlainServer::Behaviour::kStall);
  const auto start = Clock::now();
  const HttpResult r = HttpExchanger().Exchange(server.Peer(), Post(), In(milliseconds(300)));
  EXPECT_LT(Clock::now() - start, milliseconds(1200));
  EXPECT_EQ(r.stage, HttpStage::kRead);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.error, "timed out");
  EXPECT_GT(r.bytes_written, 0u);
}

TEST(HttpExchangeTest, AnAnswerOverTheSizeLimitFailsAtRead) {
  PlainServer server(PlainServer::Behaviour::kHugeAnswer);
  HttpExchangerOptions options;
  options.max_answer_bytes = 1024;
  const HttpResult r = HttpExchanger(options).Exchange(server.Peer(), Post(), In(milliseconds(5000)));
  EXPECT_EQ(r.stage, HttpStage::kRead);
  EXPECT_FALSE(r.timed_out);
  EXPECT_GT(r.bytes_written, 0u);
}

TEST(HttpExchangeTest, OnSentIsCalledOnceAfterTheWholeRequestWasWritten) {
  PlainServer server(PlainServer::Behaviour::kAnswer);
  int calls = 0;
  bool server_had_it = false;
  const HttpResult r = HttpExchanger().Exchange(server.Peer(), Post(), In(milliseconds(5000)), [&] {
    ++calls;
    // The exchange waits for on_sent: had it been called before the write
    // ended, the server would never see the whole request.
    const auto until = Clock::now() + milliseconds(2000);
    while (!server.got_whole_request() && Clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
    server_had_it = server.got_whole_request();
  });
  EXPECT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(server_had_it);
}

TEST(HttpExchangeTest, ANameIsResolvedByTheGivenResolverAndASlowOneEndsAtTheDeadline) {
  PlainServer server(PlainServer::Behaviour::kAnswer);
  HttpExchangerOptions options;
  options.resolver = [](const std::string& host, const std::string&) {
    if (host == "slow.test") std::this_thread::sleep_for(std::chrono::seconds(3));
    return std::vector<std::string>{"127.0.0.1"};
  };
  const HttpExchanger exchanger(options);
  HttpResult r = exchanger.Exchange(HttpPeer{false, "gateway.test", server.port(), ""}, Post(), In(milliseconds(5000)));
  ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_NE(server.request().find("Host: gateway.test:" + std::to_string(server.port())), std::string::npos);

  const auto start = Clock::now();
  r = exchanger.Exchange(HttpPeer{false, "slow.test", 9, ""}, Post(), In(milliseconds(300)));
  EXPECT_LT(Clock::now() - start, milliseconds(1500));
  EXPECT_EQ(r.stage, HttpStage::kResolve);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.bytes_written, 0u);
}

// TLS: certificates made with OpenSSL's API in a temporary folder.

std::string TempDir() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("phasekey-net-" + std::to_string(::getpid()) + "-" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// A loopback server over TLS with the given certificate that answers 201.
// It records the SNI it was sent and every byte a client that failed the
// handshake still sent.
class TlsServer : public testing::LoopbackHttpServer {
 public:
  TlsServer(const std::string& cert, const std::string& key)
      : LoopbackHttpServer([](const testing::LoopbackRequest&) { return testing::Answer(201, "ok"); }, cert, key) {}
};

class HttpExchangeTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The TLS server may write to a client that hung up on its certificate.
    std::signal(SIGPIPE, SIG_IGN);
    dir_ = TempDir();
    testing::MakeTestCertificates(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Trusts the test's CA only.
  HttpExchangerOptions TrustTheTestCa() const {
    HttpExchangerOptions options;
    options.system_trust_store = false;
    options.ca_file = dir_ + "/ca.pem";
    options.resolver = [](const std::string&, const std::string&) { return std::vector<std::string>{"127.0.0.1"}; };
    return options;
  }

  std::string dir_;
};

TEST_F(HttpExchangeTlsTest, ACertificateFromTheTrustedCaForTheAddressIsAnsweredWithoutSni) {
  TlsServer server(dir_ + "/good.pem", dir_ + "/good.key");
  const HttpExchanger exchanger(TrustTheTestCa());
  EXPECT_EQ(exchanger.trust_error(), "");
  const HttpResult r =
      exchanger.Exchange(HttpPeer{true, "127.0.0.1", server.port(), ""}, Post(), In(milliseconds(5000)));
  ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "ok");
  EXPECT_TRUE(server.last_request().ends_with("amount=1050")) << server.last_request();
  EXPECT_EQ(server.server_name(), "");  // RFC 6066: no IP literal in SNI
}

TEST_F(HttpExchangeTlsTest, ACertificateForTheDnsNameIsAnsweredWithTheNameInSni) {
  TlsServer server(dir_ + "/good.pem", dir_ + "/good.key");
  const HttpResult r = HttpExchanger(TrustTheTestCa())
                           .Exchange(HttpPeer{true, "localhost", server.port(), ""}, Post(), In(milliseconds(5000)));
  ASSERT_EQ(r.stage, HttpStage::kDone) << r.error;
  EXPECT_EQ(server.server_name(), "localhost");
}

TEST_F(HttpExchangeTlsTest, ACertificateForAnotherNameIsRefusedBeforeAnyByteIsSent) {
  TlsServer server(dir_ + "/other.pem", dir_ + "/other.key");
  int sent = 0;
  const HttpResult r =
      HttpExchanger(TrustTheTestCa())
          .Exchange(HttpPeer{true, "localhost", server.port(), ""}, Post(), In(milliseconds(5000)), [&] { ++sent; });
  EXPECT_EQ(r.stage, HttpStage::kHandshake);
  EXPECT_EQ(r.bytes_written, 0u);
  EXPECT_EQ(r.error, "hostname mismatch");
  EXPECT_EQ(sent, 0);
  // The server saw the handshake fail, and no byte of the request after it.
  const auto until = Clock::now() + milliseconds(3000);
  while (server.failed_handshakes() == 0 && Clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(server.failed_handshakes(), 1);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(server.received_after_failed_handshake().find("amount"), std::string::npos);
}

TEST_F(HttpExchangeTlsTest, ACertificateFromAnUntrustedCaIsRefusedWithOpenSslsReason) {
  TlsServer server(dir_ + "/good.pem", dir_ + "/good.key");
  HttpExchangerOptions options;
  options.system_trust_store = false;  // and no CA file: nothing is trusted
  const HttpResult r =
      HttpExchanger(options).Exchange(HttpPeer{true, "127.0.0.1", server.port(), ""}, Post(), In(milliseconds(5000)));
  EXPECT_EQ(r.stage, HttpStage::kHandshake);
  EXPECT_EQ(r.bytes_written, 0u);
  EXPECT_EQ(r.error, "unable to get local issuer certificate");
}

TEST_F(HttpExchangeTlsTest, ACaFileThatCannotBeLoadedFailsEveryHttpsExchangeBeforeConnecting) {
  HttpExchangerOptions options;
  options.ca_file = dir_ + "/missing.pem";
  const HttpExchanger exchanger(options);
  EXPECT_NE(exchanger.trust_error().find("missing.pem"), std::string::npos) << exchanger.trust_error();
  const HttpResult r =
      exchanger.Exchange(HttpPeer{true, "127.0.0.1", testing::FreeLoopbackPort(), ""}, Post(), In(milliseconds(1000)));
  EXPECT_EQ(r.stage, HttpStage::kHandshake);
  EXPECT_EQ(r.bytes_written, 0u);
  EXPECT_EQ(r.error, exchanger.trust_error());
}

}  // namespace
}  // namespace phasekey::net
