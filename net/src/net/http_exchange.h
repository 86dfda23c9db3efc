// HttpExchanger: the one HTTP/1.1 client exchange of phasekey, shared by the
// phases' gateway client (phases/src/beast_http_client.cc), the client
// library (client/src/http_exchange.cc) and the fake gateway's webhook sender
// (examples/ride_booking/fake_gateway/http_post.cc). Each maps the result
// onto its own contract.
//
// One exchange: resolve the host (on a detached thread, bounded by the
// deadline), connect, over https verify the server (OpenSSL's own checks of
// the chain and of the host name or IP address) before any request byte is
// written, write the request, call on_sent, read the answer. One deadline
// bounds all of it. "Connection: close": one connection per exchange.
//
// Private to the build (phasekey_net, net/CMakeLists.txt): no installed
// header includes it. It depends on nothing of the engine. Beast and Asio
// stay in http_exchange.cc.
#ifndef PHASEKEY_NET_SRC_NET_HTTP_EXCHANGE_H_
#define PHASEKEY_NET_SRC_NET_HTTP_EXCHANGE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace phasekey::net {

using Header = std::pair<std::string, std::string>;

// Resolves a host name to IP address literals ("127.0.0.1", "::1"), in the
// order to try them; may block and may throw (the exception's what() is the
// reason the exchange reports).
using NameResolver = std::function<std::vector<std::string>(const std::string& host, const std::string& port)>;

// Where an exchange goes.
struct HttpPeer {
  bool tls = false;        // https: TLS with the server's certificate verified
  std::string host;        // a DNS name or an IP literal (IPv6 without brackets)
  std::uint16_t port = 0;  // 1 to 65535
  // The Host header; empty: made from host and port (IPv6 bracketed, the
  // port left out when it is the scheme's default).
  std::string host_header;
};

// What is sent. `headers` are inserted as given, in order, repeats kept,
// after Host and before "Connection: close" (which replaces any Connection
// header given). Content-Length is set when the body is not empty or the
// method is POST, PUT or PATCH.
struct HttpRequest {
  std::string method = "GET";  // any token; GET, POST, ... as usual
  std::string target = "/";    // path and query
  std::vector<Header> headers;
  std::string body;
};

// How far an exchange got. Each stage is entered before its work starts, so
// a failure's stage is the step that failed.
enum class HttpStage {
  kResolve,    // finding the addresses (IP literals skip it)
  kConnect,    // TCP connect
  kHandshake,  // TLS setup, handshake and certificate checks (https only)
  kWrite,      // writing the request
  kRead,       // reading the answer (the whole request was written)
  kDone,       // an answer was read: status, headers and body are set
};

// The name of a stage for messages: "resolve", "connect", "TLS handshake",
// "write", "read", "done".
std::string_view StageName(HttpStage stage);

struct HttpResult {
  HttpStage stage = HttpStage::kResolve;  // kDone: answered; else the stage that failed
  bool timed_out = false;                 // the deadline ended it
  // Request bytes the socket accepted: 0 means no byte of the request can
  // have reached the server.
  std::size_t bytes_written = 0;
  // When not kDone: the reason, without the stage ("timed out",
  // "Connection refused", OpenSSL's verification error such as "hostname
  // mismatch", ...).
  std::string error;
  int status = 0;  // kDone: the HTTP status
  std::vector<Header> headers;
  std::string body;

  bool answered() const { return stage == HttpStage::kDone; }
};

// Limits and trust of an HttpExchanger; every default is explained.
struct HttpExchangerOptions {
  // Answers with a larger body fail at kRead: 4 MiB, more than any API
  // answer phasekey talks to (a gateway answer is a few kilobytes).
  std::size_t max_answer_bytes = 4 * 1024 * 1024;
  // https: trust the system's CA store. Default true; false trusts only
  // `ca_file`.
  bool system_trust_store = true;
  // https: a PEM file of CAs to trust as well (beside the system store, or
  // instead of it when system_trust_store is false); empty for none. A file
  // that cannot be loaded fails every https exchange at kHandshake, before
  // anything is sent (trust_error() says why).
  std::string ca_file;
  // Resolves host names that are not IP literals; null: the system's
  // resolver (getaddrinfo). It runs on a detached thread of its own and the
  // exchange stops waiting at its deadline (getaddrinfo cannot be
  // interrupted), so a copy of the function may run on after the exchange,
  // and the exchanger, have ended.
  NameResolver resolver;
  // Sent as User-Agent unless the request has one; empty: none.
  std::string user_agent;
};

// Runs exchanges. Built once from its options (it owns the TLS context: the
// trust store is loaded once); thread-safe: Exchange may run on many threads
// at once. Each exchange runs on the calling thread with an I/O context of
// its own. A connection pool (keep-alive) would live in here, beside the TLS
// context.
class HttpExchanger {
 public:
  explicit HttpExchanger(HttpExchangerOptions options = {});
  ~HttpExchanger();
  HttpExchanger(const HttpExchanger&) = delete;
  HttpExchanger& operator=(const HttpExchanger&) = delete;

  // Sends `request` to `peer` and reads the answer, all before `deadline`.
  // Calls `on_sent` (if set) exactly once, on the calling thread, after the
  // whole request was written and before the answer is read; never when the
  // write did not complete. Never throws for network trouble (it is in the
  // result); an exception thrown by on_sent is not caught.
  HttpResult Exchange(const HttpPeer& peer, const HttpRequest& request, std::chrono::steady_clock::time_point deadline,
                      const std::function<void()>& on_sent = {}) const;

  // Why the TLS trust could not be set up ("cannot load the CA file x.pem:
  // ..."); empty when it was. https exchanges fail while it is not empty.
  const std::string& trust_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasekey::net

#endif  // PHASEKEY_NET_SRC_NET_HTTP_EXCHANGE_H_
