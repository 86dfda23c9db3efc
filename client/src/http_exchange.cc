// HttpExchange (http_exchange.h) on Beast. Each exchange has its own
// io_context, run on the calling thread op by op, so the timeout is one
// deadline over the whole exchange (tcp_stream's expiry) and exchanges on
// different threads share nothing.
#include "http_exchange.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace phasekey::client::internal {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;
using Transport = AttemptResult::Transport;

// Large enough for any API answer the client is meant for.
constexpr std::uint64_t kMaxBodyBytes = 64ull << 20;

Exchange Failed(Transport transport, const std::string& what, const beast::error_code& ec) {
  Exchange e;
  e.transport = transport;
  e.error = what + ": " + ec.message();
  return e;
}

}  // namespace

Exchange HttpExchange(const HttpUrl& url, const Request& request, const std::string& key,
                      std::chrono::milliseconds timeout, const std::function<void()>& on_sent) {
  boost::asio::io_context ioc;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  beast::error_code ec;
  // Runs the one pending operation to its end.
  auto run = [&ioc] {
    ioc.restart();
    ioc.run();
  };

  tcp::resolver resolver(ioc);
  tcp::resolver::results_type endpoints;
  resolver.async_resolve(url.host, url.port, [&](beast::error_code e, tcp::resolver::results_type r) {
    ec = e;
    endpoints = std::move(r);
  });
  run();
  if (ec) return Failed(Transport::kConnectFailed, "resolving " + url.host, ec);

  beast::tcp_stream stream(ioc);
  stream.expires_at(deadline);
  stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
  run();
  // A connect that failed or timed out sent nothing.
  if (ec) return Failed(Transport::kConnectFailed, "connecting to " + url.host_header, ec);

  http::request<http::string_body> req;
  const http::verb verb = http::string_to_verb(request.method);
  if (verb == http::verb::unknown) {
    req.method_string(request.method);
  } else {
    req.method(verb);
  }
  req.target(url.target);
  req.version(11);
  req.set(http::field::host, url.host_header);
  for (const auto& [name, value] : request.headers) req.insert(name, value);
  if (!key.empty()) req.set("Idempotency-Key", key);
  req.set(http::field::connection, "close");
  req.body() = request.body;
  req.prepare_payload();

  stream.expires_at(deadline);
  http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
  run();
  if (ec == beast::error::timeout) return Failed(Transport::kTimedOut, "sending the request", ec);
  if (ec) return Failed(Transport::kBroken, "sending the request", ec);
  if (on_sent) on_sent();

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBodyBytes);
  stream.expires_at(deadline);
  http::async_read(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
  run();
  if (ec == beast::error::timeout) return Failed(Transport::kTimedOut, "waiting for the answer", ec);
  if (ec) return Failed(Transport::kBroken, "reading the answer", ec);

  Exchange out;
  const auto& res = parser.get();
  out.status = static_cast<int>(res.result_int());
  for (const auto& field : res.base()) out.headers.emplace_back(field.name_string(), field.value());
  out.body = res.body();
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return out;
}

}  // namespace phasekey::client::internal
