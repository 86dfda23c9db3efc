// HttpServer on Boost.Beast. The only file that includes Beast (it is slow
// to compile); see phasekey/tools/http_server.h for the contract.
#include "phasekey/tools/http_server.h"

#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <exception>
#include <iterator>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server/connection_limiter.h"

namespace phasekey {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// After a response that closes the connection, unread request bytes (an
// over-limit body) are read and discarded for at most this long: closing a
// socket with unread input sends a TCP RST, which can destroy the response
// before the client reads it.
constexpr std::chrono::milliseconds kLingerTime{2000};
// Pause before accepting again after an accept error (e.g. out of file
// descriptors), so the loop does not spin.
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};
// Retry-After of the 503 that refuses a connection past a limit: a slot is
// free again as soon as any request is answered.
constexpr int kRefusedRetryAfterSeconds = 1;
// max_connections = 0 takes half of RLIMIT_NOFILE, counting at most this.
constexpr rlim_t kMaxDescriptorsCounted = rlim_t{1} << 20;

bool IsTchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  std::string_view extra = "!#$%&'*+-.^_`|~";
  return extra.find(c) != std::string_view::npos;
}

// Whether a header field may be written as is: a token name, a value
// without CR, LF, NUL or other controls (HTAB allowed). Guards against
// header injection from stored responses and plain routes.
bool IsSafeField(std::string_view name, std::string_view value) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!IsTchar(c)) return false;
  }
  for (char c : value) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7F) return false;
  }
  return true;
}

// Framing headers are the server's to set.
bool IsFramingField(std::string_view name) {
  for (http::field f : {http::field::content_length, http::field::transfer_encoding, http::field::connection}) {
    if (beast::iequals(name, http::to_string(f))) return true;
  }
  return false;
}

bool IsParseError(const beast::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category();
}

HttpRequest ToHttpRequest(http::request<http::string_body>&& msg, std::string peer_address) {
  HttpRequest req;
  req.peer_address = std::move(peer_address);
  req.method = std::string(msg.method_string());
  req.target = std::string(msg.target());
  req.headers.Reserve(static_cast<std::size_t>(std::distance(msg.begin(), msg.end())));
  for (const auto& f : msg) req.headers.Add(std::string(f.name_string()), std::string(f.value()));
  req.body = std::move(msg.body());
  return req;
}

struct Shared {
  HttpServerOptions options;
  const HttpHandler* handler;  // null: plain routes only
  net::thread_pool* pool = nullptr;
  ConnectionLimiter* limiter = nullptr;

  // A problem answer, as the handler builds it (or with the handler
  // options' defaults when there is none).
  Response Problem(int status, std::string slug, std::string title, std::string detail) const {
    if (handler != nullptr) return handler->MakeProblem(status, std::move(slug), std::move(title), std::move(detail));
    return ProblemResponse({status, std::move(slug), std::move(title), std::move(detail)},
                           HttpHandlerOptions{}.docs_url);
  }
  std::size_t max_body_bytes() const {
    return handler != nullptr ? handler->max_body_bytes() : HttpHandlerOptions{}.max_body_bytes;
  }
  // A request no plain route took, from an authenticated account.
  Response Handle(const HttpRequest& req, const std::string& account) const {
    if (handler != nullptr) return handler->Handle(req, account);
    return Problem(404, "not-found", "Not found", "There is nothing at this path.");
  }
};

// HttpServerOptions::max_connections, with 0 resolved (see there).
std::size_t MaxConnections(const HttpServerOptions& o) {
  if (o.max_connections > 0) return o.max_connections;
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) != 0) files.rlim_cur = 1024;
  rlim_t counted =
      files.rlim_cur == RLIM_INFINITY ? kMaxDescriptorsCounted : std::min(files.rlim_cur, kMaxDescriptorsCounted);
  return std::max<std::size_t>(static_cast<std::size_t>(counted / 2), 1);
}

// The answer to a connection refused at a limit.
Response Refusal(const Shared& h) {
  Response res = h.Problem(503, "retry-later", "Too many connections",
                           "The server has as many connections open as it allows; retry shortly.");
  res.headers.Add("Retry-After", std::to_string(kRefusedRetryAfterSeconds));
  return res;
}

// One connection. Lives as long as an operation on it is pending (every
// completion handler holds a shared_ptr). All members are touched only on
// the connection's strand, except that a handler thread reads shared_.
//
// Its slot in the ConnectionLimiter (id_) is held from accept to
// destruction. While it waits for a request (or lingers) the limiter may
// close it to make room for a new connection (WaitInLimiter).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const Shared& shared, std::uint64_t id)
      : stream_(std::move(socket)), shared_(shared), id_(id) {}
  ~Session() { shared_.limiter->Release(id_); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void Run() { net::dispatch(stream_.get_executor(), beast::bind_front_handler(&Session::Read, shared_from_this())); }

 private:
  void Read() {
    if (!WaitInLimiter()) return Close();
    head_ = false;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(shared_.options.header_limit));
    parser_->body_limit(shared_.max_body_bytes());
    read_started_ = std::chrono::steady_clock::now();
    stream_.expires_after(std::min(shared_.options.header_timeout, shared_.options.read_timeout));
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  void OnHeader(beast::error_code ec, std::size_t) {
    if (ec) return OnReadError(ec);
    stream_.expires_at(read_started_ + shared_.options.read_timeout);  // the body's time
    const auto& msg = parser_->get();
    auto expect = msg.find(http::field::expect);
    if (expect != msg.end() && beast::iequals(expect->value(), "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                         if (ec) return self->Close();
                         self->ReadBody();
                       });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, std::size_t) {
    if (ec) return OnReadError(ec);
    if (!shared_.limiter->Busy(id_)) return Close();  // it made room for another
    http::request<http::string_body> msg = parser_->release();
    version_ = msg.version();
    head_ = msg.method() == http::verb::head;
    bool keep_alive = msg.keep_alive();
    stream_.expires_never();  // the handler may take long; writes re-arm it
    beast::error_code peer_ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(peer_ec);
    std::string peer_address = peer_ec ? "" : peer.address().to_string();
    net::post(*shared_.pool,
              [self = shared_from_this(), req = ToHttpRequest(std::move(msg), std::move(peer_address)), keep_alive] {
                Response res = self->Answer(req);
                net::post(self->stream_.get_executor(), [self, res = std::move(res), keep_alive]() mutable {
                  self->Write(std::move(res), keep_alive);
                });
              });
  }

  void OnReadError(const beast::error_code& ec) {
    if (ec == http::error::end_of_stream || !IsParseError(ec)) {
      return Close();  // the client left, reset, or timed out: nobody to answer
    }
    const Shared& h = shared_;
    if (ec == http::error::partial_message) {
      // The client ended its side mid-request (a body shorter than its
      // Content-Length, say) but may still be reading: tell it why.
      return Write(
          h.Problem(400, "malformed-request", "Malformed HTTP request", "The request ended before it was complete."),
          false);
    }
    if (ec == http::error::header_limit) {
      return Write(
          h.Problem(431, "headers-too-large", "Request header fields too large",
                    "The request line and headers exceed " + std::to_string(shared_.options.header_limit) + " bytes."),
          false);
    }
    if (ec == http::error::body_limit) {
      return Write(h.Problem(413, "body-too-large", "Request body is too large",
                             "The body exceeds " + std::to_string(h.max_body_bytes()) + " bytes."),
                   false);
    }
    Write(h.Problem(400, "malformed-request", "Malformed HTTP request",
                    "The request could not be parsed: " + ec.message() + "."),
          false);
  }

  // Runs on a handler thread.
  Response Answer(const HttpRequest& req) const {
    const Shared& h = shared_;
    try {
      std::optional<std::string> account = shared_.options.authenticate(req);
      if (shared_.options.plain_routes) {
        std::optional<Response> plain = shared_.options.plain_routes(req, account ? &*account : nullptr);
        if (plain) return std::move(*plain);
      }
      if (!account && h.handler != nullptr) {  // a server of plain routes only answers 404 (Handle)
        Response res = h.Problem(401, "unauthenticated", "Authentication required",
                                 "The request did not carry valid credentials.");
        res.headers.Add("WWW-Authenticate", shared_.options.www_authenticate);
        return res;
      }
      return h.Handle(req, account ? *account : std::string());
    } catch (const std::exception&) {
      return InternalError();
    }
  }

  Response InternalError() const {
    return shared_.Problem(500, "internal-error", "Internal server error",
                           "The server failed while answering the request.");
  }

  // Builds response_ from `res`; false if it cannot be represented.
  bool Build(Response& res, bool keep_alive) {
    if (res.status < 100 || res.status > 599) return false;
    try {
      response_ = {};
      response_.version(version_ == 10 ? 10 : 11);
      response_.result(static_cast<unsigned>(res.status));
      for (const auto& [name, value] : res.headers) {
        if (IsFramingField(name)) continue;
        if (!IsSafeField(name, value)) return false;
        response_.insert(name, value);
      }
      response_.keep_alive(keep_alive);
      if (head_) {
        response_.content_length(res.body.size());
      } else {
        response_.body() = std::move(res.body);
        response_.prepare_payload();
      }
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  void Write(Response res, bool keep_alive) {
    if (!Build(res, keep_alive)) {
      Response fallback = InternalError();
      Build(fallback, keep_alive);
    }
    stream_.expires_after(shared_.options.write_timeout);
    http::async_write(stream_, response_, beast::bind_front_handler(&Session::OnWrite, shared_from_this(), keep_alive));
  }

  void OnWrite(bool keep_alive, beast::error_code ec, std::size_t) {
    if (ec) return Close();
    if (keep_alive) return Read();
    Linger();
  }

  // Half-closes, then reads and discards whatever the client still sends
  // until it closes or kLingerTime passes.
  void Linger() {
    if (!WaitInLimiter()) return Close();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    Drain();
  }

  void Drain() {
    stream_.async_read_some(net::buffer(drain_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->Close();
      self->Drain();
    });
  }

  void Close() {
    if (!stream_.socket().is_open()) return;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  // Tells the limiter the session waits, so it may be closed to make room;
  // false when it already has been.
  bool WaitInLimiter() {
    return shared_.limiter->Waiting(id_, [weak = weak_from_this()] {
      if (std::shared_ptr<Session> self = weak.lock()) {
        net::post(self->stream_.get_executor(), [self] { self->Close(); });
      }
    });
  }

  beast::tcp_stream stream_;
  const Shared& shared_;
  const std::uint64_t id_;
  std::chrono::steady_clock::time_point read_started_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  unsigned version_ = 11;
  bool head_ = false;
  std::array<char, 4096> drain_{};
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, const HttpHandler* handler)
      : shared_{std::move(options), handler, nullptr, nullptr}, acceptor_(ioc_), retry_timer_(ioc_) {}

  ~Impl() { Stop(); }

  Status Start() {
    const HttpServerOptions& o = shared_.options;
    if (started_) return Status::FailedPrecondition("the server was already started");
    if (!o.authenticate) return Status::InvalidArgument("HttpServerOptions.authenticate is required");
    if (o.io_threads < 1 || o.handler_threads < 1) {
      return Status::InvalidArgument("io_threads and handler_threads must be at least 1");
    }
    beast::error_code ec;
    net::ip::address address = net::ip::make_address(o.address, ec);
    if (ec) return Status::InvalidArgument("bad listen address '" + o.address + "': " + ec.message());
    tcp::endpoint endpoint(address, o.port);
    if (Status s = Listen(endpoint); !s.ok()) return s;
    started_ = true;
    limiter_.emplace(MaxConnections(o), o.max_connections_per_address);
    shared_.limiter = &*limiter_;
    pool_.emplace(static_cast<std::size_t>(o.handler_threads));
    shared_.pool = &*pool_;
    Accept();
    for (int i = 0; i < o.io_threads; ++i) threads_.emplace_back([this] { ioc_.run(); });
    return Status::OK();
  }

  void Stop() {
    if (!started_ || stopped_) return;
    stopped_ = true;
    ioc_.stop();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    beast::error_code ignored;
    acceptor_.close(ignored);
    pool_->stop();
    pool_->join();
  }

  std::uint16_t port() const { return port_; }

 private:
  Status Listen(const tcp::endpoint& endpoint) {
    beast::error_code ec;
    std::string where = shared_.options.address + ":" + std::to_string(shared_.options.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (!ec) port_ = acceptor_.local_endpoint(ec).port();
    if (ec) {
      beast::error_code ignored;
      acceptor_.close(ignored);
      return Status::FailedPrecondition("cannot listen on " + where + ": " + ec.message());
    }
    return Status::OK();
  }

  void Accept() {
    acceptor_.async_accept(net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      if (ec) {
        retry_timer_.expires_after(kAcceptRetryDelay);
        retry_timer_.async_wait([this](beast::error_code wait_ec) {
          if (!wait_ec) Accept();
        });
        return;
      }
      beast::error_code peer_ec;
      const tcp::endpoint peer = socket.remote_endpoint(peer_ec);
      std::uint64_t id = shared_.limiter->Admit(peer_ec ? "" : peer.address().to_string());
      if (id == 0) {
        Refuse(socket);
      } else {
        std::make_shared<Session>(std::move(socket), shared_, id)->Run();
      }
      Accept();
    });
  }

  // Answers a connection past a limit with a 503 and closes it, without
  // blocking the accept loop: whatever request bytes have already arrived
  // are discarded first (closing on unread input would send a reset that
  // may destroy the answer), and an answer that does not fit the socket's
  // buffer at once is not sent.
  void Refuse(tcp::socket& socket) {
    beast::error_code ec;
    socket.non_blocking(true, ec);
    std::array<char, 4096> discard{};
    for (int i = 0; i < 4 && !ec; ++i) socket.read_some(net::buffer(discard), ec);
    http::response<http::string_body> res;
    Response refusal = Refusal(shared_);
    res.result(static_cast<unsigned>(refusal.status));
    for (const auto& [name, value] : refusal.headers) res.insert(name, value);
    res.body() = std::move(refusal.body);
    res.keep_alive(false);
    res.prepare_payload();
    ec = {};
    http::write(socket, res, ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
  }

  Shared shared_;
  std::optional<ConnectionLimiter> limiter_;  // before ioc_: sessions release into it
  net::io_context ioc_;
  tcp::acceptor acceptor_;
  net::steady_timer retry_timer_;
  std::optional<net::thread_pool> pool_;
  std::vector<std::thread> threads_;
  std::uint16_t port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

HttpServer::HttpServer(HttpServerOptions options, const HttpHandler& handler)
    : impl_(std::make_unique<Impl>(std::move(options), &handler)) {}

HttpServer::HttpServer(HttpServerOptions options) : impl_(std::make_unique<Impl>(std::move(options), nullptr)) {}

HttpServer::~HttpServer() = default;

Status HttpServer::Start() { return impl_->Start(); }

void HttpServer::Stop() { impl_->Stop(); }

std::uint16_t HttpServer::port() const { return impl_->port(); }

}  // namespace phasekey
