// Family 6: growth. Claim and replay latency with 10^3, 10^5 and 10^6
// existing (finished) keys in phasekey.idempotency_keys (10^3 and 10^5 with
// --quick), one client, the one-phase "record" flow. Existing keys are
// copies of one real finished key spread over 64 accounts; a replay picks
// one at random. The baseline is the smallest table: the report divides
// each size's latency by the 10^3 one. Beside the replay, `pk_select`: a
// bare SELECT of the same kind of row on its unique key, the yardstick for
// what a replay could cost at best.
//
// And the re-drive worker's poll at each size (issue 16: can the scans do
// without indexes that read `state`?). `redrive_poll` runs the worker's own
// claim statement (RedriveClaimBatch) on each bucket in turn, with the
// engine's indexes; `redrive_poll_without_state_indexes` runs it in a
// transaction that first replaces the indexes reading `state` (re-drive,
// reap, attention) by one on (bucket, created_at), the only kind a finish
// that is a HOT update would leave it, with the statement bounded by the
// give-up horizon on created_at, and rolls all of it back. No seeded key is
// due, so each poll claims nothing: its cost is the scan alone.
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <random>
#include <string>
#include <vector>

#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "sql/sql_catalog.h"
#include "support/bench_database.h"
#include "support/bench_flows.h"
#include "support/bench_main.h"
#include "support/lever_schemas.h"
#include "support/seed_keys.h"

namespace phasekey::bench {
namespace {

constexpr int kAccounts = 64;
constexpr int kBuckets = 16;  // RunnerOptions::buckets' default

std::unique_ptr<BenchDatabase> g_db;
std::unique_ptr<Runner> g_runner;
std::int64_t g_seeded = 0;
int g_run = 0;
const std::string kBody = RideBody(7);

std::string Account(std::int64_t i) { return "acct-" + std::to_string(i % kAccounts); }

// Copies the template key until the table holds `target` seeded keys.
void SeedTo(std::int64_t target) {
  if (g_seeded >= target) return;
  Progress("seeding keys " + std::to_string(g_seeded + 1) + ".." + std::to_string(target));
  pqxx::connection conn(g_db->url());
  SeedKeyCopies(conn, g_seeded + 1, target, kAccounts, kBuckets);
  g_seeded = target;
}

LoadOptions Load(const BenchConfig& config) {
  LoadOptions o;
  o.clients = 1;
  o.requests = config.quick ? 300 : 1000;
  o.warmup = 20;
  return o;
}

void RunClaim(benchmark::State& state, std::int64_t keys, const LoadOptions& load) {
  SeedTo(keys);
  const std::string prefix = "new" + std::to_string(g_run++) + "-";
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    return [&](std::int64_t seq) {
      Reply r = g_runner->Execute("record", Request{Account(seq), prefix + std::to_string(seq), "POST", "/r", kBody});
      return r.kind == Reply::Kind::kCompleted;
    };
  });
  ReportLoad(state, s);
  state.counters["existing_keys"] = static_cast<double>(keys);
}

void RunReplay(benchmark::State& state, std::int64_t keys, const LoadOptions& load) {
  SeedTo(keys);
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    auto rng = std::make_shared<std::mt19937_64>(42);
    return [&, rng](std::int64_t) {
      const std::int64_t g = std::uniform_int_distribution<std::int64_t>(1, keys)(*rng);
      Reply r = g_runner->Execute("record", Request{Account(g), "seed-" + std::to_string(g), "POST", "/r", kBody});
      return r.kind == Reply::Kind::kReplayed;
    };
  });
  ReportLoad(state, s);
  state.counters["existing_keys"] = static_cast<double>(keys);
}

// The yardstick for replays: the same random existing row read by a bare,
// prepared, autocommitted SELECT on its unique key, one connection.
void RunPkSelect(benchmark::State& state, std::int64_t keys, const LoadOptions& load) {
  SeedTo(keys);
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    auto conn = std::make_shared<pqxx::connection>(g_db->url());
    conn->prepare("row",
                  "SELECT * FROM phasekey.idempotency_keys WHERE bucket = $1 AND account = $2 "
                  "AND idempotency_key = $3");
    auto rng = std::make_shared<std::mt19937_64>(42);
    return [conn, rng, keys](std::int64_t) {
      const std::int64_t g = std::uniform_int_distribution<std::int64_t>(1, keys)(*rng);
      pqxx::nontransaction tx(*conn);
      const std::string account = Account(g);
      return tx.exec_prepared("row", AccountBucket(account, kBuckets), account, "seed-" + std::to_string(g)).size() ==
             1;
    };
  });
  ReportLoad(state, s);
  state.counters["existing_keys"] = static_cast<double>(keys);
}

// RedriveClaimBatch ($6: the points the runner's flows know, by flow), bounded
// by the give-up horizon on created_at ($7, seconds) when `by_created_at`.
std::string RedriveStatement(bool by_created_at) {
  std::string q = sql::Query(sql::q::RedriveClaimBatch);
  if (!by_created_at) return q;
  const std::string scan = "WHERE bucket = $1 AND state = 'active'";
  const auto at = q.find(scan);
  if (at == std::string::npos || q.find(scan, at + 1) != std::string::npos) {
    throw std::runtime_error("RedriveClaimBatch no longer scans with \"" + scan + "\" once");
  }
  return q.replace(at, scan.size(),
                   "WHERE bucket = $1 AND created_at > now() - make_interval(secs => $7::double precision) "
                   "AND state = 'active'");
}

void RunRedrivePoll(benchmark::State& state, std::int64_t keys, const LoadOptions& load, bool without_state_indexes) {
  SeedTo(keys);
  pqxx::connection conn(g_db->url());
  pqxx::work tx(conn);
  if (without_state_indexes) {
    tx.exec0(std::string(kWithoutStateIndexes) + "; ANALYZE phasekey.idempotency_keys");
  }
  const std::string statement = RedriveStatement(without_state_indexes);
  const RunnerOptions defaults;
  const RedriveOptions worker;  // the cap on failures and the batch, as a default worker polls
  const auto horizon_s = static_cast<double>(defaults.give_up_after.count());
  const auto lease_ms = static_cast<long long>(defaults.lease.count());
  // {flow: [points]}: what the worker sends as $6 (Flow::KnownPoints of each flow).
  nlohmann::json known = nlohmann::json::object();
  for (const auto& f : g_runner->flows()) known[f->name()] = f->KnownPoints();
  const std::string known_points = known.dump();
  std::vector<double> ms;
  std::int64_t claimed = 0;
  // Without the indexes a poll at 10^6 keys takes a quarter of a second: three rounds of the buckets.
  const int polls = without_state_indexes ? 3 * kBuckets : static_cast<int>(std::min<std::int64_t>(load.requests, 200));
  for (int i = 0; i < polls + kBuckets; ++i) {  // the first round of buckets warms up
    const auto t0 = std::chrono::steady_clock::now();
    pqxx::result r = without_state_indexes
                         ? tx.exec_params(statement, i % kBuckets, "{record}", worker.max_attempts,
                                          static_cast<long long>(worker.concurrency), lease_ms, known_points, horizon_s)
                         : tx.exec_params(statement, i % kBuckets, "{record}", worker.max_attempts,
                                          static_cast<long long>(worker.concurrency), lease_ms, known_points);
    const double elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    claimed += static_cast<std::int64_t>(r.size());
    if (i >= kBuckets) ms.push_back(elapsed);
  }
  tx.abort();
  double total = 0;
  for (double m : ms) total += m;
  for (auto _ : state) state.SetIterationTime(total / 1000);
  const LatencySummary sum = Summarize(ms);
  state.counters["polls"] = static_cast<double>(sum.count);
  state.counters["p50_ms"] = sum.p50_ms;
  state.counters["p99_ms"] = sum.p99_ms;
  state.counters["mean_ms"] = sum.mean_ms;
  state.counters["existing_keys"] = static_cast<double>(keys);
  if (claimed != 0) state.SkipWithError("a poll claimed a seeded key: they are all finished");
}

}  // namespace

const char* FamilyName() { return "growth"; }

void RegisterFamily(const BenchConfig& config) {
  g_db = std::make_unique<BenchDatabase>("growth");
  AtFamilyEnd([] {
    g_runner.reset();
    g_db.reset();
  });
  AddServerContext(g_db->url());
  RunnerOptions options;
  options.database.url = g_db->url();
  options.database.pool_size = 2;
  auto runner = Runner::Open(options, {MakeRecordFlow()});
  if (!runner) throw std::runtime_error(runner.error().ToString());
  g_runner = std::move(*runner);
  Reply t = g_runner->Execute("record", Request{"acct-template", "template", "POST", "/r", kBody});
  if (t.kind != Reply::Kind::kCompleted) throw std::runtime_error("template key: " + t.detail);
  const LoadOptions load = Load(config);
  const std::vector<std::int64_t> sizes =
      config.quick ? std::vector<std::int64_t>{1000, 100000} : std::vector<std::int64_t>{1000, 100000, 1000000};
  for (std::int64_t keys : sizes) {
    const std::string k = "/existing_keys:" + std::to_string(keys);
    RegisterBatch(
        "growth/claim" + k, [keys, load](benchmark::State& s) { RunClaim(s, keys, load); }, 1);
    RegisterBatch(
        "growth/replay" + k, [keys, load](benchmark::State& s) { RunReplay(s, keys, load); }, 1);
    RegisterBatch(
        "growth/pk_select" + k, [keys, load](benchmark::State& s) { RunPkSelect(s, keys, load); }, 1);
    for (bool without : {false, true}) {
      RegisterBatch(
          std::string("growth/redrive_poll") + (without ? "_without_state_indexes" : "") + k,
          [keys, load, without](benchmark::State& s) { RunRedrivePoll(s, keys, load, without); }, 1);
    }
  }
}

}  // namespace phasekey::bench
