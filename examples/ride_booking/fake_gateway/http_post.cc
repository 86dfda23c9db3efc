// The webhook sender's POST, on Boost.Beast (synchronous, one connection per
// request). Beast is confined to this file and server.cc.
#include "fake_gateway/http_post.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

namespace fake_gateway {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

// The answer's body is not needed (only its status), but is read to keep the
// exchange whole; a receiver's answer is small.
constexpr std::uint64_t kMaxAnswerBytes = 1024 * 1024;

}  // namespace

bool ParseHttpUrl(const std::string& url, HttpUrl* out) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed || parsed->scheme_id() != boost::urls::scheme::http) return false;
  const boost::urls::url_view& u = *parsed;
  // Boost.URL takes "host:12ab" as port 12 and the path "ab"; a real path
  // starts with '/'.
  if (!u.encoded_path().empty() && !u.encoded_path().starts_with('/')) return false;
  out->host = std::string(u.encoded_host_address());
  out->port = u.has_port() ? std::string(u.port()) : "80";
  out->path = u.encoded_target().empty() ? "/" : std::string(u.encoded_target());
  return !out->host.empty() && !out->port.empty();
}

PostResult HttpPost(const HttpUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                    const std::string& body, std::chrono::milliseconds timeout) {
  http::request<http::string_body> req(http::verb::post, url.path, 11);
  req.set(http::field::host, url.host + ":" + url.port);
  req.set(http::field::connection, "close");
  for (const auto& [name, value] : headers) req.set(name, value);
  req.body() = body;
  req.prepare_payload();

  // Asynchronous operations on one io_context, each run to completion in
  // turn: only they honour the stream's expiry, which bounds the exchange.
  asio::io_context io;
  beast::tcp_stream stream(io);
  asio::ip::tcp::resolver resolver(io);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  PostResult result;
  auto fail = [&result](const char* step, const beast::error_code& ec) {
    result.error = std::string(step) + ": " + ec.message();
  };
  resolver.async_resolve(url.host, url.port, [&](beast::error_code ec, asio::ip::tcp::resolver::results_type hosts) {
    if (ec) return fail("resolve", ec);
    stream.expires_after(timeout);
    stream.async_connect(hosts, [&](beast::error_code ec, const asio::ip::tcp::endpoint&) {
      if (ec) return fail("connect", ec);
      http::async_write(stream, req, [&](beast::error_code ec, std::size_t) {
        if (ec) return fail("write", ec);
        http::async_read(stream, buffer, parser, [&](beast::error_code ec, std::size_t) {
          if (ec) return fail("read", ec);
          result.status = static_cast<int>(parser.get().result_int());
        });
      });
    });
  });
  io.run();
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  return result;
}

}  // namespace fake_gateway
