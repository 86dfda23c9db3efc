// A small blocking HTTP/1.1 client over loopback for tests: one request per
// connection (Connection: close), Content-Length or close-delimited bodies.
#ifndef PHASEKEY_TESTS_SUPPORT_HTTP_CLIENT_H_
#define PHASEKEY_TESTS_SUPPORT_HTTP_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace phasekey::testing {

struct HttpResult {
  bool ok = false;    // false: connection refused, reset, closed or timed out
  std::string error;  // why, when !ok
  int status = 0;
  std::map<std::string, std::string> headers;  // names lowercased
  std::string body;
  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

HttpResult HttpCall(std::uint16_t port, const std::string& method, const std::string& target,
                    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_HTTP_CLIENT_H_
