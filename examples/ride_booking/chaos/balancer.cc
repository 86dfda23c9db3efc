#include "chaos/balancer.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>

namespace ride_booking {
namespace {

using phasekey::Result;
using phasekey::Status;

// How often a waiting relay or the acceptor looks at the stop flag.
constexpr int kPollMs = 200;
constexpr std::size_t kBufferBytes = 16384;

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  return addr;
}

// Writes all of `n` bytes; false if the peer is gone.
bool SendAll(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<ChaosBalancer>> ChaosBalancer::Start(std::vector<int> ports) {
  if (ports.empty()) return Status::InvalidArgument("a balancer needs at least one service");
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FailedPrecondition("balancer: cannot create a socket");
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 256) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return Status::FailedPrecondition("balancer: cannot listen on loopback");
  }
  std::unique_ptr<ChaosBalancer> b(new ChaosBalancer(std::move(ports), fd, ntohs(addr.sin_port)));
  b->acceptor_ = std::thread([p = b.get()] { p->AcceptLoop(); });
  return b;
}

ChaosBalancer::~ChaosBalancer() {
  stop_ = true;
  acceptor_.join();
  ::close(listen_fd_);
  std::unique_lock<std::mutex> lock(mu_);
  relays_done_.wait(lock, [this] { return relays_ == 0; });
}

void ChaosBalancer::AcceptLoop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++relays_;
    }
    std::thread([this, client] {
      const int service = ConnectNext();
      if (service < 0) {
        ::close(client);  // every service refused: the client sees its connection end unanswered
      } else {
        Relay(client, service);
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (--relays_ == 0) relays_done_.notify_all();
    }).detach();
  }
}

int ChaosBalancer::ConnectNext() {
  for (std::size_t tried = 0; tried < ports_.size(); ++tried) {
    const int port = ports_[next_.fetch_add(1) % ports_.size()];
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    const sockaddr_in addr = Loopback(port);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return fd;
    ::close(fd);
  }
  return -1;
}

void ChaosBalancer::Relay(int client, int service) {
  std::array<pollfd, 2> fds = {pollfd{client, POLLIN, 0}, pollfd{service, POLLIN, 0}};
  std::array<bool, 2> open = {true, true};  // whether each side may still send to us
  std::array<char, kBufferBytes> buf;
  while (!stop_.load() && (open[0] || open[1])) {
    for (std::size_t i = 0; i < 2; ++i) fds[i].fd = open[i] ? (i == 0 ? client : service) : -1;
    if (::poll(fds.data(), fds.size(), kPollMs) <= 0) continue;
    bool failed = false;
    for (std::size_t i = 0; i < 2 && !failed; ++i) {
      if (!open[i] || fds[i].revents == 0) continue;
      const int from = i == 0 ? client : service;
      const int to = i == 0 ? service : client;
      const ssize_t n = ::recv(from, buf.data(), buf.size(), 0);
      if (n > 0) {
        failed = !SendAll(to, buf.data(), static_cast<std::size_t>(n));
      } else if (n == 0) {
        open[i] = false;
        ::shutdown(to, SHUT_WR);
        if (i == 1) failed = true;  // the service is done: so is the exchange
      } else if (errno != EINTR && errno != EAGAIN) {
        failed = true;  // reset: e.g. the service was killed
      }
    }
    if (failed) break;
  }
  ::close(service);
  ::close(client);
}

}  // namespace ride_booking
