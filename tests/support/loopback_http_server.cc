#include "support/loopback_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace phasekey::testing {

namespace {

std::string Head(int status, const std::string& body, const std::string& headers, bool close) {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\n" + headers + "Content-Length: " + std::to_string(body.size()) +
         "\r\n" + (close ? "Connection: close\r\n" : "") + "\r\n" + body;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Parses the request line and headers of `head` (without its CRLFCRLF).
void ParseHead(const std::string& head, LoopbackRequest* r) {
  const std::size_t line_end = std::min(head.find("\r\n"), head.size());
  const std::string line = head.substr(0, line_end);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = line.rfind(' ');
  r->method = line.substr(0, sp1);
  if (sp1 != std::string::npos && sp2 > sp1) r->target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::size_t pos = line_end + 2;
  while (pos < head.size()) {
    const std::size_t end = std::min(head.find("\r\n", pos), head.size());
    const std::string field = head.substr(pos, end - pos);
    const std::size_t colon = field.find(':');
    if (colon != std::string::npos) {
      std::string value = field.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      r->headers[Lower(field.substr(0, colon))] = value;
    }
    pos = end + 2;
  }
}

// A socket listening on 127.0.0.1 at a free port, stored in *port.
int ListenOnLoopback(std::uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("loopback http server: cannot listen");
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

LoopbackAnswer Answer(int status, const std::string& body, const std::string& headers) {
  return LoopbackAnswer{Head(status, body, headers, false)};
}

LoopbackAnswer AnswerAndClose(int status, const std::string& body, const std::string& headers) {
  LoopbackAnswer a{Head(status, body, headers, true)};
  a.then = LoopbackAnswer::Then::kClose;
  return a;
}

LoopbackAnswer HangUp(std::chrono::milliseconds delay) {
  LoopbackAnswer a;
  a.delay = delay;
  a.hang_up = true;
  return a;
}

struct LoopbackHttpServer::Conn {
  int fd;
  SSL* ssl;
  int Read(char* buf, int n) const { return ssl ? SSL_read(ssl, buf, n) : static_cast<int>(::read(fd, buf, n)); }
  void Write(const std::string& s) const {
    if (ssl) {
      SSL_write(ssl, s.data(), static_cast<int>(s.size()));
      return;
    }
    for (std::size_t at = 0; at < s.size();) {
      const ssize_t n = ::send(fd, s.data() + at, s.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return;  // the client hung up
      at += static_cast<std::size_t>(n);
    }
  }
};

LoopbackHttpServer::LoopbackHttpServer(Script script, const std::string& cert_file, const std::string& key_file)
    : script_(std::move(script)) {
  listener_ = ListenOnLoopback(&port_);
  if (!cert_file.empty()) {
    ctx_ = SSL_CTX_new(TLS_server_method());
    if (SSL_CTX_use_certificate_chain_file(ctx_, cert_file.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx_, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      SSL_CTX_free(ctx_);
      ::close(listener_);
      throw std::runtime_error("loopback http server: cannot load " + cert_file);
    }
  }
  acceptor_ = std::thread([this] { Accept(); });
}

LoopbackHttpServer::~LoopbackHttpServer() {
  ::shutdown(listener_, SHUT_RDWR);
  ::close(listener_);
  acceptor_.join();
  CloseConnections();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    threads.swap(connections_);
  }
  for (std::thread& t : threads) t.join();
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
}

std::string LoopbackHttpServer::Url(const std::string& path) const {
  return std::string(tls() ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<LoopbackRequest> LoopbackHttpServer::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

std::string LoopbackHttpServer::last_request() const {
  std::lock_guard lock(mu_);
  return seen_.empty() ? "" : seen_.back().raw;
}

std::string LoopbackHttpServer::server_name() const {
  std::lock_guard lock(mu_);
  return server_name_;
}

std::string LoopbackHttpServer::received_after_failed_handshake() const {
  std::lock_guard lock(mu_);
  return after_failed_handshake_;
}

void LoopbackHttpServer::CloseConnections() {
  std::lock_guard lock(mu_);
  for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
}

void LoopbackHttpServer::Accept() {
  for (;;) {
    const int fd = ::accept(listener_, nullptr, nullptr);
    if (fd < 0) return;
    const int connection = accepts_++;
    std::lock_guard lock(mu_);
    fds_.push_back(fd);
    connections_.emplace_back([this, fd, connection] { Serve(fd, connection); });
  }
}

// Reads one whole request into `request`, keeping in `data` what follows
// it; false when the connection ended first.
bool LoopbackHttpServer::ReadRequest(const Conn& c, std::string& data, LoopbackRequest* request) {
  char buf[4096];
  for (;;) {
    const std::size_t end = data.find("\r\n\r\n");
    if (end != std::string::npos) {
      ParseHead(data.substr(0, end), request);
      const auto length_field = request->headers.find("content-length");
      const std::size_t length = length_field == request->headers.end() ? 0 : std::stoul(length_field->second);
      if (data.size() >= end + 4 + length) {
        request->raw = data.substr(0, end + 4 + length);
        request->body = data.substr(end + 4, length);
        data.erase(0, end + 4 + length);
        return true;
      }
    }
    const int n = c.Read(buf, sizeof buf);
    if (n <= 0) return false;
    data.append(buf, static_cast<std::size_t>(n));
  }
}

void LoopbackHttpServer::Serve(int fd, int connection) {
  Conn c{fd, nullptr};
  if (ctx_ != nullptr) {
    c.ssl = SSL_new(ctx_);
    SSL_set_fd(c.ssl, fd);
    if (SSL_accept(c.ssl) != 1) {
      ++failed_handshakes_;
      KeepWhatFollowsAFailedHandshake(fd);
      return End(c);
    }
    ++handshakes_;
    if (SSL_session_reused(c.ssl) == 1) ++resumed_;
    const char* sni = SSL_get_servername(c.ssl, TLSEXT_NAMETYPE_host_name);
    std::lock_guard lock(mu_);
    server_name_ = sni != nullptr ? sni : "";
  }
  std::string data;
  for (int n = 0;; ++n) {
    LoopbackRequest request;
    if (!ReadRequest(c, data, &request)) break;
    request.connection = connection;
    request.on_connection = n;
    {
      std::lock_guard lock(mu_);
      request.index = static_cast<int>(seen_.size());
      seen_.push_back(request);
    }
    ++requests_;
    LoopbackAnswer answer;
    {
      std::lock_guard lock(script_mu_);
      answer = script_(request);
    }
    std::this_thread::sleep_for(answer.delay);
    if (answer.hang_up) break;
    c.Write(answer.raw);
    if (answer.then == LoopbackAnswer::Then::kClose) break;
    if (answer.then == LoopbackAnswer::Then::kCloseWhenTheClientDoes) {
      // A client that heeds "Connection: close" closes at once; one that
      // sends another request here gets no answer.
      timeval wait{1, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
      char buf[4096];
      while (c.Read(buf, sizeof buf) > 0) {
      }
      break;
    }
  }
  End(c);
}

void LoopbackHttpServer::KeepWhatFollowsAFailedHandshake(int fd) {
  timeval wait{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) {
    std::lock_guard lock(mu_);
    after_failed_handshake_.append(buf, static_cast<std::size_t>(n));
  }
}

void LoopbackHttpServer::End(const Conn& c) {
  if (c.ssl != nullptr) SSL_free(c.ssl);
  ERR_clear_error();
  std::lock_guard lock(mu_);
  ::shutdown(c.fd, SHUT_RDWR);
  ::close(c.fd);
  std::erase(fds_, c.fd);
}

}  // namespace phasekey::testing
