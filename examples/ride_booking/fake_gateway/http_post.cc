#include "fake_gateway/http_post.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fake_gateway {
namespace {

using Clock = std::chrono::steady_clock;

// Owns a socket descriptor.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Waits for `events` on `fd` until `deadline`; false on timeout or error.
bool Wait(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    return n > 0;
  }
}

int Connect(const HttpUrl& url, Clock::time_point deadline, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(url.host.c_str(), url.port.c_str(), &hints, &found) != 0 || found == nullptr) {
    *error = "cannot resolve " + url.host;
    return -1;
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int rc = fd < 0 ? -1 : ::connect(fd, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (fd >= 0 && rc != 0 && errno == EINPROGRESS && Wait(fd, POLLOUT, deadline)) {
    int so_error = 0;
    socklen_t len = sizeof so_error;
    rc = ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) == 0 && so_error == 0 ? 0 : -1;
    errno = so_error;
  }
  if (rc != 0) {
    *error = std::string("connect: ") + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!Wait(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// Reads until the status line is complete; its code, or 0.
int ReadStatus(int fd, Clock::time_point deadline) {
  std::string got;
  char buffer[1024];
  while (got.find("\r\n") == std::string::npos && got.size() < 8192) {
    if (!Wait(fd, POLLIN, deadline)) return 0;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return 0;
    got.append(buffer, static_cast<size_t>(n));
  }
  // "HTTP/1.1 200 OK"
  if (got.size() < 12 || got.compare(0, 5, "HTTP/") != 0) return 0;
  const size_t space = got.find(' ');
  if (space == std::string::npos || space + 4 > got.size()) return 0;
  int status = 0;
  for (size_t i = space + 1; i < space + 4; ++i) {
    if (got[i] < '0' || got[i] > '9') return 0;
    status = status * 10 + (got[i] - '0');
  }
  return status;
}

}  // namespace

bool ParseHttpUrl(const std::string& url, HttpUrl* out) {
  constexpr std::string_view kScheme = "http://";
  if (url.compare(0, kScheme.size(), kScheme) != 0) return false;
  std::string rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  out->path = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string authority = rest.substr(0, slash);
  const size_t colon = authority.rfind(':');
  out->host = authority.substr(0, colon);
  out->port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  return !out->host.empty() && !out->port.empty();
}

PostResult HttpPost(const HttpUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                    const std::string& body, std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  PostResult result;
  Socket socket(Connect(url, deadline, &result.error));
  if (socket.fd() < 0) return result;
  std::string request = "POST " + url.path + " HTTP/1.1\r\nHost: " + url.host + ":" + url.port +
                        "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "\r\n" + body;
  if (!SendAll(socket.fd(), request, deadline)) {
    result.error = "send failed or timed out";
    return result;
  }
  result.status = ReadStatus(socket.fd(), deadline);
  if (result.status == 0) result.error = "no valid answer in time";
  return result;
}

}  // namespace fake_gateway
