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
// bounds all of it. With keep_alive (the default) the connection goes back
// to the exchanger's pool afterwards and a later exchange with the same
// scheme, host and port writes its request on it (no resolution, connection
// or handshake); without, "Connection: close": one connection per exchange.
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
// after Host. The Connection header is the exchanger's: any given is
// dropped; "Connection: close" is sent when keep_alive is off, none (HTTP/1.1
// keeps the connection) when it is on. Content-Length is set when the body
// is not empty or the method is POST, PUT or PATCH.
struct HttpRequest {
  std::string method = "GET";  // any token; GET, POST, ... as usual
  std::string target = "/";    // path and query
  std::vector<Header> headers;
  std::string body;
  // The stale connection rule. A pooled connection may have been closed by
  // the server while it was idle (its idle timeout, a restart); the request
  // then fails on it before any byte of the answer arrives: the write fails,
  // or the read meets the end of the stream or a reset with nothing read.
  // When this is true, such a request is sent once more on a new connection
  // (same deadline). Default false, because the exchanger cannot know
  // whether that is safe: the server may have read the request and acted on
  // it before it closed. Set it only for a request whose repeat the server
  // answers as the first: a read (GET), or a request with an idempotency key
  // the server honours (the phases' provider calls when the provider key
  // deduplicates, the client library's calls, which all carry their key).
  // Never applies to a new connection, a timeout or a partial answer.
  bool retry_on_stale_connection = false;
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

// What an exchange reports. After a resend (HttpRequest's stale connection
// rule) it is the resend's result, with bytes_written counting both sends;
// when the resend wrote nothing (it failed at resolve, connect or the
// handshake), it is the first send's result (stage kWrite or kRead, its
// bytes_written), its error followed by "; sent again on a new connection:
// <stage>: <error>", and timed_out from the resend.
struct HttpResult {
  HttpStage stage = HttpStage::kResolve;  // kDone: answered; else the stage that failed
  bool timed_out = false;                 // the deadline ended it
  // Request bytes the socket accepted, over every send: 0 means no byte of
  // the request can have reached the server.
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
  // Keep connections open and reuse them (HTTP/1.1 keep-alive). Default
  // true: a new TCP connection and TLS handshake per call costs a provider
  // call one or more round trips and the handshake's CPU. False: every
  // exchange sends "Connection: close" on a connection of its own.
  bool keep_alive = true;
  // Idle connections kept per peer (scheme, host, port); one more returned
  // closes the one idle longest. Default 32: one per handler thread of a
  // service at the concurrency it is measured at (16 to 32), so that steady
  // traffic opens no new connection. 0 keeps none (like keep_alive false,
  // except for the header sent).
  std::size_t max_idle_per_peer = 32;
  // An idle connection older than this is closed, never used. Default 30 s:
  // below the 60 s or more that servers and load balancers commonly keep an
  // idle connection (nginx 75 s, the fake gateway 60 s), so the server
  // rarely closes one first; when it does, the stale connection rule
  // (HttpRequest) or the caller's retry covers it.
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(30);
};

// Counters of an exchanger's connections since it was made.
struct HttpExchangerStats {
  std::uint64_t opened = 0;       // new connections (TCP connected)
  std::uint64_t reused = 0;       // exchanges that took a pooled connection
  std::uint64_t tls_resumed = 0;  // new TLS connections that resumed a session
  std::uint64_t resent = 0;       // requests sent again by the stale connection rule
};

// Runs exchanges. Built once from its options (it owns the TLS context: the
// trust store is loaded once, and the pool); thread-safe: Exchange may run on
// many threads at once.
//
// Thread contract of the pool: a connection owns its socket (and its SSL
// object over https) and an I/O context of its own. An exchange takes a
// connection out of the pool (or opens one) and runs that I/O context on the
// calling thread until the exchange ends; no other thread touches the
// connection meanwhile. It is then returned (only when the answer was read
// whole, the server did not say "Connection: close", the answer was HTTP/1.1
// with its own length and nothing followed it, and the deadline did not
// fire) or closed. A returned connection runs nothing, so any thread's later
// exchange may take it. Over https the SSL session of the last handshake
// with each peer is kept and offered on the next new connection to it (TLS
// session resumption, when the server allows it).
//
// Idle connections are closed when found expired or readable (the server
// closed them or sent something unasked) as an exchange looks for one, and
// when the exchanger is destroyed; no thread sweeps them meanwhile.
class HttpExchanger {
 public:
  explicit HttpExchanger(HttpExchangerOptions options = {});
  ~HttpExchanger();
  HttpExchanger(const HttpExchanger&) = delete;
  HttpExchanger& operator=(const HttpExchanger&) = delete;

  // Sends `request` to `peer` and reads the answer, all before `deadline`.
  // Calls `on_sent` (if set) at most once, on the calling thread, after the
  // first time the whole request was written and before its answer is read;
  // never when no write completed. A resend (the stale connection rule) does
  // not call it again when the first send had: the request may have reached
  // the server from then on, whatever the resend does. Never throws for network trouble (it is in the
  // result); an exception thrown by on_sent is not caught.
  HttpResult Exchange(const HttpPeer& peer, const HttpRequest& request, std::chrono::steady_clock::time_point deadline,
                      const std::function<void()>& on_sent = {}) const;

  // Counters since the exchanger was made. Thread-safe.
  HttpExchangerStats stats() const;

  // Why the TLS trust could not be set up ("cannot load the CA file x.pem:
  // ..."); empty when it was. https exchanges fail while it is not empty.
  const std::string& trust_error() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasekey::net

#endif  // PHASEKEY_NET_SRC_NET_HTTP_EXCHANGE_H_
