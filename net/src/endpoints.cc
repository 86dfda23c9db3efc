// Endpoints and SystemResolve (endpoints.h).
#include "net/endpoints.h"

#include <boost/asio/io_context.hpp>
#include <exception>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>

namespace phasekey::net {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Deadline = std::chrono::steady_clock::time_point;

// Thrown by ResolveBefore when the deadline passes first.
struct ResolveTimedOut : std::runtime_error {
  ResolveTimedOut() : std::runtime_error("timed out") {}
};

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

}  // namespace

std::vector<std::string> SystemResolve(const std::string& host, const std::string& port) {
  asio::io_context io;
  tcp::resolver resolver(io);
  std::vector<std::string> addresses;
  for (const auto& entry : resolver.resolve(host, port)) addresses.push_back(entry.endpoint().address().to_string());
  return addresses;
}

std::vector<tcp::endpoint> Endpoints(const NameResolver& resolve, const HttpPeer& peer, Deadline deadline,
                                     HttpResult& result) {
  boost::system::error_code ec;
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

}  // namespace phasekey::net
