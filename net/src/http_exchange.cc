// HttpExchanger (http_exchange.h) on Boost.Beast. The only file of phasekey
// that includes Beast's client side and Asio's SSL (they compile slowly).
//
// One exchange = one deadline; name resolution (endpoints.h) when a new
// connection is needed; then, on the calling thread, the I/O context of the
// connection used (a pooled one, or a new one): one request, one answer. A
// steady_timer bounds each run: when it fires it closes the socket, and the
// pending operation fails. The stage reached and the request bytes the
// socket accepted tell the caller how far the request got. Afterwards the
// connection goes back to the pool or is closed (http_exchange.h says when).
#include "net/http_exchange.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "net/endpoints.h"

namespace phasekey::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;
using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
using BeastRequest = http::request<http::string_body>;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool HasHeader(const std::vector<Header>& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return true;
  }
  return false;
}

std::string DefaultHostHeader(const HttpPeer& peer) {
  const bool ipv6 = peer.host.find(':') != std::string::npos;
  const std::string host = ipv6 ? "[" + peer.host + "]" : peer.host;
  const bool default_port = peer.port == (peer.tls ? 443 : 80);
  return default_port ? host : host + ":" + std::to_string(peer.port);
}

BeastRequest ToBeast(const HttpPeer& peer, const HttpRequest& r, const std::string& user_agent, bool keep_alive) {
  BeastRequest req;
  req.method_string(r.method);
  req.target(r.target);
  req.version(11);
  req.set(http::field::host, peer.host_header.empty() ? DefaultHostHeader(peer) : peer.host_header);
  if (!user_agent.empty() && !HasHeader(r.headers, "User-Agent")) req.set(http::field::user_agent, user_agent);
  for (const auto& [name, value] : r.headers) req.insert(name, value);
  req.erase(http::field::connection);
  if (!keep_alive) req.set(http::field::connection, "close");
  req.body() = r.body;
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    req.content_length(r.body.size());
  }
  return req;
}

// One connection: its socket (under TLS over https) and the I/O context its
// operations run on. An exchange runs `io` on its own thread; in the pool
// nothing runs, so any thread may take it next (HttpExchanger's contract).
struct Connection {
  explicit Connection(ssl::context* tls) : io(1) {
    if (tls != nullptr) {
      secure.emplace(io, *tls);
    } else {
      plain.emplace(io);
    }
  }

  beast::tcp_stream& tcp() { return secure ? secure->next_layer() : *plain; }

  asio::io_context io;
  std::optional<beast::tcp_stream> plain;                // http
  std::optional<ssl::stream<beast::tcp_stream>> secure;  // https
  Clock::time_point idle_since;
};

// The state of one send, shared by its coroutine and its deadline.
struct Call {
  HttpResult result;
  bool answer_bytes = false;         // some byte of an answer arrived
  bool reusable = false;             // the connection may go back to the pool
  std::exception_ptr on_sent_threw;  // rethrown by Exchange; the connection is closed, not pooled

  void Fail(const ErrorCode& ec) { result.error = result.timed_out ? "timed out" : ec.message(); }
};

// What OpenSSL says about a failed handshake: the verification result when
// the certificate was refused, else the error.
std::string TlsWhy(SSL* ssl, const ErrorCode& ec) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) return X509_verify_cert_error_string(verify);
  return ec.message();
}

// Connects `c` to one of `endpoints` and, over https, shakes hands.
asio::awaitable<void> Open(Connection& c, const std::vector<tcp::endpoint>& endpoints, Call& call) {
  HttpResult& result = call.result;
  ErrorCode ec;
  auto token = asio::redirect_error(asio::use_awaitable, ec);
  result.stage = HttpStage::kConnect;
  co_await c.tcp().async_connect(endpoints, token);
  if (ec) co_return call.Fail(ec);
  if (c.secure) {
    result.stage = HttpStage::kHandshake;
    co_await c.secure->async_handshake(ssl::stream_base::client, token);
    if (ec) {
      call.Fail(ec);
      if (!result.timed_out) result.error = TlsWhy(c.secure->native_handle(), ec);
      co_return;
    }
  }
  result.stage = HttpStage::kWrite;
}

// Whether the answer leaves the connection fit for another request: HTTP/1.1
// keep-alive, a length of its own (not "until the end of the stream") and
// nothing after it.
bool KeepsConnection(const http::response<http::string_body>& res, const beast::flat_buffer& rest) {
  return res.version() == 11 && res.keep_alive() && !res.need_eof() && rest.size() == 0;
}

// Writes the request on `stream`, calls on_sent, reads the answer.
template <class Stream>
asio::awaitable<void> Send(Stream& stream, BeastRequest& req, std::size_t limit, const std::function<void()>& on_sent,
                           Call& call) {
  HttpResult& result = call.result;
  ErrorCode ec;
  auto token = asio::redirect_error(asio::use_awaitable, ec);
  result.stage = HttpStage::kWrite;
  http::serializer<true, http::string_body> serializer(req);
  while (!serializer.is_done()) {
    result.bytes_written += co_await http::async_write_some(stream, serializer, token);
    if (ec) co_return call.Fail(ec);
  }
  try {
    on_sent();
  } catch (...) {
    call.on_sent_threw = std::current_exception();
    co_return;
  }
  result.stage = HttpStage::kRead;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(limit);
  co_await http::async_read(stream, buffer, parser, token);
  call.answer_bytes = parser.got_some() || buffer.size() > 0;
  if (ec) co_return call.Fail(ec);
  result.stage = HttpStage::kDone;
  auto& res = parser.get();
  call.reusable = KeepsConnection(res, buffer);
  result.status = static_cast<int>(res.result_int());
  for (const auto& field : res)
    result.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  result.body = std::move(res.body());
}

// Runs `task` on c.io under the deadline, on the calling thread. A deadline
// that fires closes the socket: the pending operation fails, and the
// connection is done for.
void RunOn(Connection& c, Deadline deadline_at, Call& call, asio::awaitable<void> task) {
  asio::steady_timer deadline(c.io, deadline_at);
  deadline.async_wait([&](const ErrorCode& ec) {
    if (ec || call.result.stage == HttpStage::kDone) return;  // cancelled: the exchange finished first
    call.result.timed_out = true;
    ErrorCode ignored;
    c.tcp().socket().close(ignored);
  });
  asio::co_spawn(c.io, std::move(task), [&](std::exception_ptr e) {
    if (e && call.result.stage != HttpStage::kDone) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& what) {
        call.result.error = what.what();
      } catch (...) {
        call.result.error = "unknown exception";
      }
    }
    deadline.cancel();
  });
  c.io.restart();
  c.io.run();
  if (call.result.timed_out) call.reusable = false;
}

// Whether an idle connection's socket is still quiet: nothing to read and no
// hang-up. A server that closed it (or wrote unasked) makes it readable.
bool Quiet(Connection& c) {
  pollfd p{c.tcp().socket().native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

// Makes `ssl` check that the certificate names `host` (OpenSSL's own checks:
// a DNS name with no partial wildcards, or an IP address); DNS names also go
// in SNI (RFC 6066 allows no IP literal there). False when OpenSSL refuses.
bool CheckPeerName(SSL* ssl, const std::string& host) {
  ErrorCode not_ip;
  asio::ip::make_address(host, not_ip);
  if (!not_ip) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1;
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 && SSL_set1_host(ssl, host.c_str()) == 1;
}

}  // namespace

std::string_view StageName(HttpStage stage) {
  switch (stage) {
    case HttpStage::kResolve: return "resolve";
    case HttpStage::kConnect: return "connect";
    case HttpStage::kHandshake: return "TLS handshake";
    case HttpStage::kWrite: return "write";
    case HttpStage::kRead: return "read";
    case HttpStage::kDone: return "done";
  }
  return "?";
}

struct HttpExchanger::Impl {
  explicit Impl(HttpExchangerOptions o) : options(std::move(o)), tls(ssl::context::tls_client) {}
  ~Impl() {
    for (auto& [peer, session] : sessions) SSL_SESSION_free(session);
  }

  std::unique_ptr<Connection> Take(const std::string& peer);
  void Return(const std::string& peer, std::unique_ptr<Connection> c);
  std::unique_ptr<Connection> OpenNew(const HttpPeer& peer, const std::string& key, Deadline deadline, Call& call);
  void KeepSession(const std::string& peer, SSL* ssl);
  void SendOn(Connection& c, BeastRequest& req, Deadline deadline, const std::function<void()>& on_sent, Call& call);

  HttpExchangerOptions options;
  // Configured once in the constructor, then only read: an SSL_CTX is safe
  // to share between threads once set up. Streams take it by non-const
  // reference, hence mutable.
  mutable ssl::context tls;
  std::string trust_error;

  std::mutex mu;
  // Idle connections per peer ("https://host:port"), the most recently
  // returned last.
  std::map<std::string, std::vector<std::unique_ptr<Connection>>> idle;  // GUARDED_BY(mu)
  std::map<std::string, SSL_SESSION*> sessions;  // GUARDED_BY(mu); the last resumable one per peer
  std::atomic<std::uint64_t> opened{0}, reused{0}, tls_resumed{0}, resent{0};
};

// The most recently returned idle connection to `peer` that is neither
// expired nor readable; those found on the way are closed (outside the lock).
std::unique_ptr<Connection> HttpExchanger::Impl::Take(const std::string& peer) {
  std::vector<std::unique_ptr<Connection>> stale;
  std::unique_ptr<Connection> found;
  {
    std::lock_guard lock(mu);
    auto it = idle.find(peer);
    if (it == idle.end()) return nullptr;
    auto& list = it->second;
    const Clock::time_point now = Clock::now();
    while (!list.empty() && !found) {
      std::unique_ptr<Connection> c = std::move(list.back());
      list.pop_back();
      if (now - c->idle_since < options.idle_timeout && Quiet(*c)) {
        found = std::move(c);
      } else {
        stale.push_back(std::move(c));
      }
    }
  }
  return found;
}

void HttpExchanger::Impl::Return(const std::string& peer, std::unique_ptr<Connection> c) {
  c->idle_since = Clock::now();
  std::unique_ptr<Connection> oldest;
  std::lock_guard lock(mu);
  auto& list = idle[peer];
  list.push_back(std::move(c));
  if (list.size() > options.max_idle_per_peer) {
    oldest = std::move(list.front());
    list.erase(list.begin());
  }
}

// Keeps a copy of the session of `ssl` for the next new connection to
// `peer`, when the server made it resumable (TLS 1.3 sends its tickets after
// the handshake: by the end of an exchange they have been read). A copy,
// because OpenSSL marks a connection's own session not resumable when that
// connection is freed without a close_notify, as a pooled one the server
// closed is.
void HttpExchanger::Impl::KeepSession(const std::string& peer, SSL* ssl) {
  SSL_SESSION* own = SSL_get_session(ssl);
  if (own == nullptr || SSL_SESSION_is_resumable(own) != 1) return;
  SSL_SESSION* session = SSL_SESSION_dup(own);
  if (session == nullptr) return;
  std::lock_guard lock(mu);
  SSL_SESSION*& kept = sessions[peer];
  if (kept != nullptr) SSL_SESSION_free(kept);
  kept = session;
}

// A new connection to `peer`, connected and (over https) verified; nullptr
// with the failure in `call` when it could not be.
std::unique_ptr<Connection> HttpExchanger::Impl::OpenNew(const HttpPeer& peer, const std::string& key,
                                                         Deadline deadline, Call& call) {
  const std::vector<tcp::endpoint> endpoints = Endpoints(options.resolver, peer, deadline, call.result);
  if (endpoints.empty()) return nullptr;
  if (peer.tls && !trust_error.empty()) {
    call.result.stage = HttpStage::kHandshake;
    call.result.error = trust_error;
    return nullptr;
  }
  auto c = std::make_unique<Connection>(peer.tls ? &tls : nullptr);
  if (c->secure) {
    SSL* ssl = c->secure->native_handle();
    if (!CheckPeerName(ssl, peer.host)) {
      call.result.stage = HttpStage::kHandshake;
      call.result.error = "cannot check the server's name " + peer.host;
      return nullptr;
    }
    std::lock_guard lock(mu);
    if (auto it = sessions.find(key); it != sessions.end()) SSL_set_session(ssl, it->second);
  }
  RunOn(*c, deadline, call, Open(*c, endpoints, call));
  if (call.result.stage != HttpStage::kWrite) return nullptr;
  if (call.result.timed_out) {  // the deadline came just as the handshake ended
    call.result.error = "timed out";
    return nullptr;
  }
  ++opened;
  if (c->secure && SSL_session_reused(c->secure->native_handle()) == 1) ++tls_resumed;
  return c;
}

void HttpExchanger::Impl::SendOn(Connection& c, BeastRequest& req, Deadline deadline,
                                 const std::function<void()>& on_sent, Call& call) {
  const std::size_t limit = options.max_answer_bytes;
  if (c.secure) return RunOn(c, deadline, call, Send(*c.secure, req, limit, on_sent, call));
  RunOn(c, deadline, call, Send(*c.plain, req, limit, on_sent, call));
}

HttpExchanger::HttpExchanger(HttpExchangerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  HttpExchangerOptions& o = impl_->options;
  if (!o.resolver) o.resolver = SystemResolve;
  impl_->tls.set_verify_mode(ssl::verify_peer);
  ErrorCode ec;
  if (o.system_trust_store) {
    impl_->tls.set_default_verify_paths(ec);
    if (ec) impl_->trust_error = "cannot load the system's trust store: " + ec.message();
  }
  if (!o.ca_file.empty() && !ec) {
    impl_->tls.load_verify_file(o.ca_file, ec);
    if (ec) impl_->trust_error = "cannot load the CA file " + o.ca_file + ": " + ec.message();
  }
}

HttpExchanger::~HttpExchanger() = default;

const std::string& HttpExchanger::trust_error() const { return impl_->trust_error; }

HttpExchangerStats HttpExchanger::stats() const {
  return HttpExchangerStats{impl_->opened.load(), impl_->reused.load(), impl_->tls_resumed.load(),
                            impl_->resent.load()};
}

namespace {

// Whether a send on a pooled connection failed the way a connection the
// server closed while idle fails: at the write, or at the read with no byte
// of an answer, and not by the deadline.
bool FailedAsStale(const Call& call) {
  const HttpResult& r = call.result;
  if (r.answered() || r.timed_out || call.on_sent_threw) return false;
  return r.stage == HttpStage::kWrite || (r.stage == HttpStage::kRead && !call.answer_bytes);
}

// The result of a resend after `first` failed on a stale connection (see
// HttpResult).
HttpResult AfterResend(HttpResult first, HttpResult resend) {
  if (resend.bytes_written == 0) {
    first.error += "; sent again on a new connection: " + std::string(StageName(resend.stage)) + ": " + resend.error;
    first.timed_out = resend.timed_out;
    return first;
  }
  resend.bytes_written += first.bytes_written;
  return resend;
}

std::string PoolKey(const HttpPeer& peer) {
  return (peer.tls ? "https://" : "http://") + peer.host + ":" + std::to_string(peer.port);
}

}  // namespace

HttpResult HttpExchanger::Exchange(const HttpPeer& peer, const HttpRequest& request, Deadline deadline,
                                   const std::function<void()>& on_sent) const {
  Impl& impl = *impl_;
  const bool pool = impl.options.keep_alive;
  BeastRequest req = ToBeast(peer, request, impl.options.user_agent, pool);
  const std::string key = PoolKey(peer);
  bool sent = false;
  const std::function<void()> once = [&] {
    if (sent) return;
    sent = true;
    if (on_sent) on_sent();
  };
  std::optional<HttpResult> first;
  if (std::unique_ptr<Connection> c = pool ? impl.Take(key) : nullptr) {
    ++impl.reused;
    Call call;
    call.result.stage = HttpStage::kWrite;
    impl.SendOn(*c, req, deadline, once, call);
    if (call.on_sent_threw) std::rethrow_exception(call.on_sent_threw);
    if (call.reusable) impl.Return(key, std::move(c));
    // The stale connection rule (HttpRequest::retry_on_stale_connection):
    // the server may have read the request before closing, so it is sent
    // again only when the caller said a repeat is answered as the first.
    if (!FailedAsStale(call) || !request.retry_on_stale_connection) return std::move(call.result);
    ++impl.resent;
    first = std::move(call.result);
  }
  Call call;
  std::unique_ptr<Connection> c = impl.OpenNew(peer, key, deadline, call);
  if (c) {
    impl.SendOn(*c, req, deadline, once, call);
    if (call.on_sent_threw) std::rethrow_exception(call.on_sent_threw);
    if (c->secure && call.result.answered()) impl.KeepSession(key, c->secure->native_handle());
    if (pool && call.reusable) impl.Return(key, std::move(c));
  }
  if (first) return AfterResend(std::move(*first), std::move(call.result));
  return std::move(call.result);
}

}  // namespace phasekey::net
