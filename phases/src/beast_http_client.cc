// NewBeastHttpClient (http_client.h): the gateway client on the shared HTTP
// exchange (net/http_exchange.h, on Boost.Beast). This file maps a provider
// request onto an exchange and the exchange's result onto a ProviderAnswer;
// it includes no Beast or Asio.
//
// The verdict: kNotSent while no byte of the request can have reached the
// server (resolution, connection or TLS failed, or the socket accepted no
// byte of the request); kSentNoAnswer from then on, until an answer is read.
//
// Crash point "foreign.sent" (phasekey/crash_point.h): after the whole
// request was first written, before the answer is read (the exchange's
// on_sent: once per call, even when a stale kept-alive connection makes the
// exchange send it again).
//
// One exchanger per client, so its connection pool serves every call.
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "net/http_exchange.h"
#include "phasekey/crash_point.h"
#include "phasekey/phases/http_client.h"

namespace phasekey::phases {
namespace {

ProviderAnswer NotSent(std::string error) {
  ProviderAnswer answer;
  answer.transport = ProviderAnswer::Transport::kNotSent;
  answer.error = std::move(error);
  return answer;
}

net::HttpExchangerOptions ExchangerOptions(BeastHttpClientOptions options) {
  net::HttpExchangerOptions o;
  o.max_answer_bytes = options.max_answer_bytes;
  o.system_trust_store = true;  // ca_file adds to it
  o.ca_file = std::move(options.ca_file);
  o.resolver = std::move(options.resolver);
  o.user_agent = std::move(options.user_agent);
  o.keep_alive = options.keep_alive;
  o.max_idle_per_peer = options.max_idle_per_gateway;
  o.idle_timeout = options.idle_timeout;
  return o;
}

net::HttpRequest ToExchange(const BaseUrl& url, const ProviderRequest& r) {
  net::HttpRequest request;
  request.method = r.method;
  request.target = url.path_prefix + r.path;
  request.headers = r.headers;
  if (!r.content_type.empty()) request.headers.emplace_back("Content-Type", r.content_type);
  request.body = r.body;
  // The stale connection rule (net/http_exchange.h): a request on a reused
  // connection that the gateway had closed is sent again on a new one only
  // when the phase says a repeat is answered as the first (its provider key
  // deduplicates it, or it is a lookup).
  request.retry_on_stale_connection = r.resend_if_connection_stale;
  return request;
}

ProviderAnswer ToAnswer(const BaseUrl& url, net::HttpResult result) {
  ProviderAnswer answer;
  if (result.answered()) {
    answer.transport = ProviderAnswer::Transport::kAnswered;
    answer.status = result.status;
    answer.headers = std::move(result.headers);
    answer.body = std::move(result.body);
    return answer;
  }
  const bool before_write = result.stage == net::HttpStage::kResolve || result.stage == net::HttpStage::kConnect ||
                            result.stage == net::HttpStage::kHandshake;
  const bool sent = !before_write && (result.stage != net::HttpStage::kWrite || result.bytes_written > 0);
  answer.transport = sent ? ProviderAnswer::Transport::kSentNoAnswer : ProviderAnswer::Transport::kNotSent;
  const std::string stage =
      result.stage == net::HttpStage::kResolve ? "resolve " + url.host : std::string(net::StageName(result.stage));
  answer.error = stage + ": " + result.error;
  return answer;
}

class BeastHttpClient final : public HttpClient {
 public:
  explicit BeastHttpClient(BeastHttpClientOptions options) : exchanger_(ExchangerOptions(std::move(options))) {}

  ProviderAnswer Send(std::string_view base_url, const ProviderRequest& request,
                      std::chrono::milliseconds timeout) const override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    Result<BaseUrl> url = ParseBaseUrl(base_url);
    if (!url) return NotSent(url.error().message());
    const net::HttpPeer peer{url->tls, url->host, url->port, ""};
    net::HttpResult result =
        exchanger_.Exchange(peer, ToExchange(*url, request), deadline, [] { PHASEKEY_CRASH_POINT("foreign.sent"); });
    return ToAnswer(*url, std::move(result));
  }

 private:
  net::HttpExchanger exchanger_;  // thread-safe: owns the TLS context, loaded once
};

}  // namespace

std::unique_ptr<HttpClient> NewBeastHttpClient(BeastHttpClientOptions options) {
  return std::make_unique<BeastHttpClient>(std::move(options));
}

}  // namespace phasekey::phases
