// ConsoleServer: sessions, security headers and routing (console_server.h).
#include "console/console_server.h"

#include <arpa/inet.h>

#include "console/assets.h"
#include "console/console_impl.h"
#include "console/web.h"
#include "seal/keyring.h"
#include "util/json_log.h"
#include "util/utf8.h"

namespace phasekey::console {
namespace {

constexpr char kCookie[] = "phasekey_console";
constexpr char kSecureCookie[] = "__Host-phasekey_console";  // ConsoleOptions::secure_cookies
// Operator names are cut to this many characters (the audit trail's limit).
constexpr std::size_t kMaxOperatorName = 100;
constexpr std::chrono::minutes kSessionLifetime{12 * 60};
// Where the "type" of the console's problem bodies points (docs/console.md).
constexpr char kDocsUrl[] = "https://phasekey.dev/docs/console";

std::string HeaderOf(const HttpRequest& req, std::string_view name) {
  const std::string* v = req.headers.Find(name);
  return v == nullptr ? "" : *v;
}

// A POST from another origin carries an Origin header that does not name
// this host (browsers send Origin on every cross-origin POST).
bool SameOrigin(const HttpRequest& req) {
  const std::string origin = HeaderOf(req, "Origin");
  if (origin.empty()) return true;
  const std::string host = HeaderOf(req, "Host");
  return origin == "http://" + host || origin == "https://" + host;
}

// The console's security headers, on every answer.
void AddSecurityHeaders(Response& res) {
  res.headers.Add("Content-Security-Policy",
                  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
                  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  res.headers.Add("X-Content-Type-Options", "nosniff");
  // same-origin, not no-referrer: under no-referrer browsers send "Origin:
  // null" with the console's own form posts, which SameOrigin refuses.
  res.headers.Add("Referrer-Policy", "same-origin");
  res.headers.Add("X-Frame-Options", "DENY");
  res.headers.Add("Cache-Control", "no-store");
}

}  // namespace

Response Respond(int status, std::string body, std::string content_type) {
  Response res;
  res.status = status;
  res.headers.Add("Content-Type", std::move(content_type));
  AddSecurityHeaders(res);
  res.body = std::move(body);
  return res;
}

Response BadFilter(const std::string& detail) {
  Response res = ProblemResponse({400, "bad-filter", "Bad filter", detail}, kDocsUrl);
  AddSecurityHeaders(res);
  return res;
}

Response Redirect(const std::string& location) {
  Response res = Respond(303, "");
  res.headers.Add("Location", location);
  return res;
}

bool IsLoopbackAddress(const std::string& address) {
  in_addr v4{};
  if (::inet_pton(AF_INET, address.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, address.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

ConsoleServer::Impl::Impl(ConsoleOptions o)
    : options(std::move(o)),
      sessions(options.token, kSessionLifetime),
      login_limit(options.login_attempts, options.login_window) {}

Response ConsoleServer::Impl::Answer(const HttpRequest& req) {
  const std::string_view path = PathOf(req.target);
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (get && path == "/static/console.css") return Respond(200, std::string(ConsoleCss()), "text/css; charset=utf-8");
  if (get && path == "/static/console.js") {
    return Respond(200, std::string(ConsoleJs()), "text/javascript; charset=utf-8");
  }
  if (path == "/login") {
    if (get) return Respond(200, LoginPage(""));
    if (req.method == "POST") return Login(req);
    return Respond(405, LoginPage("Use the form."));
  }
  std::optional<Session> session = sessions.Find(CookieValue(HeaderOf(req, "Cookie"), CookieName()));
  if (!session) {
    if (get) return Redirect("/login");
    return Respond(401, LoginPage("Log in first."));
  }
  std::map<std::string, std::string> form;
  if (req.method == "POST") {
    form = ParseForm(req.body);
    auto csrf = form.find("csrf");
    if (csrf == form.end() || !SecretEquals(csrf->second, session->csrf) || !SameOrigin(req)) {
      return Respond(403, MessagePage({&*session, options.read_only}, "Refused",
                                      "The form was not sent from this console (missing or wrong CSRF token)."));
    }
  } else if (!get) {
    return Respond(405, MessagePage({&*session, options.read_only}, "Refused", "Method not allowed."));
  }
  return Route(req, *session, form);
}

const char* ConsoleServer::Impl::CookieName() const { return options.secure_cookies ? kSecureCookie : kCookie; }

std::string ConsoleServer::Impl::CookieAttributes() const {
  return std::string("; HttpOnly; SameSite=Strict; Path=/") + (options.secure_cookies ? "; Secure" : "");
}

Response ConsoleServer::Impl::Login(const HttpRequest& req) {
  // A login form posted from another site neither logs in nor counts
  // against the address: no page elsewhere can lock the operator out.
  if (!SameOrigin(req)) return Respond(403, LoginPage("The form was not sent from this console."));
  std::map<std::string, std::string> form = ParseForm(req.body);
  if (!util::ValidUtf8(form["name"])) return Respond(400, LoginPage("The name must be UTF-8 text."));
  std::string name(util::Utf8Prefix(form["name"], kMaxOperatorName));
  if (name.empty()) name = "operator";
  if (std::optional<std::chrono::seconds> wait = login_limit.Admit(req.peer_address)) {
    LogJson({{"level", "warn"},
             {"msg", "console login refused: too many wrong tokens"},
             {"address", req.peer_address},
             {"operator", name},
             {"retry_after_s", wait->count()}});
    return TooManyLogins(*wait);
  }
  std::optional<Session> s = sessions.Login(form["token"], name);
  if (!s) {
    LogJson({{"level", "warn"},
             {"msg", "console login failed: wrong token"},
             {"address", req.peer_address},
             {"operator", name}});
    return Respond(401, LoginPage("Wrong token."));
  }
  login_limit.Succeeded(req.peer_address);
  LogJson({{"level", "info"}, {"msg", "console login"}, {"address", req.peer_address}, {"operator", name}});
  Response res = Redirect("/");
  res.headers.Add("Set-Cookie", std::string(CookieName()) + "=" + s->id + CookieAttributes());
  return res;
}

Response ConsoleServer::Impl::TooManyLogins(std::chrono::seconds wait) const {
  Response res = ProblemResponse({429, "too-many-login-attempts", "Too many login attempts",
                                  std::to_string(options.login_attempts) + " wrong tokens from this address within " +
                                      std::to_string(options.login_window.count()) + " s: no login from it for " +
                                      std::to_string(wait.count()) + " s more."},
                                 kDocsUrl);
  AddSecurityHeaders(res);
  res.headers.Add("Retry-After", std::to_string(wait.count()));
  return res;
}

Response ConsoleServer::Impl::Route(const HttpRequest& req, const Session& session,
                                    const std::map<std::string, std::string>& form) {
  const PageContext ctx{&session, options.read_only};
  const std::string_view path = PathOf(req.target);
  if (req.method == "POST") {
    if (path == "/logout") {
      sessions.Logout(session.id);
      Response res = Redirect("/login");
      res.headers.Add("Set-Cookie", std::string(CookieName()) + "=" + CookieAttributes() + "; Max-Age=0");
      return res;
    }
    if (path == "/key/action") return Action(ctx, form);
    if (path == "/key/reveal") return Reveal(ctx, form);
    if (path == "/keys/batch") return BatchRun(ctx, form);
    return Respond(404, MessagePage(ctx, "Not found", "No such page."));
  }
  const std::map<std::string, std::string> query = ParseQuery(req.target);
  if (path == "/") return Overview(ctx, false);
  if (path == "/overview/live") return Overview(ctx, true);
  if (path == "/keys") return Keys(ctx, query);
  if (path == "/key") return Key(ctx, query);
  if (path == "/key/confirm") return Confirm(ctx, query);
  if (path == "/keys/batch") return BatchConfirm(ctx, query);
  if (path == "/flows") return Flows(ctx);
  if (path == "/key/action" || path == "/key/reveal") {
    return Respond(405, MessagePage(ctx, "Refused", "Actions are POST only."));
  }
  return Respond(404, MessagePage(ctx, "Not found", "No such page."));
}

ConsoleServer::ConsoleServer(ConsoleOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

ConsoleServer::~ConsoleServer() { Stop(); }

Status ConsoleServer::Start() {
  if (impl_->options.token.empty()) return Status::InvalidArgument("the console needs a token");
  if (impl_->options.encryption.enabled()) {
    auto ring = seal::LoadKeyring(impl_->options.encryption);
    if (!ring) return ring.error();
    impl_->sealer = std::make_unique<seal::Sealer>(std::move(*ring), impl_->options.encryption.data_key_cache);
  }
  impl_->handler =
      std::make_unique<HttpHandler>(HttpHandlerOptions{}, [](const std::string&, const Request&) { return Reply{}; });
  HttpServerOptions so;
  so.address = impl_->options.address;
  so.port = impl_->options.port;
  so.handler_threads = 4;
  // Sessions are the console's own; the server's authentication lets every
  // request through to the console's routes, which answer all of them.
  so.authenticate = [](const HttpRequest&) { return std::optional<std::string>("console"); };
  so.plain_routes = [impl = impl_.get()](const HttpRequest& req, const std::string*) {
    return std::optional<Response>(impl->Answer(req));
  };
  impl_->server = std::make_unique<HttpServer>(so, *impl_->handler);
  return impl_->server->Start();
}

void ConsoleServer::Stop() {
  if (impl_->server) impl_->server->Stop();
}

std::uint16_t ConsoleServer::port() const { return impl_->server ? impl_->server->port() : 0; }

Response ConsoleServer::Answer(const HttpRequest& req) { return impl_->Answer(req); }

}  // namespace phasekey::console
