#include "report/sections.h"

#include "report/section_util.h"
#include "report/wal_table.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

namespace phasekey::bench::report {

std::string Missing(const std::string& title, const Input& in) {
  return fmt::format("## {}\n\nNo results: {}.\n\n", title, in.missing);
}

std::string Ratio(double a, double b) { return (a > 0 && b > 0) ? Num(a / b) : "-"; }

std::string Failed(const Run* r) { return r != nullptr && !r->error.empty() ? "failed: " + r->error : ""; }

std::string Num(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.{}f}", v, decimals);
}

std::string ContentionSection(const Input& in, const std::string& plot, Goals* goals) {
  const std::string title = "2. Lock contention on one key";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md =
      "## " + title + "\n\n" +
      "Each round, N requests with one new key are released at the same instant, one thread and one connection "
      "each; the winner's gateway call sleeps a fixed " +
      (f.runs.empty() ? std::string("-") : Num(f.runs.front().Counter("foreign_call_ms"), 0)) +
      " ms, so an answer that waited for it shows. Strategies: "
      "`phasekey` (`Runner::Execute`, claim by `INSERT ... ON CONFLICT DO NOTHING` under READ COMMITTED behind a "
      "non-waiting advisory gate, then a lease); `leach_serializable` (Leach's SELECT then INSERT in a "
      "SERIALIZABLE transaction, unique index, 40001 answered 409 without retry); `advisory_lock` (READ COMMITTED, "
      "`pg_advisory_xact_lock` on "
      "`hashtextextended(account/key)`, then SELECT and INSERT, no unique index); `naive` (READ COMMITTED SELECT "
      "then INSERT, no unique index). Executions are gateway calls; every one past the first in a round is a "
      "duplicate charge, counted here, not hidden. Losers are all requests but the executions; \"loser p99 / "
      "call\" below 1 means no loser waited for the foreign call.\n\n" +
      fmt::format("![loser latency vs clients per strategy]({})\n\n", plot) +
      "| N | strategy | executions/round | duplicate executions | rounds with duplicates | loser p50 ms | loser "
      "p99 ms | loser p99 / call | winner p50 ms | 409 | replayed | serialization failures (409) | errors | "
      "server rollbacks |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::vector<std::string> problems;
  std::string yardstick;  // rows of the SELECT 1 table
  std::optional<double> loser64;
  std::string loser_limit;
  for (const Run& r : f.runs) {
    if (r.parts.size() < 3) continue;
    const std::string n = r.parts[2].substr(r.parts[2].find(':') + 1);
    if (r.parts[1] == "select_one") {
      const Run* pk = f.Find("phasekey", r.parts[2]);
      const double select_p99 = r.Counter("select_p99_ms");
      const double loser_p99 = pk ? pk->Counter("loser_p99_ms") : 0;
      yardstick += fmt::format("| {} | {} | {} | {} | {} |\n", n, Num(r.Counter("select_p50_ms")), Num(select_p99),
                               n == "1" ? "-" : Num(loser_p99), n == "1" ? "-" : Ratio(loser_p99, select_p99));
      if (n == "64" && select_p99 > 0 && loser_p99 > 0) {
        loser64 = loser_p99 / select_p99;
        loser_limit = fmt::format(
            "a loser's claim is one round trip (the gate answers 409 without waiting), but "
            "64 clients on two cores queue for CPU: loser p99 {} ms vs SELECT 1 p99 {} ms; "
            "winner p50 {} ms",
            Num(loser_p99), Num(select_p99), pk ? Num(pk->Counter("winner_p50_ms")) : "-");
      }
      if (n == "64" && loser_p99 > kLoserGoal * select_p99) {
        problems.push_back(
            fmt::format("at N=64 phasekey's loser p99 is {} times a bare SELECT 1's p99 under the "
                        "same burst (goal <= {})",
                        Ratio(loser_p99, select_p99), kLoserGoal));
      }
      continue;
    }
    if (!r.error.empty()) {
      md += fmt::format("| {} | {} | {} |||||||||||\n", n, r.parts[1], Failed(&r));
      continue;
    }
    const double call = r.Counter("foreign_call_ms");
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", n, r.parts[1],
                      Num(r.Counter("executions_per_round")), Num(r.Counter("duplicate_executions"), 0),
                      Num(r.Counter("rounds_with_duplicates"), 0), Num(r.Counter("loser_p50_ms")),
                      Num(r.Counter("loser_p99_ms")), n == "1" ? "-" : Ratio(r.Counter("loser_p99_ms"), call),
                      Num(r.Counter("winner_p50_ms")), Num(r.Counter("answers_409"), 0),
                      Num(r.Counter("answers_replayed"), 0), Num(r.Counter("serialization_failures"), 0),
                      Num(r.Counter("errors"), 0), Num(r.Counter("server_rollbacks"), 0));
    if (r.parts[1] != "naive" && r.Counter("duplicate_executions") > 0) {
      problems.push_back(fmt::format("{} ran more than once at N={}", r.parts[1], n));
    }
    if (r.parts[1] == "phasekey" && n != "1" && r.Counter("loser_p99_ms") >= call) {
      problems.push_back(fmt::format("phasekey's loser p99 ({} ms) reached the {} ms call at N={}",
                                     Num(r.Counter("loser_p99_ms")), Num(call, 0), n));
    }
  }
  md += "\n";
  if (!yardstick.empty()) {
    md +=
        "The yardstick for the losers: at each N, N clients released together as above, each sending one bare "
        "`SELECT 1` on a connection of its own, as many rounds. Its p99 is what one round trip costs under the "
        "same burst on this machine. Goal: phasekey's loser p99 <= " +
        Num(kLoserGoal, 1) +
        " times it at N=64.\n\n"
        "| N | SELECT 1 p50 ms | SELECT 1 p99 ms | phasekey loser p99 ms | loser p99 / SELECT 1 p99 |\n"
        "|---:|---:|---:|---:|---:|\n" +
        yardstick + "\n";
  }
  if (problems.empty()) {
    md +=
        "phasekey, Leach's design and the advisory lock ran every key exactly once at every N; the naive "
        "strategy's duplicates are in the table. No phasekey loser waited for the foreign call.\n\n";
  } else {
    md += "**Goal missed:** " + fmt::format("{}", fmt::join(problems, "; ")) + ".\n\n";
    md +=
        "The table's counters (server rollbacks, 409s, loser and winner latencies against the foreign "
        "call) are what was measured; why a loser waits is for a profile of the engine at this commit, not "
        "for this report.\n\n";
  }
  goals->Add({"same key, 64 clients: loser p99 / SELECT 1 p99", fmt::format("<= {}", kLoserGoal),
              loser64 ? Num(*loser64) : "", loser64 ? std::optional<bool>(*loser64 <= kLoserGoal) : std::nullopt,
              loser_limit, "2. Lock contention on one key"});
  return md;
}

std::string ThroughputSection(const Input& in, const std::string& plot, Goals* goals) {
  const std::string title = "3. Throughput with distinct keys";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md = "## " + title + "\n\n" +
                   "phasekey records a key and its response (the one-phase `record` flow: claim and stored "
                   "response in one transaction, one commit per request) beside the cheapest way to record a key "
                   "at all: one prepared, autocommitted `INSERT ... ON CONFLICT DO NOTHING RETURNING id` per "
                   "request. One client thread per connection. Goal: ratio >= " +
                   Num(kRecordGoal, 1) + " at 16 connections.\n\n" +
                   fmt::format("![throughput vs connections]({})\n\n", plot) +
                   "| connections | raw INSERT rps | phasekey rps | ratio | raw p50 ms | phasekey p50 ms | raw p99 "
                   "ms | phasekey p99 ms | raw / phasekey WAL bytes per request | raw / phasekey client CPU µs per "
                   "request |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  double ratio16 = 0;
  std::string limit16;
  for (int c : {1, 2, 4, 8, 16}) {
    const std::string p = "connections:" + std::to_string(c);
    const Run* raw = f.Find("raw_insert_on_conflict", p);
    const Run* pk = f.Find("phasekey", p);
    if (raw == nullptr || pk == nullptr) continue;
    if (!raw->error.empty() || !pk->error.empty()) {
      md += fmt::format("| {} | {} | {} ||||||||\n", c, Failed(raw), Failed(pk));
      continue;
    }
    if (c == 16) {
      ratio16 = pk->Counter("rps") / raw->Counter("rps");
      limit16 =
          fmt::format("one commit each, but per request {} vs {} WAL bytes and {} vs {} µs client CPU",
                      Num(pk->Counter("wal_bytes_per_req"), 0), Num(raw->Counter("wal_bytes_per_req"), 0),
                      Num(pk->Counter("client_cpu_us_per_req"), 0), Num(raw->Counter("client_cpu_us_per_req"), 0));
    }
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} |\n", c, Num(raw->Counter("rps"), 0),
                      Num(pk->Counter("rps"), 0), Ratio(pk->Counter("rps"), raw->Counter("rps")),
                      Num(raw->Counter("p50_ms")), Num(pk->Counter("p50_ms")), Num(raw->Counter("p99_ms")),
                      Num(pk->Counter("p99_ms")), Num(raw->Counter("wal_bytes_per_req"), 0),
                      Num(pk->Counter("wal_bytes_per_req"), 0), Num(raw->Counter("client_cpu_us_per_req"), 0),
                      Num(pk->Counter("client_cpu_us_per_req"), 0));
  }
  md += "\n";
  goals->Add({"one-phase record flow / raw INSERT ... ON CONFLICT", fmt::format(">= {} at 16 connections", kRecordGoal),
              ratio16 > 0 ? Num(ratio16) : "", ratio16 > 0 ? std::optional<bool>(ratio16 >= kRecordGoal) : std::nullopt,
              limit16, "3. Throughput with distinct keys"});
  if (ratio16 >= kRecordGoal) {
    md += fmt::format("Goal met: {} at 16 connections.\n\n", Num(ratio16));
  } else if (ratio16 > 0) {
    md += fmt::format(
        "**Goal missed:** {} at 16 connections (goal {}). Both sides make one commit per request, and "
        "PostgreSQL groups the fsyncs of concurrent commits for both alike; the WAL and client CPU columns "
        "show how much more work per request phasekey does. This family does not count sends to the server "
        "(section 1 does, for the ride flow).\n\n",
        Num(ratio16), kRecordGoal);
  }
  return md;
}

std::string RedriveSection(const Input& in) {
  const std::string title = "4. Re-drive of abandoned keys";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md = "## " + title + "\n\n" +
                   "Keys left at `ride_created` (the gateway was down and the client gave up) are finished by 1, "
                   "2 and 4 re-drive workers (`RedriveWorker::RunOnce` in a loop; each worker has its own Runner, "
                   "connections and keys in flight), and, as the baseline, by clients retrying the same keys "
                   "through `Runner::Execute` on 4 threads. Every run starts from an identical copy of the seeded "
                   "database; every key must end finished.\n\n"
                   "| variant | keys | finished | keys/s | scaling vs 1 worker | ratio vs client retries |\n"
                   "|---|---:|---:|---:|---:|---:|\n";
  const Run* base = f.Find("client_retries", "threads:4");
  const Run* one = f.Find("workers", "workers:1");
  for (const Run& r : f.runs) {
    if (r.parts.size() < 3) continue;
    if (!r.error.empty()) {
      md += fmt::format("| {} {} | {} |||||\n", r.parts[1], r.parts[2], Failed(&r));
      continue;
    }
    const bool worker = r.parts[1] == "workers";
    md += fmt::format("| {} {} | {} | {} | {} | {} | {} |\n", r.parts[1], r.parts[2], Num(r.Counter("keys"), 0),
                      Num(r.Counter("finished"), 0), Num(r.Counter("keys_per_s"), 0),
                      worker && one ? Ratio(r.Counter("keys_per_s"), one->Counter("keys_per_s")) : "-",
                      base ? Ratio(r.Counter("keys_per_s"), base->Counter("keys_per_s")) : "-");
  }
  md +=
      "\nScaling is bounded by the machine: the server, the workers' threads and other builds share its "
      "cores. More workers add keys in flight, not cores.\n\n";
  return md;
}

std::string FingerprintSection(const Input& in, Goals* goals) {
  const std::string title = "5. Request fingerprints";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md = "## " + title + "\n\n" +
                   "RFC 8785 canonical form plus SHA-256 (`FingerprintJson`) and canonicalization alone "
                   "(`CanonicalizeJson`), beside plain `nlohmann::json::parse(body).dump()` of the same bytes. "
                   "Bodies: a ride request with line items (members out of order, escapes, non-ASCII), grown "
                   "to the size. No database.\n\n"
                   "| body bytes | nlohmann parse+dump µs | canonicalize µs | fingerprint µs | fingerprint MB/s | "
                   "fingerprint / nlohmann |\n|---:|---:|---:|---:|---:|---:|\n";
  for (const char* size : {"bytes:200", "bytes:1024", "bytes:65536"}) {
    const Run* base = f.Find("nlohmann_parse_dump", size);
    const Run* canon = f.Find("phasekey_canonicalize", size);
    const Run* fp = f.Find("phasekey_fingerprint", size);
    if (base == nullptr || canon == nullptr || fp == nullptr) continue;
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", Num(fp->Counter("body_bytes"), 0), Num(base->real_time),
                      Num(canon->real_time), Num(fp->real_time), Num(fp->bytes_per_second / 1e6, 1),
                      Ratio(fp->real_time, base->real_time));
  }
  const Run* big = f.Find("phasekey_fingerprint", "bytes:65536");
  const Run* small = f.Find("phasekey_fingerprint", "bytes:1024");
  md += fmt::format(
      "\nA ratio above 1 is what canonical form and hashing cost over a plain parse and dump. A 1 KiB body "
      "takes {} µs and a 64 KiB body {} µs: set them beside the p50 latencies of "
      "section 1 to see what share of a request they are.\n\n",
      small ? Num(small->real_time, 0) : "-", big ? Num(big->real_time, 0) : "-");
  const Run* base1k = f.Find("nlohmann_parse_dump", "bytes:1024");
  if (small != nullptr && base1k != nullptr && base1k->real_time > 0) {
    const bool met =
        small->real_time <= kFingerprintMicrosGoal && small->real_time <= kFingerprintRatioGoal * base1k->real_time;
    md += fmt::format(
        "**Fingerprint of a 1 KiB body: {} µs, {} times nlohmann's parse and dump** (goal <= {} µs and "
        "<= {}: {}).\n\n",
        Num(small->real_time), Ratio(small->real_time, base1k->real_time), kFingerprintMicrosGoal,
        Num(kFingerprintRatioGoal, 1), met ? "met" : "missed");
    goals->Add({"fingerprint of a 1 KiB body",
                fmt::format("<= {} µs and <= {} times nlohmann parse+dump", kFingerprintMicrosGoal,
                            Num(kFingerprintRatioGoal, 1)),
                fmt::format("{} µs, {} times", Num(small->real_time), Ratio(small->real_time, base1k->real_time)), met,
                "canonical form and SHA-256 over the bytes", title});
  }
  return md;
}

std::string GrowthSection(const Input& in, Goals* goals) {
  const std::string title = "6. Growth: latency with many existing keys";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md =
      "## " + title + "\n\n" +
      "Claim (a new key through the one-phase `record` flow) and replay (an existing finished key, "
      "picked at random) with 10^3, 10^5 and 10^6 finished keys in `phasekey.idempotency_keys`, one "
      "client. The baseline is the smallest table: ratios are mean latency at N / mean latency at 10^3. "
      "Single-client latencies on a shared machine move with its load (see the load averages in the "
      "header); read small changes with that in mind.\n\n"
      "| existing keys | claim p50 ms | claim p99 ms | claim mean ms | claim mean ratio | replay p50 ms "
      "| replay p99 ms | replay mean ms | replay mean ratio | bare SELECT p50 ms | replay p50 / SELECT p50 "
      "|\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::vector<std::string> misses, replay_ratios;
  std::string replay_limit;
  const Run* claim0 = f.Find("claim", "existing_keys:1000");
  const Run* replay0 = f.Find("replay", "existing_keys:1000");
  for (const char* n : {"1000", "100000", "1000000"}) {
    const std::string p = std::string("existing_keys:") + n;
    const Run* c = f.Find("claim", p);
    const Run* r = f.Find("replay", p);
    if (c == nullptr || r == nullptr) continue;
    const Run* sel = f.Find("pk_select", p);
    const double sel_p50 = sel ? sel->Counter("p50_ms") : 0;
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", n, Num(c->Counter("p50_ms")),
                      Num(c->Counter("p99_ms")), Num(c->Counter("mean_ms")),
                      claim0 ? Ratio(c->Counter("mean_ms"), claim0->Counter("mean_ms")) : "-",
                      Num(r->Counter("p50_ms")), Num(r->Counter("p99_ms")), Num(r->Counter("mean_ms")),
                      replay0 ? Ratio(r->Counter("mean_ms"), replay0->Counter("mean_ms")) : "-",
                      sel ? Num(sel_p50) : "-", Ratio(r->Counter("p50_ms"), sel_p50));
    if (sel_p50 > 0) {
      replay_ratios.push_back(Ratio(r->Counter("p50_ms"), sel_p50));
      replay_limit = fmt::format(
          "one round trip each (two since issue 31: see section 6), but the claim statement and the engine's client "
          "work: "
          "client CPU {} vs {} µs per request at {} keys",
          Num(r->Counter("client_cpu_us_per_req"), 0), Num(sel->Counter("client_cpu_us_per_req"), 0), n);
    }
    if (sel_p50 > 0 && r->Counter("p50_ms") > kReplayGoal * sel_p50) {
      misses.push_back(fmt::format("{} at {} keys", Ratio(r->Counter("p50_ms"), sel_p50), n));
    }
  }
  if (!misses.empty()) {
    md += fmt::format(
        "\n**Goal missed:** a replay's p50 is {} times a bare SELECT's of the same kind of row (goal "
        "<= {}). A replay is the claim statement sent with BEGIN (it finds the finished row and "
        "writes nothing), then its COMMIT. Until issue 31 that COMMIT was sent without waiting for "
        "the answer (a raw libpq call libpqxx exposes only to its subclasses); the engine now uses "
        "libpqxx's public API alone and waits for it, a second round trip, so a run before that "
        "change shows one round trip and a run after it two. Beside the SELECT it still costs the claim's larger "
        "statement on the "
        "server (`KeyClaimDeferred`: a CTE over the key_rows view's computed columns and two UNION "
        "ALL branches that return nothing for a finished key) and the engine's work on the client "
        "(client CPU column).\n",
        fmt::join(misses, ", "), kReplayGoal);
  }
  goals->Add({"replay p50 / bare primary-key SELECT p50", fmt::format("<= {} at 10^3, 10^5 and 10^6 keys", kReplayGoal),
              fmt::format("{}", fmt::join(replay_ratios, " / ")),
              replay_ratios.empty() ? std::nullopt : std::optional<bool>(misses.empty()), replay_limit, title});
  md +=
      "\nEvery lookup is a unique-index probe on (bucket, account, key), so the cost grows with the depth of a "
      "B-tree (logarithmically) and with how much of the table stays in shared_buffers.\n\n";
  return md;
}

std::string PeerSection(const Input& in, Goals* goals) {
  const std::string title = "7. Peer: DBOS Transact";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md =
      "## " + title + "\n\n" +
      "The same three-step ride flow written for DBOS Transact (`bench/dbos/ride_flow.mjs`, "
      "@dbos-inc/dbos-sdk 5.3.0 on Node.js " +
      f.Context("dbos.node") +
      "; a workflow whose ID is the "
      "idempotency key, three `DBOS.runStep` steps with the same SQL statements) against the same "
      "PostgreSQL server and database, driven by the same binary (`bench_peer`): it starts the DBOS "
      "side as a child process with the same request count and warm-up and computes every figure "
      "from the returned latencies with the same code as for phasekey. Server transactions and WAL "
      "per request come from the server (`pg_stat_database`, `pg_current_wal_lsn`). DBOS status: " +
      f.Context("dbos.status") +
      ".\n\n"
      "| clients | system | rps | p50 ms | p99 ms | server transactions/request | WAL bytes/request | rps "
      "ratio phasekey / DBOS | p50 ratio phasekey / DBOS |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (int c : {1, 16}) {
    const std::string p = "clients:" + std::to_string(c);
    const Run* pk = f.Find("phasekey", p);
    const Run* db = f.Find("dbos", p);
    for (const Run* r : {pk, db}) {
      if (r == nullptr) continue;
      if (!r->error.empty()) {
        md += fmt::format("| {} | {} | {} |||||||\n", c, r->parts[1], Failed(r));
        continue;
      }
      const bool ok = pk && db && pk->error.empty() && db->error.empty();
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", c, r->parts[1], Num(r->Counter("rps"), 0),
                        Num(r->Counter("p50_ms")), Num(r->Counter("p99_ms")), Num(r->Counter("server_tx_per_req")),
                        Num(r->Counter("wal_bytes_per_req"), 0),
                        r == pk && ok ? Ratio(pk->Counter("rps"), db->Counter("rps")) : "",
                        r == pk && ok ? Ratio(pk->Counter("p50_ms"), db->Counter("p50_ms")) : "");
    }
  }
  md +=
      "\nWhat differs by design: phasekey commits the claim with the first step's SQL and records the charge with "
      "the last step's (section 1 counts its commits per request); DBOS records the workflow's status, its input, each "
      "step's "
      "output and the final status in its own tables, each step's SQL committing separately. Its steps are "
      "at-least-once (a crash between a step's SQL and its checkpoint re-runs the step); exactly-once SQL on "
      "DBOS needs a datasource package's transactions, not used here. Server transactions include read-only "
      "ones. Node.js runs one thread; phasekey's clients are threads.\n\n";
  std::vector<std::string> ratios;
  bool peer_met = true;
  for (int c : {1, 16}) {
    const Run* pk = f.Find("phasekey", "clients:" + std::to_string(c));
    const Run* db = f.Find("dbos", "clients:" + std::to_string(c));
    if (!pk || !db || !pk->error.empty() || !db->error.empty() || db->Counter("rps") <= 0) continue;
    const double ratio = pk->Counter("rps") / db->Counter("rps");
    ratios.push_back(fmt::format("{} at {} client{}", Num(ratio), c, c == 1 ? "" : "s"));
    peer_met = peer_met && ratio >= kPeerGoal;
  }
  if (!ratios.empty()) {
    md += fmt::format("**phasekey / DBOS rides per second: {}** (goal >= {}: {}).{}\n\n", fmt::join(ratios, ", "),
                      kPeerGoal, peer_met ? "met" : "missed",
                      peer_met ? ""
                               : " The server transactions and WAL per request above are what each design "
                                 "asks of the same server; DBOS's figures are its own, so the ratio moves only "
                                 "with phasekey's cost per ride (section 1).");
  }
  goals->Add({"phasekey / DBOS Transact rides per second", fmt::format(">= {} at 1 and 16 clients", kPeerGoal),
              fmt::format("{}", fmt::join(ratios, ", ")), ratios.empty() ? std::nullopt : std::optional<bool>(peer_met),
              "moves only with phasekey's own cost per ride (section 1)", title});
  return md;
}

}  // namespace phasekey::bench::report
