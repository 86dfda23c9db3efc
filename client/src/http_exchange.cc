// HttpExchange (http_exchange.h) on the shared exchange (net/http_exchange.h):
// the client's request onto an exchange, and the exchange's result onto the
// client's transport verdicts and messages. No Beast here.
#include "http_exchange.h"

#include <memory>
#include <utility>

#include "net/http_exchange.h"

namespace phasekey::client::internal {
namespace {

using Transport = AttemptResult::Transport;

// Large enough for any API answer the client is meant for.
constexpr std::size_t kMaxBodyBytes = std::size_t{64} << 20;

// A failed exchange as the client says it: before the request was written
// (resolve, connect, TLS) nothing was sent; from the write on, a timeout or
// a broken connection may have carried it.
Exchange Failed(const HttpUrl& url, const net::HttpResult& r) {
  Exchange e;
  e.timed_out = r.timed_out;
  switch (r.stage) {
    case net::HttpStage::kResolve:
      e.transport = Transport::kConnectFailed;
      e.error = "resolving " + url.host + ": " + r.error;
      break;
    case net::HttpStage::kConnect:
      e.transport = Transport::kConnectFailed;
      e.error = "connecting to " + url.host_header + ": " + r.error;
      break;
    case net::HttpStage::kHandshake:
      e.transport = Transport::kConnectFailed;
      e.error = "TLS handshake with " + url.host_header + " failed: " + r.error;
      break;
    case net::HttpStage::kWrite:
      e.transport = r.timed_out ? Transport::kTimedOut : Transport::kBroken;
      e.error = "sending the request: " + r.error;
      break;
    case net::HttpStage::kRead:
    case net::HttpStage::kDone:
      e.transport = r.timed_out ? Transport::kTimedOut : Transport::kBroken;
      e.error = (r.timed_out ? "waiting for the answer: " : "reading the answer: ") + r.error;
      break;
  }
  return e;
}

}  // namespace

std::unique_ptr<net::HttpExchanger> NewClientExchanger(const std::string& ca_file) {
  net::HttpExchangerOptions options;
  options.max_answer_bytes = kMaxBodyBytes;
  options.system_trust_store = ca_file.empty();  // a CA file replaces the system's store
  options.ca_file = ca_file;
  options.keep_alive = true;  // one pool for every attempt of every Send (net/http_exchange.h's defaults)
  return std::make_unique<net::HttpExchanger>(std::move(options));
}

Exchange HttpExchange(const net::HttpExchanger& exchanger, const HttpUrl& url, const Request& request,
                      const std::string& key, std::chrono::milliseconds timeout, const std::function<void()>& on_sent) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  net::HttpPeer peer;
  peer.tls = url.tls;
  peer.host = url.host;
  peer.port = static_cast<std::uint16_t>(std::stoi(url.port));  // ParseHttpUrl checked it
  peer.host_header = url.host_header;
  net::HttpRequest wire;
  wire.method = request.method;
  wire.target = url.target;
  wire.headers = request.headers;  // never an Idempotency-Key (Validate)
  if (!key.empty()) wire.headers.emplace_back("Idempotency-Key", key);
  wire.body = request.body;
  // The stale connection rule (net/http_exchange.h): a request on a reused
  // connection the server had closed is sent once more on a new one. Safe
  // because every attempt of a Send carries its intent's key, in the
  // Idempotency-Key header or in the body (key_in_body), so the server
  // answers the repeat as the first.
  wire.retry_on_stale_connection = true;
  net::HttpResult r = exchanger.Exchange(peer, wire, deadline, on_sent);
  if (!r.answered()) return Failed(url, r);
  Exchange out;
  out.status = r.status;
  out.headers = std::move(r.headers);
  out.body = std::move(r.body);
  return out;
}

}  // namespace phasekey::client::internal
