// A small blocking HTTP/1.1 client for the chaos demo: one TCP connection
// per exchange (Connection: close), IPv4 literals only, responses framed by
// Content-Length or by the end of the connection (no chunked encoding).
// Enough to talk to the service and the gateway on 127.0.0.1; not a general
// HTTP client.
#ifndef PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_HTTP_H_
#define PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_HTTP_H_

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "phasekey/status.h"

namespace ride_booking {

using ChaosHeaders = std::vector<std::pair<std::string, std::string>>;

struct ChaosHttpRequest {
  std::string method = "GET";
  std::string target = "/";
  ChaosHeaders headers;  // Host, Content-Length and Connection are added
  std::string body;
};

struct ChaosHttpResponse {
  int status = 0;
  ChaosHeaders headers;
  std::string body;

  // The value of the first header named `name` (ASCII case-insensitive), or
  // nullptr. Valid as long as the response is.
  const std::string* Header(std::string_view name) const;
};

// Sends `request` to host:port and reads the whole answer. Every socket
// operation (connect, each send, each receive) is bounded by `timeout`.
// Any network failure (refused, reset, timeout, the peer closing before a
// complete answer, an answer we cannot parse) is a kRetryable Status whose
// message says what happened; a host that is not an IPv4 literal is
// kInvalidArgument. Thread-safe; never raises SIGPIPE.
phasekey::Result<ChaosHttpResponse> HttpExchange(const std::string& host, int port,
                                                 const ChaosHttpRequest& request,
                                                 std::chrono::milliseconds timeout);

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_HTTP_H_
