// ParseUrl: the one parser of http:// and https:// URLs, shared by the
// phases' base URLs (ParseBaseUrl), the client's request URLs (ParseHttpUrl)
// and the fake gateway's webhook URLs. Boost.URL does the RFC 3986 parsing;
// this file says which URLs an HTTP exchange can use. Each user may refuse
// more (a base URL takes no query, the fake gateway no https) and words its
// own errors around the reason given here.
//
// Private to the build (phasekey_net, net/CMakeLists.txt): no installed
// header includes it. Plain structs and return values, nothing of the engine.
#ifndef PHASEKEY_NET_SRC_NET_URL_H_
#define PHASEKEY_NET_SRC_NET_URL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace phasekey::net {

// A URL split into what an exchange needs. Text fields are as written
// (percent-encoding kept, case kept).
struct Url {
  bool tls = false;        // https://
  std::string host;        // a DNS name or an IP literal, IPv6 without its brackets
  std::uint16_t port = 0;  // as written, else the scheme's default (80, 443)
  std::string authority;   // "host[:port]" as written (IPv6 bracketed): a Host header
  std::string path;        // "" or starting with '/'
  bool has_query = false;  // a '?' was written (the query may be empty)
  std::string query;       // without its '?'

  // The request target: the path ("/" when empty), then "?query" if any.
  std::string Target() const;
};

// What ParseUrl answers: `url` when accepted, else `error`, one of
//   "only http:// and https:// URLs are supported"  (no scheme, another
//                                                    scheme, no "//")
//   "a malformed URL (<Boost.URL's reason>)"
//   "a URL with a fragment", "a URL with userinfo", "an IPvFuture host",
//   "a URL without a host", "a bad port" (not 1 to 65535; an empty port
//                                         is the default one)
struct ParsedUrl {
  std::optional<Url> url;
  std::string error;  // empty when accepted
};

// Parses `text`. Never throws.
ParsedUrl ParseUrl(std::string_view text);

}  // namespace phasekey::net

#endif  // PHASEKEY_NET_SRC_NET_URL_H_
