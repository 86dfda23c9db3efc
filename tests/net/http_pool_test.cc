// The keep-alive pool of the shared HTTP exchange (net/src/net/http_exchange.h)
// against a loopback server, plain or TLS, that counts the connections it
// accepts and the requests it reads, and behaves on each connection as the
// test says: keeps it, closes it after each answer (saying so or not), drops
// it when the next request comes, or stalls on the next request.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "net/http_exchange.h"
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

// A loopback HTTP/1.1 server, over TLS when given a certificate. Each
// connection has a thread; requests have no body or a Content-Length one.
class CountingServer {
 public:
  explicit CountingServer(Behaviour behaviour, const std::string& cert = "", const std::string& key = "")
      : behaviour_(behaviour) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    if (!cert.empty()) {
      ctx_ = SSL_CTX_new(TLS_server_method());
      if (SSL_CTX_use_certificate_chain_file(ctx_, cert.c_str()) != 1 ||
          SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM) != 1) {
        throw std::runtime_error("cannot load " + cert);
      }
    }
    acceptor_ = std::thread([this] { Accept(); });
  }

  ~CountingServer() {
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    acceptor_.join();
    CloseConnections();
    for (std::thread& t : connections_) t.join();
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  }

  HttpPeer Peer() const { return HttpPeer{ctx_ != nullptr, "127.0.0.1", port_, ""}; }
  int accepts() const { return accepts_; }
  int requests() const { return requests_; }
  int resumed() const { return resumed_; }
  std::string last_request() const {
    std::lock_guard lock(mu_);
    return last_request_;
  }

  // Ends every open connection from the server's side, as a server whose
  // idle timeout passed does.
  void CloseConnections() {
    std::lock_guard lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }

 private:
  struct Conn {
    int fd;
    SSL* ssl;
    int Read(char* buf, int n) const { return ssl ? SSL_read(ssl, buf, n) : static_cast<int>(::read(fd, buf, n)); }
    void Write(const std::string& s) const {
      if (ssl) {
        SSL_write(ssl, s.data(), static_cast<int>(s.size()));
      } else {
        (void)!::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
      }
    }
  };

  void Accept() {
    for (;;) {
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      ++accepts_;
      std::lock_guard lock(mu_);
      fds_.push_back(fd);
      connections_.emplace_back([this, fd] { Serve(fd); });
    }
  }

  // Reads one whole request into `data` (keeping what follows it); false when
  // the connection ended first.
  bool ReadRequest(const Conn& c, std::string& data) {
    char buf[4096];
    for (;;) {
      const std::size_t end = data.find("\r\n\r\n");
      if (end != std::string::npos) {
        const std::size_t at = data.find("Content-Length: ");
        const std::size_t length = at == std::string::npos || at > end ? 0 : std::stoul(data.substr(at + 16));
        if (data.size() >= end + 4 + length) {
          std::lock_guard lock(mu_);
          last_request_ = data.substr(0, end + 4 + length);
          data.erase(0, end + 4 + length);
          ++requests_;
          return true;
        }
      }
      const int n = c.Read(buf, sizeof buf);
      if (n <= 0) return false;
      data.append(buf, static_cast<std::size_t>(n));
    }
  }

  void Serve(int fd) {
    Conn c{fd, nullptr};
    if (ctx_ != nullptr) {
      c.ssl = SSL_new(ctx_);
      SSL_set_fd(c.ssl, fd);
      if (SSL_accept(c.ssl) != 1) return End(c);
      if (SSL_session_reused(c.ssl) == 1) ++resumed_;
    }
    std::string data;
    for (int n = 0; ReadRequest(c, data); ++n) {
      if (n > 0 && behaviour_ == Behaviour::kDropNextRequest) break;
      if (n > 0 && behaviour_ == Behaviour::kStallNextRequest) {
        std::this_thread::sleep_for(milliseconds(2000));
        break;
      }
      const bool saying = behaviour_ == Behaviour::kCloseSaying;
      c.Write(std::string("HTTP/1.1 200 OK\r\n") + (saying ? "Connection: close\r\n" : "") +
              "Content-Length: 2\r\n\r\nok");
      if (saying) WaitForTheClientToClose(c);
      if (saying || behaviour_ == Behaviour::kCloseSilently) break;
    }
    End(c);
  }

  // A client that heeds "Connection: close" closes at once; one that sends
  // another request here gets no answer.
  void WaitForTheClientToClose(const Conn& c) {
    timeval wait{1, 0};
    ::setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    char buf[4096];
    while (c.Read(buf, sizeof buf) > 0) {
    }
  }

  void End(const Conn& c) {
    if (c.ssl != nullptr) SSL_free(c.ssl);
    ERR_clear_error();
    std::lock_guard lock(mu_);
    ::shutdown(c.fd, SHUT_RDWR);
    ::close(c.fd);
    std::erase(fds_, c.fd);
  }

  const Behaviour behaviour_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  SSL_CTX* ctx_ = nullptr;
  std::thread acceptor_;
  std::atomic<int> accepts_{0}, requests_{0}, resumed_{0};
  mutable std::mutex mu_;
  std::vector<std::thread> connections_;  // GUARDED_BY(mu_)
  std::vector<int> fds_;                  // GUARDED_BY(mu_)
  std::string last_request_;              // GUARDED_BY(mu_)
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
