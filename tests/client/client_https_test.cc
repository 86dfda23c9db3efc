// HTTPS (issue 29, client item 3): the client verifies the server's
// certificate (its chain, to the system's trust store or a given CA file,
// and its host name or address) before it sends anything. The loopback TLS
// server of tests/support, with certificates the test makes with OpenSSL:
// a CA and a certificate it signed for 127.0.0.1 and localhost, a
// self-signed one, and one the CA signed for another name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "phasekey/client/client.h"
#include "support/child_process.h"
#include "support/loopback_http_server.h"
#include "support/test_certificates.h"

namespace phasekey::client {
namespace {

using std::chrono::milliseconds;

std::string TempDir() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("phasekey-https-" + std::to_string(::getpid()) + "-" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// The loopback server over TLS with the given certificate, answering every
// request 201 "charge-ok" and closing. received() is every byte of
// application data it read, and what a client sent after a failed handshake.
class TlsServer {
 public:
  TlsServer(const std::string& cert, const std::string& key)
      : server_([](const testing::LoopbackRequest&) { return testing::AnswerAndClose(201, "charge-ok"); }, cert, key) {}

  std::string Url(const std::string& host = "127.0.0.1") const {
    return "https://" + host + ":" + std::to_string(server_.port()) + "/charges";
  }
  std::string received() const {
    std::string all;
    for (const testing::LoopbackRequest& r : server_.seen()) all += r.raw;
    return all + server_.received_after_failed_handshake();
  }
  int handshakes() const { return server_.handshakes(); }
  int failed_handshakes() const { return server_.failed_handshakes(); }

 private:
  testing::LoopbackHttpServer server_;
};

class HttpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The TLS server writes to clients that hang up on a bad certificate:
    // a write to a closed socket must fail with EPIPE, not kill the test.
    std::signal(SIGPIPE, SIG_IGN);
    dir_ = TempDir();
    testing::MakeTestCertificates(dir_);
  }

  ClientOptions Options(bool with_ca = true) {
    ClientOptions o;
    o.retry.first_delay = milliseconds(10);
    o.retry.max_delay = milliseconds(50);
    o.retry.deadline = milliseconds(1500);
    o.retry.attempt_timeout = milliseconds(1000);
    if (with_ca) o.ca_file = dir_ + "/ca.pem";
    return o;
  }

  Request Charge(const std::string& url) {
    return Request{"POST", url, {{"Authorization", "Bearer tls-secret-token"}}, R"({"amount": 10})"};
  }

  std::string dir_;
};

TEST_F(HttpsTest, ACertificateFromTheGivenCaForTheHostWorks) {
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    TlsServer server(dir_ + "/good.pem", dir_ + "/good.key");
    Client client(Options());
    const Answer answer = client.Send(client.NewIntent(Charge(server.Url(host))));
    EXPECT_TRUE(answer.ok()) << host << ": " << answer.problem;
    EXPECT_EQ(answer.status, 201);
    EXPECT_EQ(answer.body, "charge-ok");
    EXPECT_NE(server.received().find("Idempotency-Key: " + answer.key), std::string::npos) << server.received();
    EXPECT_NE(server.received().find(R"({"amount": 10})"), std::string::npos);
  }
}

TEST_F(HttpsTest, AnUntrustedCertificateFailsClearlyAndSendsNothing) {
  TlsServer server(dir_ + "/self.pem", dir_ + "/self.key");
  Client client(Options());  // trusts the test CA only, which did not sign it
  const Answer answer = client.Send(client.NewIntent(Charge(server.Url())));
  EXPECT_FALSE(answer.ok());
  EXPECT_EQ(answer.status, 0);
  EXPECT_NE(answer.problem.find("TLS handshake"), std::string::npos) << answer.problem;
  // The refusal is retried until the deadline (a certificate may be
  // rotated), so the last attempt can end on the deadline mid-handshake
  // rather than on the refusal (seen under CI load): the server's count of
  // refused handshakes is what shows the certificate was refused.
  EXPECT_GE(server.failed_handshakes(), 1);
  EXPECT_EQ(server.handshakes(), 0);
  EXPECT_EQ(server.received().find("amount"), std::string::npos);
  EXPECT_EQ(server.received().find("POST"), std::string::npos);
}

TEST_F(HttpsTest, TheSystemTrustStoreDoesNotTrustTheTestCa) {
  TlsServer server(dir_ + "/good.pem", dir_ + "/good.key");
  Client client(Options(false));
  const Answer answer = client.Send(client.NewIntent(Charge(server.Url())));
  EXPECT_FALSE(answer.ok());
  EXPECT_NE(answer.problem.find("TLS handshake"), std::string::npos) << answer.problem;
  EXPECT_EQ(server.handshakes(), 0);
  EXPECT_EQ(server.received().find("amount"), std::string::npos);
}

TEST_F(HttpsTest, ACertificateForAnotherHostNameFailsClearlyAndSendsNothing) {
  TlsServer server(dir_ + "/other.pem", dir_ + "/other.key");
  Client client(Options());
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    const Answer answer = client.Send(client.NewIntent(Charge(server.Url(host))));
    EXPECT_FALSE(answer.ok()) << host;
    EXPECT_NE(answer.problem.find("TLS handshake"), std::string::npos) << answer.problem;
  }
  // As above: the last attempt may end on the deadline rather than on the
  // refusal; the server's refused handshakes show the host name was checked.
  EXPECT_GE(server.failed_handshakes(), 2);
  EXPECT_EQ(server.handshakes(), 0);
  EXPECT_EQ(server.received().find("amount"), std::string::npos);
  EXPECT_EQ(server.received().find("POST"), std::string::npos);
}

TEST_F(HttpsTest, PhasekeyRequestTakesAnHttpsUrlWithItsCaFile) {
  TlsServer server(dir_ + "/good.pem", dir_ + "/good.key");
  const testing::RunResult ok = testing::RunToEnd(
      {PHASEKEY_CLI_PATH, "request", "--ca-file", dir_ + "/ca.pem", "--data", "{}", "POST", server.Url()});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.out, "charge-ok");
  // Without the CA the certificate is not trusted: no final answer, exit 3,
  // and no handshake completed to carry the request.
  const int handshakes = server.handshakes();
  const testing::RunResult refused =
      testing::RunToEnd({PHASEKEY_CLI_PATH, "request", "--deadline-s", "0.5", "--data", "{}", "POST", server.Url()});
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_EQ(server.handshakes(), handshakes);
}

}  // namespace
}  // namespace phasekey::client
