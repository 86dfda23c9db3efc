// HttpExchange (http_exchange.h) on Beast. Each exchange has its own
// io_context, run on the calling thread op by op, so the timeout is one
// deadline over the whole exchange (tcp_stream's expiry) and exchanges on
// different threads share nothing. HTTPS: the same over Beast's
// ssl_stream, after a handshake that verifies the certificate chain and the
// host name (OpenSSL's own checks: SSL_set1_host, or the IP address).
#include "http_exchange.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace phasekey::client::internal {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = boost::asio::ssl;
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

// The request written and the answer read over a connected (and, for
// TLS, verified) stream.
template <class Stream>
Exchange Talk(Stream& stream, boost::asio::io_context& ioc, std::chrono::steady_clock::time_point deadline,
              const HttpUrl& url, const Request& request, const std::string& key,
              const std::function<void()>& on_sent) {
  beast::error_code ec;
  auto run = [&ioc] {
    ioc.restart();
    ioc.run();
  };
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

  beast::get_lowest_layer(stream).expires_at(deadline);
  http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
  run();
  if (ec == beast::error::timeout) return Failed(Transport::kTimedOut, "sending the request", ec);
  if (ec) return Failed(Transport::kBroken, "sending the request", ec);
  if (on_sent) on_sent();

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxBodyBytes);
  beast::get_lowest_layer(stream).expires_at(deadline);
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
  beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
  return out;
}

// What OpenSSL says about the last failure: the verification result when
// the certificate was refused, else its error queue.
std::string TlsWhy(SSL* ssl, const beast::error_code& ec) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) return X509_verify_cert_error_string(verify);
  return ec.message();
}

}  // namespace

Exchange HttpExchange(const HttpUrl& url, const Request& request, const std::string& key,
                      std::chrono::milliseconds timeout, const std::function<void()>& on_sent,
                      const std::string& ca_file) {
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

  if (!url.tls) {
    beast::tcp_stream stream(ioc);
    stream.expires_at(deadline);
    stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
    run();
    // A connect that failed or timed out sent nothing.
    if (ec) return Failed(Transport::kConnectFailed, "connecting to " + url.host_header, ec);
    return Talk(stream, ioc, deadline, url, request, key, on_sent);
  }

  ssl::context ctx(ssl::context::tls_client);
  ctx.set_verify_mode(ssl::verify_peer);
  if (ca_file.empty()) {
    ctx.set_default_verify_paths(ec);
  } else {
    ctx.load_verify_file(ca_file, ec);
  }
  if (ec) {
    return Failed(
        Transport::kConnectFailed,
        "TLS: cannot load " + (ca_file.empty() ? std::string("the system's trust store") : "--ca-file " + ca_file), ec);
  }
  beast::ssl_stream<beast::tcp_stream> stream(ioc, ctx);
  SSL* ssl_handle = stream.native_handle();
  beast::error_code not_ip;
  boost::asio::ip::make_address(url.host, not_ip);
  if (not_ip) {
    // A DNS name: in SNI, and the certificate must name it.
    SSL_set_tlsext_host_name(ssl_handle, url.host.c_str());
    SSL_set_hostflags(ssl_handle, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (SSL_set1_host(ssl_handle, url.host.c_str()) != 1) {
      return Failed(Transport::kConnectFailed, "TLS: cannot check the host name " + url.host, ec);
    }
  } else if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_handle), url.host.c_str()) != 1) {
    return Failed(Transport::kConnectFailed, "TLS: cannot check the address " + url.host, ec);
  }
  beast::get_lowest_layer(stream).expires_at(deadline);
  beast::get_lowest_layer(stream).async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
  run();
  if (ec) return Failed(Transport::kConnectFailed, "connecting to " + url.host_header, ec);
  beast::get_lowest_layer(stream).expires_at(deadline);
  stream.async_handshake(ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
  run();
  // A handshake that failed sent nothing of the request.
  if (ec) {
    Exchange e;
    e.transport = Transport::kConnectFailed;
    e.error = "TLS handshake with " + url.host_header + " failed: " + TlsWhy(ssl_handle, ec);
    return e;
  }
  return Talk(stream, ioc, deadline, url, request, key, on_sent);
}

}  // namespace phasekey::client::internal
