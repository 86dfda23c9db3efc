// Family "http": the ride service as deployed. `ride_booking serve` and
// `fake_gateway` run as their own processes on loopback against a fresh
// database of the bench server; Debian's wrk drives POST /rides with a
// fresh Idempotency-Key per request (bench/http/fresh_key.lua) at 1, 16 and
// 64 connections. bench_report sets the rps beside the durability family's
// in-process phasekey flow of the same run.
//
// Where the time goes: the CPU time (user+system, from /proc/<pid>/stat) of
// ride_booking, fake_gateway, the PostgreSQL server's processes (exited
// ones included: support/process_cpu.h, ServerCpuUs) and wrk
// during each measured run, per request, and the machine's busy time
// (/proc/stat) that none of them account for (other work on the machine).
//
// The deployed shape (issue 34): variants `http/deployed/gateway:G/
// latency_ms:20/pool:P/connections:C` run the gateway with 20 ms of latency
// per charge, over plain HTTP or TLS (a certificate of a CA made for the run,
// tests/support/test_certificates.h, trusted by the service through
// --provider-ca-file), with the service's connection pool to it on or off
// (--no-provider-keep-alive), and report the same figures: rides per second,
// p50/p99 and the CPU per ride of each process. Each shape restarts both
// processes (same database).
//
// wrk is $PHASEKEY_WRK, else /usr/bin/wrk (Debian package wrk).
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/bench_database.h"
#include "support/bench_main.h"
#include "support/child_process.h"
#include "support/load.h"
#include "support/process_cpu.h"
#include "support/test_certificates.h"

namespace phasekey::bench {
namespace {

namespace fs = std::filesystem;

struct Service {
  std::unique_ptr<BenchDatabase> db;
  fs::path gateway_dir;
  std::unique_ptr<testing::ChildProcess> gateway, service;
  std::uint16_t port = 0;
  pid_t postmaster = 0;
};
Service g;
int g_run = 0;

// How the gateway and the service's calls to it are set up.
struct Shape {
  bool tls = false;        // the gateway serves https only
  int latency_ms = 0;      // fake_gateway --latency-ms: each charge sleeps this long
  bool keep_alive = true;  // the service's pool of connections to the gateway
  bool operator==(const Shape&) const = default;
};
Shape g_shape;  // the shape of the processes running now

std::string Wrk() {
  const char* env = std::getenv("PHASEKEY_WRK");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/wrk";
}

// CPU time of every process that serves a request, read at one instant.
struct CpuSample {
  double ride_booking = 0, fake_gateway = 0, machine = 0;
  double postgres = 0;  // ServerCpuUs: every process of the server, exited ones included
};

CpuSample SampleCpu() {
  CpuSample s;
  s.ride_booking = ProcessCpuUs(g.service->pid());
  s.fake_gateway = ProcessCpuUs(g.gateway->pid());
  s.postgres = ServerCpuUs(g.postmaster);
  s.machine = MachineBusyUs();
  return s;
}

struct WrkRun {
  std::string error;
  nlohmann::json figures;
  double cpu_us = 0;
};

WrkRun RunWrk(int connections, int seconds) {
  WrkRun out;
  const std::string prefix = "r" + std::to_string(g_run++) + "p" + std::to_string(::getpid());
  std::vector<std::string> argv = {Wrk(),
                                   "--threads",
                                   std::to_string(connections < 2 ? 1 : 2),
                                   "--connections",
                                   std::to_string(connections),
                                   "--duration",
                                   std::to_string(seconds) + "s",
                                   "--timeout",
                                   "10s",
                                   "--script",
                                   std::string(PHASEKEY_SOURCE_DIR) + "/bench/http/fresh_key.lua",
                                   "http://127.0.0.1:" + std::to_string(g.port),
                                   "--",
                                   prefix};
  const double cpu0 = CpuUs(RUSAGE_CHILDREN);
  testing::RunResult r = testing::RunToEnd(argv);
  out.cpu_us = CpuUs(RUSAGE_CHILDREN) - cpu0;
  if (r.exit_code != 0) {
    out.error = "wrk exited with " + std::to_string(r.exit_code);
    return out;
  }
  const auto at = r.out.find("WRK_JSON ");
  if (at == std::string::npos) {
    out.error = "no WRK_JSON line in wrk's output";
    return out;
  }
  out.figures = nlohmann::json::parse(r.out.substr(at + 9, r.out.find('\n', at) - at - 9), nullptr, false);
  if (out.figures.is_discarded()) out.error = "wrk's WRK_JSON line is not JSON";
  return out;
}

void RunHttp(benchmark::State& state, int connections, int seconds) {
  if (!g.service) return state.SkipWithError("the service did not start (see the log above)");
  if (::access(Wrk().c_str(), X_OK) != 0) {
    return state.SkipWithError(("no wrk at " + Wrk() + " (Debian package wrk)").c_str());
  }
  WrkRun warm = RunWrk(connections, 1);
  if (!warm.error.empty()) return state.SkipWithError(("warm-up: " + warm.error).c_str());
  const CpuSample before = SampleCpu();
  WrkRun run = RunWrk(connections, seconds);
  const CpuSample after = SampleCpu();
  if (!run.error.empty()) return state.SkipWithError(run.error.c_str());
  const nlohmann::json& w = run.figures;
  const double requests = w.value("requests", 0.0);
  const double wall_s = w.value("duration_us", 0.0) / 1e6;
  for (auto _ : state) state.SetIterationTime(wall_s > 0 ? wall_s : 1e-9);
  const double failures = w.value("non201", 0.0) + w.value("socket_errors", 0.0);
  state.counters["requests"] = requests;
  state.counters["failures"] = failures;
  state.counters["rps"] = wall_s > 0 ? requests / wall_s : 0;
  state.counters["p50_ms"] = w.value("p50_us", 0.0) / 1000;
  state.counters["p90_ms"] = w.value("p90_us", 0.0) / 1000;
  state.counters["p99_ms"] = w.value("p99_us", 0.0) / 1000;
  state.counters["max_ms"] = w.value("max_us", 0.0) / 1000;
  state.counters["mean_ms"] = w.value("mean_us", 0.0) / 1000;
  // CPU per request, µs: each process, and what the machine was busy with
  // besides (other builds, the kernel's own threads, this binary).
  const double n = requests > 0 ? requests : 1;
  const double rb = after.ride_booking - before.ride_booking;
  const double gw = after.fake_gateway - before.fake_gateway;
  const double pg = after.postgres - before.postgres;
  const double machine = after.machine - before.machine;
  state.counters["cpu_us_per_req_ride_booking"] = rb / n;
  state.counters["cpu_us_per_req_fake_gateway"] = gw / n;
  state.counters["cpu_us_per_req_postgres"] = pg / n;
  state.counters["cpu_us_per_req_wrk"] = run.cpu_us / n;
  state.counters["cpu_us_per_req_other"] = (machine - rb - gw - pg - run.cpu_us) / n;
  state.counters["machine_busy_cores"] = wall_s > 0 ? machine / 1e6 / wall_s : 0;
  if (requests == 0 || failures >= requests) state.SkipWithError("no request answered 201");
}

void StartService(const Shape& shape) {
  g.gateway_dir = fs::temp_directory_path() / ("phasekey-bench-gateway-" + std::to_string(::getpid()));
  fs::remove_all(g.gateway_dir);
  fs::create_directories(g.gateway_dir);
  std::vector<std::string> gateway = {
      FAKE_GATEWAY_PATH, "--listen", "127.0.0.1:0", "--data-dir", (g.gateway_dir / "ledger").string(), "--seed", "7"};
  if (shape.latency_ms > 0) gateway.insert(gateway.end(), {"--latency-ms", std::to_string(shape.latency_ms)});
  if (shape.tls) {
    testing::MakeTestCertificates(g.gateway_dir.string());
    gateway.insert(gateway.end(), {"--tls-cert", (g.gateway_dir / "good.pem").string(), "--tls-key",
                                   (g.gateway_dir / "good.key").string()});
  }
  // Both log as deployed (ride_booking a JSON line per request), to files of
  // their own beside the ledger rather than into the results' log.
  g.gateway = std::make_unique<testing::ChildProcess>(gateway, std::vector<std::string>{},
                                                      g.gateway_dir.string() + ".gateway.log");
  const std::uint16_t gw_port = g.gateway->WaitForListeningPort();
  if (gw_port == 0) throw std::runtime_error("fake_gateway did not start");
  std::vector<std::string> serve = {
      RIDE_BOOKING_PATH, "serve",
      "--database-url",  g.db->url(),
      "--listen",        "127.0.0.1:0",
      "--gateway-url",   (shape.tls ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(gw_port)};
  if (shape.tls) serve.insert(serve.end(), {"--provider-ca-file", (g.gateway_dir / "ca.pem").string()});
  if (!shape.keep_alive) serve.emplace_back("--no-provider-keep-alive");
  auto service = std::make_unique<testing::ChildProcess>(serve, std::vector<std::string>{},
                                                         g.gateway_dir.string() + ".service.log");
  g.port = service->WaitForListeningPort();
  if (g.port == 0) throw std::runtime_error("ride_booking serve did not start");
  g.service = std::move(service);
  g_shape = shape;
  g.postmaster = LocalPostmaster(g.db->url());
  if (g.postmaster == 0) throw std::runtime_error("the server does not run on this machine: its CPU cannot be read");
}

void StopProcesses() {
  for (auto* child : {&g.service, &g.gateway}) {
    if (*child) {
      (*child)->Signal(SIGTERM);
      (*child)->Wait();
      child->reset();
    }
  }
  std::error_code ignored;
  fs::remove_all(g.gateway_dir, ignored);
  fs::remove(g.gateway_dir.string() + ".gateway.log", ignored);
  fs::remove(g.gateway_dir.string() + ".service.log", ignored);
}

void StopService() {
  StopProcesses();
  g.db.reset();
}

// Runs the service in `shape` (restarting both processes when another shape
// runs), then the wrk run.
void RunShape(benchmark::State& state, const Shape& shape, int connections, int seconds) {
  if (!g.service || !(g_shape == shape)) {
    StopProcesses();
    try {
      StartService(shape);
    } catch (const std::exception& e) {
      return state.SkipWithError(e.what());
    }
  }
  RunHttp(state, connections, seconds);
}

}  // namespace

const char* FamilyName() { return "http"; }

void RegisterFamily(const BenchConfig& config) {
  g.db = std::make_unique<BenchDatabase>("http");
  AtFamilyEnd(StopService);
  AddServerContext(g.db->url());
  StartService(Shape{});
  benchmark::AddCustomContext("http.wrk", Wrk());
  benchmark::AddCustomContext("http.script", "bench/http/fresh_key.lua");
  const int seconds = config.quick ? 4 : 10;
  const int reps = config.quick ? 1 : 3;
  for (int connections : {1, 16, 64}) {
    RegisterBatch(
        "http/ride_booking/connections:" + std::to_string(connections),
        [connections, seconds](benchmark::State& s) { RunShape(s, Shape{}, connections, seconds); }, reps);
  }
  // The deployed shape: a gateway 20 ms away, over plain HTTP or TLS, the
  // service's pool on or off.
  const Shape deployed[] = {{false, 20, true}, {true, 20, true}, {true, 20, false}};
  for (const Shape& shape : deployed) {
    for (int connections : {1, 16}) {
      const std::string name = "http/deployed/gateway:" + std::string(shape.tls ? "tls" : "plain") +
                               "/latency_ms:" + std::to_string(shape.latency_ms) +
                               "/pool:" + (shape.keep_alive ? "on" : "off") +
                               "/connections:" + std::to_string(connections);
      RegisterBatch(
          name, [shape, connections, seconds](benchmark::State& s) { RunShape(s, shape, connections, seconds); }, reps);
    }
  }
}

}  // namespace phasekey::bench
