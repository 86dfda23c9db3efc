#include "support/bench_main.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "support/bench_database.h"

namespace phasekey::bench {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  }
  return "unknown";
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

void AddMachineContext(const BenchConfig& config) {
  benchmark::AddCustomContext("phasekey.family", FamilyName());
  benchmark::AddCustomContext("phasekey.mode", config.quick ? "quick" : "full");
  benchmark::AddCustomContext("machine.online_cpus", std::to_string(std::thread::hardware_concurrency()));
  benchmark::AddCustomContext("machine.cpu_model", CpuModel());
  benchmark::AddCustomContext("machine.loadavg_at_start", LoadAverage());
  const char* commit = std::getenv("PHASEKEY_BENCH_COMMIT");
  benchmark::AddCustomContext("phasekey.commit", commit != nullptr ? commit : "unknown");
  const char* cmd = std::getenv("PHASEKEY_BENCH_COMMAND");
  benchmark::AddCustomContext("phasekey.command", cmd != nullptr ? cmd : "(run by hand)");
}

std::vector<std::function<void()>>& EndHooks() {
  static std::vector<std::function<void()>> hooks;
  return hooks;
}

}  // namespace

void AtFamilyEnd(std::function<void()> fn) { EndHooks().push_back(std::move(fn)); }

void Progress(const std::string& what) {
  std::fprintf(stderr, "[%s] %s\n", FamilyName(), what.c_str());
  std::fflush(stderr);
}

void AddServerContext(const std::string& url) {
  for (const auto& [name, value] : ServerSettings(url)) benchmark::AddCustomContext("pg." + name, value);
  benchmark::AddCustomContext("pg.source", std::getenv("PHASEKEY_BENCH_PG") != nullptr
                                               ? std::getenv("PHASEKEY_BENCH_PG")
                                               : "DATABASE_URL or embedded PostgreSQL 15");
}

benchmark::internal::Benchmark* RegisterBatch(const std::string& name, std::function<void(benchmark::State&)> fn,
                                              int repetitions) {
  return benchmark::RegisterBenchmark(name.c_str(),
                                      [fn = std::move(fn), name](benchmark::State& state) {
                                        Progress(name);
                                        fn(state);
                                      })
      ->Iterations(1)
      ->Repetitions(repetitions)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

void ReportLoad(benchmark::State& state, const LoadStats& s) {
  for (auto _ : state) state.SetIterationTime(s.wall_s > 0 ? s.wall_s : 1e-9);
  state.counters["requests"] = static_cast<double>(s.requests);
  state.counters["failures"] = static_cast<double>(s.failures);
  state.counters["rps"] = s.rps;
  state.counters["p50_ms"] = s.p50_ms;
  state.counters["p90_ms"] = s.p90_ms;
  state.counters["p99_ms"] = s.p99_ms;
  state.counters["max_ms"] = s.max_ms;
  state.counters["mean_ms"] = s.mean_ms;
  state.counters["client_cpu_us_per_req"] = s.client_cpu_us_per_req;
  state.counters["client_sys_us_per_req"] = s.client_sys_us_per_req;
  if (s.requests == 0 || s.failures == s.requests) {
    state.SkipWithError(("every request failed: " + s.first_error).c_str());
  } else if (s.failures > 0) {
    Progress("  " + std::to_string(s.failures) + " requests failed; first error: " + s.first_error);
  }
}

void ReportServerCounts(benchmark::State& state, const ServerCounts& before, const ServerCounts& after,
                        std::int64_t sent) {
  const double n = static_cast<double>(sent > 0 ? sent : 1);
  state.counters["server_tx_per_req"] = static_cast<double>(after.commits - before.commits) / n;
  state.counters["server_rollbacks_per_req"] = static_cast<double>(after.rollbacks - before.rollbacks) / n;
  state.counters["wal_bytes_per_req"] = static_cast<double>(after.wal_bytes - before.wal_bytes) / n;
  if (before.server_cpu_us >= 0 && after.server_cpu_us >= 0) {
    state.counters["server_cpu_us_per_req"] = (after.server_cpu_us - before.server_cpu_us) / n;
  }
}

namespace {

// Runs the family's end hooks, last registered first, while the process's
// server and its URL still exist (static destructors would run them after).
void RunEndHooks() {
  auto& hooks = EndHooks();
  for (auto it = hooks.rbegin(); it != hooks.rend(); ++it) (*it)();
  hooks.clear();
}

}  // namespace

int Main(int argc, char** argv) {
  BenchConfig config;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      config.quick = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  AddMachineContext(config);
  Progress(std::string("family starts (") + (config.quick ? "quick" : "full") + ")");
  try {
    RegisterFamily(config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[%s] cannot set up: %s\n", FamilyName(), e.what());
    RunEndHooks();  // drops the family's databases
    return 1;
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  RunEndHooks();
  Progress("family done");
  return 0;
}

}  // namespace phasekey::bench

int main(int argc, char** argv) { return phasekey::bench::Main(argc, argv); }
