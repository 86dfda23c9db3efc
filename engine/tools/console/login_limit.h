// The console's limit on failed logins: after `max_failures` wrong tokens
// from one client address within `window` (counted from that address's
// first attempt in it), further logins from the address, right token or
// not, are refused until the window ends. A successful login clears the
// address's count. Addresses are kept only while their window lasts.
//
// Admission and counting are one step: Admit() counts the attempt as a
// failure before the token is checked, and Succeeded() takes it back, so
// concurrent logins cannot slip past the limit between a check and a count.
// IPv6 addresses are grouped by their /64 (one host usually holds a whole
// /64); an IPv4-mapped IPv6 address counts as its IPv4 address.
// Thread-safe.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_LOGIN_LIMIT_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_LOGIN_LIMIT_H_

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace phasekey::console {

class LoginLimit {
 public:
  using Clock = std::chrono::steady_clock;

  LoginLimit(int max_failures, std::chrono::seconds window);

  // nullopt when `address` may try a login now, the attempt counted as a
  // failure until Succeeded(); otherwise how long until it may (at least
  // one second), nothing counted.
  std::optional<std::chrono::seconds> Admit(const std::string& address, Clock::time_point now = Clock::now());
  // Forgets the failures of `address`'s group, the admitted attempt's too.
  void Succeeded(const std::string& address);
  // The group `address` is limited in: the address itself, its /64 for
  // IPv6, the IPv4 address for an IPv4-mapped one.
  static std::string GroupOf(const std::string& address);

 private:
  struct Entry {
    int failures = 0;
    Clock::time_point window_ends;
  };
  const int max_failures_;
  const std::chrono::seconds window_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;  // by address; guarded by mu_
};

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_LOGIN_LIMIT_H_
