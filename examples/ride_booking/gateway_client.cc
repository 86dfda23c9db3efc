#include "gateway_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <charconv>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include "phasekey/crash_point.h"
#include "phasekey/phases/http_client.h"

namespace ride_booking {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

// A form value: RFC 3986 unreserved characters kept, the rest %XX.
std::string FormEncode(const std::string& s) { return boost::urls::encode(s, boost::urls::unreserved_chars); }

phasekey::Response Problem(int status, const std::string& title, const std::string& detail) {
  nlohmann::json body = {{"type", "about:blank"}, {"title", title}, {"status", status}, {"detail", detail}};
  return phasekey::Response{status, {{"Content-Type", "application/problem+json"}}, body.dump()};
}

phasekey::PhaseResult Classify(int status, const std::string& body, phasekey::RecoveryPoint next) {
  const auto json = nlohmann::json::parse(body, nullptr, false);
  if (status == 200 && json.is_object() && json.contains("id")) {
    return phasekey::GoTo{next, {{"charge_id", json["id"].get<std::string>()}}};
  }
  const std::string message = json.is_object() && json.contains("error") ? json["error"].value("message", "") : "";
  if (status == 402) {
    return phasekey::Terminal(
        phasekey::JsonResponse(402, {{"error", "Your card was declined."}, {"provider_message", message}}),
        "card declined: " + message);
  }
  if (status == 409 || status == 429 || status >= 500) {
    return phasekey::Retry("gateway answered " + std::to_string(status) + " " + message);
  }
  return phasekey::Terminal(Problem(502, "Bad Gateway", "The payment provider refused the charge."),
                            "gateway refused with " + std::to_string(status) + ": " + message);
}

// The system's resolver: getaddrinfo through Asio's blocking resolve.
std::vector<std::string> SystemResolve(const std::string& host, const std::string& port) {
  boost::asio::io_context io;
  tcp::resolver resolver(io);
  std::vector<std::string> addresses;
  for (const auto& entry : resolver.resolve(host, port)) addresses.push_back(entry.endpoint().address().to_string());
  return addresses;
}

// Runs `resolve` on a detached thread and waits for it until `deadline`.
// Returns its addresses; throws what it threw, or std::runtime_error when
// the deadline passes first. Asio's own asynchronous resolve would not do:
// cancelling it does not interrupt getaddrinfo, and the io_context waits for
// (and its destructor joins) the thread still blocked in it. The thread here
// owns copies of everything it touches, so it may outlive the call.
std::vector<std::string> ResolveBefore(const NameResolver& resolve, const std::string& host,
                                       const std::string& port,
                                       std::chrono::steady_clock::time_point deadline) {
  auto result = std::make_shared<std::promise<std::vector<std::string>>>();
  std::future<std::vector<std::string>> answer = result->get_future();
  std::thread([resolve, host, port, result] {
    try {
      result->set_value(resolve(host, port));
    } catch (...) {
      result->set_exception(std::current_exception());
    }
  }).detach();
  if (answer.wait_until(deadline) != std::future_status::ready) {
    throw std::runtime_error("resolve " + host + ": timed out");
  }
  return answer.get();
}

// The endpoints to connect to: the host itself when it is an IP literal
// (no resolution), else what `resolve` answers before `deadline`. Throws
// when there is none.
std::vector<tcp::endpoint> Endpoints(const NameResolver& resolve, const std::string& host, const std::string& port,
                                     std::chrono::steady_clock::time_point deadline) {
  uint16_t port_number = 0;
  std::from_chars(port.data(), port.data() + port.size(), port_number);  // checked by the constructor
  boost::system::error_code ec;
  const auto literal = boost::asio::ip::make_address(host, ec);
  if (!ec) return {tcp::endpoint(literal, port_number)};
  std::vector<tcp::endpoint> endpoints;
  for (const std::string& address : ResolveBefore(resolve, host, port, deadline)) {
    endpoints.emplace_back(boost::asio::ip::make_address(address), port_number);  // throws on a bad one
  }
  if (endpoints.empty()) throw std::runtime_error("resolve " + host + ": no address");
  return endpoints;
}

}  // namespace

GatewayClient::GatewayClient(const std::string& base_url, std::chrono::milliseconds timeout, std::string secret,
                             NameResolver resolver)
    : timeout_(timeout), secret_(std::move(secret)), resolver_(resolver ? std::move(resolver) : SystemResolve) {
  const phasekey::Result<phasekey::phases::BaseUrl> url = phasekey::phases::ParseBaseUrl(base_url);
  if (!url) throw std::invalid_argument("gateway URL: " + url.error().ToString());
  if (url->tls) throw std::invalid_argument("gateway URL must start with http://");
  host_ = url->host;
  port_ = std::to_string(url->port);
}

phasekey::PhaseResult GatewayClient::Charge(const ChargeRequest& r, phasekey::RecoveryPoint next) const {
  // One deadline for the whole call: resolution (Endpoints), then connect,
  // write and read through the stream's expiry. A tcp_stream enforces its
  // expiry on asynchronous operations only (its synchronous ones would wait
  // as long as the gateway does, past the lease): so each step is
  // asynchronous, driven to completion by run().
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  auto step = [&] {
    io.run();
    io.restart();
    if (ec) throw beast::system_error(ec);
  };
  bool sent = false;
  try {
    const std::vector<tcp::endpoint> endpoints = Endpoints(resolver_, host_, port_, deadline);
    stream.expires_at(deadline);
    stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
    step();
    http::request<http::string_body> req{http::verb::post, "/v1/charges", 11};
    req.set(http::field::host, host_);
    req.set(http::field::content_type, "application/x-www-form-urlencoded");
    req.set("Idempotency-Key", r.idempotency_key);
    if (!secret_.empty()) req.set(http::field::authorization, "Bearer " + secret_);
    req.body() = "amount=" + std::to_string(r.amount) + "&currency=" + FormEncode(r.currency) +
                 "&customer=" + FormEncode(r.customer) + "&description=" + FormEncode(r.description);
    req.prepare_payload();
    sent = true;  // from here on the provider may have acted on it
    http::async_write(stream, req, [&](beast::error_code e, std::size_t) { ec = e; });
    step();
    PHASEKEY_CRASH_POINT("foreign.sent");
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::async_read(stream, buffer, res, [&](beast::error_code e, std::size_t) { ec = e; });
    step();
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    return Classify(static_cast<int>(res.result_int()), res.body(), next);
  } catch (const std::exception& e) {
    if (sent) return phasekey::OutcomeUnknown(std::string("gateway connection lost after sending: ") + e.what());
    return phasekey::Retry(std::string("gateway unreachable: ") + e.what());
  }
}

}  // namespace ride_booking
