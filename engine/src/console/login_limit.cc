#include "console/login_limit.h"

#include <algorithm>

namespace phasekey::console {

LoginLimit::LoginLimit(int max_failures, std::chrono::seconds window)
    : max_failures_(max_failures), window_(window) {}

std::optional<std::chrono::seconds> LoginLimit::Blocked(const std::string& address, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(address);
  if (it == entries_.end()) return std::nullopt;
  if (it->second.window_ends <= now) {
    entries_.erase(it);
    return std::nullopt;
  }
  if (it->second.failures < max_failures_) return std::nullopt;
  // Rounded up: a client that waits Retry-After seconds finds the window over.
  const auto left = std::chrono::ceil<std::chrono::seconds>(it->second.window_ends - now);
  return std::max(left, std::chrono::seconds(1));
}

void LoginLimit::Failed(const std::string& address, Clock::time_point now) {
  std::lock_guard lock(mu_);
  // Forget the windows that ended, so the map holds only the addresses that
  // failed within one window.
  std::erase_if(entries_, [now](const auto& e) { return e.second.window_ends <= now; });
  Entry& e = entries_[address];
  if (e.failures == 0) e.window_ends = now + window_;
  ++e.failures;
}

void LoginLimit::Succeeded(const std::string& address) {
  std::lock_guard lock(mu_);
  entries_.erase(address);
}

}  // namespace phasekey::console
