// A blocking HTTP/1.1 POST over plain TCP (Boost.Beast), for the webhook
// sender: one connection per request (Connection: close), the whole
// exchange bounded by a timeout. Only "http://host:port/path" URLs (no TLS: the receivers are
// local test services).
//
// Thread-safety: thread-safe (no shared state).
#ifndef RIDE_BOOKING_FAKE_GATEWAY_HTTP_POST_H_
#define RIDE_BOOKING_FAKE_GATEWAY_HTTP_POST_H_

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace fake_gateway {

struct HttpUrl {
  std::string host;
  std::string port;
  std::string path;  // starts with '/'
};

// Splits "http://host:port/path" (port defaults to 80, path to "/"); false
// for anything else.
bool ParseHttpUrl(const std::string& url, HttpUrl* out);

struct PostResult {
  int status = 0;     // 0: no answer (connect, write or read failed, or timeout)
  std::string error;  // why, when status is 0
};

// Sends the request and reads the status line of the answer.
PostResult HttpPost(const HttpUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                    const std::string& body, std::chrono::milliseconds timeout);

}  // namespace fake_gateway

#endif  // RIDE_BOOKING_FAKE_GATEWAY_HTTP_POST_H_
