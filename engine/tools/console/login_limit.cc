#include "console/login_limit.h"

#include <arpa/inet.h>

#include <algorithm>
#include <iterator>

namespace phasekey::console {

LoginLimit::LoginLimit(int max_failures, std::chrono::seconds window) : max_failures_(max_failures), window_(window) {}

std::string LoginLimit::GroupOf(const std::string& address) {
  in6_addr v6{};
  if (::inet_pton(AF_INET6, address.c_str(), &v6) != 1) return address;
  if (IN6_IS_ADDR_V4MAPPED(&v6)) {
    char v4[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &v6.s6_addr[12], v4, sizeof v4);
    return v4;
  }
  std::fill(std::begin(v6.s6_addr) + 8, std::end(v6.s6_addr), 0);
  char text[INET6_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET6, &v6, text, sizeof text);
  return std::string(text) + "/64";
}

std::optional<std::chrono::seconds> LoginLimit::Admit(const std::string& address, Clock::time_point now) {
  const std::string group = GroupOf(address);
  std::lock_guard lock(mu_);
  // Forget the windows that ended, so the map holds only the groups that
  // tried within one window.
  std::erase_if(entries_, [now](const auto& e) { return e.second.window_ends <= now; });
  Entry& e = entries_[group];
  if (e.failures >= max_failures_) {
    // Rounded up: a client that waits Retry-After seconds finds the window over.
    const auto left = std::chrono::ceil<std::chrono::seconds>(e.window_ends - now);
    return std::max(left, std::chrono::seconds(1));
  }
  if (e.failures == 0) e.window_ends = now + window_;
  ++e.failures;
  return std::nullopt;
}

void LoginLimit::Succeeded(const std::string& address) {
  const std::string group = GroupOf(address);
  std::lock_guard lock(mu_);
  entries_.erase(group);
}

}  // namespace phasekey::console
