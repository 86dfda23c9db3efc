// ChaosBalancer: the load balancer in front of the chaos demo's services
// when there are several (`ride_booking chaos --services N`), as a
// deployment has one: a TCP relay on a loopback port that sends each new
// connection to the next service in turn. A service that refuses the
// connection (killed, or restarting) is skipped for the next one; when all
// refuse, the client's connection is closed unanswered. Bytes are relayed
// both ways until either side closes; a service killed mid-request closes
// its side, so the client sees its connection end without an answer, as it
// would without the balancer. It keeps no state across connections: a
// client's retries of one key land on whichever service is next.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_BALANCER_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_BALANCER_H_

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "phasekey/status.h"

namespace ride_booking {

class ChaosBalancer {
 public:
  // Listens on 127.0.0.1 (any free port) in front of the services on
  // `ports` (on 127.0.0.1; they need not listen yet).
  static phasekey::Result<std::unique_ptr<ChaosBalancer>> Start(std::vector<int> ports);

  // Stops accepting, closes the relays still open and waits for them.
  ~ChaosBalancer();
  ChaosBalancer(const ChaosBalancer&) = delete;
  ChaosBalancer& operator=(const ChaosBalancer&) = delete;

  int port() const { return port_; }

 private:
  ChaosBalancer(std::vector<int> ports, int listen_fd, int port)
      : ports_(std::move(ports)), listen_fd_(listen_fd), port_(port) {}
  void AcceptLoop();
  // Connects to the next service that accepts; -1 if none does.
  int ConnectNext();
  // Relays between `client` and `service` until both sides are done, then
  // closes both.
  void Relay(int client, int service);

  const std::vector<int> ports_;
  const int listen_fd_;
  const int port_;
  std::atomic<unsigned> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable relays_done_;
  int relays_ = 0;  // GUARDED_BY(mu_): relay threads still running
  std::thread acceptor_;
};

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_BALANCER_H_
