// ParseBaseUrl (declared in http_client.h), kept out of the Beast file so it
// compiles fast and tests without a network. Boost.URL does the RFC 3986
// parsing; this file only says which URLs make a base URL.
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <charconv>
#include <string>

#include "phasekey/phases/http_client.h"

namespace phasekey::phases {
namespace {

Status Bad(std::string_view url, std::string_view why) {
  return Status::InvalidArgument("bad base URL '" + std::string(url) + "': " + std::string(why));
}

// The port of `text` (digits only, 1 to 65535), or 0 when it is not one.
std::uint16_t PortNumber(std::string_view text) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > 65535) return 0;
  return static_cast<std::uint16_t>(value);
}

}  // namespace

Result<BaseUrl> ParseBaseUrl(std::string_view url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) return Bad(url, parsed.error().message());
  const boost::urls::url_view& u = *parsed;
  BaseUrl out;
  if (u.scheme_id() == boost::urls::scheme::https) {
    out.tls = true;
    out.port = 443;
  } else if (u.scheme_id() == boost::urls::scheme::http) {
    out.port = 80;
  } else {
    return Bad(url, "the scheme must be http or https");
  }
  if (u.has_userinfo() || u.has_query() || u.has_fragment()) return Bad(url, "no user info, query or fragment");
  if (u.encoded_host().empty()) return Bad(url, "no host");
  // A path that does not start with '/' is what is left of a port that is
  // not all digits ("host:12ab").
  std::string_view path = u.encoded_path();
  if (!path.empty() && !path.starts_with('/')) return Bad(url, "bad port");
  if (u.has_port()) {
    out.port = PortNumber(u.port());
    if (out.port == 0) return Bad(url, "bad port");
  }
  out.host = std::string(u.encoded_host_address());  // an IPv6 literal without its brackets
  while (path.ends_with('/')) path.remove_suffix(1);
  out.path_prefix = std::string(path);
  return out;
}

}  // namespace phasekey::phases
