// Family 4: re-drive. 10,000 keys (2,000 with --quick) abandoned at
// ride_created (the gateway was down, the client gave up) are finished by
// 1, 2 and 4 re-drive workers, each with its own Runner and connections and
// the default 4 keys in flight, calling RedriveWorker::RunOnce in a loop.
// Baseline: the same keys finished by clients retrying them through
// Runner::Execute with 4 threads. Every run starts from an identical copy of
// the seeded database. Counters: keys/s, and at the end the number of
// finished keys (must equal the seeded count).
#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "support/bench_database.h"
#include "support/bench_flows.h"
#include "support/bench_main.h"

namespace phasekey::bench {
namespace {

std::unique_ptr<BenchDatabase> g_db;
std::int64_t g_keys = 0;
constexpr int kClientThreads = 4;

std::string Account(std::int64_t seq) { return "acct-" + std::to_string(seq % 64); }
std::string Key(std::int64_t seq) { return "abandoned-" + std::to_string(seq); }

RunnerOptions Options(const std::string& url, std::size_t pool) {
  RunnerOptions o;
  o.database.url = url;
  o.database.pool_size = pool;
  o.redrive_delay = std::chrono::milliseconds(1);  // due at once
  return o;
}

// Seeds g_keys keys left at ride_created by a gateway that was down.
void Seed(const BenchConfig& config) {
  g_keys = config.quick ? 2000 : 10000;
  Progress("seeding " + std::to_string(g_keys) + " abandoned keys");
  TestGateway down;
  down.unavailable = true;
  RunnerOptions o = Options(g_db->url(), 8);
  o.attempts_per_request = 1;
  auto runner = Runner::Open(o, {MakeRideFlow(&down)});
  if (!runner) throw std::runtime_error(runner.error().ToString());
  LoadOptions load;
  load.clients = 8;
  load.requests = g_keys;
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    return [&](std::int64_t seq) {
      Reply r = (*runner)->Execute("create_ride", Request{Account(seq), Key(seq), "POST", "/rides", RideBody(seq)});
      return r.kind == Reply::Kind::kRetryLater;
    };
  });
  if (s.failures > 0) throw std::runtime_error("seeding: " + std::to_string(s.failures) + " keys not abandoned");
}

std::int64_t FinishedKeys(const std::string& url) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  return tx.exec1("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'finished'")[0].as<std::int64_t>();
}

void Finish(benchmark::State& state, const std::string& url, double wall) {
  for (auto _ : state) state.SetIterationTime(wall);
  const std::int64_t finished = FinishedKeys(url);
  state.counters["keys"] = static_cast<double>(g_keys);
  state.counters["finished"] = static_cast<double>(finished);
  state.counters["keys_per_s"] = static_cast<double>(finished) / wall;
  if (finished != g_keys) state.SkipWithError("not every abandoned key was finished");
}

void RunWorkers(benchmark::State& state, int workers) {
  const std::string url = g_db->Clone("w" + std::to_string(workers));
  TestGateway gateway;
  std::atomic<std::int64_t> finished{0};
  std::atomic<bool> failed{false};
  std::latch ready(workers + 1);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      RedriveOptions ro;  // 4 keys in flight, the default
      auto runner = Runner::Open(Options(url, ro.concurrency), {MakeRideFlow(&gateway)});
      std::unique_ptr<RedriveWorker> worker;
      if (runner) {
        ro.listen = false;
        auto opened = RedriveWorker::Open(runner->get(), ro);
        if (opened) worker = std::move(*opened);
      }
      if (!worker) failed = true;
      ready.arrive_and_wait();
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
      while (worker && finished.load() < g_keys && std::chrono::steady_clock::now() < deadline) {
        auto round = worker->RunOnce();
        if (!round) {
          failed = true;
          break;
        }
        finished += static_cast<std::int64_t>(round->finished);
        if (round->claimed == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
  }
  ready.arrive_and_wait();
  const auto t0 = std::chrono::steady_clock::now();
  for (auto& t : threads) t.join();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failed) return state.SkipWithError("a re-drive worker failed to open or to run a round");
  Finish(state, url, wall);
}

void RunClientRetries(benchmark::State& state) {
  const std::string url = g_db->Clone("clients");
  TestGateway gateway;
  auto runner = Runner::Open(Options(url, kClientThreads), {MakeRideFlow(&gateway)});
  if (!runner) return state.SkipWithError(runner.error().ToString().c_str());
  LoadOptions load;
  load.clients = kClientThreads;
  load.requests = g_keys;
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    return [&](std::int64_t seq) {
      Reply r = (*runner)->Execute("create_ride", Request{Account(seq), Key(seq), "POST", "/rides", RideBody(seq)});
      return r.kind == Reply::Kind::kCompleted;
    };
  });
  runner->reset();
  Finish(state, url, s.wall_s);
}

}  // namespace

const char* FamilyName() { return "redrive"; }

void RegisterFamily(const BenchConfig& config) {
  g_db = std::make_unique<BenchDatabase>("redrive");
  AtFamilyEnd([] { g_db.reset(); });
  CreateRideTables(g_db->url());
  AddServerContext(g_db->url());
  Seed(config);
  RegisterBatch(
      "redrive/client_retries/threads:" + std::to_string(kClientThreads),
      [](benchmark::State& s) { RunClientRetries(s); }, 1);
  for (int workers : {1, 2, 4}) {
    RegisterBatch(
        "redrive/workers/workers:" + std::to_string(workers),
        [workers](benchmark::State& s) { RunWorkers(s, workers); }, 1);
  }
}

}  // namespace phasekey::bench
