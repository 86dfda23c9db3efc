// Sections 1 and 1b of docs/benchmarks.md: the ride flow in process
// (durability, beside the raw baseline and the pgbench floor) and the same
// flow as the deployed HTTP service.
#include "report/sections.h"

#include "report/section_util.h"
#include "report/wal_table.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

namespace phasekey::bench::report {
namespace {

// What the client CPU goal's row says limits it: phasekey's extra CPU per
// ride over raw at 16 clients, split into user space and kernel when the
// run has the system time (client_sys_us_per_req).
std::string ClientCpuLimit(const Run& raw16, const Run& pk16) {
  const double more = pk16.Counter("client_cpu_us_per_req") - raw16.Counter("client_cpu_us_per_req");
  std::string out = Num(more, 0) + " µs more per ride than raw at 16 clients";
  if (pk16.counters.count("client_sys_us_per_req") > 0 && raw16.counters.count("client_sys_us_per_req") > 0) {
    const double sys = pk16.Counter("client_sys_us_per_req") - raw16.Counter("client_sys_us_per_req");
    out += fmt::format(
        ": {} µs in user space (the engine's code and what it calls: building and reading its "
        "statements, the JSON of outcomes and response, the fingerprint, the allocator) and {} µs "
        "in the kernel (sockets and thread switches; raw spends {} µs there per ride)",
        Num(more - sys, 0), Num(sys, 0), Num(raw16.Counter("client_sys_us_per_req"), 0));
  } else {
    out +=
        ", the engine's own client work: building and reading its statements, the JSON of outcomes and "
        "response, the fingerprint";
  }
  return out;
}

// The ride flow's four goals (section 1), from the figures the section
// computed and the 16-client runs.
void AddDurabilityGoals(const std::string& title, const std::vector<std::string>& raw_ratios, bool raw_met,
                        const std::vector<std::string>& floor_ratios, bool floor_missed, bool floor_same_run,
                        const std::string& raw_floor16, const std::string& statements_floor16, const Run* raw16,
                        const Run* pk16, const Run* sends_raw, const Run* sends_pk, Goals* goals) {
  const bool both16 = raw16 != nullptr && pk16 != nullptr && raw16->error.empty() && pk16->error.empty();
  auto per_ride = [&](const char* counter) { return both16 ? pk16->Counter(counter) / raw16->Counter(counter) : 0.0; };
  const double wal = per_ride("wal_bytes_per_req"), cpu = per_ride("client_cpu_us_per_req"),
               server = per_ride("server_cpu_us_per_req");
  const std::string sends = sends_raw && sends_pk ? fmt::format("{} vs {} sends to the server",
                                                                Num(sends_pk->Counter("client_sends_per_req"), 1),
                                                                Num(sends_raw->Counter("client_sends_per_req"), 1))
                                                  : std::string("sends not probed");
  const std::string server_cpu =
      both16 && pk16->counters.count("server_cpu_us_per_req") > 0
          ? fmt::format("{}x the server CPU ({} vs {} µs), ", Num(server),
                        Num(pk16->Counter("server_cpu_us_per_req"), 0), Num(raw16->Counter("server_cpu_us_per_req"), 0))
          : std::string();
  const std::string statements = statements_floor16 == "-"
                                     ? std::string()
                                     : "; phasekey's statements alone, sent by pgbench with no engine, reach " +
                                           statements_floor16 + " of the floor at 16 clients";
  const std::string work = fmt::format(
      "per ride at 16 clients: {}{}x the WAL, {}x the client CPU, {}{}; the levers "
      "left, a HOT finish and the request in a table of its own, were measured on "
      "the SQL and not taken (section 8)",
      server_cpu, Num(wal), Num(cpu), sends, statements);
  goals->Add({"ride flow rps / raw_two_commits", fmt::format(">= {} at 1, 4 and 16 clients", kRawRpsGoal),
              fmt::format("{}", fmt::join(raw_ratios, " / ")),
              raw_ratios.empty() ? std::nullopt : std::optional<bool>(raw_met), work, title});
  goals->Add({"ride flow rps / pgbench floor", fmt::format(">= {} at 1, 4 and 16 clients", kFloorRpsGoal),
              fmt::format("{}{}", fmt::join(floor_ratios, " / "), floor_same_run ? "" : kDifferentRuns),
              floor_ratios.empty() || !floor_same_run ? std::nullopt : std::optional<bool>(!floor_missed),
              "raw libpqxx (exec_params: each statement parsed and planned) reaches " + raw_floor16 +
                  " of the floor itself at 16 clients; phasekey's own cost " + work,
              title});
  const std::string key_row =
      "the key row: written twice per ride, inserted (request and all) at the first move before the charge and "
      "updated with the response (a non-HOT update: the state is in the partial indexes, which the re-drive worker's "
      "poll needs: section 8); see the WAL-by-relation table";
  goals->Add({"WAL bytes per ride, phasekey / raw", fmt::format("<= {} at 16 clients", kWalGoal),
              both16 ? Num(wal) : "", both16 ? std::optional<bool>(wal <= kWalGoal) : std::nullopt, key_row, title});
  goals->Add({"client CPU per ride, phasekey / raw", fmt::format("<= {} at 16 clients", kClientCpuGoal),
              both16 ? Num(cpu) : "", both16 ? std::optional<bool>(cpu <= kClientCpuGoal) : std::nullopt,
              both16 ? ClientCpuLimit(*raw16, *pk16) : std::string(), title});
}

// What sealing bodies at rest costs (phasekey_sealed beside phasekey, same
// run, interleaved), and its goal's row (`goal`): sealed / plaintext rps at
// 16 clients.
std::string SealedParagraph(const Family& f, const std::string& title, GoalRow* goal) {
  std::vector<std::string> rps, p50, cpu;
  std::optional<double> rps16;
  std::string limit16;
  for (int clients : {1, 4, 16}) {
    const std::string c = "clients:" + std::to_string(clients);
    const Run* pk = f.Find("phasekey", c);
    const Run* sealed = f.Find("phasekey_sealed", c);
    if (pk == nullptr || sealed == nullptr || !pk->error.empty() || !sealed->error.empty()) continue;
    rps.push_back(Ratio(sealed->Counter("rps"), pk->Counter("rps")));
    p50.push_back(Ratio(sealed->Counter("p50_ms"), pk->Counter("p50_ms")));
    cpu.push_back(Num(sealed->Counter("client_cpu_us_per_req") - pk->Counter("client_cpu_us_per_req"), 0));
    if (clients != 16 || pk->Counter("rps") <= 0) continue;
    rps16 = sealed->Counter("rps") / pk->Counter("rps");
    auto pair = [&](const char* counter, const char* unit) {
      return fmt::format("{} vs {} {}", Num(sealed->Counter(counter), 0), Num(pk->Counter(counter), 0), unit);
    };
    limit16 = "per ride at 16 clients, sealed vs plaintext: client CPU " + pair("client_cpu_us_per_req", "µs") +
              " (sealing request, response and outcomes with the account's data key), server CPU " +
              pair("server_cpu_us_per_req", "µs") + ", WAL " + pair("wal_bytes_per_req", "bytes");
  }
  *goal = GoalRow{"ride flow rps, sealed / plaintext",
                  fmt::format(">= {} at 16 clients", kSealedGoal),
                  rps.empty() ? "" : fmt::format("{} at 1 / 4 / 16 clients", fmt::join(rps, " / ")),
                  rps16 ? std::optional<bool>(*rps16 >= kSealedGoal) : std::nullopt,
                  limit16,
                  title};
  if (rps.empty()) return "";
  return fmt::format(
      "`phasekey_sealed` is the phasekey ride with bodies sealed at rest (`RunnerOptions::encryption`, a "
      "key-encryption key file the family writes, 0600, in a temporary directory): each account's data key "
      "seals the request body, the response and the foreign outcomes with AES-256-GCM "
      "(`engine/include/phasekey/data_protection.h`). It runs in a database of its own with the same tables (the "
      "engine refuses a runner without keys on a database holding data keys), its runs interleaved with the "
      "plaintext ones in the same process. The 64 accounts' data keys are created or read in the warm-up (at least 64 "
      "requests, one per "
      "account, in a sealed run), so the measured requests find them in the runner's cache, as a long-lived "
      "service does (it reads a busy account's key once a minute). Sealed / plaintext at 1 / 4 / 16 clients: "
      "rps {}, p50 {}, client CPU per ride (sealed minus plaintext) {} µs. "
      "**Sealed / plaintext rps at 16 clients: {}** (goal >= {}, a cost under 5%: {}).{}\n\n",
      fmt::join(rps, " / "), fmt::join(p50, " / "), fmt::join(cpu, " / "), rps16 ? Num(*rps16) : "-", kSealedGoal,
      !rps16                  ? "not measured"
      : *rps16 >= kSealedGoal ? "met"
                              : "missed",
      rps16 && *rps16 > 1
          ? " A ratio above 1 is not a gain: sealing only adds work to a ride, so the sealed runs' lead is this "
            "run's noise (and the smaller tables of their own database), and what the figure says is that the "
            "cost is smaller than this run could resolve, not how small it is."
          : "");
}

// What a transaction pooler costs (docs/scaling.md): phasekey with prepared
// statements off, direct and through PgBouncer, against phasekey prepared.
std::string PoolerParagraph(const Family& f) {
  std::vector<std::string> unprepared, pooled;
  for (int clients : {1, 4, 16}) {
    const std::string c = "clients:" + std::to_string(clients);
    const Run* pk = f.Find("phasekey", c);
    if (pk == nullptr || !pk->error.empty()) continue;
    for (auto [variant, out] :
         {std::pair{"phasekey_unprepared", &unprepared}, std::pair{"phasekey_pgbouncer", &pooled}}) {
      const Run* r = f.Find(variant, c);
      if (r != nullptr && r->error.empty()) out->push_back(Ratio(r->Counter("rps"), pk->Counter("rps")));
    }
  }
  if (unprepared.empty() && pooled.empty()) return "";
  return fmt::format(
      "Through a transaction pooler (docs/scaling.md): `phasekey_unprepared` is phasekey with "
      "`DatabaseOptions::prepared_statements = false` (every statement sent with its text), straight to the server; "
      "`phasekey_pgbouncer` the same through Debian's PgBouncer 1.18 in transaction mode (pool of 16 server "
      "connections), the clients connected to PgBouncer. Their rps as a share of phasekey's with prepared "
      "statements, at 1 / 4 / 16 clients: unprepared {}, through PgBouncer {}.\n\n",
      unprepared.empty() ? "-" : fmt::format("{}", fmt::join(unprepared, " / ")),
      pooled.empty() ? "-" : fmt::format("{}", fmt::join(pooled, " / ")));
}

}  // namespace

std::string DurabilitySection(const Input& in, const Input& floor, Goals* goals) {
  const std::string title = "1. Durability cost of the ride flow";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  const Family* pgb = floor.family ? &*floor.family : nullptr;
  std::string md = "## " + title + "\n\n" +
                   "The ride flow (create ride, charge an in-process gateway with no added latency, send receipt) "
                   "through `Runner::Execute`, beside `raw_two_commits`: the same business statements on raw "
                   "libpqxx with the same two commits and no key table; beside `pgbench_floor`: the same two-commit "
                   "ride hand-written for Debian's pgbench (`bench/pgbench/raw_two_commits.sql`, C libpq, "
                   "`-M prepared`, run by the pgbench family against a fresh database with the same tables, same "
                   "client counts and request budget); and beside `leach_four_commits`: Leach's "
                   "design (a key row and four SERIALIZABLE transactions, the charge inside the third). One "
                   "connection per client, distinct keys. Ratios are against the raw baseline and against the "
                   "pgbench floor: rps below 1 and latency above 1 are the cost. " +
                   fmt::format(
                       "Goals: phasekey / raw rps >= {}; phasekey / pgbench floor rps >= {}; at 16 clients, "
                       "WAL bytes <= {} and client CPU <= {} times the raw baseline's per ride.\n\n",
                       kRawRpsGoal, kFloorRpsGoal, kWalGoal, kClientCpuGoal) +
                   "| clients | variant | rps | p50 ms | p99 ms | commits/request | WAL bytes/request | client CPU "
                   "µs/request | server CPU µs/request | failed requests | rps ratio vs raw | p50 ratio vs raw | rps "
                   "ratio vs pgbench floor |\n"
                   "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::vector<std::string> misses, raw_ratios, floor_ratios, floor_clients;
  std::string raw_floor16 = "-", statements_floor16 = "-";
  std::vector<std::string> statements_floor, engine_statements;
  bool floor_missed = false;
  for (int clients : {1, 4, 16}) {
    const std::string c = "clients:" + std::to_string(clients);
    const Run* raw = f.Find("raw_two_commits", c);
    const Run* fl = pgb ? pgb->Find("raw_two_commits", c) : nullptr;
    if (fl != nullptr && !fl->error.empty()) fl = nullptr;
    const std::pair<const char*, const Run*> rows[] = {
        {"raw_two_commits", raw},
        {"pgbench_floor", pgb ? pgb->Find("raw_two_commits", c) : nullptr},
        {"pgbench_phasekey_statements", pgb ? pgb->Find("phasekey_statements", c) : nullptr},
        {"phasekey", f.Find("phasekey", c)},
        {"phasekey_sealed", f.Find("phasekey_sealed", c)},
        {"leach_four_commits", f.Find("leach_four_commits", c)},
        {"phasekey_unprepared", f.Find("phasekey_unprepared", c)},
        {"phasekey_pgbouncer", f.Find("phasekey_pgbouncer", c)}};
    for (const auto& [variant, r] : rows) {
      if (r == nullptr) continue;
      if (!r->error.empty()) {
        md += fmt::format("| {} | {} | {} |||||||||||\n", clients, variant, Failed(r));
        continue;
      }
      const bool has_server = r->counters.count("server_cpu_us_per_req") > 0;
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", clients, variant,
                        Num(r->Counter("rps"), 0), Num(r->Counter("p50_ms")), Num(r->Counter("p99_ms")),
                        Num(r->Counter("commits_per_req")), Num(r->Counter("wal_bytes_per_req"), 0),
                        Num(r->Counter("client_cpu_us_per_req"), 0),
                        has_server ? Num(r->Counter("server_cpu_us_per_req"), 0) : std::string("-"),
                        Num(r->Counter("failures"), 0), raw ? Ratio(r->Counter("rps"), raw->Counter("rps")) : "-",
                        raw ? Ratio(r->Counter("p50_ms"), raw->Counter("p50_ms")) : "-",
                        fl ? Ratio(r->Counter("rps"), fl->Counter("rps")) : "-");
      if (std::string(variant) == "raw_two_commits" && clients == 16 && fl != nullptr) {
        raw_floor16 = Ratio(r->Counter("rps"), fl->Counter("rps"));
      }
      if (std::string(variant) == "pgbench_phasekey_statements" && fl != nullptr) {
        statements_floor.push_back(Ratio(r->Counter("rps"), fl->Counter("rps")));
        if (clients == 16) statements_floor16 = statements_floor.back();
        const Run* pk = f.Find("phasekey", c);
        if (pk != nullptr && pk->error.empty())
          engine_statements.push_back(Ratio(pk->Counter("rps"), r->Counter("rps")));
      }
      if (std::string(variant) != "phasekey") continue;
      if (raw != nullptr && raw->Counter("rps") > 0) {
        const double rr = r->Counter("rps") / raw->Counter("rps");
        raw_ratios.push_back(Num(rr));
        if (rr < kRawRpsGoal) misses.push_back(fmt::format("{} clients: rps ratio {}", clients, Num(rr)));
      }
      if (fl != nullptr && fl->Counter("rps") > 0) {
        const double fr = r->Counter("rps") / fl->Counter("rps");
        floor_ratios.push_back(Num(fr));
        floor_clients.push_back(std::to_string(clients));
        floor_missed = floor_missed || fr < kFloorRpsGoal;
      }
    }
  }
  md += "\n";
  if (!floor.family) {
    md += "pgbench floor: no results (" + floor.missing + ").\n\n";
  } else if (floor_ratios.empty()) {
    md += "pgbench floor: no ratio (a run failed; see the table).\n\n";
  } else {
    md += fmt::format("**phasekey / pgbench floor, rps: {} at {} clients** (goal >= {}: {}).\n\n",
                      fmt::join(floor_ratios, " / "), fmt::join(floor_clients, " / "), kFloorRpsGoal,
                      floor.rerun != in.rerun ? "not judged: the floor and this family come from different runs"
                      : floor_missed          ? "missed"
                                              : "met");
  }
  if (!statements_floor.empty()) {
    md += fmt::format(
        "`pgbench_phasekey_statements` is the floor's script with the engine's own key-row statements where the "
        "engine sends them (the deferred claim after the first BEGIN, the first move before the first COMMIT, the "
        "finish before the second), their text taken from the engine's catalog of `sql/queries/key_store.sql`: "
        "phasekey's SQL sent by a C client with prepared statements and no engine, one statement per round trip "
        "(the engine sends the claim with BEGIN, and the move and finish with COMMIT, a phase's queued statements "
        "with them). It reaches {} of the "
        "floor at 1 / 4 / 16 clients, and phasekey through the engine reaches {} of it: what the key-row statements "
        "cost the server bounds the ride flow before any client work.\n\n",
        fmt::join(statements_floor, " / "),
        engine_statements.empty() ? std::string("-") : fmt::format("{}", fmt::join(engine_statements, " / ")));
  }
  // Commits and sends per request, as measured.
  const Run* raw16 = f.Find("raw_two_commits", "clients:16");
  const Run* pk16 = f.Find("phasekey", "clients:16");
  const Run* leach16 = f.Find("leach_four_commits", "clients:16");
  auto commits = [](const Run* r) {
    return r != nullptr && r->error.empty() ? Num(r->Counter("commits_per_req")) : "-";
  };
  md += fmt::format(
      "Durable commits per request at 16 clients, counted by the clients: phasekey {}, the raw baseline "
      "{}, Leach's design {}. ",
      commits(pk16), commits(raw16), commits(leach16));
  const Run* sends_raw = f.Find("client_sends", "raw_two_commits");
  const Run* sends_pk = f.Find("client_sends", "phasekey");
  const Run* sends_leach = f.Find("client_sends", "leach_four_commits");
  auto sends = [](const Run* r) {
    return r != nullptr && r->error.empty() ? Num(r->Counter("client_sends_per_req"), 1) : std::string("-");
  };
  if (sends_raw != nullptr || sends_pk != nullptr) {
    md += fmt::format(
        "Sends to the server per request (a one-client probe per variant; the kernel's count of TCP data segments "
        "the client sent, `tcpi_data_segs_out`; a client that waits for each answer makes one round trip per "
        "send): phasekey {}, the raw baseline {}, Leach's design {}. ",
        sends(sends_pk), sends(sends_raw), sends(sends_leach));
    if (sends_pk != nullptr && !sends_pk->error.empty()) md += "(phasekey's probe " + Failed(sends_pk) + ") ";
  }
  md +=
      "Leach's failed requests are serialization failures (40001) answered 409 although every key is distinct: "
      "SERIALIZABLE's predicate locks cover index pages, not single keys, so concurrent first requests for "
      "neighbouring keys abort each other (its commits/request drops by as much). Client CPU is the client "
      "process's user+system time (all threads) per request: this process for phasekey and the raw baselines, "
      "the pgbench process for the floor; the server's is not in it. Server CPU is the user+system time of every "
      "process of the PostgreSQL server (backends, exited ones included, and the background processes) per "
      "request, read from /proc around each run when the server runs on the benchmark's machine (\"-\": the "
      "run did not read it).\n\n";
  GoalRow sealed_goal;
  md += SealedParagraph(f, title, &sealed_goal);
  md += PoolerParagraph(f);
  md += WalByRelationTable(f);
  if (!misses.empty()) {
    md += "**Goal missed** (" + fmt::format("{}", fmt::join(misses, "; ")) + "). ";
    if (raw16 != nullptr && pk16 != nullptr && raw16->error.empty() && pk16->error.empty()) {
      md += fmt::format(
          "At 16 clients phasekey writes {} as much WAL per request as the baseline ({} vs {} bytes), spends "
          "{} as much client CPU ({} vs {} µs) and sends to the server {} times as often (one-client probe). ",
          Ratio(pk16->Counter("wal_bytes_per_req"), raw16->Counter("wal_bytes_per_req")),
          Num(pk16->Counter("wal_bytes_per_req"), 0), Num(raw16->Counter("wal_bytes_per_req"), 0),
          Ratio(pk16->Counter("client_cpu_us_per_req"), raw16->Counter("client_cpu_us_per_req")),
          Num(pk16->Counter("client_cpu_us_per_req"), 0), Num(raw16->Counter("client_cpu_us_per_req"), 0),
          sends_pk && sends_raw
              ? Ratio(sends_pk->Counter("client_sends_per_req"), sends_raw->Counter("client_sends_per_req"))
              : std::string("-"));
    }
    md +=
        "With the gateway in process and free, a request is nothing but its transactions, so what phasekey adds "
        "to them (key-table writes, statements, client work) is the gap; these counters measure its parts. "
        "This family does not profile the server; a profile belongs in a run of its own.\n\n";
  } else {
    md += "Goal against the raw baseline met at every client count.\n\n";
  }
  AddDurabilityGoals(title, raw_ratios, misses.empty(), floor_ratios, floor_missed, floor.rerun == in.rerun,
                     raw_floor16, statements_floor16, raw16, pk16, sends_raw, sends_pk, goals);
  goals->Add(std::move(sealed_goal));
  return md;
}

std::string HttpSection(const Input& in, const Input& durability, Goals* goals) {
  const std::string title = "1b. The HTTP service as deployed";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  const Family* dur = durability.family ? &*durability.family : nullptr;
  std::string md =
      "## " + title + "\n\n" +
      "`ride_booking serve` and `fake_gateway` as separate processes on loopback, against a fresh database of the "
      "same server, driven by Debian's wrk (`" +
      f.Context("http.wrk") +
      "`, `bench/http/fresh_key.lua`: every "
      "request a POST /rides with a valid body and an Idempotency-Key never used before; a request counts as "
      "failed unless it is answered 201). Each point is a timed wrk run after a short warm-up run. \"In-process "
      "rps\" is phasekey's row of section 1 at the same client count in the same run: the bench's own ride flow, "
      "in the benchmark's process, with a gateway that is a function call. The service's flow is "
      "`ride_booking`'s (it also authenticates, reads the user and calls the gateway over HTTP), so the ratio is "
      "what the service as deployed keeps of the in-process figure. Goal: >= " +
      Num(kHttpGoal, 1) +
      " at 16 connections.\n\n"
      "| connections | rps | p50 ms | p99 ms | failed | in-process rps | ratio | CPU µs/request: ride_booking | "
      "fake_gateway | PostgreSQL | wrk | rest of the machine | busy cores |\n"
      "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::string goal;
  std::optional<double> http16;
  std::string cpu16;
  for (int c : {1, 16, 64}) {
    const Run* r = f.Find("ride_booking", "connections:" + std::to_string(c));
    if (r == nullptr) continue;
    if (!r->error.empty()) {
      md += fmt::format("| {} | {} ||||||||||||\n", c, Failed(r));
      continue;
    }
    const Run* pk = dur ? dur->Find("phasekey", "clients:" + std::to_string(c)) : nullptr;
    if (pk != nullptr && !pk->error.empty()) pk = nullptr;
    const std::string ratio = pk ? Ratio(r->Counter("rps"), pk->Counter("rps")) : "-";
    if (c == 16 && pk != nullptr) {
      const double v = r->Counter("rps") / pk->Counter("rps");
      goal = fmt::format("**HTTP / in-process at 16 connections: {}** (goal >= {}: {}).", Num(v), kHttpGoal,
                         durability.rerun != in.rerun ? "not judged: the in-process figure comes from another run"
                         : v >= kHttpGoal             ? "met"
                                                      : "missed");
      http16 = v;
      cpu16 = fmt::format("CPU per request: ride_booking {} µs, fake_gateway {} µs, PostgreSQL {} µs; {} cores busy",
                          Num(r->Counter("cpu_us_per_req_ride_booking"), 0),
                          Num(r->Counter("cpu_us_per_req_fake_gateway"), 0),
                          Num(r->Counter("cpu_us_per_req_postgres"), 0), Num(r->Counter("machine_busy_cores")));
    }
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", c,
                      Num(r->Counter("rps"), 0), Num(r->Counter("p50_ms")), Num(r->Counter("p99_ms")),
                      Num(r->Counter("failures"), 0), pk ? Num(pk->Counter("rps"), 0) : "-", ratio,
                      Num(r->Counter("cpu_us_per_req_ride_booking"), 0),
                      Num(r->Counter("cpu_us_per_req_fake_gateway"), 0), Num(r->Counter("cpu_us_per_req_postgres"), 0),
                      Num(r->Counter("cpu_us_per_req_wrk"), 0), Num(r->Counter("cpu_us_per_req_other"), 0),
                      Num(r->Counter("machine_busy_cores")));
  }
  md += "\n" + (goal.empty() ? std::string("No ratio at 16 connections (a run is missing or failed).") : goal) + "\n\n";
  // Where the time goes, at the busiest point that ran.
  for (int c : {16, 64, 1}) {
    const Run* r = f.Find("ride_booking", "connections:" + std::to_string(c));
    if (r == nullptr || !r->error.empty()) continue;
    const double rb = r->Counter("cpu_us_per_req_ride_booking"), gw = r->Counter("cpu_us_per_req_fake_gateway"),
                 pg = r->Counter("cpu_us_per_req_postgres"), wrk = r->Counter("cpu_us_per_req_wrk");
    const double total = rb + gw + pg + wrk;
    if (total <= 0) break;
    auto share = [&](double v) { return Num(100 * v / total, 0) + "%"; };
    md += fmt::format(
        "Where the time goes at {} connections (CPU time of each process during the timed run, from "
        "`/proc/<pid>/stat`, per request): ride_booking (HTTP server, engine, gateway client) {} µs ({}), "
        "fake_gateway (its HTTP server and the ledger it writes to disk) {} µs ({}), PostgreSQL (every server "
        "process) {} µs ({}), wrk {} µs ({}). The rest of the machine (other builds, kernel threads, this "
        "binary) was busy for another {} µs per request; in all the machine had {} of its {} online CPUs busy "
        "during the run{}.\n\n",
        c, Num(rb, 0), share(rb), Num(gw, 0), share(gw), Num(pg, 0), share(pg), Num(wrk, 0), share(wrk),
        Num(r->Counter("cpu_us_per_req_other"), 0), Num(r->Counter("machine_busy_cores")),
        f.Context("machine.online_cpus"),
        std::atof(f.Context("machine.online_cpus").c_str()) > 0 &&
                r->Counter("machine_busy_cores") >= 0.9 * std::atof(f.Context("machine.online_cpus").c_str())
            ? ": it was saturated, so requests queued for CPU and the split above is what each request costs"
            : ": it was not saturated, so waiting (round trips between the processes, disk flushes), not CPU, "
              "bounded the rate");
    break;
  }
  goals->Add({"HTTP service / in-process flow rps", fmt::format(">= {} at 16 connections", kHttpGoal),
              http16 ? Num(*http16) + (durability.rerun == in.rerun ? "" : kDifferentRuns) : "",
              http16 && durability.rerun == in.rerun ? std::optional<bool>(*http16 >= kHttpGoal) : std::nullopt,
              "three processes share two cores; " + cpu16, "1b. The HTTP service as deployed"});
  return md;
}

}  // namespace phasekey::bench::report
