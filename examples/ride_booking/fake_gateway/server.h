// Server: serves a Gateway over HTTP/1.1 (Boost.Beast on Asio), or over
// HTTP/1.1 on TLS when given a certificate (ServerOptions).
//
// Threads: two I/O threads accept, read, parse and write; Gateway::Handle,
// which may sleep for the latency fault, runs on a pool of 64 handler
// threads, so slow charges never stall other connections and up to 64
// requests execute at once (more wait in a queue). Connections are
// keep-alive; one request is answered at a time per connection.
//
// Malformed requests get a plain-text 400 (413 for a body over 64 KiB) and
// the connection is closed. A GatewayResponse with drop_connection set is
// never sent: the socket is closed instead. A connection idle for 60 s
// between requests is closed.
//
// The Beast and Asio types stay inside server.cc, so only that file pays
// their compile time.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_SERVER_H_
#define RIDE_BOOKING_FAKE_GATEWAY_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "fake_gateway/gateway.h"

namespace fake_gateway {

struct ServerOptions {
  // An IPv4 or IPv6 literal to listen on; "localhost" means 127.0.0.1.
  std::string host = "127.0.0.1";
  // 0 picks an ephemeral port; address() tells which.
  uint16_t port = 8081;
  // PEM files of the certificate (chain) and its private key. Both set: the
  // server speaks https only (TLS, no client certificate asked); both empty
  // (the default): plain HTTP only. One without the other fails Start.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class Server {
 public:
  // Binds, listens and starts serving `gateway`, which must outlive the
  // Server. On failure returns nullptr and sets *error.
  static std::unique_ptr<Server> Start(Gateway* gateway, const ServerOptions& options, std::string* error);

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  ~Server();  // Stop()

  // The bound address: "127.0.0.1:8081", or "[::1]:8081" for IPv6.
  const std::string& address() const;

  // Stops accepting and reading, waits for requests already executing in
  // Gateway::Handle to finish (their answers are not sent), then closes
  // every connection. Idempotent. Must not be called from a handler.
  void Stop();

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_SERVER_H_
