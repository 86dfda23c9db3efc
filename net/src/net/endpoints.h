// Where an exchange connects: the addresses of an HttpPeer, resolved under
// the exchange's deadline. Private to net/ (http_exchange.cc); Asio only, no
// Beast.
#ifndef PHASEKEY_NET_SRC_NET_ENDPOINTS_H_
#define PHASEKEY_NET_SRC_NET_ENDPOINTS_H_

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "net/http_exchange.h"

namespace phasekey::net {

// The system's resolver: getaddrinfo through Asio's blocking resolve.
std::vector<std::string> SystemResolve(const std::string& host, const std::string& port);

// The endpoints to connect to: the host itself when it is an IP literal (no
// resolution), else what `resolve` answers before `deadline` (it runs on a
// detached thread the exchange stops waiting for at the deadline). Empty,
// with the reason (and timed_out) in `result`, when there is none.
std::vector<boost::asio::ip::tcp::endpoint> Endpoints(const NameResolver& resolve, const HttpPeer& peer,
                                                      std::chrono::steady_clock::time_point deadline,
                                                      HttpResult& result);

}  // namespace phasekey::net

#endif  // PHASEKEY_NET_SRC_NET_ENDPOINTS_H_
