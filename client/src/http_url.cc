// ParseHttpUrl (http_exchange.h) on the shared parser (net/url.h, on
// Boost.URL): the client's HttpUrl made from net::Url.
#include <string>

#include "http_exchange.h"
#include "net/url.h"

namespace phasekey::client::internal {

std::optional<HttpUrl> ParseHttpUrl(std::string_view url, std::string* error) {
  net::ParsedUrl parsed = net::ParseUrl(url);
  if (!parsed.url) {
    *error = std::move(parsed.error);
    return std::nullopt;
  }
  const net::Url& u = *parsed.url;
  HttpUrl out;
  out.host = u.host;
  out.port = std::to_string(u.port);
  out.target = u.Target();
  out.host_header = u.authority;  // as the authority is written
  out.tls = u.tls;
  return out;
}

}  // namespace phasekey::client::internal
