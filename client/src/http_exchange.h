// The client's side of an HTTP exchange: its URLs (ParseHttpUrl) and one
// attempt (HttpExchange), both on net/ (the URL parser and the HTTP exchange
// phasekey's HTTP clients share; see net/src/net/). This header
// includes neither Beast nor net/.
#ifndef PHASEKEY_CLIENT_SRC_HTTP_EXCHANGE_H_
#define PHASEKEY_CLIENT_SRC_HTTP_EXCHANGE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "phasekey/client/journal.h"
#include "phasekey/client/retry_policy.h"

namespace phasekey::net {
class HttpExchanger;
}

namespace phasekey::client::internal {

struct HttpUrl {
  std::string host;         // without brackets for IPv6
  std::string port;         // "80" when the URL names none
  std::string target;       // path and query, "/" at least
  std::string host_header;  // as in the URL: "host[:port]"
  bool tls = false;         // https://
};

// "http[s]://host[:port][/path][?query]" split up (port 80, or 443 for
// https, when the URL names none; the scheme in any case), parsed by
// net::ParseUrl (Boost.URL, RFC 3986); nullopt (with *error set) for
// anything else: not a URI, another scheme, userinfo, a fragment, an empty
// host, an IPvFuture host, a bad port.
std::optional<HttpUrl> ParseHttpUrl(std::string_view url, std::string* error);

struct Exchange {
  AttemptResult::Transport transport = AttemptResult::Transport::kAnswered;
  std::string error;       // when not answered: what failed
  bool timed_out = false;  // not answered because the attempt's time ran out
  int status = 0;
  Headers headers;
  std::string body;
};

// The client's exchanger, made once per Client: over https the peer's
// certificate must chain to the system's trust store, or to `ca_file` (PEM)
// instead when not empty. A CA file that cannot be loaded fails every https
// attempt (kConnectFailed) with the reason. Answers up to 64 MiB.
// Connections are kept alive and reused by every attempt of every Send (the
// exchanger's pool and its defaults: net/http_exchange.h).
std::unique_ptr<net::HttpExchanger> NewClientExchanger(const std::string& ca_file);

// Sends `request` with Idempotency-Key: `key` (none when `key` is empty) to
// `url` through `exchanger` and reads the answer, all within `timeout`. Over
// https the certificate must name url.host (a DNS name, also sent in SNI, or
// an IP address); nothing of the request is sent before that is verified.
// Calls `on_sent` once the request is written (before the answer is read).
// A request on a reused connection the server had closed (nothing of an
// answer came) is sent once more on a new connection: every request of the
// client carries its key (here or in its body), which makes the server
// answer the repeat as the first.
// Never throws for network trouble: it is in Exchange; what on_sent throws
// propagates. Thread-safe (the exchanger is).
Exchange HttpExchange(const net::HttpExchanger& exchanger, const HttpUrl& url, const Request& request,
                      const std::string& key, std::chrono::milliseconds timeout, const std::function<void()>& on_sent);

}  // namespace phasekey::client::internal

#endif  // PHASEKEY_CLIENT_SRC_HTTP_EXCHANGE_H_
