#include "console/sessions.h"

#include "console/web.h"

namespace phasekey::console {

Sessions::Sessions(std::string token, std::chrono::minutes lifetime) : token_(std::move(token)), lifetime_(lifetime) {}

std::optional<Session> Sessions::Login(const std::string& token, const std::string& operator_name) {
  if (token_.empty() || !SecretEquals(token, token_)) return std::nullopt;
  Session s{RandomSecret(), RandomSecret(), operator_name, std::chrono::steady_clock::now() + lifetime_};
  std::lock_guard lock(mu_);
  // Forget expired sessions here, so the map stays as small as the logins
  // of one lifetime.
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(sessions_, [now](const auto& entry) { return entry.second.expires <= now; });
  sessions_[s.id] = s;
  return s;
}

std::optional<Session> Sessions::Find(const std::string& id) {
  if (id.empty()) return std::nullopt;
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.expires <= std::chrono::steady_clock::now()) return std::nullopt;
  return it->second;
}

void Sessions::Logout(const std::string& id) {
  std::lock_guard lock(mu_);
  sessions_.erase(id);
}

}  // namespace phasekey::console
