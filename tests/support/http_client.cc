#include "support/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace phasekey::testing {
namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool Parse(const std::string& raw, HttpResult* r) {
  const auto head_end = raw.find("\r\n\r\n");
  if (head_end == std::string::npos || raw.rfind("HTTP/1.", 0) != 0) return false;
  r->status = std::atoi(raw.substr(9, 3).c_str());
  std::size_t pos = raw.find("\r\n") + 2;
  while (pos < head_end) {
    const auto eol = raw.find("\r\n", pos);
    const std::string line = raw.substr(pos, eol - pos);
    const auto colon = line.find(':');
    if (colon != std::string::npos) {
      std::string value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r->headers[Lower(line.substr(0, colon))] = value;
    }
    pos = eol + 2;
  }
  r->body = raw.substr(head_end + 4);
  if (auto it = r->headers.find("content-length"); it != r->headers.end()) {
    const auto len = static_cast<std::size_t>(std::stoul(it->second));
    if (r->body.size() < len) return false;
    r->body.resize(len);
  }
  return true;
}

}  // namespace

HttpResult HttpCall(std::uint16_t port, const std::string& method, const std::string& target,
                    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
                    std::chrono::milliseconds timeout) {
  HttpResult r;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    r.error = std::string("connect: ") + std::strerror(errno);
    ::close(fd);
    return r;
  }
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  for (const auto& [n, v] : headers) req += n + ": " + v + "\r\n";
  if (!body.empty() || method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  req += "\r\n" + body;
  for (std::size_t sent = 0; sent < req.size();) {
    const ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;  // see the recv loop below
    if (n <= 0) {
      r.error = "send failed";
      ::close(fd);
      return r;
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  char buf[8192];
  while (true) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) break;
    // A socket with SO_RCVTIMEO is never restarted after a signal, not even
    // one whose default action is to be ignored: a SIGCHLD that another
    // thread had blocked (std::system does) lands here as EINTR.
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.error = std::string("recv: ") + std::strerror(errno);
      ::close(fd);
      return r;
    }
    raw.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  r.ok = Parse(raw, &r);
  if (!r.ok) r.error = raw.empty() ? "connection closed without a response" : "malformed response";
  return r;
}

}  // namespace phasekey::testing
