// Family 3: throughput with distinct keys. phasekey records a key and its
// stored response (the one-phase "record" flow: claim and response in one
// transaction, one commit per request) beside the cheapest way to record a
// key at all: one prepared, autocommitted INSERT ... ON CONFLICT DO NOTHING
// per request. 1, 2, 4, 8 and 16 connections, one client thread each.
// Goal: phasekey at 16 connections reaches 0.8 of the baseline's rps.
#include <atomic>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "phasekey/metrics.h"
#include "phasekey/runner.h"
#include "support/bench_database.h"
#include "support/bench_flows.h"
#include "support/bench_main.h"
#include "support/exposition.h"

namespace phasekey::bench {
namespace {

std::unique_ptr<BenchDatabase> g_db;
std::atomic<int> g_run{0};

std::string Account(std::int64_t seq) { return "acct-" + std::to_string(seq % 64); }

LoadOptions Load(const BenchConfig& config, int connections) {
  LoadOptions o;
  o.clients = connections;
  o.requests = config.quick ? 400 : (connections == 1 ? 800 : 1500);
  o.warmup = WarmUpFor(connections);
  return o;
}

void RunPhasekey(benchmark::State& state, const LoadOptions& load) {
  RunnerOptions options;
  options.database.url = g_db->url();
  options.database.pool_size = static_cast<std::size_t>(load.clients);
  options.metrics = Metrics::Create();
  const ServerCounts before = ReadServerCounts(g_db->url());
  auto runner = Runner::Open(options, {MakeRecordFlow()});
  if (!runner) return state.SkipWithError(runner.error().ToString().c_str());
  const std::string prefix = "pk" + std::to_string(g_run++) + "-";
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    return [&](std::int64_t seq) {
      Reply r = (*runner)->Execute(
          "record", Request{Account(seq), prefix + std::to_string(seq), "POST", "/rides", RideBody(seq)});
      return r.kind == Reply::Kind::kCompleted;
    };
  });
  const double commits = testing::SampleOf(options.metrics->Exposition(), "phasekey_commits_total");
  runner->reset();
  ReportLoad(state, s);
  ReportServerCounts(state, before, ReadServerCounts(g_db->url()), load.requests + load.warmup);
  state.counters["commits_per_req"] = commits / static_cast<double>(load.requests + load.warmup);
}

void RunInsert(benchmark::State& state, const LoadOptions& load) {
  const std::string prefix = "raw" + std::to_string(g_run++) + "-";
  const ServerCounts before = ReadServerCounts(g_db->url());
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    auto conn = std::make_shared<pqxx::connection>(g_db->url());
    conn->prepare("insert_key",
                  "INSERT INTO raw_keys (account, idempotency_key, request_body) VALUES ($1, $2, $3) "
                  "ON CONFLICT (account, idempotency_key) DO NOTHING RETURNING id");
    return [&, conn](std::int64_t seq) {
      pqxx::nontransaction tx(*conn);
      return tx.exec_prepared("insert_key", Account(seq), prefix + std::to_string(seq), RideBody(seq)).size() == 1;
    };
  });
  ReportLoad(state, s);
  ReportServerCounts(state, before, ReadServerCounts(g_db->url()), load.requests + load.warmup);
  state.counters["commits_per_req"] = 1;
}

}  // namespace

const char* FamilyName() { return "throughput"; }

void RegisterFamily(const BenchConfig& config) {
  g_db = std::make_unique<BenchDatabase>("throughput");
  AtFamilyEnd([] { g_db.reset(); });
  {
    pqxx::connection conn(g_db->url());
    pqxx::work tx(conn);
    tx.exec0(
        "CREATE TABLE raw_keys (id bigserial PRIMARY KEY, account text NOT NULL, idempotency_key text NOT NULL, "
        "request_body text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), "
        "UNIQUE (account, idempotency_key))");
    tx.commit();
  }
  AddServerContext(g_db->url());
  const int reps = config.quick ? 2 : 5;
  for (int connections : {1, 2, 4, 8, 16}) {
    const LoadOptions load = Load(config, connections);
    const std::string c = "/connections:" + std::to_string(connections);
    RegisterBatch(
        "throughput/raw_insert_on_conflict" + c, [load](benchmark::State& s) { RunInsert(s, load); }, reps);
    RegisterBatch(
        "throughput/phasekey" + c, [load](benchmark::State& s) { RunPhasekey(s, load); }, reps);
  }
}

}  // namespace phasekey::bench
