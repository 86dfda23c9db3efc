// A blocking HTTP/1.1 POST over plain TCP, for the webhook sender: one
// connection per request (Connection: close), the whole exchange bounded by
// a timeout. Only "http://host[:port][/path]" URLs (no TLS: the receivers
// are local test services). Both are thin wrappers over phasekey's shared URL
// parser and HTTP exchange (net/), which this header does not include.
//
// Thread-safety: thread-safe.
#ifndef RIDE_BOOKING_FAKE_GATEWAY_HTTP_POST_H_
#define RIDE_BOOKING_FAKE_GATEWAY_HTTP_POST_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace fake_gateway {

struct HttpUrl {
  std::string host;  // IPv6 without brackets
  std::string port;  // "80" when the URL names none
  std::string path;  // path and query; starts with '/'
};

// Splits "http://host[:port][/path][?query]" (port defaults to 80, path to
// "/"); false for anything else (https, userinfo, a fragment, a bad port).
bool ParseHttpUrl(const std::string& url, HttpUrl* out);

struct PostResult {
  int status = 0;     // 0: no answer (resolve, connect, write or read failed, or timeout)
  std::string error;  // why, when status is 0: "<step>: <reason>"
};

// Sends the request and reads the answer (only its status is kept; answers
// over 1 MiB count as none).
PostResult HttpPost(const HttpUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                    const std::string& body, std::chrono::milliseconds timeout);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_HTTP_POST_H_
