// The Beast HttpClient against a loopback server that answers, hangs up or
// stalls on purpose, and ParseBaseUrl. The point is the transport verdict:
// kNotSent only when no byte of the request can have left.
#include "phasekey/phases/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace phasekey::phases {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// One-connection server on 127.0.0.1. `behaviour` runs on the accepted socket
// after the request (headers and Content-Length body) has been read into
// `request`.
class LoopbackServer {
 public:
  enum class Behaviour { kAnswer, kHangUp, kStall, kHugeAnswer };

  explicit LoopbackServer(Behaviour behaviour) : behaviour_(behaviour) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(listener_, 1);
    socklen_t len = sizeof(addr);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~LoopbackServer() {
    shutdown(listener_, SHUT_RDWR);
    close(listener_);
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  std::string request;  // what arrived; read after the call returns

 private:
  void Serve() {
    const int fd = accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    ReadRequest(fd);
    if (behaviour_ == Behaviour::kAnswer) {
      const std::string body = R"({"id":"ch_1"})";
      const std::string answer =
          "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-Test: yes\r\n"
          "Content-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body;
      (void)!send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
    } else if (behaviour_ == Behaviour::kStall) {
      std::this_thread::sleep_for(milliseconds(1500));
    } else if (behaviour_ == Behaviour::kHugeAnswer) {
      const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n";
      (void)!send(fd, head.data(), head.size(), MSG_NOSIGNAL);
      const std::string chunk(65536, 'x');
      for (int i = 0; i < 40; ++i) {
        if (send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) break;  // the client hung up
      }
    }
    close(fd);
  }

  void ReadRequest(int fd) {
    char buf[4096];
    std::size_t need = std::string::npos;
    while (need == std::string::npos || request.size() < need) {
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n <= 0) return;
      request.append(buf, static_cast<std::size_t>(n));
      const std::size_t end = request.find("\r\n\r\n");
      if (end != std::string::npos && need == std::string::npos) {
        const std::size_t cl = request.find("Content-Length: ");
        const std::size_t length = cl == std::string::npos || cl > end ? 0 : std::stoul(request.substr(cl + 16));
        need = end + 4 + length;
      }
    }
  }

  Behaviour behaviour_;
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// A port nothing listens on: bound, then closed.
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

ProviderRequest Charge() {
  ProviderRequest r;
  r.method = "POST";
  r.path = "/v1/charges";
  r.headers = {{"Idempotency-Key", "k-1"}};
  r.body = "amount=1050&currency=usd";
  r.content_type = "application/x-www-form-urlencoded";
  return r;
}

TEST(HttpClientTest, AnAnswerComesBackWithStatusHeadersAndBody) {
  LoopbackServer server(LoopbackServer::Behaviour::kAnswer);
  const ProviderAnswer a = NewBeastHttpClient()->Send(server.url() + "/prefix", Charge(), milliseconds(5000));
  ASSERT_EQ(a.transport, ProviderAnswer::Transport::kAnswered) << a.error;
  EXPECT_EQ(a.status, 201);
  EXPECT_EQ(a.body, R"({"id":"ch_1"})");
  ASSERT_NE(a.FindHeader("x-test"), nullptr);
  EXPECT_EQ(*a.FindHeader("x-test"), "yes");
}

TEST(HttpClientTest, TheRequestArrivesUnderTheBasePathWithItsHeadersAndBody) {
  LoopbackServer server(LoopbackServer::Behaviour::kAnswer);
  (void)NewBeastHttpClient()->Send(server.url() + "/prefix/", Charge(), milliseconds(5000));
  const std::string& r = server.request;
  EXPECT_TRUE(r.starts_with("POST /prefix/v1/charges HTTP/1.1\r\n")) << r;
  EXPECT_NE(r.find("Host: 127.0.0.1:" + std::to_string(server.port()) + "\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("Idempotency-Key: k-1\r\n"), std::string::npos) << r;
  EXPECT_NE(r.find("Content-Type: application/x-www-form-urlencoded\r\n"), std::string::npos) << r;
  EXPECT_EQ(r.find("Connection:"), std::string::npos) << r;  // kept alive: HTTP/1.1's default
  EXPECT_TRUE(r.ends_with("\r\n\r\namount=1050&currency=usd")) << r;
}

TEST(HttpClientTest, WithKeepAliveOffTheRequestSaysConnectionClose) {
  LoopbackServer server(LoopbackServer::Behaviour::kAnswer);
  BeastHttpClientOptions options;
  options.keep_alive = false;
  const ProviderAnswer a = NewBeastHttpClient(options)->Send(server.url(), Charge(), milliseconds(5000));
  ASSERT_EQ(a.transport, ProviderAnswer::Transport::kAnswered) << a.error;
  EXPECT_NE(server.request.find("Connection: close\r\n"), std::string::npos) << server.request;
}

TEST(HttpClientTest, ARefusedConnectionIsNotSent) {
  const ProviderAnswer a =
      NewBeastHttpClient()->Send("http://127.0.0.1:" + std::to_string(ClosedPort()), Charge(), milliseconds(5000));
  EXPECT_EQ(a.transport, ProviderAnswer::Transport::kNotSent);
  EXPECT_NE(a.error.find("connect"), std::string::npos) << a.error;
}

TEST(HttpClientTest, AHangUpAfterTheRequestIsSentWithNoAnswer) {
  LoopbackServer server(LoopbackServer::Behaviour::kHangUp);
  const ProviderAnswer a = NewBeastHttpClient()->Send(server.url(), Charge(), milliseconds(5000));
  EXPECT_EQ(a.transport, ProviderAnswer::Transport::kSentNoAnswer) << a.error;
  EXPECT_NE(server.request.find("amount=1050"), std::string::npos);
}

TEST(HttpClientTest, ATimeoutAfterSendingIsSentWithNoAnswerAndEndsOnTime) {
  LoopbackServer server(LoopbackServer::Behaviour::kStall);
  const auto start = Clock::now();
  const ProviderAnswer a = NewBeastHttpClient()->Send(server.url(), Charge(), milliseconds(300));
  const auto took = Clock::now() - start;
  EXPECT_EQ(a.transport, ProviderAnswer::Transport::kSentNoAnswer) << a.error;
  EXPECT_NE(a.error.find("timed out"), std::string::npos) << a.error;
  EXPECT_LT(took, milliseconds(1200));
}

TEST(HttpClientTest, AnAnswerLargerThanTheLimitCountsAsLost) {
  LoopbackServer server(LoopbackServer::Behaviour::kHugeAnswer);
  BeastHttpClientOptions options;
  options.max_answer_bytes = 1024;
  const ProviderAnswer a = NewBeastHttpClient(options)->Send(server.url(), Charge(), milliseconds(5000));
  EXPECT_EQ(a.transport, ProviderAnswer::Transport::kSentNoAnswer) << a.error;
}

TEST(HttpClientTest, AFailedTlsHandshakeIsNotSent) {
  LoopbackServer server(LoopbackServer::Behaviour::kHangUp);  // speaks no TLS
  const ProviderAnswer a =
      NewBeastHttpClient()->Send("https://127.0.0.1:" + std::to_string(server.port()), Charge(), milliseconds(500));
  EXPECT_EQ(a.transport, ProviderAnswer::Transport::kNotSent) << a.error;
  EXPECT_NE(a.error.find("TLS"), std::string::npos) << a.error;
}

TEST(HttpClientTest, ABadBaseUrlIsNotSent) {
  const ProviderAnswer a = NewBeastHttpClient()->Send("ftp://example.com", Charge(), milliseconds(100));
  EXPECT_EQ(a.transport, ProviderAnswer::Transport::kNotSent);
}

TEST(HttpClientTest, AHostNameIsResolvedByTheGivenResolver) {
  LoopbackServer server(LoopbackServer::Behaviour::kAnswer);
  BeastHttpClientOptions options;
  options.resolver = [](const std::string& host, const std::string&) {
    return host == "gateway.test" ? std::vector<std::string>{"127.0.0.1"} : std::vector<std::string>{};
  };
  const ProviderAnswer a = NewBeastHttpClient(options)->Send("http://gateway.test:" + std::to_string(server.port()),
                                                             Charge(), milliseconds(5000));
  ASSERT_EQ(a.transport, ProviderAnswer::Transport::kAnswered) << a.error;
  EXPECT_NE(server.request.find("Host: gateway.test:" + std::to_string(server.port())), std::string::npos);
}

TEST(HttpClientTest, ASlowNameResolutionEndsTheCallAtItsDeadlineAsNotSent) {
  BeastHttpClientOptions options;
  // Resolves after 3 s, long after the 300 ms the call may take.
  options.resolver = [](const std::string&, const std::string&) {
    std::this_thread::sleep_for(std::chrono::seconds(3));
    return std::vector<std::string>{"127.0.0.1"};
  };
  const auto start = Clock::now();
  const ProviderAnswer a = NewBeastHttpClient(options)->Send("http://gateway.test:9", Charge(), milliseconds(300));
  EXPECT_LT(Clock::now() - start, milliseconds(1500));
  EXPECT_EQ(a.transport, ProviderAnswer::Transport::kNotSent);
  EXPECT_NE(a.error.find("resolve gateway.test: timed out"), std::string::npos) << a.error;
}

TEST(HttpClientTest, AHostThatResolvesToNothingIsNotSent) {
  BeastHttpClientOptions options;
  options.resolver = [](const std::string&, const std::string&) { return std::vector<std::string>{}; };
  const ProviderAnswer a = NewBeastHttpClient(options)->Send("http://gateway.test:9", Charge(), milliseconds(1000));
  EXPECT_EQ(a.transport, ProviderAnswer::Transport::kNotSent);
  EXPECT_NE(a.error.find("no address"), std::string::npos) << a.error;
}

TEST(BaseUrlTest, ParsesSchemesPortsAndPathPrefixes) {
  auto u = ParseBaseUrl("https://api.stripe.com");
  ASSERT_TRUE(u.has_value());
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->host, "api.stripe.com");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->path_prefix, "");
  u = ParseBaseUrl("http://127.0.0.1:8080/gw/");
  ASSERT_TRUE(u.has_value());
  EXPECT_FALSE(u->tls);
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->path_prefix, "/gw");
  u = ParseBaseUrl("http://[::1]:9000");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 9000);
}

TEST(BaseUrlTest, RefusesWhatItCannotUse) {
  for (const char* bad : {"api.stripe.com", "ftp://x", "http://", "http://host:0", "http://host:70000",
                          "http://host:12ab", "http://user@host", "http://host/?q=1", "http://[::1"}) {
    EXPECT_FALSE(ParseBaseUrl(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace phasekey::phases
