// The console's limit on failed logins: after `max_failures` wrong tokens
// from one client address within `window` (counted from that address's
// first failure in it), further logins from the address, right token or
// not, are refused until the window ends. A successful login clears the
// address's count. Addresses are kept only while their window lasts.
// Thread-safe.
#ifndef PHASEKEY_SRC_CONSOLE_LOGIN_LIMIT_H_
#define PHASEKEY_SRC_CONSOLE_LOGIN_LIMIT_H_

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

  // nullopt when `address` may try a login now; otherwise how long until
  // it may (at least one second).
  std::optional<std::chrono::seconds> Blocked(const std::string& address, Clock::time_point now = Clock::now());
  // Counts a wrong token from `address`.
  void Failed(const std::string& address, Clock::time_point now = Clock::now());
  // Forgets `address`'s failures.
  void Succeeded(const std::string& address);

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

#endif  // PHASEKEY_SRC_CONSOLE_LOGIN_LIMIT_H_
