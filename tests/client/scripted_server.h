// A loopback HTTP server for the client's tests: each request is recorded
// and answered by a script (a function of the request and its index), which
// may also hang up without answering or answer late. Raw sockets, one
// connection at a time: the client opens one per attempt.
#ifndef PHASEKEY_TESTS_CLIENT_SCRIPTED_SERVER_H_
#define PHASEKEY_TESTS_CLIENT_SCRIPTED_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace phasekey::testing {

struct SeenRequest {
  std::string method, target, body;
  std::map<std::string, std::string> headers;  // names lowercased
};

// What the script answers: `raw` (a whole HTTP response) after `delay`, or
// a hang-up without answer when `hang_up`.
struct ScriptedAnswer {
  std::string raw;
  bool hang_up = false;
  std::chrono::milliseconds delay{0};
};

// "HTTP/1.1 <status> X\r\n<headers>Content-Length: ..\r\n\r\n<body>".
inline ScriptedAnswer Respond(int status, const std::string& body = "{}", const std::string& headers = "") {
  return {"HTTP/1.1 " + std::to_string(status) + " X\r\n" + headers + "Content-Length: " + std::to_string(body.size()) +
              "\r\nConnection: close\r\n\r\n" + body,
          false, std::chrono::milliseconds(0)};
}

class ScriptedServer {
 public:
  using Script = std::function<ScriptedAnswer(const SeenRequest&, int index)>;

  explicit ScriptedServer(Script script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("scripted server: cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }

  std::uint16_t port() const { return port_; }
  std::string Url(const std::string& path = "/op") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::vector<SeenRequest> seen() const {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void Serve() {
    while (!stopping_) {
      const int conn = ::accept(fd_, nullptr, nullptr);
      if (conn < 0) return;
      Handle(conn);
      ::close(conn);
    }
  }

  void Handle(int conn) {
    std::string data;
    char buf[4096];
    std::size_t header_end;
    while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(conn, buf, sizeof buf, 0);
      if (n <= 0) return;
      data.append(buf, static_cast<std::size_t>(n));
    }
    SeenRequest req;
    std::size_t line_end = data.find("\r\n");
    const std::string line = data.substr(0, line_end);
    req.method = line.substr(0, line.find(' '));
    req.target = line.substr(line.find(' ') + 1, line.rfind(' ') - line.find(' ') - 1);
    std::size_t pos = line_end + 2;
    while (pos < header_end) {
      const std::size_t end = data.find("\r\n", pos);
      const std::string field = data.substr(pos, end - pos);
      std::string name = field.substr(0, field.find(':'));
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = field.substr(field.find(':') + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      req.headers[name] = value;
      pos = end + 2;
    }
    const std::size_t length = req.headers.count("content-length") ? std::stoul(req.headers["content-length"]) : 0;
    req.body = data.substr(header_end + 4);
    while (req.body.size() < length) {
      const ssize_t n = ::recv(conn, buf, sizeof buf, 0);
      if (n <= 0) return;
      req.body.append(buf, static_cast<std::size_t>(n));
    }
    int index;
    {
      std::lock_guard lock(mu_);
      index = static_cast<int>(seen_.size());
      seen_.push_back(req);
    }
    const ScriptedAnswer answer = script_(req, index);
    std::this_thread::sleep_for(answer.delay);
    if (answer.hang_up) return;
    ::send(conn, answer.raw.data(), answer.raw.size(), MSG_NOSIGNAL);
  }

  Script script_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<SeenRequest> seen_;  // GUARDED_BY(mu_)
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_CLIENT_SCRIPTED_SERVER_H_
