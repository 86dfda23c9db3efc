// ParseBaseUrl (declared in http_client.h), kept out of the Beast file so it
// compiles fast and tests without a network.
#include <charconv>
#include <string>

#include "phasekey/phases/http_client.h"

namespace phasekey::phases {
namespace {

Status Bad(std::string_view url, std::string_view why) {
  return Status::InvalidArgument("bad base URL '" + std::string(url) + "': " + std::string(why));
}

}  // namespace

Result<BaseUrl> ParseBaseUrl(std::string_view url) {
  BaseUrl out;
  std::string_view rest;
  if (url.starts_with("https://")) {
    out.tls = true;
    out.port = 443;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    out.port = 80;
    rest = url.substr(7);
  } else {
    return Bad(url, "the scheme must be http or https");
  }
  if (rest.find_first_of("?#@") != std::string_view::npos) return Bad(url, "no user info, query or fragment");
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash);
    while (path.ends_with('/')) path.remove_suffix(1);
    out.path_prefix = std::string(path);
  }
  std::string_view port;
  if (authority.starts_with('[')) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return Bad(url, "unclosed IPv6 literal");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return Bad(url, "junk after the IPv6 literal");
      port = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return Bad(url, "no host");
  if (!port.empty() || authority.ends_with(':')) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return Bad(url, "bad port");
    }
    out.port = static_cast<std::uint16_t>(value);
  }
  return out;
}

}  // namespace phasekey::phases
