// Family 11: capacity. What the key table costs in disk and WAL, measured
// on the server the other families use, for docs/capacity.md (rendered from
// this family's results by tests/doc_results, not into docs/benchmarks.md).
//
// First, real key rows are kept as templates (capacity_templates, support/
// key_sizes.h), each written by the engine through a Runner: the ride flow
// caught in flight at its first stored point (ride_created, lease held,
// request body stored: kept from inside the gateway call), the ride flow
// after its receipt phase failed once (active at charge_created with the
// charge's outcome recorded, released), a finished ride (body dropped,
// response stored), a ride parked for an operator (the gateway unavailable
// until the key is past give_up_after: the charge phase has no lookup) and a
// dead key (a one-phase flow whose provider is always unavailable, given up
// at `started` with nothing taken). The same five again with bodies sealed (RunnerOptions::
// encryption), in a database of its own, as the durability family does.
//
// - capacity/rows/<state> (and rows_sealed/<state>): the table emptied,
//   then N copies of the state's template inserted; per row, the mean tuple
//   (pg_column_size) and the growth of the table's main fork, its TOAST and
//   each index over the N rows, page headers, line pointers and fillfactor
//   80's free space included. Copies carry no dead row versions: a live
//   table's updates and deletes leave some until vacuum reuses their space.
// - capacity/wal/ride (and wal_sealed/ride): after a CHECKPOINT, M rides one
//   after another through a Runner on the emptied table; WAL bytes per ride
//   from pg_current_wal_insert_lsn(), and from pg_walinspect how much of it
//   is full-page images and how much the key table's records. The table's
//   heap bytes per key after those rides (their dead versions included).
//   capacity/wal/replay: the M keys sent again, each answered from its
//   stored response. capacity/wal/reap: the Reaper (retention 1 s) deleting
//   them.
// - capacity/table/finished_keys:<K> (10^6, 10^5 with --quick): the table
//   holding K finished copies: the table, TOAST and each index in bytes.
//   capacity/wal_large/ride: M rides after a CHECKPOINT on that table, where
//   each ride's random key lands on a leaf page of the primary key that the
//   checkpoint made write a full-page image at its next change.
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "phasekey/runner.h"
#include "phasekey/workers.h"
#include "support/bench_database.h"
#include "support/bench_flows.h"
#include "support/bench_main.h"
#include "support/key_sizes.h"
#include "support/phasekey_ride.h"
#include "support/wal_by_relation.h"

namespace phasekey::bench {
namespace {

constexpr int kAccounts = 64;
const char* const kStates[] = {"active_first_point", "active_outcome_recorded", "finished", "dead", "needs_operator"};

// One database the family measures in: plaintext or sealed bodies.
struct Target {
  std::unique_ptr<BenchDatabase> db;
  EncryptionOptions encryption;
  int buckets = 0;
  std::vector<Request> rides;  // the last wal run's requests, for the replay
};

Target g_plain, g_sealed;
TestGateway g_gateway;
std::mt19937_64 g_rng(42);

// A key as most clients make one: a random UUID's text.
std::string RandomKey() {
  std::uniform_int_distribution<std::uint64_t> d;
  const std::uint64_t a = d(g_rng), b = d(g_rng);
  return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                     0x8000 | ((b >> 48) & 0x3fff), b & 0xffffffffffffULL);
}

Request Ride(std::int64_t seq) {
  return Request{"acct-" + std::to_string(seq % kAccounts), RandomKey(), "POST", "/rides", RideBody(seq)};
}

void Exec(const std::string& url, const std::string& sql) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  tx.exec0(sql);
}

// Checks what the engine left in a template: its state and recovery point,
// whether it holds a request body and outcomes.
void ExpectTemplate(pqxx::connection& conn, const std::string& label, const std::string& state,
                    const std::string& point, bool body, bool outcomes) {
  pqxx::nontransaction tx(conn);
  const pqxx::row r = tx.exec_params1(
      "SELECT state::text, recovery_point, request_body IS NOT NULL, outcomes <> '{}'::jsonb "
      "FROM public.capacity_templates WHERE label = $1",
      label);
  const std::string got = fmt::format("{} at {}, body {}, outcomes {}", r[0].as<std::string>(), r[1].as<std::string>(),
                                      r[2].as<bool>(), r[3].as<bool>());
  const std::string want = fmt::format("{} at {}, body {}, outcomes {}", state, point, body, outcomes);
  if (got != want) throw std::runtime_error("template " + label + ": " + got + ", expected " + want);
}

// "charge_first": one foreign phase whose provider is always unavailable;
// a key of it waits at `started` until it is given up.
std::shared_ptr<const Flow> MakeChargeFirstFlow() {
  auto flow = Flow::Builder("charge_first")
                  .Foreign(
                      kStarted, "charge",
                      [](const PhaseContext&) -> PhaseResult { return Retry("the gateway is unavailable (capacity)"); },
                      {kFinished}, kChargeTimeout)
                  .Build();
  if (!flow) throw std::runtime_error(flow.error().ToString());
  return *flow;
}

// Runs the five keys of the file comment through the engine and keeps
// their rows as templates in `t`'s database.
void KeepTemplates(Target& t) {
  auto hooks = std::make_shared<testing::RideHooks>();
  TestGateway gateway;
  RunnerOptions o;
  o.database.url = t.db->url();
  o.database.pool_size = 1;
  o.give_up_after = std::chrono::seconds(1);
  o.attempts_per_request = 1;
  o.encryption = t.encryption;
  auto opened = Runner::Open(o, {testing::MakeRideFlow(&gateway, kChargeTimeout, hooks), MakeChargeFirstFlow()});
  if (!opened) throw std::runtime_error(opened.error().ToString());
  Runner& runner = **opened;
  t.buckets = runner.options().buckets;
  pqxx::connection side(t.db->url());
  auto keep = [&](const std::string& label, const Request& r) {
    KeepTemplate(side, label, AccountBucket(r.account, t.buckets), r.account, r.idempotency_key);
  };
  const Request in_flight = Ride(1), failed_receipt = Ride(2), parked = Ride(3);
  const Request dead = Ride(4);
  bool armed = true;
  gateway.set_before_call([&] {
    if (armed) keep("active_first_point", in_flight);
    armed = false;
  });
  if (runner.Execute("create_ride", in_flight).kind != Reply::Kind::kCompleted) throw std::runtime_error("ride 1");
  keep("finished", in_flight);
  bool fail_receipt = true;
  hooks->in_send_receipt = [&](AtomicContext&) {
    if (fail_receipt) {
      fail_receipt = false;
      throw std::runtime_error("the receipt phase fails once (capacity family)");
    }
  };
  runner.Execute("create_ride", failed_receipt);
  keep("active_outcome_recorded", failed_receipt);
  gateway.unavailable = true;
  runner.Execute("create_ride", parked);
  runner.Execute("charge_first", dead);
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));  // past give_up_after, in whole seconds
  runner.Execute("create_ride", parked);
  runner.Execute("charge_first", dead);
  keep("needs_operator", parked);
  keep("dead", dead);
  gateway.set_before_call(nullptr);
  ExpectTemplate(side, "active_first_point", "active", "ride_created", true, false);
  ExpectTemplate(side, "active_outcome_recorded", "active", "charge_created", true, true);
  ExpectTemplate(side, "finished", "finished", "finished", false, true);
  ExpectTemplate(side, "needs_operator", "needs_operator", "ride_created", true, false);
  ExpectTemplate(side, "dead", "dead", "started", true, false);
}

void SetSizeCounters(benchmark::State& state, const KeyTableSizes& before, const KeyTableSizes& after, double rows,
                     const std::string& suffix) {
  state.counters["heap_bytes" + suffix] = (after.heap_bytes - before.heap_bytes) / rows;
  state.counters["toast_bytes" + suffix] = (after.toast_bytes - before.toast_bytes) / rows;
  for (const auto& [name, bytes] : after.index_bytes) {
    state.counters["index_bytes:" + name + suffix] = (bytes - before.index_bytes.at(name)) / rows;
  }
  state.counters["index_bytes" + suffix] = (after.IndexTotal() - before.IndexTotal()) / rows;
  state.counters["total_bytes" + suffix] = (after.Total() - before.Total()) / rows;
}

void RunRows(benchmark::State& state, Target& t, const std::string& label, std::int64_t rows) {
  pqxx::connection conn(t.db->url());
  { pqxx::nontransaction(conn).exec0("TRUNCATE phasekey.idempotency_keys"); }
  const KeyTableSizes empty = ReadKeyTableSizes(conn);
  const auto start = std::chrono::steady_clock::now();
  InsertTemplateCopies(conn, label, 1, rows, kAccounts, t.buckets);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (auto _ : state) state.SetIterationTime(wall);
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["tuple_bytes"] = MeanTupleBytes(conn);
  SetSizeCounters(state, empty, ReadKeyTableSizes(conn), static_cast<double>(rows), "_per_row");
}

// WAL between two insert positions, per operation: in all, full-page
// images, the key table's records (the table and its indexes, images
// apart) and commit records.
void ReportWal(benchmark::State& state, const std::string& url, const std::string& from, const std::string& to,
               double ops) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  state.counters["wal_bytes_per_op"] =
      tx.exec_params1("SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::float8", from, to)[0].as<double>() / ops;
  // pg_walinspect reads only WAL already flushed: a transaction that
  // writes a record flushes everything before its commit (what was read
  // from here on is not in the range).
  tx.exec("SELECT pg_logical_emit_message(true, 'phasekey_capacity', 'flush')");
  double keys = 0, fpi = 0, commits = 0;
  for (const auto& [what, bytes] : from == to ? std::map<std::string, double>{} : WalBytesByRelation(url, from, to)) {
    if (what.rfind("phasekey.idempotency_keys", 0) == 0) keys += bytes;
    if (what == "full-page images") fpi = bytes;
    if (what == "transaction") commits = bytes;
  }
  state.counters["wal_fpi_bytes_per_op"] = fpi / ops;
  state.counters["wal_key_table_bytes_per_op"] = keys / ops;
  state.counters["wal_commit_bytes_per_op"] = commits / ops;
  state.counters["ops"] = ops;
}

double KeysInTable(const std::string& url) {
  pqxx::connection conn(url);
  return pqxx::nontransaction(conn).exec1("SELECT count(*)::float8 FROM phasekey.idempotency_keys")[0].as<double>();
}

// Rides through a Runner after a CHECKPOINT; `empty` first empties the table.
void RunRideWal(benchmark::State& state, Target& t, std::int64_t rides, bool empty) {
  if (empty) Exec(t.db->url(), "TRUNCATE phasekey.idempotency_keys");
  RunnerOptions o;
  o.database.url = t.db->url();
  o.database.pool_size = 1;
  o.encryption = t.encryption;
  auto runner = Runner::Open(o, {MakeRideFlow(&g_gateway)});
  if (!runner) return state.SkipWithError(runner.error().ToString().c_str());
  // A request per account first: every statement prepared, every data key made.
  for (int i = 0; i < kAccounts; ++i) (*runner)->Execute("create_ride", Ride(i));
  const double keys_before = KeysInTable(t.db->url());
  const KeyTableSizes before = [&] {
    pqxx::connection conn(t.db->url());
    return ReadKeyTableSizes(conn);
  }();
  Exec(t.db->url(), "CHECKPOINT");
  t.rides.clear();
  const std::string from = WalInsertPosition(t.db->url());
  const auto start = std::chrono::steady_clock::now();
  std::int64_t failed = 0;
  for (std::int64_t i = 0; i < rides; ++i) {
    t.rides.push_back(Ride(i));
    if ((*runner)->Execute("create_ride", t.rides.back()).kind != Reply::Kind::kCompleted) ++failed;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string to = WalInsertPosition(t.db->url());
  for (auto _ : state) state.SetIterationTime(wall);
  ReportWal(state, t.db->url(), from, to, static_cast<double>(rides));
  state.counters["keys_in_table_before"] = keys_before;
  pqxx::connection conn(t.db->url());
  SetSizeCounters(state, before, ReadKeyTableSizes(conn), static_cast<double>(rides), "_per_key_written");
  if (failed > 0) state.SkipWithError(fmt::format("{} rides did not complete", failed).c_str());
}

void RunReplayWal(benchmark::State& state, Target& t) {
  RunnerOptions o;
  o.database.url = t.db->url();
  o.database.pool_size = 1;
  o.encryption = t.encryption;
  auto runner = Runner::Open(o, {MakeRideFlow(&g_gateway)});
  if (!runner) return state.SkipWithError(runner.error().ToString().c_str());
  const std::string from = WalInsertPosition(t.db->url());
  const auto start = std::chrono::steady_clock::now();
  std::int64_t failed = 0;
  for (const Request& r : t.rides) failed += (*runner)->Execute("create_ride", r).kind != Reply::Kind::kReplayed;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string to = WalInsertPosition(t.db->url());
  for (auto _ : state) state.SetIterationTime(wall);
  ReportWal(state, t.db->url(), from, to, static_cast<double>(t.rides.size()));
  if (failed > 0) state.SkipWithError(fmt::format("{} keys were not replayed", failed).c_str());
}

// The Reaper with a retention of 1 s deletes every finished key of the table
// (the rides and their warm-up): WAL per key deleted, the sweep's counting
// included.
void RunReapWal(benchmark::State& state, Target& t) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  ReaperOptions o;
  o.retention = std::chrono::seconds(1);
  // The audit for regenerated keys writes only for a suspect; the warm-up
  // and the measured rides repeat requests on purpose, which it would count.
  o.regeneration_audit.enabled = false;
  DatabaseOptions database;
  database.url = t.db->url();
  auto reaper = Reaper::Open(database, o);
  if (!reaper) return state.SkipWithError(reaper.error().ToString().c_str());
  const std::string from = WalInsertPosition(t.db->url());
  const auto start = std::chrono::steady_clock::now();
  auto report = (*reaper)->RunOnce();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string to = WalInsertPosition(t.db->url());
  for (auto _ : state) state.SetIterationTime(wall);
  if (!report) return state.SkipWithError(report.error().ToString().c_str());
  if (report->deleted < t.rides.size()) return state.SkipWithError("the reaper left rides undeleted");
  ReportWal(state, t.db->url(), from, to, static_cast<double>(report->deleted));
}

void RunTable(benchmark::State& state, Target& t, std::int64_t keys) {
  pqxx::connection conn(t.db->url());
  { pqxx::nontransaction(conn).exec0("TRUNCATE phasekey.idempotency_keys"); }
  const KeyTableSizes empty = ReadKeyTableSizes(conn);
  const auto start = std::chrono::steady_clock::now();
  InsertTemplateCopies(conn, "finished", 1, keys, kAccounts, t.buckets);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  { pqxx::nontransaction(conn).exec0("VACUUM ANALYZE phasekey.idempotency_keys"); }
  for (auto _ : state) state.SetIterationTime(wall);
  const KeyTableSizes full = ReadKeyTableSizes(conn);
  state.counters["keys"] = static_cast<double>(keys);
  state.counters["heap_bytes"] = full.heap_bytes;
  state.counters["toast_bytes"] = full.toast_bytes;
  for (const auto& [name, bytes] : full.index_bytes) state.counters["index_bytes:" + name] = bytes;
  state.counters["total_bytes"] = full.Total();
  SetSizeCounters(state, empty, full, static_cast<double>(keys), "_per_key");
}

// Registers capacity/<name>: one batch, then the 1-minute load average
// (loadavg_1m), which the shared machine's other work moves.
void Batch(const std::string& name, std::function<void(benchmark::State&)> fn) {
  RegisterBatch(
      "capacity/" + name,
      [fn = std::move(fn)](benchmark::State& state) {
        fn(state);
        std::ifstream in("/proc/loadavg");
        double one_minute = 0;
        in >> one_minute;
        state.counters["loadavg_1m"] = one_minute;
      },
      1);
}

}  // namespace

const char* FamilyName() { return "capacity"; }

void RegisterFamily(const BenchConfig& config) {
  g_plain.db = std::make_unique<BenchDatabase>("capacity");
  g_sealed.db = std::make_unique<BenchDatabase>("capacity_sealed");
  g_sealed.encryption.kek_file = WriteKekFile();
  AtFamilyEnd([] {
    g_plain.db.reset();
    g_sealed.db.reset();
    RemoveKekFile(g_sealed.encryption.kek_file);
  });
  AddServerContext(g_plain.db->url());
  benchmark::AddCustomContext("phasekey.reaper_retention_s", std::to_string(ReaperOptions{}.retention.count()));
  for (Target* t : {&g_plain, &g_sealed}) {
    CreateRideTables(t->db->url());
    KeepTemplates(*t);
  }
  const std::int64_t rows = config.quick ? 2000 : 20000;
  const std::int64_t rides = config.quick ? 200 : 2000;
  const std::int64_t table_keys = config.quick ? 100000 : 1000000;
  for (const char* s : kStates) {
    const std::string label = s;
    Batch("rows/" + label, [label, rows](benchmark::State& st) { RunRows(st, g_plain, label, rows); });
    Batch("rows_sealed/" + label, [label, rows](benchmark::State& st) { RunRows(st, g_sealed, label, rows); });
  }
  Batch("wal/ride", [rides](benchmark::State& st) { RunRideWal(st, g_plain, rides, true); });
  Batch("wal/replay", [](benchmark::State& st) { RunReplayWal(st, g_plain); });
  Batch("wal/reap", [](benchmark::State& st) { RunReapWal(st, g_plain); });
  Batch("wal_sealed/ride", [rides](benchmark::State& st) { RunRideWal(st, g_sealed, rides, true); });
  Batch("table/finished_keys:" + std::to_string(table_keys),
        [table_keys](benchmark::State& st) { RunTable(st, g_plain, table_keys); });
  Batch("wal_large/ride", [rides](benchmark::State& st) { RunRideWal(st, g_plain, rides, false); });
}

}  // namespace phasekey::bench
