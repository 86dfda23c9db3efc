// HttpExchanger (http_exchange.h) on Boost.Beast. The only file of phasekey
// that includes Beast's client side and Asio's SSL (they compile slowly).
//
// One exchange = one deadline, then one io_context on the calling thread,
// one connection, one request, one answer. Name resolution comes first, on
// a thread of its own that the exchange stops waiting for at the deadline
// (ResolveBefore). A steady_timer bounds the rest: when it fires it closes
// the socket, and the pending operation fails. The stage reached and the
// request bytes the socket accepted tell the caller how far the request got.
#include "net/http_exchange.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

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
#include <future>
#include <stdexcept>
#include <thread>
#include <type_traits>

namespace phasekey::net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using ErrorCode = boost::system::error_code;
using Deadline = std::chrono::steady_clock::time_point;
using BeastRequest = http::request<http::string_body>;

// Thrown by ResolveBefore when the deadline passes first.
struct ResolveTimedOut : std::runtime_error {
  ResolveTimedOut() : std::runtime_error("timed out") {}
};

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

BeastRequest ToBeast(const HttpPeer& peer, const HttpRequest& r, const std::string& user_agent) {
  BeastRequest req;
  req.method_string(r.method);
  req.target(r.target);
  req.version(11);
  req.set(http::field::host, peer.host_header.empty() ? DefaultHostHeader(peer) : peer.host_header);
  if (!user_agent.empty() && !HasHeader(r.headers, "User-Agent")) req.set(http::field::user_agent, user_agent);
  for (const auto& [name, value] : r.headers) req.insert(name, value);
  req.set(http::field::connection, "close");
  req.body() = r.body;
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    req.content_length(r.body.size());
  }
  return req;
}

// The system's resolver: getaddrinfo through Asio's blocking resolve.
std::vector<std::string> SystemResolve(const std::string& host, const std::string& port) {
  asio::io_context io;
  tcp::resolver resolver(io);
  std::vector<std::string> addresses;
  for (const auto& entry : resolver.resolve(host, port)) addresses.push_back(entry.endpoint().address().to_string());
  return addresses;
}

// Runs `resolve` on a detached thread and waits for it until `deadline`.
// Returns its addresses; throws what it threw, or ResolveTimedOut when the
// deadline passes first. Asio's asynchronous resolve would not do:
// cancelling it does not interrupt getaddrinfo, and the io_context waits for
// (and its destructor joins) the thread still blocked in it. The thread owns
// copies of everything it touches, so it may outlive the exchange.
std::vector<std::string> ResolveBefore(const NameResolver& resolve, const std::string& host, const std::string& port,
                                       Deadline deadline) {
  auto result = std::make_shared<std::promise<std::vector<std::string>>>();
  std::future<std::vector<std::string>> answer = result->get_future();
  std::thread([resolve, host, port, result] {
    try {
      result->set_value(resolve(host, port));
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  }).detach();
  if (answer.wait_until(deadline) != std::future_status::ready) throw ResolveTimedOut();
  return answer.get();
}

// The endpoints to connect to: the host itself when it is an IP literal (no
// resolution), else what `resolve` answers before `deadline`. Empty, with
// the reason in `result`, when there is none.
std::vector<tcp::endpoint> Endpoints(const NameResolver& resolve, const HttpPeer& peer, Deadline deadline,
                                     HttpResult& result) {
  ErrorCode ec;
  const auto literal = asio::ip::make_address(peer.host, ec);
  if (!ec) return {tcp::endpoint(literal, peer.port)};
  std::vector<tcp::endpoint> endpoints;
  try {
    for (const std::string& address : ResolveBefore(resolve, peer.host, std::to_string(peer.port), deadline)) {
      endpoints.emplace_back(asio::ip::make_address(address), peer.port);  // throws on a bad one
    }
    if (endpoints.empty()) result.error = "no address";
  } catch (const ResolveTimedOut& e) {
    result.timed_out = true;
    result.error = e.what();
  } catch (const std::exception& e) {
    endpoints.clear();
    result.error = e.what();
  }
  return endpoints;
}

// The state of one exchange, shared by its coroutine and its deadline.
struct Call {
  HttpResult result;
  std::exception_ptr on_sent_threw;  // rethrown once the connection is closed

  void Fail(const ErrorCode& ec) { result.error = result.timed_out ? "timed out" : ec.message(); }
};

// What OpenSSL says about a failed handshake: the verification result when
// the certificate was refused, else the error.
std::string TlsWhy(SSL* ssl, const ErrorCode& ec) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) return X509_verify_cert_error_string(verify);
  return ec.message();
}

// Runs the exchange on `stream` (beast::tcp_stream or an ssl::stream of one).
template <class Stream>
asio::awaitable<void> Talk(Stream& stream, const std::vector<tcp::endpoint>& endpoints, BeastRequest& req,
                           std::size_t limit, const std::function<void()>& on_sent, Call& call) {
  HttpResult& result = call.result;
  ErrorCode ec;
  auto token = asio::redirect_error(asio::use_awaitable, ec);
  result.stage = HttpStage::kConnect;
  co_await beast::get_lowest_layer(stream).async_connect(endpoints, token);
  if (ec) co_return call.Fail(ec);
  if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
    result.stage = HttpStage::kHandshake;
    co_await stream.async_handshake(ssl::stream_base::client, token);
    if (ec) {
      call.Fail(ec);
      if (!result.timed_out) result.error = TlsWhy(stream.native_handle(), ec);
      co_return;
    }
  }
  result.stage = HttpStage::kWrite;
  http::serializer<true, http::string_body> serializer(req);
  while (!serializer.is_done()) {
    result.bytes_written += co_await http::async_write_some(stream, serializer, token);
    if (ec) co_return call.Fail(ec);
  }
  if (on_sent) {
    try {
      on_sent();
    } catch (...) {
      call.on_sent_threw = std::current_exception();
      co_return;
    }
  }
  result.stage = HttpStage::kRead;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(limit);
  co_await http::async_read(stream, buffer, parser, token);
  if (ec) co_return call.Fail(ec);
  result.stage = HttpStage::kDone;
  auto& res = parser.get();
  result.status = static_cast<int>(res.result_int());
  for (const auto& field : res)
    result.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  result.body = std::move(res.body());
}

// Runs Talk on `io` under the deadline, then closes the connection.
template <class Stream>
HttpResult Run(asio::io_context& io, Stream& stream, const std::vector<tcp::endpoint>& endpoints, BeastRequest& req,
               std::size_t limit, Deadline deadline_at, const std::function<void()>& on_sent) {
  Call call;
  asio::steady_timer deadline(io, deadline_at);
  deadline.async_wait([&](const ErrorCode& ec) {
    if (ec || call.result.stage == HttpStage::kDone) return;  // cancelled: the exchange finished first
    call.result.timed_out = true;
    ErrorCode ignored;
    beast::get_lowest_layer(stream).socket().close(ignored);
  });
  asio::co_spawn(io, Talk(stream, endpoints, req, limit, on_sent, call), [&](std::exception_ptr e) {
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
  io.run();
  ErrorCode ignored;
  beast::get_lowest_layer(stream).socket().close(ignored);
  if (call.on_sent_threw) std::rethrow_exception(call.on_sent_threw);
  return std::move(call.result);
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

  HttpExchangerOptions options;
  // Configured once in the constructor, then only read: an SSL_CTX is safe
  // to share between threads once set up. Streams take it by non-const
  // reference, hence mutable.
  mutable ssl::context tls;
  std::string trust_error;
};

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

HttpResult HttpExchanger::Exchange(const HttpPeer& peer, const HttpRequest& request, Deadline deadline,
                                   const std::function<void()>& on_sent) const {
  const HttpExchangerOptions& o = impl_->options;
  HttpResult result;
  const std::vector<tcp::endpoint> endpoints = Endpoints(o.resolver, peer, deadline, result);
  if (endpoints.empty()) return result;
  BeastRequest req = ToBeast(peer, request, o.user_agent);
  asio::io_context io(1);
  if (!peer.tls) {
    beast::tcp_stream stream(io);
    return Run(io, stream, endpoints, req, o.max_answer_bytes, deadline, on_sent);
  }
  result.stage = HttpStage::kHandshake;
  if (!impl_->trust_error.empty()) {
    result.error = impl_->trust_error;
    return result;
  }
  ssl::stream<beast::tcp_stream> stream(io, impl_->tls);
  if (!CheckPeerName(stream.native_handle(), peer.host)) {
    result.error = "cannot check the server's name " + peer.host;
    return result;
  }
  return Run(io, stream, endpoints, req, o.max_answer_bytes, deadline, on_sent);
}

}  // namespace phasekey::net
