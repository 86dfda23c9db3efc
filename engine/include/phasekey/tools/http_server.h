// HttpServer: an HTTP/1.1 server (Boost.Beast) in front of an HttpHandler.
//
// Per connection: requests are read one at a time (keep-alive, no
// pipelining of answers); each is authenticated, offered to the plain
// routes, then given to HttpHandler::Handle. Malformed requests never get a
// silent close: what the HTTP parser rejects is answered with a problem
// (application/problem+json, built by HttpHandler::MakeProblem):
//   400 malformed-request  unparsable request (a forbidden byte such as 0x01
//                          in a header value, a bad request line, bad
//                          chunking, a bad Content-Length), or one the
//                          client cut short by ending its side of the
//                          connection (a body shorter than its
//                          Content-Length)
//   431 headers-too-large  the request line plus headers exceed header_limit
//                          (RFC 6585; more precise than 400, so a client
//                          knows what to shrink)
//   413 body-too-large     the body exceeds HttpHandler::max_body_bytes();
//                          sent as soon as the Content-Length is seen (after
//                          `Expect: 100-continue`, before the body is sent)
// After these the connection is closed (the parser cannot find the next
// request), but unread request bytes are drained for up to 2 s first, so the
// client reads the answer instead of a TCP reset. Also:
//   401 unauthenticated    authenticate returned nullopt (with
//                          WWW-Authenticate)
//   500 internal-error     a callback threw, or a response header was unsafe
//                          to write (CR/LF in a value, a non-token name)
// The exceptions: a client that stalls past header_timeout or read_timeout
// is disconnected without an answer (the socket is closed by the timer), and
// so is the connection that makes room for a new one at a connection limit
// (max_connections, max_connections_per_address); a new connection past a
// limit that no waiting connection can make room for is answered
//   503 retry-later        with Retry-After, then closed
//
// Responses: Content-Length, Transfer-Encoding and Connection are the
// server's; such fields in an Response are ignored. A HEAD request gets
// the headers and Content-Length of the body, without the body.
//
// Threads. Runner::Execute blocks (database round trips, gateway calls of
// seconds), so it must not run on the threads that do network I/O, or a few
// slow gateway calls would stall every connection. The server therefore has
// two pools: `io_threads` run the Asio io_context (accept, read, write,
// parse), and `handler_threads` (a boost::asio::thread_pool) run
// authenticate, plain_routes and HttpHandler::Handle. The number of requests
// executing at once is at most handler_threads; more wait in a queue.
//
// The Beast and Asio types stay inside the implementation file, so including
// this header costs nothing extra to compile.
#ifndef PHASEKEY_TOOLS_HTTP_SERVER_H_
#define PHASEKEY_TOOLS_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "phasekey/http.h"
#include "phasekey/status.h"

namespace phasekey {

// Decides the account a request acts for, or nullopt (401). Runs on a
// handler thread, concurrently with itself: must be thread-safe.
using Authenticate = std::function<std::optional<std::string>(const HttpRequest&)>;

// Answers a request outside the idempotent routes (GET /healthz, a metrics
// page, GET /rides/123), or returns nullopt to pass it on. Consulted after
// authenticate and before the HttpHandler's routes; `account` is null when
// authenticate returned nullopt, so a plain route decides itself whether it
// needs one. Runs on a handler thread, concurrently with itself.
using PlainRoutes = std::function<std::optional<Response>(const HttpRequest&, const std::string* account)>;

// How an HttpServer listens, how many threads it runs, and what it bounds.
// Only `authenticate` has no usable default.
struct HttpServerOptions {
  // Where to listen. An IPv4 or IPv6 literal (no host names). Port 0 picks an
  // ephemeral port; port() reports it after Start().
  std::string address = "127.0.0.1";
  // The TCP port to listen on (see `address`; 0 for an ephemeral one).
  std::uint16_t port = 8080;

  // Network threads. Parsing and writing are cheap; two keep one connection's
  // slow write from delaying the next accept on a 2-core machine.
  int io_threads = 2;
  // Threads running the handler (blocking runner calls). Sized for I/O-bound
  // work, not cores: each mostly waits on PostgreSQL or a gateway. Keep it at
  // or below the database pool size, or requests queue for connections.
  int handler_threads = 16;

  // The most bytes of request line plus headers accepted (431 above it).
  // 16 KiB holds any sane request (Idempotency-Key is at most ~520 bytes
  // quoted) and bounds memory per connection.
  std::size_t header_limit = 16 * 1024;

  // A request (headers and body) must arrive within read_timeout of the
  // start of reading, including idle time on a kept-alive connection; a
  // response must be written within write_timeout. Then the connection is
  // closed. Protects the io threads' sockets from slow or vanished clients.
  std::chrono::milliseconds read_timeout{30000};
  // The request line and headers must arrive within header_timeout of the
  // start of reading (on a kept-alive connection: of the end of the last
  // response, so this is also the idle timeout), or the connection is closed
  // without an answer. Against slowloris: a client that opens connections
  // and sends a header a byte at a time gets each closed after 5 s, however
  // it trickles. 5 s is what Node.js and Apache allow an idle kept-alive
  // connection, far above a real client's header time (one packet, well
  // under a second on any network) and short enough that the connection
  // limits below are not held for long. The body is bounded by read_timeout.
  std::chrono::milliseconds header_timeout{5000};
  // The longest a response may take to write (see read_timeout).
  std::chrono::milliseconds write_timeout{30000};

  // Connection limits. Each open connection holds a file descriptor; with
  // no bound, clients that connect and send nothing use up the process's
  // descriptors, and every later connection, /healthz included, waits in the
  // kernel's backlog. So at most max_connections are open at once, and at
  // most max_connections_per_address from one client IP address. At a limit
  // a new connection takes the place of the connection in that scope (all,
  // or those of its address) that has waited longest for a complete request
  // (idle between requests, or still sending one): that one is closed
  // without an answer, as header_timeout would close it. Slow clients never
  // complete a request, so a new connection, a health check's say, is served
  // however many of them there are. Only when every connection in the scope
  // has a request executing or an answer being written is the new one
  // refused: answered 503 retry-later (a problem, `Retry-After: 1`) and
  // closed.
  //
  // 0 (the default): half the process's soft RLIMIT_NOFILE, read by
  // Start() (512 under the usual 1024; a limit above 2^20 counts as 2^20).
  // The other half is left to what else the process opens (database and
  // gateway connections, files) and to accepting the connections to refuse.
  std::size_t max_connections = 0;
  // 256, 0 for no limit. Far above what one well-behaved client host opens (a
  // browser keeps 6 per origin; a few dozen processes with small pools), yet
  // one address cannot take all of a 1024-descriptor process's 512. Behind a
  // proxy or load balancer every connection has its address: set this to 0
  // there, or the proxy is refused first.
  std::size_t max_connections_per_address = 256;

  // Required: Start() refuses to run without it.
  Authenticate authenticate;
  // Optional.
  PlainRoutes plain_routes;
  // The WWW-Authenticate value sent with 401 (RFC 9110 section 11.6.1
  // requires the header on every 401).
  std::string www_authenticate = "Bearer";
};

// Serves an HttpHandler over HTTP/1.1 (see the file comment). Start() and
// Stop() are called from one controlling thread; the server's own threads
// run everything else.
class HttpServer {
 public:
  // `handler` must outlive the server; its routes must be registered before
  // Start().
  HttpServer(HttpServerOptions options, const HttpHandler& handler);
  // A server of plain routes only (a worker's /metrics and /healthz): a
  // request none of them takes is answered 404 not-found; problems and the
  // body limit use HttpHandlerOptions' defaults.
  explicit HttpServer(HttpServerOptions options);
  // Stops the server if running.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the threads. InvalidArgument for a bad
  // address, bad thread counts or a missing authenticate callback;
  // FailedPrecondition if the address cannot be bound, or if the server was
  // started before (a server runs once).
  Status Start();

  // Stops accepting, drops open connections (a request being read or
  // written is abandoned), waits for handler calls already running to
  // return, and joins every thread. A client whose request was executing
  // sees the connection close; its retry with the same key gets the stored
  // response. Idempotent. Start() and Stop() must not be called
  // concurrently.
  void Stop();

  // The bound port after a successful Start(); 0 before.
  std::uint16_t port() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_HTTP_SERVER_H_
