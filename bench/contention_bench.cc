// Family 2: lock contention on one key. Each round, N requests with the same
// (new) key start at the same instant (a latch), one thread and one
// connection each; the gateway call takes a fixed 20 ms so that an answer
// that waited for it shows. Four claim strategies side by side
// (claim_strategies.h), N = 1, 2, 4, 8, 16, 32, 64.
//
// Counters per strategy and N: executions per round (must be 1; the naive
// strategy's extra executions are counted, never hidden), rounds with a
// duplicate, the losers' answer latency p50/p99, the winner's p50, answers
// by kind (409, replayed, serialization failure answered 409, errors) and
// transactions the server rolled back (pg_stat_database). Beside them, at
// each N, `select_one`: a bare SELECT 1 round trip under the same burst.
#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "phasekey/runner.h"
#include "support/bench_database.h"
#include "support/bench_main.h"
#include "support/claim_strategies.h"
#include "support/server_stats.h"

namespace phasekey::bench {
namespace {

constexpr std::chrono::milliseconds kForeignCall{20};

std::unique_ptr<BenchDatabase> g_db;
std::atomic<int> g_run{0};

struct Tally {
  std::vector<double> loser_ms, winner_ms;
  long executed = 0, conflicts = 0, replayed = 0, serialization = 0, errors = 0;
  long duplicate_executions = 0, rounds_with_duplicates = 0;
};

void Count(ClaimAnswer a, double ms, Tally* t) {
  if (a == ClaimAnswer::kExecuted) {
    ++t->executed;
    t->winner_ms.push_back(ms);
    return;
  }
  t->loser_ms.push_back(ms);
  switch (a) {
    case ClaimAnswer::kConflict: ++t->conflicts; break;
    case ClaimAnswer::kReplayed: ++t->replayed; break;
    case ClaimAnswer::kSerialization: ++t->serialization; break;
    default: ++t->errors; break;
  }
}

// One round: `n` requests with one new key, released together.
void Round(std::vector<std::unique_ptr<Strategy>>& clients, const std::string& key, TestGateway* gateway,
           Tally* tally) {
  const int n = static_cast<int>(clients.size());
  std::vector<ClaimAnswer> answers(static_cast<std::size_t>(n), ClaimAnswer::kError);
  std::vector<double> ms(static_cast<std::size_t>(n), 0);
  const auto calls_before = gateway->calls();
  std::latch start(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      const auto t0 = std::chrono::steady_clock::now();
      answers[i] = clients[i]->Handle("acct-contention", key, R"({"amount":2000,"currency":"usd"})");
      ms[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < n; ++i) Count(answers[i], ms[i], tally);
  const long executions = static_cast<long>(gateway->calls() - calls_before);
  if (executions > 1) {
    tally->duplicate_executions += executions - 1;
    ++tally->rounds_with_duplicates;
  }
}

void Run(benchmark::State& state, StrategyKind kind, int n, int rounds) {
  TestGateway gateway(kForeignCall);
  const ServerCounts before = ReadServerCounts(g_db->url());
  std::unique_ptr<Runner> runner;
  if (kind == StrategyKind::kPhasekey) {
    RunnerOptions options;
    options.database.url = g_db->url();
    options.database.pool_size = static_cast<std::size_t>(n);
    auto opened = Runner::Open(options, {MakeChargeOnlyFlow(&gateway)});
    if (!opened) return state.SkipWithError(opened.error().ToString().c_str());
    runner = std::move(*opened);
  }
  std::vector<std::unique_ptr<Strategy>> clients;
  for (int i = 0; i < n; ++i) clients.push_back(MakeStrategy(kind, g_db->url(), runner.get(), &gateway));
  const std::string prefix = std::string(StrategyName(kind)) + "-" + std::to_string(g_run++) + "-";
  Tally warm;
  Round(clients, prefix + "warmup", &gateway, &warm);  // opens the runner's connections
  const long calls_before = static_cast<long>(gateway.calls());
  Tally t;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) Round(clients, prefix + std::to_string(r), &gateway, &t);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const long executions = static_cast<long>(gateway.calls()) - calls_before;
  clients.clear();
  runner.reset();
  const ServerCounts after = ReadServerCounts(g_db->url());

  for (auto _ : state) state.SetIterationTime(wall);
  const LatencySummary losers = Summarize(t.loser_ms);
  const LatencySummary winners = Summarize(t.winner_ms);
  state.counters["rounds"] = rounds;
  state.counters["requests"] = static_cast<double>(rounds) * n;
  state.counters["executions_per_round"] = static_cast<double>(executions) / rounds;
  state.counters["duplicate_executions"] = static_cast<double>(t.duplicate_executions);
  state.counters["rounds_with_duplicates"] = static_cast<double>(t.rounds_with_duplicates);
  state.counters["loser_p50_ms"] = losers.p50_ms;
  state.counters["loser_p99_ms"] = losers.p99_ms;
  state.counters["winner_p50_ms"] = winners.p50_ms;
  state.counters["answers_409"] = static_cast<double>(t.conflicts);
  state.counters["answers_replayed"] = static_cast<double>(t.replayed);
  state.counters["serialization_failures"] = static_cast<double>(t.serialization);
  state.counters["errors"] = static_cast<double>(t.errors);
  // The warm-up round's rollbacks are included (one round of n requests).
  state.counters["server_rollbacks"] = static_cast<double>(after.rollbacks - before.rollbacks);
  state.counters["foreign_call_ms"] = static_cast<double>(kForeignCall.count());
}

// The yardstick for the losers: N clients released together, each sending
// one bare `SELECT 1` on a connection of its own, the same number of rounds.
// Its p99 is what a single round trip costs under the same burst on this
// machine (scheduling, the server's backends), with no key at all.
void RunSelectOne(benchmark::State& state, int n, int rounds) {
  std::vector<std::unique_ptr<pqxx::connection>> conns;
  for (int i = 0; i < n; ++i) conns.push_back(std::make_unique<pqxx::connection>(g_db->url()));
  std::vector<double> all;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r <= rounds; ++r) {  // round 0 warms up
    std::vector<double> ms(static_cast<std::size_t>(n), 0);
    std::latch start(n);
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        start.arrive_and_wait();
        const auto begin = std::chrono::steady_clock::now();
        pqxx::nontransaction tx(*conns[i]);
        tx.exec1("SELECT 1");
        ms[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
      });
    }
    for (auto& t : threads) t.join();
    if (r > 0) all.insert(all.end(), ms.begin(), ms.end());
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto _ : state) state.SetIterationTime(wall);
  const LatencySummary s = Summarize(all);
  state.counters["rounds"] = rounds;
  state.counters["requests"] = static_cast<double>(rounds) * n;
  state.counters["select_p50_ms"] = s.p50_ms;
  state.counters["select_p99_ms"] = s.p99_ms;
}

}  // namespace

const char* FamilyName() { return "contention"; }

void RegisterFamily(const BenchConfig& config) {
  g_db = std::make_unique<BenchDatabase>("contention");
  AtFamilyEnd([] { g_db.reset(); });
  CreateClaimTables(g_db->url());
  AddServerContext(g_db->url());
  const int rounds = config.quick ? 5 : 20;
  const std::vector<int> ns = config.quick ? std::vector<int>{1, 4, 16, 64} : std::vector<int>{1, 2, 4, 8, 16, 32, 64};
  for (int n : ns) {
    for (StrategyKind kind :
         {StrategyKind::kPhasekey, StrategyKind::kLeach, StrategyKind::kAdvisory, StrategyKind::kNaive}) {
      RegisterBatch(
          "contention/" + std::string(StrategyName(kind)) + "/clients:" + std::to_string(n),
          [kind, n, rounds](benchmark::State& s) { Run(s, kind, n, rounds); }, 1);
    }
    RegisterBatch(
        "contention/select_one/clients:" + std::to_string(n),
        [n, rounds](benchmark::State& s) { RunSelectOne(s, n, rounds); }, 1);
  }
}

}  // namespace phasekey::bench
