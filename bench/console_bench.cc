// Family 10: the operator console's keys table at depth. 10^6 keys
// (10^5 with --quick) in phasekey.idempotency_keys, spread over 1000
// accounts (so over every bucket); the console's page of 50 keys (51 asked
// for, as the console asks, to know whether a next page exists) fetched
// first, in the middle and last of the primary-key order, unfiltered.
// Two variants per depth:
//   keys_page        console::ConsoleKeysPage, what a console request pays:
//                    a connection of its own, the named query, the rows as
//                    JSON.
//   keys_page_query  the same named query (sql/queries/console_queries.sql,
//                    ConsoleKeysPage) on one held connection: the query's
//                    own cost.
// Keyset pagination should make depth not matter: the report compares each
// depth with the first page (docs/console.md renders this file through
// tests/doc_results).
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "console/console_queries.h"
#include "phasekey/runner.h"
#include "sql/sql_catalog.h"
#include "support/bench_database.h"
#include "support/bench_flows.h"
#include "support/bench_main.h"
#include "support/seed_keys.h"

namespace phasekey::bench {
namespace {

constexpr int kAccounts = 1000;
constexpr int kBuckets = 16;   // RunnerOptions::buckets' default
constexpr int kPageRows = 51;  // the console's page of 50, plus one

std::unique_ptr<BenchDatabase> g_db;
std::int64_t g_keys = 0;

// Copies one real finished key (made by a runner, so every column holds
// what the engine writes) into `keys` keys (SeedKeyCopies), vacuumed and
// analyzed as a settled table would be.
void Seed(std::int64_t keys) {
  RunnerOptions options;
  options.database.url = g_db->url();
  options.database.pool_size = 1;
  auto runner = Runner::Open(options, {MakeRecordFlow()});
  if (!runner) throw std::runtime_error(runner.error().ToString());
  Reply t = (*runner)->Execute("record", Request{"acct-template", "template", "POST", "/r", RideBody(7)});
  if (t.kind != Reply::Kind::kCompleted) throw std::runtime_error("template key: " + t.detail);
  runner->reset();
  Progress("seeding " + std::to_string(keys) + " keys");
  pqxx::connection conn(g_db->url());
  SeedKeyCopies(conn, 1, keys, kAccounts, kBuckets);
  g_keys = keys + 1;
}

// The cursor after which a page starts `before` keys into the
// primary-key order (0: the first page).
console::KeysCursor CursorAt(std::int64_t before) {
  if (before == 0) return {};
  pqxx::connection conn(g_db->url());
  pqxx::nontransaction tx(conn);
  const pqxx::row r = tx.exec_params1(
      "SELECT bucket, account, idempotency_key FROM phasekey.idempotency_keys "
      "ORDER BY bucket, account, idempotency_key OFFSET $1 LIMIT 1",
      before - 1);
  return {r[0].as<int>(), r[1].as<std::string>(), r[2].as<std::string>()};
}

LoadOptions Load(const BenchConfig& config) {
  LoadOptions o;
  o.clients = 1;
  o.requests = config.quick ? 100 : 500;
  o.warmup = 10;
  return o;
}

void RunPage(benchmark::State& state, std::int64_t before, const LoadOptions& load) {
  console::KeysQuery q;
  q.after = CursorAt(before);
  q.limit = kPageRows;
  const std::int64_t expected = std::min<std::int64_t>(kPageRows, g_keys - before);
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    return [&](std::int64_t) {
      auto rows = console::ConsoleKeysPage(g_db->url(), q);
      if (!rows) throw std::runtime_error(rows.error().ToString());
      return static_cast<std::int64_t>(rows->size()) == expected;
    };
  });
  ReportLoad(state, s);
  state.counters["keys"] = static_cast<double>(g_keys);
  state.counters["keys_before_page"] = static_cast<double>(before);
}

void RunQuery(benchmark::State& state, std::int64_t before, const LoadOptions& load) {
  const console::KeysCursor after = CursorAt(before);
  const std::int64_t expected = std::min<std::int64_t>(kPageRows, g_keys - before);
  LoadStats s = RunLoad(load, [&](int) -> RequestFn {
    auto conn = std::make_shared<pqxx::connection>(g_db->url());
    conn->prepare("page", sql::Query(sql::q::ConsoleKeysPage));
    return [conn, after, expected](std::int64_t) {
      pqxx::nontransaction tx(*conn);
      const std::optional<std::string> none;
      const std::optional<int> no_bucket;
      const std::optional<double> no_bound;
      // The filter's $1-$10 unset (admin::KeyFilter's defaults), then the cursor.
      return static_cast<std::int64_t>(tx.exec_prepared("page", none, no_bucket, none, none, none, none, false, 3, 0.0,
                                                        no_bound, after.bucket, after.account, after.key, kPageRows)
                                           .size()) == expected;
    };
  });
  ReportLoad(state, s);
  state.counters["keys"] = static_cast<double>(g_keys);
  state.counters["keys_before_page"] = static_cast<double>(before);
}

}  // namespace

const char* FamilyName() { return "console"; }

void RegisterFamily(const BenchConfig& config) {
  g_db = std::make_unique<BenchDatabase>("console");
  AtFamilyEnd([] { g_db.reset(); });
  AddServerContext(g_db->url());
  Seed(config.quick ? 100000 : 1000000);
  const LoadOptions load = Load(config);
  const std::vector<std::pair<std::string, std::int64_t>> depths = {
      {"first", 0}, {"middle", g_keys / 2}, {"last", g_keys - (kPageRows - 1)}};
  for (const auto& [where, before] : depths) {
    RegisterBatch(
        "console/keys_page/" + where, [before, load](benchmark::State& s) { RunPage(s, before, load); }, 1);
    RegisterBatch(
        "console/keys_page_query/" + where, [before, load](benchmark::State& s) { RunQuery(s, before, load); }, 1);
  }
}

}  // namespace phasekey::bench
