// ConnectionLimiter: the bookkeeping behind HttpServerOptions's connection
// limits (max_connections, max_connections_per_address; see
// phasekey/tools/http_server.h). It knows nothing of sockets: a connection is an
// id, and making room means calling the `close` callback a waiting
// connection registered. Thread-safe.
#ifndef PHASEKEY_TOOLS_SRC_SERVER_CONNECTION_LIMITER_H_
#define PHASEKEY_TOOLS_SRC_SERVER_CONNECTION_LIMITER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace phasekey {

class ConnectionLimiter {
 public:
  // Called (once, without the limiter's lock) to close a connection that
  // makes room for a new one. Must not block.
  using Close = std::function<void()>;

  // At most `max_total` (at least 1) connections, and at most
  // `max_per_address` from one address (0: no such limit).
  ConnectionLimiter(std::size_t max_total, std::size_t max_per_address);

  // A new connection from `address`: its id, or 0 when it is refused. At a
  // limit, the connection in that scope (all, or those of `address`) that
  // has been waiting longest gives up its slot and its Close is called;
  // with none waiting, the new one is refused.
  std::uint64_t Admit(const std::string& address);
  // Connection `id` waits (for a request, or for its client to leave): it
  // may be closed to make room, by `close`. False when it has already given
  // up its slot: the caller closes it.
  [[nodiscard]] bool Waiting(std::uint64_t id, Close close);
  // Connection `id` has a complete request: it is not closed to make room
  // until it waits again. False when it has already given up its slot.
  [[nodiscard]] bool Busy(std::uint64_t id);
  // Connection `id` is closed; frees its slot if it still holds one.
  void Release(std::uint64_t id);

  // Connections holding a slot.
  std::size_t open() const;

 private:
  struct Connection {
    std::string address;
    std::uint64_t waiting_since = 0;  // 0: busy; else its place in waiting_
    Close close;
  };
  struct Address {
    std::size_t open = 0;
    std::map<std::uint64_t, std::uint64_t> waiting;  // waiting_since -> id
  };

  // Forgets `id`; returns its Close (empty if it was busy or unknown).
  Close Remove(std::uint64_t id);                     // REQUIRES(mu_)
  void StopWaiting(std::uint64_t id, Connection& c);  // REQUIRES(mu_)

  const std::size_t max_total_;
  const std::size_t max_per_address_;
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, Connection> connections_;  // GUARDED_BY(mu_)
  std::unordered_map<std::string, Address> addresses_;         // GUARDED_BY(mu_)
  std::map<std::uint64_t, std::uint64_t> waiting_;             // GUARDED_BY(mu_) waiting_since -> id
  std::uint64_t next_id_ = 1;                                  // GUARDED_BY(mu_)
  std::uint64_t next_wait_ = 1;                                // GUARDED_BY(mu_)
};

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_SRC_SERVER_CONNECTION_LIMITER_H_
