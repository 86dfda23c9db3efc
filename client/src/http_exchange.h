// One HTTP/1.1 exchange over a fresh TCP connection: the only place the
// client touches Beast (http_exchange.cc), to keep its build cost in one
// file. HTTP, and HTTPS with the peer's certificate and host name verified.
#ifndef PHASEKEY_CLIENT_SRC_HTTP_EXCHANGE_H_
#define PHASEKEY_CLIENT_SRC_HTTP_EXCHANGE_H_

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "phasekey/client/journal.h"
#include "phasekey/client/retry_policy.h"

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
// Boost.URL (RFC 3986); nullopt (with *error set) for anything else: not a
// URI, another scheme, userinfo, a fragment, an empty host, an IPvFuture
// host, a bad port.
std::optional<HttpUrl> ParseHttpUrl(std::string_view url, std::string* error);

struct Exchange {
  AttemptResult::Transport transport = AttemptResult::Transport::kAnswered;
  std::string error;  // when not answered: what failed
  int status = 0;
  Headers headers;
  std::string body;
};

// Over https: the peer's certificate must chain to the system's trust store,
// or to `ca_file` (PEM) when not empty, and name url.host (a DNS name or an
// IP address); the host name goes in SNI. Nothing of the request is sent
// before that is verified.
// Sends `request` with Idempotency-Key: `key` (none when `key` is empty) to `url` and reads the answer,
// all within `timeout`. Calls `on_sent` once the request is written (before
// the answer is read). Never throws for network trouble: it is in Exchange.
Exchange HttpExchange(const HttpUrl& url, const Request& request, const std::string& key,
                      std::chrono::milliseconds timeout, const std::function<void()>& on_sent,
                      const std::string& ca_file = "");

}  // namespace phasekey::client::internal

#endif  // PHASEKEY_CLIENT_SRC_HTTP_EXCHANGE_H_
