// ParseHttpUrl (http_exchange.h): kept out of http_exchange.cc so that the
// unit tests of URLs do not compile Beast.
#include <algorithm>
#include <charconv>

#include "http_exchange.h"

namespace phasekey::client::internal {

std::optional<HttpUrl> ParseHttpUrl(std::string_view url, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<HttpUrl> {
    *error = why;
    return std::nullopt;
  };
  auto starts_with = [&](std::string_view scheme) {
    return url.size() >= scheme.size() && std::equal(scheme.begin(), scheme.end(), url.begin(), [](char a, char b) {
             return a == (b >= 'A' && b <= 'Z' ? b - 'A' + 'a' : b);
           });
  };
  HttpUrl out;
  if (starts_with("https://")) {
    out.tls = true;
    url.remove_prefix(8);
  } else if (starts_with("http://")) {
    url.remove_prefix(7);
  } else {
    return fail("only http:// and https:// URLs are supported");
  }
  if (url.find('#') != std::string_view::npos) return fail("a URL with a fragment");
  const std::size_t slash = std::min(url.find('/'), url.find('?'));
  std::string_view authority = url.substr(0, slash);
  out.target = slash == std::string_view::npos ? "/" : std::string(url.substr(slash));
  if (out.target.front() == '?') out.target.insert(0, "/");
  if (authority.find('@') != std::string_view::npos) return fail("a URL with userinfo");
  out.host_header = std::string(authority);
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return fail("an unclosed IPv6 address");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return fail("junk after an IPv6 address");
      port = rest.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return fail("a URL without a host");
  if (port.empty()) {
    out.port = out.tls ? "443" : "80";
  } else {
    int n = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc() || end != port.data() + port.size() || n < 1 || n > 65535) return fail("a bad port");
    out.port = std::string(port);
  }
  return out;
}

}  // namespace phasekey::client::internal
