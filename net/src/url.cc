// ParseUrl (url.h) on Boost.URL, apart from http_exchange.cc so that the
// parsers' tests and users do not compile Beast.
#include "net/url.h"

#include <boost/url/parse.hpp>
#include <boost/url/scheme.hpp>
#include <boost/url/url_view.hpp>
#include <charconv>

namespace phasekey::net {
namespace {

constexpr const char* kNotHttp = "only http:// and https:// URLs are supported";

ParsedUrl Refused(std::string why) { return ParsedUrl{std::nullopt, std::move(why)}; }

// The port of `text` (digits only, 1 to 65535), or 0 when it is not one.
std::uint16_t PortNumber(std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > 65535) return 0;
  return static_cast<std::uint16_t>(value);
}

}  // namespace

std::string Url::Target() const {
  std::string target = path.empty() ? "/" : path;
  if (has_query) target += "?" + query;
  return target;
}

ParsedUrl ParseUrl(std::string_view text) {
  const auto parsed = boost::urls::parse_uri(text);
  if (!parsed) {
    // Not even a scheme: the same answer as another scheme's URL.
    if (text.find("://") == std::string_view::npos) return Refused(kNotHttp);
    return Refused("a malformed URL (" + parsed.error().message() + ")");
  }
  const boost::urls::url_view& u = *parsed;
  Url out;
  // scheme_id() compares case-insensitively: HTTPS://... is https.
  if (u.scheme_id() == boost::urls::scheme::https) {
    out.tls = true;
  } else if (u.scheme_id() != boost::urls::scheme::http || !u.has_authority()) {
    return Refused(kNotHttp);
  }
  if (u.has_fragment()) return Refused("a URL with a fragment");
  if (u.has_userinfo()) return Refused("a URL with userinfo");
  if (u.host_type() == boost::urls::host_type::ipvfuture) return Refused("an IPvFuture host");
  out.host = std::string(u.encoded_host_address());  // an IPv6 literal without its brackets
  if (out.host.empty()) return Refused("a URL without a host");
  out.authority = std::string(u.encoded_authority());
  out.path = std::string(u.encoded_path());
  // A path that does not start with '/' is what is left of a port that is
  // not all digits ("host:12ab").
  if (!out.path.empty() && !out.path.starts_with('/')) return Refused("a bad port");
  if (u.port().empty()) {
    out.port = out.tls ? 443 : 80;
  } else {
    out.port = PortNumber(u.port());
    if (out.port == 0) return Refused("a bad port");
  }
  out.has_query = u.has_query();
  out.query = std::string(u.encoded_query());
  return ParsedUrl{std::move(out), ""};
}

}  // namespace phasekey::net
