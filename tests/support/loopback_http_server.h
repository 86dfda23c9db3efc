// LoopbackHttpServer: the one HTTP/1.1 server the tests of HTTP clients run
// against (the shared exchange and its pool, tests/net; the client library,
// tests/client). It listens on 127.0.0.1, plain or over TLS with a
// certificate the test made (test_certificates.h), gives each connection a
// thread of its own, and answers each whole request (no body, or a
// Content-Length one) by a script: a function of the request that says what
// to write, how late, and whether the connection then stays open, closes,
// or ends without an answer. It counts connections, requests and resumed TLS
// sessions, and keeps every request it read.
//
// Thread-safety: the script runs on the connection's thread, one call at a
// time across connections (a script's state needs no lock of its own);
// every accessor may be called from any thread.
#ifndef PHASEKEY_TESTS_SUPPORT_LOOPBACK_HTTP_SERVER_H_
#define PHASEKEY_TESTS_SUPPORT_LOOPBACK_HTTP_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

typedef struct ssl_ctx_st SSL_CTX;

namespace phasekey::testing {

// One whole request as the server read it.
struct LoopbackRequest {
  std::string raw;  // request line, headers and body, as sent
  std::string method, target, body;
  std::map<std::string, std::string> headers;  // names lowercased; the last of repeated fields
  int index = 0;                               // among every request this server read, from 0
  int connection = 0;                          // which accepted connection, from 0
  int on_connection = 0;                       // among the requests of its connection, from 0
};

// What the script does with a request.
struct LoopbackAnswer {
  enum class Then {
    kKeepOpen,               // reads the connection's next request
    kClose,                  // closes the connection at once
    kCloseWhenTheClientDoes  // waits (1 s at most) for the client to close, then closes
  };
  std::string raw;                     // a whole HTTP response, written as is
  std::chrono::milliseconds delay{0};  // before writing, or before hanging up
  bool hang_up = false;                // writes nothing and closes
  Then then = Then::kKeepOpen;
};

// "HTTP/1.1 <status> X" with `headers` (each ending in CRLF), a
// Content-Length and `body`; the connection stays open.
LoopbackAnswer Answer(int status, const std::string& body = "{}", const std::string& headers = "");
// The same answer saying "Connection: close"; the server then closes.
LoopbackAnswer AnswerAndClose(int status, const std::string& body = "{}", const std::string& headers = "");
// No answer: after `delay` the connection is closed.
LoopbackAnswer HangUp(std::chrono::milliseconds delay = std::chrono::milliseconds(0));

class LoopbackHttpServer {
 public:
  using Script = std::function<LoopbackAnswer(const LoopbackRequest&)>;

  // Over TLS when `cert_file` (a PEM chain) and `key_file` are given; throws
  // std::runtime_error when it cannot listen or load them.
  explicit LoopbackHttpServer(Script script, const std::string& cert_file = "", const std::string& key_file = "");
  // Stops accepting, ends every connection and joins their threads.
  ~LoopbackHttpServer();
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  bool tls() const { return ctx_ != nullptr; }
  std::uint16_t port() const { return port_; }
  // "http[s]://127.0.0.1:<port><path>".
  std::string Url(const std::string& path = "/") const;

  int accepts() const { return accepts_; }
  int requests() const { return requests_; }
  int handshakes() const { return handshakes_; }  // TLS handshakes completed
  int resumed() const { return resumed_; }        // of which resumed a session
  int failed_handshakes() const { return failed_handshakes_; }
  std::vector<LoopbackRequest> seen() const;
  std::string last_request() const;  // raw; empty before the first
  std::string server_name() const;   // the SNI of the last TLS handshake ("" without)
  // The raw bytes a client sent after a TLS handshake failed, read for up
  // to 1 s (a client that refused the certificate must send none).
  std::string received_after_failed_handshake() const;

  // Ends every open connection from the server's side, as a server whose
  // idle timeout passed does.
  void CloseConnections();

 private:
  struct Conn;
  void Accept();
  void Serve(int fd, int connection);
  bool ReadRequest(const Conn& c, std::string& data, LoopbackRequest* request);
  void KeepWhatFollowsAFailedHandshake(int fd);
  void End(const Conn& c);

  const Script script_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  SSL_CTX* ctx_ = nullptr;
  std::thread acceptor_;
  std::atomic<int> accepts_{0}, requests_{0}, handshakes_{0}, resumed_{0}, failed_handshakes_{0};
  std::mutex script_mu_;  // one script call at a time
  mutable std::mutex mu_;
  std::vector<std::thread> connections_;  // GUARDED_BY(mu_)
  std::vector<int> fds_;                  // GUARDED_BY(mu_)
  std::vector<LoopbackRequest> seen_;     // GUARDED_BY(mu_)
  std::string server_name_;               // GUARDED_BY(mu_)
  std::string after_failed_handshake_;    // GUARDED_BY(mu_)
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_LOOPBACK_HTTP_SERVER_H_
