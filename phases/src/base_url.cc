// ParseBaseUrl (declared in http_client.h) on the shared URL parser
// (net/url.h, on Boost.URL): this file only says which URLs make a base URL.
#include <string>

#include "net/url.h"
#include "phasekey/phases/http_client.h"

namespace phasekey::phases {

Result<BaseUrl> ParseBaseUrl(std::string_view url) {
  auto bad = [url](std::string_view why) {
    return Status::InvalidArgument("bad base URL '" + std::string(url) + "': " + std::string(why));
  };
  net::ParsedUrl parsed = net::ParseUrl(url);
  if (!parsed.url) return bad(parsed.error);
  net::Url& u = *parsed.url;
  // Request paths are appended to the base URL: a query cannot stay in front.
  if (u.has_query) return bad("a URL with a query");
  BaseUrl out;
  out.tls = u.tls;
  out.host = std::move(u.host);
  out.port = u.port;
  std::string_view path = u.path;
  while (path.ends_with('/')) path.remove_suffix(1);
  out.path_prefix = std::string(path);
  return out;
}

}  // namespace phasekey::phases
