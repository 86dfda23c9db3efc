// Small web helpers of the console: HTML escaping, URL and form encoding,
// cookies, secrets. No state; thread-safe.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_WEB_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_WEB_H_

#include <map>
#include <string>
#include <string_view>

namespace phasekey::console {

// Text for HTML element content and double-quoted attribute values: & < > "
// ' are escaped, and bytes below 0x20 other than tab and newline become
// U+FFFD, so no database value can open markup or an attribute.
std::string Html(std::string_view text);
// Percent-encodes everything but unreserved characters (RFC 3986).
std::string UrlEncode(std::string_view text);
// Decodes application/x-www-form-urlencoded (also a query string): '+' is a
// space, %XX a byte. A malformed escape is kept as is. A repeated name keeps
// its first value.
std::map<std::string, std::string> ParseForm(std::string_view body);
// The query string's pairs of a request target ("/keys?state=dead").
std::map<std::string, std::string> ParseQuery(std::string_view target);
// The path of a request target, without its query.
std::string_view PathOf(std::string_view target);
// The value of cookie `name` in a Cookie header value, or "".
std::string CookieValue(std::string_view header, std::string_view name);
// Compares secrets in time independent of where they differ.
bool SecretEquals(std::string_view a, std::string_view b);
// 32 random bytes (OpenSSL RAND_bytes) as 64 lowercase hex digits.
std::string RandomSecret();

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_WEB_H_
