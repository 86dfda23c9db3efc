// ConsoleServer: the operator console (`phasekey console`), HTML pages over
// the project's HttpServer (phasekey/tools/http_server.h) on the operator queries
// the CLI uses (admin/key_admin.h) and its own (console_queries.h).
//
// Security contract:
// - Every page but /login and /static/* needs a session: the cookie
//   `phasekey_console` (HttpOnly, SameSite=Strict, Path=/) that POST /login
//   sets for the right token. Without one, a GET is sent to /login and
//   anything else gets 401. Wrong tokens are limited per client address
//   (ConsoleOptions::login_attempts).
// - Every POST carries the session's CSRF token in the form field `csrf`
//   (403 otherwise), and one with an Origin header must come from the
//   console's own host. State changes are POST only (405 for other methods).
// - With read_only, the action buttons are not shown and POST /key/action
//   answers 403.
// - Stored bodies are shown only when an operator reveals one key's (POST
//   /key/reveal, audited, masked with the flow's pointers; refused in
//   read_only mode: reading personal data is a privileged act).
// - Every answer carries a Content-Security-Policy that allows only this
//   origin's script and style and no inline script or style, nosniff,
//   same-origin referrers only, no framing and no caching.
// Thread-safe: pages are answered on the HttpServer's handler threads.
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_SERVER_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "phasekey/data_protection.h"
#include "phasekey/flow.h"
#include "phasekey/http.h"
#include "phasekey/status.h"

namespace phasekey::console {

struct ConsoleOptions {
  std::string database_url;
  std::string address = "127.0.0.1";  // an IP literal
  std::uint16_t port = 8090;          // 0: an ephemeral port (see port())
  std::string token;                  // required: what the login form asks for
  bool read_only = false;
  int buckets = 0;  // 0: the deployment's, from the database (as the CLI's --buckets)
  // After `login_attempts` wrong tokens from one client address within
  // `login_window` (from its first), POST /login from it answers 429 (an
  // RFC 9457 problem, Retry-After) until the window ends, right token or not.
  int login_attempts = 10;
  std::chrono::seconds login_window{300};
  // Behind a TLS proxy: the session cookie is `__Host-phasekey_console`
  // with `Secure`, so a browser sends it over HTTPS only and no other path
  // or subdomain can set it. Off by default: the console serves plain HTTP
  // on loopback, where a Secure cookie would never come back.
  bool secure_cookies = false;
  // The key-encryption keys that open sealed bodies for a reveal; without
  // a source, a reveal of a sealed key is refused with a message. Start()
  // reads them (its error when they cannot be read).
  EncryptionOptions encryption;
  // The flows this binary knows: their graphs are drawn; keys of other flows
  // are shown without one.
  std::vector<std::shared_ptr<const Flow>> flows;
};

class ConsoleServer {
 public:
  explicit ConsoleServer(ConsoleOptions options);
  ~ConsoleServer();
  ConsoleServer(const ConsoleServer&) = delete;
  ConsoleServer& operator=(const ConsoleServer&) = delete;

  // InvalidArgument without a token; LoadKeyring's error for
  // `encryption`; otherwise HttpServer::Start's.
  Status Start();
  void Stop();
  std::uint16_t port() const;

  // Answers one request (what the HTTP server calls; public for tests of
  // the routing without sockets).
  Response Answer(const HttpRequest& req);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// True for 127.0.0.0/8 and ::1.
bool IsLoopbackAddress(const std::string& address);

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_SERVER_H_
