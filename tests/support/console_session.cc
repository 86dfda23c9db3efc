#include "support/console_session.h"

namespace phasekey::testing {

std::string CsrfOf(const std::string& page) {
  const std::string marker = "name=\"csrf\" value=\"";
  const std::size_t at = page.find(marker);
  if (at == std::string::npos) return "";
  const std::size_t start = at + marker.size();
  return page.substr(start, page.find('"', start) - start);
}

bool ConsoleSession::LogIn(const std::string& name) {
  HttpResult r = HttpCall(port_, "POST", "/login", {{"Content-Type", "application/x-www-form-urlencoded"}},
                          "name=" + name + "&token=" + token_);
  set_cookie_ = r.Header("set-cookie");
  cookie_ = set_cookie_.substr(0, set_cookie_.find(';'));
  return r.status == 303 && !cookie_.empty();
}

HttpResult ConsoleSession::Get(const std::string& target) const {
  return HttpCall(port_, "GET", target, {{"Cookie", cookie_}}, "");
}

HttpResult ConsoleSession::Post(const std::string& target, const std::string& form) const {
  return HttpCall(port_, "POST", target, {{"Cookie", cookie_}, {"Content-Type", "application/x-www-form-urlencoded"}},
                  form);
}

std::string ConsoleSession::Csrf() const { return CsrfOf(Get("/").body); }

}  // namespace phasekey::testing
