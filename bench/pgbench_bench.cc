// Family "pgbench": the hand-written floor under the durability family's
// raw_two_commits. Debian's pgbench (C libpq, prepared statements) runs
// bench/pgbench/raw_two_commits.sql, the same two-commit ride, against a
// fresh database with the same tables, at the durability family's client
// counts and request budgets. bench_report puts its rows beside
// raw_two_commits and phasekey in the durability table.
//
// Beside it, phasekey_statements: the same script with the engine's own
// key-row statements where the engine sends them (the deferred claim after
// the first BEGIN, the first move before the first COMMIT, the finish before
// the second), their text taken from the engine's catalog of
// sql/queries/key_store.sql, so a C client with prepared statements and no
// engine shows what phasekey's SQL costs the server by itself.
//
// Two levers of issue 16 not taken in the engine are measured here, on the
// SQL alone, each against a copy of the database changed as the lever would
// change it (LeverSchema) and the same script (docs/benchmarks.md section 8):
//   phasekey_statements_hot_finish     no index reads a column the finish
//       changes (the re-drive, reap and attention indexes, which read
//       `state`, replaced by one on (bucket, created_at), which the re-drive
//       and reap scans would have to use), so the finish can be a HOT
//       update; hot_update_share says how many were.
//   phasekey_statements_request_apart  the request (method, path, body,
//       fingerprint) in a table of its own, written once by the first move,
//       so the key row the finish rewrites is narrower.
// And one way of sending them the issue asked to weigh against the engine's
// (SQL PREPARE, EXECUTE sent with BEGIN or COMMIT in one simple query):
//   phasekey_statements_functions  each statement a PL/pgSQL function of
//       its own (CreateStatementFunctions), its body the catalog's text, the
//       script calling the functions.
//
// pgbench is $PHASEKEY_PGBENCH, else /usr/lib/postgresql/15/bin/pgbench (it
// ships with postgresql-15). Latencies come from pgbench's per-transaction
// log (-l), so percentiles are computed by the same code as every other
// family's; rps is pgbench's own tps without connection time; client CPU is
// pgbench's (the reaped child's user+system time).
#include <libpq-fe.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <pqxx/pqxx>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pg/statements.h"
#include "sql/sql_catalog.h"
#include "support/bench_database.h"
#include "support/bench_flows.h"
#include "support/bench_main.h"
#include "support/child_process.h"
#include "support/lever_schemas.h"
#include "support/load.h"

namespace phasekey::bench {
namespace {

namespace fs = std::filesystem;

std::unique_ptr<BenchDatabase> g_db;
std::map<std::string, std::string> g_urls;  // variant -> database (copies of g_db for the levers)
fs::path g_logs;
int g_run = 0;

std::string Pgbench() {
  const char* env = std::getenv("PHASEKEY_PGBENCH");
  return env != nullptr && *env != '\0' ? env : "/usr/lib/postgresql/15/bin/pgbench";
}

std::string RawScript() { return std::string(PHASEKEY_SOURCE_DIR) + "/bench/pgbench/raw_two_commits.sql"; }

// An engine query the script sends, taken from its typed handle
// (sql::q::<Name>): its name and its place in the catalog.
struct EngineStatement {
  template <std::size_t N>
  constexpr EngineStatement(sql::QueryRef<N> query)  // NOLINT(google-explicit-constructor): a handle is one
      : name(query.name), index(query.index) {}
  std::string_view name;
  std::size_t index;
};

// The engine query `statement` without its comments and final semicolon.
std::string StatementText(EngineStatement statement) {
  std::string out;
  std::istringstream lines(sql::QueryAt(statement.index, statement.name).text);
  for (std::string line; std::getline(lines, line);) {
    const auto code = line.find_first_not_of(" \t");
    if (code == std::string::npos || line.compare(code, 2, "--") == 0) continue;
    out += line + "\n";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ';' || out.back() == ' ')) out.pop_back();
  return out;
}

// The named engine query `name` as one pgbench command: $n replaced by the
// pgbench expressions `args`.
std::string EngineCommand(EngineStatement name, const std::vector<std::string>& args) {
  return pg::SubstituteParameters(StatementText(name), args);
}

// The engine statements the script sends.
constexpr EngineStatement kScriptStatements[] = {sql::q::KeyClaimDeferred, sql::q::KeyClaimMoved, sql::q::KeyFinish};

// Parameter types of each statement in kScriptStatements, filled by
// CreateStatementFunctions.
std::map<std::string_view, std::vector<std::string>> g_function_params;

// The functions variant's name for the statement `name`: phasekey.lever_
// and the name in lower case.
std::string LeverFunction(EngineStatement name) {
  std::string lower(name.name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return "phasekey.lever_" + lower;
}

// The functions variant's schema: each statement of kScriptStatements as a
// PL/pgSQL function phasekey.lever_<name> (lower case) whose body returns
// the statement's rows; PL/pgSQL keeps the body's plan for the session, as
// SQL PREPARE keeps the engine's. libpq describes each statement prepared
// (parameter types, result columns and their types) without running it.
void CreateStatementFunctions(const std::string& url) {
  pqxx::connection conn(url);
  std::unique_ptr<PGconn, decltype(&PQfinish)> raw(PQconnectdb(url.c_str()), &PQfinish);
  if (PQstatus(raw.get()) != CONNECTION_OK) throw std::runtime_error(PQerrorMessage(raw.get()));
  auto type_name = [&](Oid oid) {
    pqxx::nontransaction n(conn);
    return n.exec_params1("SELECT format_type($1::oid, NULL)", static_cast<long long>(oid))[0].as<std::string>();
  };
  for (const EngineStatement name : kScriptStatements) {
    const std::string text = StatementText(name);
    const std::string statement(name.name);
    std::unique_ptr<PGresult, decltype(&PQclear)> prepared(
        PQprepare(raw.get(), statement.c_str(), text.c_str(), 0, nullptr), &PQclear);
    std::unique_ptr<PGresult, decltype(&PQclear)> d(PQdescribePrepared(raw.get(), statement.c_str()), &PQclear);
    if (PQresultStatus(prepared.get()) != PGRES_COMMAND_OK || PQresultStatus(d.get()) != PGRES_COMMAND_OK) {
      throw std::runtime_error("describing " + statement + ": " + PQerrorMessage(raw.get()));
    }
    std::vector<std::string> param_types;
    std::string params, returns;
    for (int i = 0; i < PQnparams(d.get()); ++i) {
      param_types.push_back(type_name(PQparamtype(d.get(), i)));
      params += (i == 0 ? "" : ", ") + param_types.back();
    }
    if (PQnfields(d.get()) == 1) {
      returns = "SETOF " + type_name(PQftype(d.get(), 0));
    } else {
      for (int c = 0; c < PQnfields(d.get()); ++c) {
        returns += std::string(c == 0 ? "TABLE (" : ", ") + PQfname(d.get(), c) + " " + type_name(PQftype(d.get(), c));
      }
      returns += ")";
    }
    pqxx::nontransaction n(conn);
    n.exec0("CREATE FUNCTION " + LeverFunction(name) + "(" + params + ") RETURNS " + returns +
            " LANGUAGE plpgsql AS $lever$\n#variable_conflict use_column\nBEGIN\n  RETURN QUERY " + text +
            ";\nEND\n$lever$");
    g_function_params[name.name] = param_types;
  }
}

// The named statement as the functions variant calls it, each argument
// cast to the parameter's type.
std::string FunctionCall(EngineStatement name, const std::vector<std::string>& args) {
  std::string call;
  const std::vector<std::string>& types = g_function_params.at(name.name);
  for (std::size_t i = 0; i < args.size(); ++i) {
    call += (i == 0 ? "" : ", ") + ("(" + args[i] + ")::" + types.at(i));
  }
  return "SELECT * FROM " + LeverFunction(name) + "(" + call + ")";
}

// The database changes of a lever variant (the header comment); empty for
// the others.
const char* LeverSchema(const std::string& variant) {
  if (variant == "phasekey_statements_hot_finish") {
    return kWithoutStateIndexes;
  }
  if (variant == "phasekey_statements_request_apart") {
    return "CREATE TABLE phasekey.key_requests (bucket smallint NOT NULL, account text NOT NULL, "
           "idempotency_key text NOT NULL, request_method text NOT NULL, request_path text NOT NULL, "
           "request_body bytea NOT NULL, request_fingerprint bytea NOT NULL, "
           "PRIMARY KEY (bucket, account, idempotency_key)); "
           "ALTER TABLE phasekey.idempotency_keys ALTER request_method DROP NOT NULL, "
           "ALTER request_path DROP NOT NULL, ALTER request_fingerprint DROP NOT NULL";
  }
  return "";
}

// raw_two_commits.sql with the engine's key-row statements where the engine
// sends them, for the ride of account 'acct-<acct>' and key 'pgb-<seq>'
// (the script's variables), with no traceparent and, at the finish, no
// error class (a success). The claim's reserved id and stable id come back
// with \gset. With `request_apart`, the first move also inserts the request
// into phasekey.key_requests and leaves the key row's request columns NULL.
// `command` renders a named statement with its arguments (EngineCommand, or
// FunctionCall for the functions variant). Written to `path`; the caller
// removes it.
using CommandFn = std::string (*)(EngineStatement name, const std::vector<std::string>& args);
void WritePhasekeyScript(const fs::path& path, bool request_apart, CommandFn command) {
  const std::string account = "('acct-' || :acct::text)", key = "('pgb-' || :seq::text)", bucket = "(:acct % 16)",
                    owner = "'0190b6a2-8c1e-7cc0-8000-000000000001'";
  const std::string method = "'POST'", route = "'/rides'",
                    body =
                        "encode(convert_to('{\"origin_lat\":' || :lat::text || ',\"origin_lon\":-122.4}', "
                        "'UTF8'), 'hex')",
                    fingerprint = "repeat('ab', 32)", data_key = "NULL";
  // The request body goes as hex, the data key as NULL: a plaintext body,
  // as the engine stores it without EncryptionOptions (docs/data-protection.md).
  // The flow's version is the one the engine stores for its ride flow.
  TestGateway gateway;
  const std::string version = "'" + MakeRideFlow(&gateway)->version() + "'";
  const std::string claim = command(sql::q::KeyClaimDeferred, {account, key, bucket, data_key}) + " \\gset\n";
  std::string moved =
      command(sql::q::KeyClaimMoved,
              {":id", ":stable_id", account, key, bucket, "'create_ride'", request_apart ? "NULL" : method,
               request_apart ? "NULL" : route, request_apart ? "NULL" : body, request_apart ? "NULL" : fingerprint,
               "'ride_created'", "'{}'", owner, "30000", version, data_key, "NULL"});
  if (request_apart) {
    if (moved.rfind("WITH ", 0) != 0) throw std::runtime_error("KeyClaimMoved no longer starts with WITH");
    moved = "WITH request AS (INSERT INTO phasekey.key_requests VALUES (" + bucket + ", " + account + ", " + key +
            ", " + method + ", " + route + ", decode(" + body + ", 'hex'), decode(" + fingerprint + ", 'hex'))), " +
            moved.substr(5);
  }
  moved += ";\n";
  const std::string finish =
      command(sql::q::KeyFinish,
              {account, key, owner, "'ride_created'",
               "jsonb_build_object('charge_created', jsonb_build_object('charge_id', 'ch_' || "
               ":seq::text))::text",
               "201", "'[[\"Content-Type\",\"application/json\"]]'",
               "encode(convert_to('{\"status\":\"confirmed\"}', 'UTF8'), 'hex')", "NULL", bucket, "NULL"}) +
      ";\n";
  std::ifstream in(RawScript());
  std::ofstream out(path);
  int begins = 0, commits = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("--", 0) == 0) continue;
    if (line == "COMMIT;") out << (commits++ == 0 ? moved : finish);
    out << line << "\n";
    if (line == "BEGIN;" && begins++ == 0) out << claim;
  }
}

fs::path ScriptPath(const std::string& variant) {
  if (variant == "raw_two_commits") return RawScript();
  if (variant == "phasekey_statements_request_apart") return g_logs / "request_apart.sql";
  if (variant == "phasekey_statements_functions") return g_logs / "functions.sql";
  return g_logs / "phasekey_statements.sql";
}

// Updates of the key table so far, and how many of them were HOT.
struct KeyUpdates {
  std::int64_t all = 0, hot = 0;
};

KeyUpdates ReadKeyUpdates(const std::string& url) {
  pqxx::connection conn(url);
  pqxx::nontransaction tx(conn);
  pqxx::row r = tx.exec1(
      "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
      "WHERE schemaname = 'phasekey' AND relname = 'idempotency_keys'");
  return {r[0].as<std::int64_t>(), r[1].as<std::int64_t>()};
}

// The key table's updates since `before`, once the statistics show at least
// `expected` of them: pgbench's backends report theirs as they exit, which
// can be just after pgbench itself has. Gives up after about 3 s.
KeyUpdates KeyUpdatesSince(const std::string& url, const KeyUpdates& before, std::int64_t expected) {
  KeyUpdates now;
  for (int i = 0; i < 30; ++i) {
    now = ReadKeyUpdates(url);
    if (now.all - before.all >= expected) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return {now.all - before.all, now.hot - before.hot};
}

struct Pgrun {
  std::string error;  // non-empty when pgbench failed
  double tps = 0;
  double cpu_us = 0;
  double sys_us = 0;  // of cpu_us, in the kernel
  std::string log_prefix;
};

// Runs the script: `clients` connections, `per_client` transactions each.
Pgrun RunPgbench(const std::string& variant, int clients, std::int64_t per_client, bool log) {
  Pgrun out;
  out.log_prefix = (g_logs / ("pgb" + std::to_string(g_run++))).string();
  std::vector<std::string> argv = {Pgbench(),
                                   "--no-vacuum",
                                   "--protocol=prepared",
                                   "--file=" + ScriptPath(variant).string(),
                                   "--client=" + std::to_string(clients),
                                   "--jobs=" + std::to_string(std::min(clients, 2)),
                                   "--transactions=" + std::to_string(per_client)};
  if (log) {
    argv.push_back("--log");
    argv.push_back("--log-prefix=" + out.log_prefix);
  }
  argv.push_back(g_urls.at(variant));
  const CpuTime cpu0 = ReadCpuTime(RUSAGE_CHILDREN);
  testing::RunResult r = testing::RunToEnd(argv);
  const CpuTime cpu = ReadCpuTime(RUSAGE_CHILDREN) - cpu0;
  out.cpu_us = cpu.total_us;
  out.sys_us = cpu.system_us;
  if (r.exit_code != 0) {
    out.error = "pgbench exited with " + std::to_string(r.exit_code);
    return out;
  }
  static const std::regex kTps(R"(tps = ([0-9.]+) \(without initial connection time\))");
  std::smatch m;
  if (!std::regex_search(r.out, m, kTps)) {
    out.error = "no tps in pgbench's output";
    return out;
  }
  out.tps = std::stod(m[1]);
  return out;
}

// Latencies (ms) of every logged transaction; `failed` counts the ones
// pgbench logged as failed or skipped. Deletes the log files.
std::vector<double> ReadLatencies(const std::string& prefix, std::int64_t* failed) {
  std::vector<double> ms;
  const fs::path dir = fs::path(prefix).parent_path();
  const std::string stem = fs::path(prefix).filename().string() + ".";
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(stem, 0) != 0) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      // client_id transaction_no time script_no time_epoch time_us [...]
      std::istringstream fields(line);
      std::string client, tx, time;
      fields >> client >> tx >> time;
      char* end = nullptr;
      const double us = std::strtod(time.c_str(), &end);
      if (end == time.c_str() || *end != '\0') {
        ++*failed;
      } else {
        ms.push_back(us / 1000.0);
      }
    }
    fs::remove(entry.path());
  }
  return ms;
}

void RunFloor(benchmark::State& state, const std::string& variant, int clients, std::int64_t requests) {
  if (::access(Pgbench().c_str(), X_OK) != 0) {
    return state.SkipWithError(("no pgbench at " + Pgbench() + " (Debian package postgresql-15)").c_str());
  }
  // Warm-up as in the durability family (about 2 per client plus 10), on
  // connections of its own: it fills the caches, not pgbench's statements.
  const std::int64_t warm_per_client = 2 + (10 + clients - 1) / clients;
  const std::int64_t per_client = (requests + clients - 1) / clients;
  const std::string& url = g_urls.at(variant);
  const ServerCounts before = ReadServerCounts(url);
  const KeyUpdates updates_before = ReadKeyUpdates(url);
  Pgrun warm = RunPgbench(variant, clients, warm_per_client, false);
  if (!warm.error.empty()) return state.SkipWithError(("warm-up: " + warm.error).c_str());
  Pgrun run = RunPgbench(variant, clients, per_client, true);
  std::int64_t failed = 0;  // in s.failures below, with any transaction missing from the log
  std::vector<double> latencies = ReadLatencies(run.log_prefix, &failed);
  if (!run.error.empty()) return state.SkipWithError(run.error.c_str());
  const ServerCounts after = ReadServerCounts(url);
  LoadStats s;
  s.requests = clients * per_client;
  s.failures = s.requests - static_cast<std::int64_t>(latencies.size());  // logged failed, or never logged
  s.rps = run.tps;
  s.wall_s = run.tps > 0 ? static_cast<double>(s.requests) / run.tps : 0;
  s.p90_ms = Percentile(latencies, 0.90);
  const LatencySummary sum = Summarize(latencies);
  s.p50_ms = sum.p50_ms;
  s.p99_ms = sum.p99_ms;
  s.max_ms = sum.max_ms;
  s.mean_ms = sum.mean_ms;
  s.client_cpu_us_per_req = s.requests > 0 ? run.cpu_us / static_cast<double>(s.requests) : 0;
  s.client_sys_us_per_req = s.requests > 0 ? run.sys_us / static_cast<double>(s.requests) : 0;
  ReportLoad(state, s);
  const std::int64_t sent = s.requests + clients * warm_per_client;  // warm-up included, as the server saw
  ReportServerCounts(state, before, after, sent);
  state.counters["commits_per_req"] = 2;  // the script's two COMMITs
  if (variant != "raw_two_commits") {
    // One update per ride, the finish (the first move is an insert).
    const KeyUpdates u = KeyUpdatesSince(url, updates_before, sent);
    state.counters["key_updates_per_req"] = static_cast<double>(u.all) / static_cast<double>(sent);
    state.counters["hot_update_share"] = u.all > 0 ? static_cast<double>(u.hot) / static_cast<double>(u.all) : 0;
  }
}

}  // namespace

const char* FamilyName() { return "pgbench"; }

void RegisterFamily(const BenchConfig& config) {
  g_db = std::make_unique<BenchDatabase>("pgbench");
  g_logs = fs::temp_directory_path() / ("phasekey-pgbench-" + std::to_string(::getpid()));
  fs::create_directories(g_logs);
  AtFamilyEnd([] {
    g_db.reset();
    std::error_code ignored;
    fs::remove_all(g_logs, ignored);
  });
  CreateRideTables(g_db->url());  // the raw baseline's tables, the same DDL
  AddServerContext(g_db->url());
  benchmark::AddCustomContext("pgbench.path", Pgbench());
  benchmark::AddCustomContext("pgbench.script", "bench/pgbench/raw_two_commits.sql");
  const int reps = config.quick ? 2 : 5;
  static const char* const kVariants[] = {"raw_two_commits", "phasekey_statements", "phasekey_statements_hot_finish",
                                          "phasekey_statements_request_apart", "phasekey_statements_functions"};
  for (const char* variant : kVariants) {
    const std::string lever = LeverSchema(variant);
    const bool functions = std::string(variant) == "phasekey_statements_functions";
    g_urls[variant] = lever.empty() && !functions ? g_db->url() : g_db->Clone(std::string(variant).substr(20));
    if (!lever.empty()) {
      pqxx::connection conn(g_urls[variant]);
      pqxx::nontransaction(conn).exec0(lever);
    }
    if (functions) CreateStatementFunctions(g_urls[variant]);
  }
  WritePhasekeyScript(ScriptPath("phasekey_statements"), false, EngineCommand);
  WritePhasekeyScript(ScriptPath("phasekey_statements_request_apart"), true, EngineCommand);
  WritePhasekeyScript(ScriptPath("phasekey_statements_functions"), false, FunctionCall);
  // The durability family's client counts and request budgets (Load() in
  // durability_bench.cc).
  for (int clients : {1, 4, 16}) {
    const std::int64_t requests = config.quick ? (clients == 1 ? 150 : 400) : (clients == 1 ? 400 : 1000);
    for (const char* variant : kVariants) {
      RegisterBatch(
          std::string("pgbench/") + variant + "/clients:" + std::to_string(clients),
          [variant, clients, requests](benchmark::State& s) { RunFloor(s, variant, clients, requests); }, reps);
    }
  }
}

}  // namespace phasekey::bench
