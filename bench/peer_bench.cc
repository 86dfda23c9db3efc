// Family 7: the peer. The same three-step ride flow on DBOS Transact
// (bench/dbos/ride_flow.mjs, @dbos-inc/dbos-sdk 5.3.0 on Node.js) and on
// phasekey, against the same PostgreSQL server and database, at 1 and 16
// concurrent clients, driven by this binary: it starts the DBOS side as a
// child process with the same request count and warm-up, reads back every
// latency, and computes the figures with the same code as for phasekey.
// Counters: rps, latency percentiles, server transactions and WAL bytes per
// request (pg_stat_database, pg_current_wal_lsn).
//
// The DBOS side lives in $PHASEKEY_BENCH_DBOS_DIR (bench/run_all.sh installs
// it there with npm). When it is missing or fails, its runs are marked
// failed with the reason, printed and kept in the results; no figure is
// made up.
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/bench_database.h"
#include "support/bench_main.h"
#include "support/phasekey_ride.h"

namespace phasekey::bench {
namespace {

std::unique_ptr<BenchDatabase> g_db;
TestGateway g_gateway;
std::atomic<int> g_run{0};

LoadOptions Load(const BenchConfig& config, int clients) {
  LoadOptions o;
  o.clients = clients;
  o.requests = config.quick ? (clients == 1 ? 100 : 300) : (clients == 1 ? 500 : 2000);
  o.warmup = WarmUpFor(clients);
  return o;
}

// Why the DBOS side cannot run, or "" when it looks installed.
std::string DbosUnavailable(std::string* dir) {
  const char* env = std::getenv("PHASEKEY_BENCH_DBOS_DIR");
  if (env == nullptr || *env == '\0') return "PHASEKEY_BENCH_DBOS_DIR is not set (run through ./run.sh bench)";
  *dir = env;
  std::ifstream reason(*dir + "/UNAVAILABLE");
  if (reason) {
    std::stringstream ss;
    ss << reason.rdbuf();
    return ss.str();
  }
  if (!std::filesystem::exists(*dir + "/node_modules/@dbos-inc/dbos-sdk/package.json")) {
    return "@dbos-inc/dbos-sdk is not installed in " + *dir;
  }
  return "";
}

void Finish(benchmark::State& state, const LoadStats& s, const ServerCounts& before, const ServerCounts& after,
            std::int64_t sent) {
  ReportLoad(state, s);
  ReportServerCounts(state, before, after, sent);
}

void RunPhasekey(benchmark::State& state, const LoadOptions& load) {
  const ServerCounts before = ReadServerCounts(g_db->url());
  auto run = RunPhasekeyRides(g_db->url(), load, "pk" + std::to_string(g_run++) + "-", &g_gateway);
  if (!run) return state.SkipWithError(run.error().ToString().c_str());
  const ServerCounts after = ReadServerCounts(g_db->url());
  Finish(state, run->stats, before, after, load.requests + load.warmup);
  state.counters["commits_per_req"] = run->commits_per_req;
}

void RunDbos(benchmark::State& state, const LoadOptions& load) {
  std::string dir;
  if (std::string why = DbosUnavailable(&dir); !why.empty()) {
    Progress("DBOS side skipped: " + why);
    return state.SkipWithError(("DBOS unavailable: " + why).c_str());
  }
  const ServerCounts before = ReadServerCounts(g_db->url());
  const std::string cmd = "cd '" + dir + "' && node ride_flow.mjs '" + g_db->url() + "' " +
                          std::to_string(load.clients) + " " + std::to_string(load.requests) + " " +
                          std::to_string(load.warmup) + " dbos" + std::to_string(g_run++) + "-";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return state.SkipWithError("cannot start node");
  std::string out;
  std::array<char, 65536> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int rc = ::pclose(pipe);
  nlohmann::json result = nlohmann::json::parse(out, nullptr, false);
  if (rc != 0 || result.is_discarded() || !result.contains("latencies_ms")) {
    const std::string why =
        "the DBOS run failed (exit status " + std::to_string(rc) + "); output: " + out.substr(0, 300);
    Progress(why);
    return state.SkipWithError(why.c_str());
  }
  const ServerCounts after = ReadServerCounts(g_db->url());
  LoadStats s;
  std::vector<double> latencies = result["latencies_ms"].get<std::vector<double>>();
  s.requests = static_cast<std::int64_t>(latencies.size());
  s.failures = result["failures"].get<std::int64_t>();
  s.wall_s = result["wall_s"].get<double>();
  s.rps = static_cast<double>(s.requests) / s.wall_s;
  s.p90_ms = Percentile(latencies, 0.90);
  const LatencySummary sum = Summarize(latencies);
  s.p50_ms = sum.p50_ms;
  s.p99_ms = sum.p99_ms;
  s.max_ms = sum.max_ms;
  s.mean_ms = sum.mean_ms;
  Finish(state, s, before, after, load.requests + load.warmup);
}

}  // namespace

const char* FamilyName() { return "peer"; }

void RegisterFamily(const BenchConfig& config) {
  g_db = std::make_unique<BenchDatabase>("peer");
  AtFamilyEnd([] { g_db.reset(); });
  CreateRideTables(g_db->url());
  AddServerContext(g_db->url());
  std::string dir;
  const std::string why = DbosUnavailable(&dir);
  const char* node = std::getenv("PHASEKEY_BENCH_NODE");
  benchmark::AddCustomContext("dbos.node", node != nullptr ? node : "unknown");
  benchmark::AddCustomContext("dbos.status", why.empty() ? "installed in " + dir : "unavailable: " + why);
  if (!why.empty()) Progress("DBOS side unavailable: " + why);
  const int reps = config.quick ? 1 : 2;
  for (int clients : {1, 16}) {
    const LoadOptions load = Load(config, clients);
    const std::string c = "/clients:" + std::to_string(clients);
    RegisterBatch(
        "peer/phasekey" + c, [load](benchmark::State& s) { RunPhasekey(s, load); }, reps);
    RegisterBatch(
        "peer/dbos" + c, [load](benchmark::State& s) { RunDbos(s, load); }, reps);
  }
}

}  // namespace phasekey::bench
