// HttpServer over real loopback TCP, with raw sockets on the client side so
// tests can send bytes no HTTP client library would.
#include "phasekey/tools/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "phasekey/runner.h"

namespace phasekey {
namespace {

using namespace std::chrono_literals;

// Stands in for Runner::Execute. Answers 201 with the flow, account and key;
// optionally holds each call until `hold_until_concurrent` calls are inside
// Execute at once (or 5 s).
class FakeRunner {
 public:
  Reply Execute(const std::string& flow, const Request& request) {
    std::unique_lock<std::mutex> lock(mu_);
    ++calls_;
    ++inside_;
    max_inside_ = std::max(max_inside_, inside_);
    cv_.notify_all();
    cv_.wait_for(lock, 5s, [&] { return max_inside_ >= hold_until_concurrent; });
    --inside_;
    nlohmann::json body = {
        {"flow", flow}, {"account", request.account}, {"key", request.idempotency_key}, {"body", request.body}};
    Reply reply;
    reply.kind = Reply::Kind::kCompleted;
    reply.response = JsonResponse(201, body);
    return reply;
  }
  // The handler's view of this runner.
  HttpHandler::Execute AsExecute() {
    return [this](const std::string& flow, const Request& request) { return Execute(flow, request); };
  }

  int calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  int max_inside() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_inside_;
  }

  // Lets every held call (and every later one) return.
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    hold_until_concurrent = 0;
    cv_.notify_all();
  }

  int hold_until_concurrent = 0;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int calls_ = 0;
  int inside_ = 0;
  int max_inside_ = 0;
};

struct ParsedResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;
};

// Splits one HTTP/1.1 response off the front of `raw` (Content-Length
// framing only, which is all the server sends). Removes it from `raw`.
ParsedResponse ParseOne(std::string& raw) {
  ParsedResponse out;
  std::size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos || raw.compare(0, 9, "HTTP/1.1 ") != 0) return out;
  out.status = std::stoi(raw.substr(9, 3));
  std::size_t line = raw.find("\r\n") + 2;
  while (line < end) {
    std::size_t eol = raw.find("\r\n", line);
    std::string field = raw.substr(line, eol - line);
    std::size_t colon = field.find(':');
    std::size_t v = field.find_first_not_of(' ', colon + 1);
    out.headers.Add(field.substr(0, colon), v == std::string::npos ? "" : field.substr(v));
    line = eol + 2;
  }
  std::size_t length = 0;
  if (const std::string* cl = out.headers.Find("Content-Length")) length = std::stoul(*cl);
  out.body = raw.substr(end + 4, length);
  raw.erase(0, end + 4 + length);
  return out;
}

// Connects from `from` (a loopback address such as "127.0.0.2") when set.
int Connect(std::uint16_t port, const char* from = nullptr) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (from != nullptr) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, from, &local.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
      ::close(fd);
      return -1;
    }
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Whether the server closes `fd` (end of stream or reset, nothing read)
// within `wait`.
bool ClosedWithin(int fd, std::chrono::milliseconds wait) {
  timeval tv{static_cast<time_t>(wait.count() / 1000), static_cast<suseconds_t>(wait.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c;
  ssize_t n = ::recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

// A connection that sends the start of a request and then nothing.
int SlowConnection(std::uint16_t port, const char* from = nullptr) {
  int fd = Connect(port, from);
  if (fd >= 0) SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: t\r\n");
  return fd;
}

std::string ReadToEof(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// Sends `bytes` on a fresh connection and returns everything the server
// sends until it closes the connection.
std::string Exchange(std::uint16_t port, std::string_view bytes) {
  int fd = Connect(port);
  if (fd < 0) return "";
  SendAll(fd, bytes);
  std::string out = ReadToEof(fd);
  ::close(fd);
  return out;
}

std::string PostRides(std::string_view key, std::string_view body, std::string_view extra = "Connection: close\r\n") {
  return "POST /rides HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer alice\r\nIdempotency-Key: " + std::string(key) +
         "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         std::string(extra) + "\r\n" + std::string(body);
}

class BeastServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpHandlerOptions handler_options = {}, HttpServerOptions options = {}) {
    handler_ = std::make_unique<HttpHandler>(std::move(handler_options), runner_.AsExecute());
    ASSERT_TRUE(handler_->Route("POST", "/rides", "create_ride").ok());
    options.address = "127.0.0.1";
    options.port = 0;
    options.handler_threads = 8;
    options.authenticate = [](const HttpRequest& req) -> std::optional<std::string> {
      const std::string* auth = req.headers.Find("Authorization");
      if (auth == nullptr || auth->rfind("Bearer ", 0) != 0) return std::nullopt;
      return auth->substr(7);
    };
    options.plain_routes = [](const HttpRequest& req, const std::string*) -> std::optional<Response> {
      if (req.method == "GET" && req.target == "/healthz") {
        return Response{200, {{"Content-Type", "text/plain"}}, "ok"};
      }
      return std::nullopt;
    };
    server_ = std::make_unique<HttpServer>(std::move(options), *handler_);
    Status s = server_->Start();
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_NE(server_->port(), 0);
  }

  static void ExpectProblem(const ParsedResponse& res, int status) {
    EXPECT_EQ(res.status, status);
    const std::string* type = res.headers.Find("Content-Type");
    ASSERT_NE(type, nullptr);
    EXPECT_EQ(*type, "application/problem+json");
    nlohmann::json body = nlohmann::json::parse(res.body, nullptr, false);
    ASSERT_FALSE(body.is_discarded()) << res.body;
    EXPECT_EQ(body["status"], status);
    EXPECT_TRUE(body.contains("type") && body.contains("title") && body.contains("detail")) << res.body;
  }

  FakeRunner runner_;
  std::unique_ptr<HttpHandler> handler_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(BeastServerTest, RunsAnAuthenticatedPostThroughTheRunner) {
  StartServer();
  std::string raw = Exchange(server_->port(), PostRides("\"k-1\"", R"({"a":1})"));
  ParsedResponse res = ParseOne(raw);
  ASSERT_EQ(res.status, 201) << raw;
  nlohmann::json body = nlohmann::json::parse(res.body);
  EXPECT_EQ(body["flow"], "create_ride");
  EXPECT_EQ(body["account"], "alice");
  EXPECT_EQ(body["key"], "k-1");
  EXPECT_EQ(body["body"], R"({"a":1})");
  EXPECT_EQ(*res.headers.Find("Content-Type"), "application/json");
}

TEST_F(BeastServerTest, ServesSeveralRequestsOnOneKeptAliveConnection) {
  StartServer();
  std::string raw = Exchange(server_->port(), PostRides("a", "{}", "") + PostRides("b", "{}"));
  ParsedResponse first = ParseOne(raw);
  ParsedResponse second = ParseOne(raw);
  EXPECT_EQ(first.status, 201);
  EXPECT_EQ(nlohmann::json::parse(first.body)["key"], "a");
  EXPECT_EQ(second.status, 201);
  EXPECT_EQ(nlohmann::json::parse(second.body)["key"], "b");
}

TEST_F(BeastServerTest, RunsRequestsConcurrently) {
  runner_.hold_until_concurrent = 4;
  StartServer();
  std::vector<std::thread> clients;
  std::atomic<int> created{0};
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      std::string raw = Exchange(server_->port(), PostRides("c" + std::to_string(i), "{}"));
      if (ParseOne(raw).status == 201) ++created;
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(created.load(), 4);
  EXPECT_EQ(runner_.max_inside(), 4);
}

TEST_F(BeastServerTest, AnswersAForbiddenByteInAHeaderValueWithAProblem) {
  StartServer();
  std::string raw = Exchange(server_->port(), PostRides("k", "{}",
                                                        std::string("X: a\x01"
                                                                    "b\r\n")));
  ParsedResponse res = ParseOne(raw);
  ExpectProblem(res, 400);
  EXPECT_EQ(*res.headers.Find("Connection"), "close");
  EXPECT_EQ(runner_.calls(), 0);
}

TEST_F(BeastServerTest, AnswersAMalformedRequestLineWithAProblem) {
  StartServer();
  std::string raw = Exchange(server_->port(), "GARBAGE\r\n\r\n");
  ExpectProblem(ParseOne(raw), 400);
}

TEST_F(BeastServerTest, AnswersAnOverlongHeaderWith431AndAProblem) {
  StartServer();
  std::string raw = Exchange(server_->port(), PostRides("k", "{}", "X-Big: " + std::string(20000, 'a') + "\r\n"));
  ExpectProblem(ParseOne(raw), 431);
  EXPECT_EQ(runner_.calls(), 0);
}

TEST_F(BeastServerTest, AnswersAnOversizedBodyWith413EvenWhileItIsBeingSent) {
  HttpHandlerOptions o;
  o.max_body_bytes = 1024;
  StartServer(o);
  std::string raw = Exchange(server_->port(), PostRides("k", std::string(200000, 'x')));
  ExpectProblem(ParseOne(raw), 413);
  EXPECT_EQ(runner_.calls(), 0);
}

TEST_F(BeastServerTest, AnswersAnOversizedBodyBeforeItIsSentWhenTheClientExpects100Continue) {
  HttpHandlerOptions o;
  o.max_body_bytes = 1024;
  StartServer(o);
  std::string request = PostRides("k", std::string(4096, 'x'), "Expect: 100-continue\r\n");
  request.resize(request.find("\r\n\r\n") + 4);  // headers only
  std::string raw = Exchange(server_->port(), request);
  ExpectProblem(ParseOne(raw), 413);
}

TEST_F(BeastServerTest, SendsContinueThenAnswersWhenTheBodyFits) {
  StartServer();
  std::string request = PostRides("k", R"({"a":1})", "Expect: 100-continue\r\nConnection: close\r\n");
  std::size_t split = request.find("\r\n\r\n") + 4;
  int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  SendAll(fd, request.substr(0, split));
  char buf[64];
  ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)), "HTTP/1.1 100 Continue\r\n\r\n");
  SendAll(fd, request.substr(split));
  std::string raw = ReadToEof(fd);
  ::close(fd);
  EXPECT_EQ(ParseOne(raw).status, 201) << raw;
}

TEST_F(BeastServerTest, Answers401WhenAuthenticationFails) {
  StartServer();
  std::string raw = Exchange(server_->port(),
                             "POST /rides HTTP/1.1\r\nHost: t\r\nIdempotency-Key: k\r\nContent-Length: 2\r\n"
                             "Connection: close\r\n\r\n{}");
  ParsedResponse res = ParseOne(raw);
  ExpectProblem(res, 401);
  ASSERT_NE(res.headers.Find("WWW-Authenticate"), nullptr);
  EXPECT_EQ(*res.headers.Find("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(runner_.calls(), 0);
}

TEST_F(BeastServerTest, ServesPlainRoutesWithoutAuthentication) {
  StartServer();
  std::string raw = Exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  ParsedResponse res = ParseOne(raw);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, "ok");
}

TEST_F(BeastServerTest, PassesHandlerProblemsThrough) {
  StartServer();
  std::string raw = Exchange(server_->port(),
                             "POST /rides HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer a\r\nContent-Length: 2\r\n"
                             "Connection: close\r\n\r\n{}");
  ParsedResponse res = ParseOne(raw);
  ExpectProblem(res, 400);
  EXPECT_EQ(*res.headers.Find("Link"), "<https://phasekey.dev/docs/idempotency>; rel=\"describedby\"");
}

TEST_F(BeastServerTest, DropsResponseHeadersThatWouldInjectFields) {
  HttpHandlerOptions unused;
  handler_ = std::make_unique<HttpHandler>(unused, runner_.AsExecute());
  HttpServerOptions options;
  options.port = 0;
  options.authenticate = [](const HttpRequest&) { return std::optional<std::string>("a"); };
  options.plain_routes = [](const HttpRequest&, const std::string*) {
    return std::optional<Response>(Response{200, {{"X-Evil", "a\r\nSet-Cookie: x=1"}}, "hi"});
  };
  HttpServer server(options, *handler_);
  ASSERT_TRUE(server.Start().ok());
  std::string raw = Exchange(server.port(), "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  ParsedResponse res = ParseOne(raw);
  EXPECT_EQ(res.status, 500) << raw;
  EXPECT_EQ(res.headers.Find("Set-Cookie"), nullptr);
}

TEST_F(BeastServerTest, AnswersACallbackExceptionWith500) {
  handler_ = std::make_unique<HttpHandler>(HttpHandlerOptions{}, runner_.AsExecute());
  HttpServerOptions options;
  options.port = 0;
  options.authenticate = [](const HttpRequest&) -> std::optional<std::string> { throw std::runtime_error("x"); };
  HttpServer server(options, *handler_);
  ASSERT_TRUE(server.Start().ok());
  std::string raw = Exchange(server.port(), "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  ExpectProblem(ParseOne(raw), 500);
}

TEST_F(BeastServerTest, RefusesToStartWithoutAuthenticateOrWithABadAddressOrTwice) {
  handler_ = std::make_unique<HttpHandler>(HttpHandlerOptions{}, runner_.AsExecute());
  HttpServerOptions options;
  options.port = 0;
  EXPECT_EQ(HttpServer(options, *handler_).Start().code(), StatusCode::kInvalidArgument);
  options.authenticate = [](const HttpRequest&) { return std::optional<std::string>("a"); };
  options.address = "not-an-address";
  EXPECT_EQ(HttpServer(options, *handler_).Start().code(), StatusCode::kInvalidArgument);
  options.address = "127.0.0.1";
  HttpServer server(options, *handler_);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_EQ(server.Start().code(), StatusCode::kFailedPrecondition);
}

TEST_F(BeastServerTest, StopsListeningAndToleratesASecondStop) {
  StartServer();
  std::uint16_t port = server_->port();
  server_->Stop();
  server_->Stop();
  EXPECT_LT(Connect(port), 0);
}

TEST_F(BeastServerTest, ClosesAConnectionWhoseHeaderIsNotInWithinHeaderTimeout) {
  HttpServerOptions options;
  options.header_timeout = 300ms;
  StartServer({}, options);
  int fd = SlowConnection(server_->port());
  ASSERT_GE(fd, 0);
  const auto start = std::chrono::steady_clock::now();
  // A byte every 100 ms does not keep it open (slowloris).
  for (char c : std::string("X-Slow: abcdef")) {
    if (!SendAll(fd, std::string(1, c))) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(ClosedWithin(fd, 2000ms));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 2000ms);
  ::close(fd);
  // A complete request is not affected.
  std::string raw = Exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ParseOne(raw).status, 200) << raw;
}

TEST_F(BeastServerTest, AtTheLimitANewConnectionTakesTheSlotOfTheOneWaitingLongest) {
  HttpServerOptions options;
  options.max_connections = 3;
  StartServer({}, options);
  std::vector<int> slow;
  for (int i = 0; i < 3; ++i) {
    slow.push_back(SlowConnection(server_->port()));
    ASSERT_GE(slow.back(), 0);
    std::this_thread::sleep_for(20ms);  // so they wait in this order
  }
  std::string raw = Exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ParseOne(raw).status, 200) << raw;
  EXPECT_TRUE(ClosedWithin(slow[0], 2000ms)) << "the oldest waiting connection made room";
  EXPECT_FALSE(ClosedWithin(slow[1], 200ms));
  EXPECT_FALSE(ClosedWithin(slow[2], 200ms));
  for (int fd : slow) ::close(fd);
}

TEST_F(BeastServerTest, LimitsConnectionsPerAddress) {
  HttpServerOptions options;
  options.max_connections = 100;
  options.max_connections_per_address = 2;
  StartServer({}, options);
  int a1 = SlowConnection(server_->port());
  std::this_thread::sleep_for(20ms);
  int a2 = SlowConnection(server_->port());
  ASSERT_GE(a1, 0);
  ASSERT_GE(a2, 0);
  // Another address is not limited by 127.0.0.1's connections.
  int b = Connect(server_->port(), "127.0.0.2");
  ASSERT_GE(b, 0) << "cannot connect from 127.0.0.2";
  SendAll(b, "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  std::string raw = ReadToEof(b);
  ::close(b);
  EXPECT_EQ(ParseOne(raw).status, 200) << raw;
  EXPECT_FALSE(ClosedWithin(a1, 200ms));
  EXPECT_FALSE(ClosedWithin(a2, 200ms));
  // A third from 127.0.0.1 takes the place of its oldest.
  raw = Exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ParseOne(raw).status, 200) << raw;
  EXPECT_TRUE(ClosedWithin(a1, 2000ms));
  EXPECT_FALSE(ClosedWithin(a2, 200ms));
  ::close(a1);
  ::close(a2);
}

TEST_F(BeastServerTest, RefusesANewConnectionWith503WhenEveryOneHasARequestRunning) {
  runner_.hold_until_concurrent = 100;  // held until Release()
  HttpServerOptions options;
  options.max_connections = 2;
  StartServer({}, options);
  std::vector<std::thread> busy;
  std::vector<int> statuses(2);
  for (int i = 0; i < 2; ++i) {
    busy.emplace_back([&, i] {
      std::string raw = Exchange(server_->port(), PostRides("busy-" + std::to_string(i), "{}"));
      statuses[static_cast<std::size_t>(i)] = ParseOne(raw).status;
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (runner_.max_inside() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(runner_.max_inside(), 2);
  std::string raw = Exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  ParsedResponse refused = ParseOne(raw);
  ExpectProblem(refused, 503);
  const std::string* retry_after = refused.headers.Find("Retry-After");
  ASSERT_NE(retry_after, nullptr) << raw;
  EXPECT_EQ(*retry_after, "1");
  EXPECT_NE(refused.body.find("retry-later"), std::string::npos) << refused.body;
  runner_.Release();
  for (std::thread& t : busy) t.join();
  EXPECT_EQ(statuses, (std::vector<int>{201, 201}));
  // Their slots are free again.
  raw = Exchange(server_->port(), "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(ParseOne(raw).status, 200) << raw;
}

}  // namespace
}  // namespace phasekey
