// ConsoleServer's insides, shared by console_server.cc (sessions, security,
// routing) and console_routes.cc (the screens and actions).
#ifndef PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_IMPL_H_
#define PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_IMPL_H_

#include <map>
#include <memory>
#include <string>

#include "console/console_server.h"
#include "console/graph.h"
#include "console/login_limit.h"
#include "console/pages.h"
#include "console/sessions.h"
#include "phasekey/tools/http_server.h"
#include "seal/sealer.h"

namespace phasekey::console {

// An HTML (or other) answer with the console's security headers.
Response Respond(int status, std::string body, std::string content_type = "text/html; charset=utf-8");
Response Redirect(const std::string& location);
// 400 with an RFC 9457 problem body of type bad-filter (docs/console.md):
// `detail` says which filter value is not one (admin::FilterProblem).
Response BadFilter(const std::string& detail);

class ConsoleServer::Impl {
 public:
  explicit Impl(ConsoleOptions options);

  Response Answer(const HttpRequest& req);

  ConsoleOptions options;
  Sessions sessions;
  LoginLimit login_limit;
  GraphRenderer graphs;
  std::unique_ptr<HttpHandler> handler;  // unused routes; HttpServer needs one
  std::unique_ptr<HttpServer> server;
  // Opens sealed bodies for reveals: options.encryption's keys, read by
  // Start(); disabled until then, or without them.
  std::unique_ptr<seal::Sealer> sealer = std::make_unique<seal::Sealer>();

 private:
  Response Login(const HttpRequest& req);
  // The session cookie's name and attributes (ConsoleOptions::secure_cookies).
  const char* CookieName() const;
  std::string CookieAttributes() const;
  // 429 with an RFC 9457 problem body and Retry-After: `wait`.
  Response TooManyLogins(std::chrono::seconds wait) const;
  // Routes of a logged-in operator; `form` is the POST body's fields.
  Response Route(const HttpRequest& req, const Session& session, const std::map<std::string, std::string>& form);

  // console_routes.cc
  Response Overview(const PageContext& ctx, bool fragment_only);
  Response Keys(const PageContext& ctx, const std::map<std::string, std::string>& query);
  Response Key(const PageContext& ctx, const std::map<std::string, std::string>& query);
  Response Confirm(const PageContext& ctx, const std::map<std::string, std::string>& query);
  Response Flows(const PageContext& ctx);
  Response Action(const PageContext& ctx, const std::map<std::string, std::string>& form);
  Response Reveal(const PageContext& ctx, const std::map<std::string, std::string>& form);

  // batch_routes.cc: GET /keys/batch counts and confirms, POST /keys/batch
  // acts (admin/key_batch.h).
  Response BatchConfirm(const PageContext& ctx, const std::map<std::string, std::string>& query);
  Response BatchRun(const PageContext& ctx, const std::map<std::string, std::string>& form);

  // The flow named `name`, or null.
  const Flow* FindFlow(const std::string& name) const;
};

}  // namespace phasekey::console

#endif  // PHASEKEY_TOOLS_SRC_CONSOLE_CONSOLE_IMPL_H_
