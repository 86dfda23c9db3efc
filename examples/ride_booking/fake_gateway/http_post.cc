// The webhook sender's POST on phasekey's shared URL parser and HTTP
// exchange (net/url.h, net/http_exchange.h). No Beast here.
#include "fake_gateway/http_post.h"

#include <string>

#include "net/http_exchange.h"
#include "net/url.h"

namespace fake_gateway {
namespace {

namespace net = phasekey::net;

// Plain HTTP only, so no trust store is loaded; made on first use and
// shared by every sender thread (the exchanger is thread-safe). Never
// destroyed: a sender thread still posting at exit never meets a destroyed
// one.
const net::HttpExchanger& Exchanger() {
  static const net::HttpExchanger* exchanger = new net::HttpExchanger([] {
    net::HttpExchangerOptions options;
    // The answer's body is not needed (only its status), but is read to keep
    // the exchange whole; a receiver's answer is small.
    options.max_answer_bytes = 1024 * 1024;
    options.system_trust_store = false;
    // One connection per webhook, as before the pool: the receiver may be
    // restarted between two deliveries, and a delivery has no key that
    // would make a resend on a new connection safe.
    options.keep_alive = false;
    return options;
  }());
  return *exchanger;
}

}  // namespace

bool ParseHttpUrl(const std::string& url, HttpUrl* out) {
  const net::ParsedUrl parsed = net::ParseUrl(url);
  if (!parsed.url || parsed.url->tls) return false;
  out->host = parsed.url->host;
  out->port = std::to_string(parsed.url->port);
  out->path = parsed.url->Target();
  return true;
}

PostResult HttpPost(const HttpUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                    const std::string& body, std::chrono::milliseconds timeout) {
  net::HttpPeer peer;
  peer.host = url.host;
  peer.port = static_cast<std::uint16_t>(std::stoi(url.port));  // ParseHttpUrl checked it
  net::HttpRequest request;
  request.method = "POST";
  request.target = url.path;
  request.headers = headers;
  request.body = body;
  const net::HttpResult r = Exchanger().Exchange(peer, request, std::chrono::steady_clock::now() + timeout);
  PostResult result;
  if (r.answered()) {
    result.status = r.status;
  } else {
    result.error = std::string(net::StageName(r.stage)) + ": " + r.error;
  }
  return result;
}

}  // namespace fake_gateway
