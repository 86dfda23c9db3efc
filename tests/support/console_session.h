// A logged-in operator of the console over real HTTP (support/http_client.h):
// logs in through the form, keeps the session cookie and the CSRF token the
// pages carry, for console tests.
#ifndef PHASEKEY_TESTS_SUPPORT_CONSOLE_SESSION_H_
#define PHASEKEY_TESTS_SUPPORT_CONSOLE_SESSION_H_

#include <cstdint>
#include <string>

#include "support/http_client.h"

namespace phasekey::testing {

// The value of the first `name="csrf" value="..."` in a page, or "".
std::string CsrfOf(const std::string& page);

class ConsoleSession {
 public:
  ConsoleSession(std::uint16_t port, std::string token) : port_(port), token_(std::move(token)) {}

  // POSTs the login form; true when it set a session cookie.
  bool LogIn(const std::string& name = "tester");
  HttpResult Get(const std::string& target) const;
  // POSTs a form (already encoded) with the session cookie.
  HttpResult Post(const std::string& target, const std::string& form) const;
  const std::string& cookie() const { return cookie_; }          // "phasekey_console=..."
  const std::string& set_cookie() const { return set_cookie_; }  // as the login answered it
  // The CSRF token, from the overview page.
  std::string Csrf() const;

 private:
  std::uint16_t port_;
  std::string token_;
  std::string cookie_, set_cookie_;
};

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_CONSOLE_SESSION_H_
