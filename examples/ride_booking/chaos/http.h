// The chaos demo's HTTP: one blocking exchange with the service or the
// gateway on loopback, over the phases library's Beast client
// (phasekey/phases/http_client.h) with keep_alive off: one connection per
// exchange (Connection: close), the whole exchange bounded by a timeout.
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

// Sends `request` to host:port and reads the whole answer within
// `timeout`: over https when `ca_file` names the CA to trust (the
// gateway's, --gateway-ca), else over plain http. Any network failure (refused, reset, timeout, the peer closing
// before a complete answer) is a kRetryable Status whose message says what
// happened. Thread-safe; never raises SIGPIPE.
phasekey::Result<ChaosHttpResponse> HttpExchange(const std::string& host, int port, const ChaosHttpRequest& request,
                                                 std::chrono::milliseconds timeout, const std::string& ca_file = "");

}  // namespace ride_booking

#endif  // PHASEKEY_EXAMPLES_RIDE_BOOKING_CHAOS_HTTP_H_
