#include "chaos_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

namespace ride_booking {
namespace {

using phasekey::Result;
using phasekey::Status;

// The largest answer we accept: the gateway's ledger of a long run is the
// biggest (about 150 bytes per charge).
constexpr std::size_t kMaxResponseBytes = 64 * 1024 * 1024;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

Status NetError(const std::string& what) { return Status::Retryable(what + ": " + std::strerror(errno)); }

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

Status Connect(const Socket& s, const std::string& host, int port, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  // On Linux SO_SNDTIMEO also bounds connect().
  if (::setsockopt(s.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(s.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    return NetError("setsockopt");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("not an IPv4 address: " + host);
  }
  if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return NetError("connect");
  return Status::OK();
}

std::string Serialize(const std::string& host, int port, const ChaosHttpRequest& r) {
  std::string out = r.method + " " + r.target + " HTTP/1.1\r\n";
  out += "Host: " + host + ":" + std::to_string(port) + "\r\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(r.body.size()) + "\r\nConnection: close\r\n\r\n";
  out += r.body;
  return out;
}

Status SendAll(const Socket& s, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(s.fd(), data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return NetError("send");
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::OK();
}

// Parses the status line and header fields of `head` (without the blank
// line). Returns false if malformed.
bool ParseHead(std::string_view head, ChaosHttpResponse* r) {
  const auto eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12) return false;
  const std::string_view code = status_line.substr(9, 3);
  if (std::from_chars(code.data(), code.data() + 3, r->status).ptr != code.data() + 3) return false;
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  while (!rest.empty()) {
    const auto end = rest.find("\r\n");
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    r->headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
  }
  return true;
}

// The body length announced by the head: a number, nullopt when the body
// runs to the end of the connection, or -1 when the framing is unsupported.
std::optional<long long> BodyLength(const ChaosHttpResponse& r) {
  if (r.Header("Transfer-Encoding") != nullptr) return -1;
  const std::string* cl = r.Header("Content-Length");
  if (cl == nullptr) return std::nullopt;
  long long n = -1;
  const auto res = std::from_chars(cl->data(), cl->data() + cl->size(), n);
  if (res.ec != std::errc() || res.ptr != cl->data() + cl->size() || n < 0) return -1;
  return n;
}

// Reads until the head is complete, then until the body is (or EOF).
Result<ChaosHttpResponse> ReadResponse(const Socket& s) {
  std::string data;
  ChaosHttpResponse r;
  std::size_t head_end = std::string::npos;
  std::optional<long long> length;
  char buf[16384];
  for (;;) {
    if (head_end != std::string::npos && length && data.size() - head_end >= static_cast<std::size_t>(*length)) break;
    const ssize_t n = ::recv(s.fd(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return NetError("recv");
    if (n == 0) {
      if (head_end != std::string::npos && !length) break;  // body ends with the connection
      return Status::Retryable("connection closed before a complete answer");
    }
    data.append(buf, static_cast<std::size_t>(n));
    if (data.size() > kMaxResponseBytes) return Status::Retryable("answer too large");
    if (head_end == std::string::npos) {
      const auto blank = data.find("\r\n\r\n");
      if (blank == std::string::npos) continue;
      if (!ParseHead(std::string_view(data).substr(0, blank), &r)) return Status::Retryable("malformed answer");
      head_end = blank + 4;
      length = BodyLength(r);
      if (length && *length < 0) return Status::Retryable("unsupported answer framing");
    }
  }
  r.body = data.substr(head_end, length ? static_cast<std::size_t>(*length) : std::string::npos);
  return r;
}

}  // namespace

const std::string* ChaosHttpResponse::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

Result<ChaosHttpResponse> HttpExchange(const std::string& host, int port, const ChaosHttpRequest& request,
                                       std::chrono::milliseconds timeout) {
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd() < 0) return NetError("socket");
  if (Status st = Connect(s, host, port, timeout); !st.ok()) return st;
  if (Status st = SendAll(s, Serialize(host, port, request)); !st.ok()) return st;
  return ReadResponse(s);
}

}  // namespace ride_booking
