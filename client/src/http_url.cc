// ParseHttpUrl (http_exchange.h) on Boost.URL: kept out of
// http_exchange.cc so that the unit tests of URLs do not compile Beast.
#include <boost/url/parse.hpp>
#include <boost/url/scheme.hpp>
#include <boost/url/url_view.hpp>
#include <charconv>

#include "http_exchange.h"

namespace phasekey::client::internal {

std::optional<HttpUrl> ParseHttpUrl(std::string_view url, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<HttpUrl> {
    *error = why;
    return std::nullopt;
  };
  const auto parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    // Not even a scheme: the same answer as another scheme's URL.
    if (url.find("://") == std::string_view::npos) return fail("only http:// and https:// URLs are supported");
    return fail("a malformed URL (" + parsed.error().message() + ")");
  }
  const boost::urls::url_view& u = *parsed;
  HttpUrl out;
  // scheme_id() compares case-insensitively: HTTPS://... is https.
  if (u.scheme_id() == boost::urls::scheme::https) {
    out.tls = true;
  } else if (u.scheme_id() != boost::urls::scheme::http || !u.has_authority()) {
    return fail("only http:// and https:// URLs are supported");
  }
  if (u.has_fragment()) return fail("a URL with a fragment");
  if (u.has_userinfo()) return fail("a URL with userinfo");
  if (u.host_type() == boost::urls::host_type::ipvfuture) return fail("an IPvFuture host");
  // The host as written (IPv6 without its brackets), the Host header as the
  // authority is written.
  out.host = std::string(u.encoded_host_address());
  if (out.host.empty()) return fail("a URL without a host");
  out.host_header = std::string(u.encoded_authority());
  const std::string_view port = u.port();
  if (port.empty()) {
    out.port = out.tls ? "443" : "80";
  } else {
    int n = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (ec != std::errc() || end != port.data() + port.size() || n < 1 || n > 65535) return fail("a bad port");
    out.port = std::string(port);
  }
  out.target = u.encoded_path().empty() ? "/" : std::string(u.encoded_path());
  if (u.has_query()) out.target += "?" + std::string(u.encoded_query());
  return out;
}

}  // namespace phasekey::client::internal
