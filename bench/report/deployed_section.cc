// Section 1c of docs/benchmarks.md: the service in the shape it is deployed
// in (bench/http_bench.cc, variants http/deployed/...): the gateway 20 ms
// away, over plain HTTP or TLS, the service's pool of connections to it on
// or off. Three goals of issue 34 are judged here: TLS with the pool costs
// the service little more CPU than plain HTTP, the pool keeps p50 near the
// gateway's own latency, and the HTTP front costs little more CPU than the
// engine in process (section 1b's plain runs beside section 1's).
#include <fmt/format.h>

#include <optional>
#include <string>

#include "report/section_util.h"
#include "report/sections.h"

namespace phasekey::bench::report {
namespace {

constexpr int kLatencyMs = 20;  // bench/http_bench.cc's deployed shapes
constexpr const char* kTitle = "1c. The service with its provider over TLS";

std::string Variant(const std::string& gateway, const std::string& pool) {
  return "deployed/gateway:" + gateway + "/latency_ms:" + std::to_string(kLatencyMs) + "/pool:" + pool;
}

// The run of a shape at `connections`, or nullptr when missing or failed.
const Run* Shape(const Family& f, const std::string& gateway, const std::string& pool, int connections) {
  const Run* r = f.Find(Variant(gateway, pool), "connections:" + std::to_string(connections));
  return r != nullptr && r->error.empty() ? r : nullptr;
}

std::string Table(const Family& f) {
  int rows = 0;
  std::string md =
      "| gateway | pool | connections | rps | p50 ms | p99 ms | failed | CPU µs/ride: ride_booking | fake_gateway | "
      "PostgreSQL | busy cores |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const char* gateway : {"plain", "tls"}) {
    for (const char* pool : {"on", "off"}) {
      for (int c : {1, 16}) {
        const Run* r = f.Find(Variant(gateway, pool), "connections:" + std::to_string(c));
        if (r == nullptr) continue;
        ++rows;
        if (!r->error.empty()) {
          md += fmt::format("| {} | {} | {} | {} |||||||\n", gateway, pool, c, Failed(r));
          continue;
        }
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", gateway, pool, c,
                          Num(r->Counter("rps"), 0), Num(r->Counter("p50_ms")), Num(r->Counter("p99_ms")),
                          Num(r->Counter("failures"), 0), Num(r->Counter("cpu_us_per_req_ride_booking"), 0),
                          Num(r->Counter("cpu_us_per_req_fake_gateway"), 0),
                          Num(r->Counter("cpu_us_per_req_postgres"), 0), Num(r->Counter("machine_busy_cores")));
      }
    }
  }
  if (rows == 0) {
    return "This run has no runs of the deployed shape (the http family's `deployed/...` variants): it predates "
           "them.\n\n";
  }
  return md + "\n";
}

// Service CPU per ride over TLS / over plain HTTP, both with the pool.
void TlsCpuGoal(const Family& f, std::string* md, Goals* goals) {
  const Run* tls = Shape(f, "tls", "on", 16);
  const Run* plain = Shape(f, "plain", "on", 16);
  const Run* no_pool = Shape(f, "tls", "off", 16);
  std::optional<double> ratio;
  std::string limit;
  if (tls != nullptr && plain != nullptr && plain->Counter("cpu_us_per_req_ride_booking") > 0) {
    ratio = tls->Counter("cpu_us_per_req_ride_booking") / plain->Counter("cpu_us_per_req_ride_booking");
    limit = fmt::format("ride_booking {} µs per ride over TLS vs {} over plain HTTP (pool on); without the pool {} µs",
                        Num(tls->Counter("cpu_us_per_req_ride_booking"), 0),
                        Num(plain->Counter("cpu_us_per_req_ride_booking"), 0),
                        no_pool ? Num(no_pool->Counter("cpu_us_per_req_ride_booking"), 0) : "-");
    *md +=
        fmt::format("**Service CPU per ride, TLS / plain HTTP, pool on, 16 connections: {}** (goal <= {}: {}). {}.\n\n",
                    Num(*ratio), kTlsCpuGoal, *ratio <= kTlsCpuGoal ? "met" : "missed", limit);
  }
  goals->Add({"service CPU per ride, provider over TLS / plain, pool on",
              fmt::format("<= {} at 16 connections", kTlsCpuGoal), ratio ? Num(*ratio) : "",
              ratio ? std::optional<bool>(*ratio <= kTlsCpuGoal) : std::nullopt,
              ratio && *ratio > kTlsCpuGoal ? limit : "", kTitle});
}

// p50 over TLS with the pool, against the gateway's own latency.
void P50Goal(const Family& f, std::string* md, Goals* goals) {
  const Run* tls = Shape(f, "tls", "on", 16);
  std::optional<double> over;
  std::string limit;
  if (tls != nullptr) {
    over = tls->Counter("p50_ms") - kLatencyMs;
    limit = fmt::format("p50 {} ms, of which the gateway's {} ms; {} of the machine's cores busy",
                        Num(tls->Counter("p50_ms")), kLatencyMs, Num(tls->Counter("machine_busy_cores")));
    *md += fmt::format(
        "**p50 over TLS with the pool at 16 connections: {} ms above the gateway's {} ms** (goal <= {}: {}).\n\n",
        Num(*over), kLatencyMs, kDeployedP50SlackMs, *over <= kDeployedP50SlackMs ? "met" : "missed");
  }
  goals->Add({"p50 over TLS with the pool, minus the gateway's latency",
              fmt::format("<= {} ms at 16 connections", kDeployedP50SlackMs), over ? Num(*over) + " ms" : "",
              over ? std::optional<bool>(*over <= kDeployedP50SlackMs) : std::nullopt,
              over && *over > kDeployedP50SlackMs ? limit : "", kTitle});
}

// The service's CPU per ride over HTTP (section 1b, plain, 16 connections)
// against the engine's client CPU per ride in process (section 1).
void FrontCpuGoal(const Input& http, const Input& durability, std::string* md, Goals* goals) {
  const Run* service = http.family->Find("ride_booking", "connections:16");
  const Run* engine = durability.family ? durability.family->Find("phasekey", "clients:16") : nullptr;
  if (service != nullptr && !service->error.empty()) service = nullptr;
  if (engine != nullptr && !engine->error.empty()) engine = nullptr;
  std::optional<double> ratio;
  std::string limit;
  const bool same_run = http.rerun == durability.rerun;
  if (service != nullptr && engine != nullptr && engine->Counter("client_cpu_us_per_req") > 0) {
    ratio = service->Counter("cpu_us_per_req_ride_booking") / engine->Counter("client_cpu_us_per_req");
    limit = fmt::format(
        "ride_booking {} µs per ride against the engine's {} in process: the HTTP server (a network thread hands "
        "each request to a handler thread and back, and the kernel switches threads at each hand-off), the "
        "gateway call over HTTP, which the in-process run makes in the process, and the request log line; the "
        "service runs no statement of its own per ride (its tokens are in memory)",
        Num(service->Counter("cpu_us_per_req_ride_booking"), 0), Num(engine->Counter("client_cpu_us_per_req"), 0));
    *md += fmt::format(
        "**Service CPU per ride over HTTP / the engine's client CPU per ride in process, 16 connections: "
        "{}** (goal <= {}: {}). {}.\n\n",
        Num(*ratio), kFrontCpuGoal,
        !same_run                 ? "not judged: the in-process figure comes from another run"
        : *ratio <= kFrontCpuGoal ? "met"
                                  : "missed",
        limit);
  }
  goals->Add({"service CPU per ride over HTTP / engine client CPU in process",
              fmt::format("<= {} at 16 connections", kFrontCpuGoal),
              ratio ? Num(*ratio) + (same_run ? "" : kDifferentRuns) : "",
              ratio && same_run ? std::optional<bool>(*ratio <= kFrontCpuGoal) : std::nullopt,
              ratio && same_run && *ratio > kFrontCpuGoal ? limit : "", kTitle});
}

}  // namespace

std::string DeployedSection(const Input& http, const Input& durability, Goals* goals) {
  if (!http.family) return Missing(kTitle, http);
  const Family& f = *http.family;
  std::string md = std::string("## ") + kTitle + "\n\n" +
                   fmt::format(
                       "The service of section 1b with its provider as it is in production: `fake_gateway "
                       "--latency-ms {}` (each charge waits that long before it answers), over plain HTTP or over "
                       "TLS (a certificate of a CA made for the run, trusted through `--provider-ca-file`), with "
                       "the service's keep-alive pool to the provider on or off (`--no-provider-keep-alive`: a "
                       "TCP connection and a full TLS handshake per charge). Each shape restarts both processes "
                       "against the same database. Goals: with the pool, the service's CPU per ride over TLS "
                       "within {} times plain HTTP's, and p50 at most the gateway's latency plus {} ms, at 16 "
                       "connections; and section 1b's service CPU per ride at most {} times the engine's client "
                       "CPU per ride in process (section 1).\n\n",
                       kLatencyMs, kTlsCpuGoal, kDeployedP50SlackMs, kFrontCpuGoal);
  md += Table(f);
  TlsCpuGoal(f, &md, goals);
  P50Goal(f, &md, goals);
  FrontCpuGoal(http, durability, &md, goals);
  return md;
}

}  // namespace phasekey::bench::report
