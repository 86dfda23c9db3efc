// MetricsRoutes (phasekey/tools/metrics_routes.h).
#include "phasekey/tools/metrics_routes.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <utility>

namespace phasekey {
namespace {

using Clock = std::chrono::system_clock;

bool IsGet(const HttpRequest& req, std::string_view path) {
  return (req.method == "GET" || req.method == "HEAD") && req.target == path;
}

Response MetricsPage(const Metrics& metrics) {
  Response r;
  r.headers.Add("Content-Type", "text/plain; version=0.0.4");
  r.body = metrics.Exposition();
  return r;
}

// The health of every role, judged at `now`; `since` stands in for a role
// that has not polled yet.
Response Health(const Metrics& metrics, const std::vector<WorkerLiveness>& liveness, Clock::time_point since,
                Clock::time_point now) {
  bool all_ok = true;
  nlohmann::json roles = nlohmann::json::object();
  for (const WorkerLiveness& l : liveness) {
    const std::optional<Clock::time_point> last = metrics.LastPoll(l.role);
    const auto age = std::chrono::duration<double>(now - last.value_or(since));
    const bool ok = age <= l.within;
    all_ok = all_ok && ok;
    roles[l.role] = {{"last_poll_age_s", last ? nlohmann::json(age.count()) : nlohmann::json(nullptr)},
                     {"within_s", std::chrono::duration<double>(l.within).count()},
                     {"ok", ok}};
  }
  Response r;
  r.status = all_ok ? 200 : 503;
  r.headers.Add("Content-Type", "application/json");
  r.headers.Add("Cache-Control", "no-store");
  r.body = nlohmann::json{{"status", all_ok ? "ok" : "late"}, {"roles", roles}}.dump();
  return r;
}

}  // namespace

PlainRoutes MetricsRoutes(std::shared_ptr<const Metrics> metrics, std::vector<WorkerLiveness> liveness) {
  const Clock::time_point since = Clock::now();
  return [metrics = std::move(metrics), liveness = std::move(liveness), since](
             const HttpRequest& req, const std::string*) -> std::optional<Response> {
    if (IsGet(req, "/metrics")) return MetricsPage(*metrics);
    if (IsGet(req, "/healthz")) return Health(*metrics, liveness, since, Clock::now());
    return std::nullopt;
  };
}

Result<std::unique_ptr<HttpServer>> StartMetricsServer(const HostPort& at, std::shared_ptr<const Metrics> metrics,
                                                       std::vector<WorkerLiveness> liveness) {
  HttpServerOptions o;
  o.address = at.host;
  o.port = at.port;
  o.io_threads = 1;
  o.handler_threads = 1;
  o.authenticate = [](const HttpRequest&) { return std::optional<std::string>(); };
  o.plain_routes = MetricsRoutes(std::move(metrics), std::move(liveness));
  auto server = std::make_unique<HttpServer>(std::move(o));
  if (Status s = server->Start(); !s.ok()) return s;
  return server;
}

}  // namespace phasekey
