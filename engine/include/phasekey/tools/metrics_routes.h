// MetricsRoutes: /metrics and /healthz as plain routes of an HttpServer, so
// an application or a worker process serves its Metrics without writing the
// routes itself.
//
//   GET /metrics  Metrics::Exposition(), Prometheus text format 0.0.4
//   GET /healthz  200 while every WorkerLiveness holds, else 503; the body
//                 is JSON either way: {"status":"ok"|"late","roles":{
//                 "<role>":{"last_poll_age_s":<seconds or null>,
//                 "within_s":<seconds>,"ok":<bool>}}}
//
// Both answer without an account (a scraper or a load balancer has none):
// bind the server to loopback or a private network. HEAD is answered like
// GET (the server drops the body). Other requests pass on (nullopt).
#ifndef PHASEKEY_TOOLS_METRICS_ROUTES_H_
#define PHASEKEY_TOOLS_METRICS_ROUTES_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "phasekey/metrics.h"
#include "phasekey/status.h"
#include "phasekey/tools/host_port.h"
#include "phasekey/tools/http_server.h"

namespace phasekey {

// One worker role a /healthz checks: it holds while the role's worker made
// a poll without error (Metrics::WorkerPolled) within `within`. Before its
// first poll, the time since the routes were made counts instead, so a
// worker that is starting has `within` to make one.
struct WorkerLiveness {
  std::string role;                  // "redrive", "reaper" or "enqueuer"
  std::chrono::milliseconds within;  // a few poll intervals plus the longest round
};

// The routes above over `metrics` (must not be null; shared with the
// returned function). Thread-safe, as PlainRoutes must be.
PlainRoutes MetricsRoutes(std::shared_ptr<const Metrics> metrics, std::vector<WorkerLiveness> liveness = {});

// A started server of those routes only (one I/O and one handler thread,
// no authentication) on `at` (port 0: any free one; see port()), for a
// worker process. Start()'s errors: a bad address, or one that cannot be
// bound. The server stops when destroyed.
Result<std::unique_ptr<HttpServer>> StartMetricsServer(const HostPort& at, std::shared_ptr<const Metrics> metrics,
                                                       std::vector<WorkerLiveness> liveness);

}  // namespace phasekey

#endif  // PHASEKEY_TOOLS_METRICS_ROUTES_H_
