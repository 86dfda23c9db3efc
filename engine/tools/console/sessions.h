// The console's logins: one operator token opens sessions; each session
// has its own id (the HttpOnly cookie) and CSRF token (a hidden field of
// every form). Kept in memory: restarting the console logs everyone out.
// Thread-safe.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_SESSIONS_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_SESSIONS_H_

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace phasekey::console {

struct Session {
  std::string id;             // the cookie's value
  std::string csrf;           // what every POST must carry
  std::string operator_name;  // given at login, written to the audit trail
  std::chrono::steady_clock::time_point expires;
};

class Sessions {
 public:
  // `token` must not be empty. Sessions last `lifetime` from login.
  Sessions(std::string token, std::chrono::minutes lifetime);

  // A new session if `token` is the operator token, else nullopt.
  std::optional<Session> Login(const std::string& token, const std::string& operator_name);
  // The live session with this id, or nullopt (unknown, expired or empty).
  std::optional<Session> Find(const std::string& id);
  void Logout(const std::string& id);

 private:
  const std::string token_;
  const std::chrono::minutes lifetime_;
  std::mutex mu_;
  std::map<std::string, Session> sessions_;  // by id; guarded by mu_
};

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_SESSIONS_H_
