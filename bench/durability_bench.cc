// Family 1: the cost of durability. The ride flow (create ride, charge an
// in-process gateway with no added latency, send receipt) through phasekey,
// beside the same business statements on raw libpqxx with the same number
// of commits and no engine (raw_two_commits), and beside Leach's design
// (leach_four_commits), and through a transaction pooler: phasekey with
// prepared statements off, straight to the server (phasekey_unprepared) and
// through Debian's PgBouncer in transaction mode (phasekey_pgbouncer), what
// docs/scaling.md prices. At 1, 4 and 16 concurrent clients, each client with
// one connection (to PgBouncer for the last). Counters: rps, latency percentiles, durable commits per
// request, and the server's CPU per request when the server runs on this
// machine (ReadServerCounts: every process of the postmaster, exited ones
// included). A one-client probe per variant (durability/client_sends/<variant>)
// counts the sends to the server per request (support/client_sends.h) and
// the WAL of its requests by relation (support/wal_by_relation.h).
//
// phasekey_sealed is the phasekey ride with bodies sealed at rest
// (RunnerOptions::encryption, a key-encryption key file the family writes
// itself, 0600 in a temporary directory removed at the end): each account's
// data key wraps and AES-256-GCM seals the request, the response and the
// outcomes. It runs in a database of its own, created and migrated like the
// family's (the engine refuses to open a runner without keys on a database
// whose stored data keys need one, so the plaintext variants cannot share
// it), with the same tables; its runs interleave with the others in this
// process. The family's requests spread over 64 accounts (Account(seq)); a
// sealed run's warm-up sends at least one request to each of them, so every
// data key is created (in the family's first sealed run) or read and
// unwrapped (in later runs, each of which opens a runner of its own) before
// the clock starts, and the measured requests find it in the runner's cache:
// a long-lived service reads a busy account's data key once a minute
// (EncryptionOptions::data_key_cache), not once per run. At 16 clients the
// common warm-up already reaches all 64 accounts; at 1 and 4 clients the
// sealed run's warm-up is 64 requests instead of 18 and 42.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "phasekey/runner.h"
#include "support/bench_database.h"
#include "support/bench_flows.h"
#include "support/bench_main.h"
#include "support/client_sends.h"
#include "support/pgbouncer.h"
#include "support/phasekey_ride.h"
#include "support/raw_ride.h"
#include "support/wal_by_relation.h"

namespace phasekey::bench {
namespace {

std::unique_ptr<BenchDatabase> g_db;
std::unique_ptr<BenchDatabase> g_sealed_db;  // phasekey_sealed's own (see above)
TestGateway g_gateway;
std::atomic<int> g_run{0};

constexpr int kAccounts = 64;
std::string Account(std::int64_t seq) { return "acct-" + std::to_string(seq % kAccounts); }
// The key-encryption key file of the phasekey_sealed runs (WriteKekFile).
std::string g_kek_file;

LoadOptions Load(const BenchConfig& config, int clients) {
  LoadOptions o;
  o.clients = clients;
  o.requests = config.quick ? (clients == 1 ? 150 : 400) : (clients == 1 ? 400 : 1000);
  o.warmup = WarmUpFor(clients);
  return o;
}

enum class Route { kPrepared, kUnprepared, kPgBouncer, kSealed };

void RunPhasekey(benchmark::State& state, LoadOptions load, Route route = Route::kPrepared) {
  BenchDatabase& db = route == Route::kSealed ? *g_sealed_db : *g_db;
  std::string url = db.url();
  RideOptions ride;
  ride.prepared_statements = route != Route::kUnprepared && route != Route::kPgBouncer;
  if (route == Route::kSealed) {
    ride.encryption.kek_file = g_kek_file;
    // Every account's data key in the runner's cache before the clock starts.
    load.warmup = std::max<std::int64_t>(load.warmup, kAccounts);
  }
  const ServerCounts before = ReadServerCounts(db.url());
  // A PgBouncer of this run's own: stopped before the counts are read, so
  // its server connections end (and flush their statistics) instead of
  // idling into the next run, which ReadServerCounts would wait out.
  std::unique_ptr<testing::PgBouncer> pgbouncer;
  if (route == Route::kPgBouncer) {
    auto started = testing::PgBouncer::Start(g_db->url(), {.pool_size = 16});
    if (!started) return state.SkipWithError(("PgBouncer: " + started.error().ToString()).c_str());
    pgbouncer = std::move(*started);
    url = pgbouncer->url();
  }
  auto run = RunPhasekeyRides(url, load, "pk" + std::to_string(g_run++) + "-", &g_gateway, ride);
  pgbouncer.reset();
  if (!run) return state.SkipWithError(run.error().ToString().c_str());
  ReportLoad(state, run->stats);
  ReportServerCounts(state, before, ReadServerCounts(db.url()), load.requests + load.warmup);
  state.counters["commits_per_req"] = run->commits_per_req;
}

template <class Client>
void RunRaw(benchmark::State& state, const LoadOptions& load, const char* tag) {
  const std::string prefix = std::string(tag) + std::to_string(g_run++) + "-";
  const ServerCounts before = ReadServerCounts(g_db->url());
  std::atomic<long> commits{0};
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    auto client = std::make_shared<Client>(g_db->url(), &g_gateway);
    return [&, client, last = 0L](std::int64_t seq) mutable {
      bool ok = true;
      if constexpr (std::is_same_v<Client, LeachRide>) {
        ok = client->Run(Account(seq), prefix + std::to_string(seq), RideBody(seq)) == LeachRide::Outcome::kCreated;
      } else {
        client->Run(Account(seq), prefix + std::to_string(seq), RideBody(seq));
      }
      commits += client->commits() - last;
      last = client->commits();
      return ok;
    };
  });
  ReportLoad(state, s);
  ReportServerCounts(state, before, ReadServerCounts(g_db->url()), load.requests + load.warmup);
  state.counters["commits_per_req"] =
      static_cast<double>(commits.load()) / static_cast<double>(load.requests + load.warmup);
}

// Sends to the server per request of one variant: one client, a few warm-up
// requests, then kProbeRequests requests between two readings of the
// kernel's counters, with only this client's connections open.
constexpr int kProbeRequests = 50;

void ProbeSends(benchmark::State& state, const std::string& variant) {
  const std::uint16_t port = ServerPort(g_db->url());
  if (port == 0) return state.SkipWithError("the server is reached over a Unix socket; no TCP counters");
  const std::string prefix = "probe-" + variant + std::to_string(g_run++) + "-";
  std::function<void(std::int64_t)> one;
  std::unique_ptr<Runner> runner;
  std::unique_ptr<RawRide> raw;
  std::unique_ptr<LeachRide> leach;
  if (variant == "phasekey") {
    RunnerOptions options;
    options.database.url = g_db->url();
    options.database.pool_size = 1;
    auto opened = Runner::Open(options, {MakeRideFlow(&g_gateway)});
    if (!opened) return state.SkipWithError(opened.error().ToString().c_str());
    runner = std::move(*opened);
    one = [&](std::int64_t seq) {
      runner->Execute("create_ride",
                      Request{Account(seq), prefix + std::to_string(seq), "POST", "/rides", RideBody(seq)});
    };
  } else if (variant == "raw_two_commits") {
    raw = std::make_unique<RawRide>(g_db->url(), &g_gateway);
    one = [&](std::int64_t seq) { raw->Run(Account(seq), prefix + std::to_string(seq), RideBody(seq)); };
  } else {
    leach = std::make_unique<LeachRide>(g_db->url(), &g_gateway);
    one = [&](std::int64_t seq) { leach->Run(Account(seq), prefix + std::to_string(seq), RideBody(seq)); };
  }
  std::int64_t seq = 0;
  for (; seq < 5; ++seq) one(seq);
  const std::string wal_from = WalInsertPosition(g_db->url());
  const std::int64_t before = DataSegmentsSentTo(port);
  const auto start = std::chrono::steady_clock::now();
  for (; seq < 5 + kProbeRequests; ++seq) one(seq);
  const std::int64_t after = DataSegmentsSentTo(port);
  const std::string wal_to = WalInsertPosition(g_db->url());
  // The probe's own WAL by relation, per request ("wal:<relation>").
  for (const auto& [what, bytes] : WalBytesByRelation(g_db->url(), wal_from, wal_to)) {
    state.counters["wal:" + what] = bytes / kProbeRequests;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (auto _ : state) state.SetIterationTime(wall);
  if (before < 0 || after < 0) return state.SkipWithError("the kernel does not report tcpi_data_segs_out");
  state.counters["client_sends_per_req"] = static_cast<double>(after - before) / kProbeRequests;
}

}  // namespace

const char* FamilyName() { return "durability"; }

void RegisterFamily(const BenchConfig& config) {
  g_db = std::make_unique<BenchDatabase>("durability");
  g_sealed_db = std::make_unique<BenchDatabase>("durability_sealed");
  g_kek_file = WriteKekFile();
  AtFamilyEnd([] {
    g_db.reset();
    g_sealed_db.reset();
    RemoveKekFile(g_kek_file);
  });
  CreateRideTables(g_db->url());
  CreateRideTables(g_sealed_db->url());
  CreateLeachTables(g_db->url());
  AddServerContext(g_db->url());
  const int reps = config.quick ? 2 : 5;
  for (int clients : {1, 4, 16}) {
    const LoadOptions load = Load(config, clients);
    const std::string c = "/clients:" + std::to_string(clients);
    RegisterBatch(
        "durability/raw_two_commits" + c, [load](benchmark::State& s) { RunRaw<RawRide>(s, load, "raw"); }, reps);
    RegisterBatch(
        "durability/phasekey" + c, [load](benchmark::State& s) { RunPhasekey(s, load); }, reps);
    RegisterBatch(
        "durability/phasekey_sealed" + c, [load](benchmark::State& s) { RunPhasekey(s, load, Route::kSealed); }, reps);
    RegisterBatch(
        "durability/leach_four_commits" + c, [load](benchmark::State& s) { RunRaw<LeachRide>(s, load, "leach"); },
        reps);
    RegisterBatch(
        "durability/phasekey_unprepared" + c, [load](benchmark::State& s) { RunPhasekey(s, load, Route::kUnprepared); },
        reps);
    RegisterBatch(
        "durability/phasekey_pgbouncer" + c, [load](benchmark::State& s) { RunPhasekey(s, load, Route::kPgBouncer); },
        reps);
  }
  for (const char* variant : {"raw_two_commits", "phasekey", "leach_four_commits"}) {
    RegisterBatch(
        std::string("durability/client_sends/") + variant, [variant](benchmark::State& s) { ProbeSends(s, variant); },
        1);
  }
}

}  // namespace phasekey::bench
