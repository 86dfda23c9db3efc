#include "report/sections.h"

#include <fmt/format.h>

#include <cmath>
#include <vector>

namespace phasekey::bench::report {
namespace {

std::string Missing(const std::string& title, const Input& in) {
  return fmt::format("## {}\n\nNo results: {}.\n\n", title, in.missing);
}

std::string Ratio(double a, double b) { return (a > 0 && b > 0) ? Num(a / b) : "-"; }

// "failed: <reason>" for a run that failed, else "".
std::string Failed(const Run* r) { return r != nullptr && !r->error.empty() ? "failed: " + r->error : ""; }

}  // namespace

std::string Num(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  return fmt::format("{:.{}f}", v, decimals);
}

std::string DurabilitySection(const Input& in) {
  const std::string title = "1. Durability cost of the ride flow";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md = "## " + title + "\n\n" +
                   "The ride flow (create ride, charge an in-process gateway with no added latency, send receipt) "
                   "through `Runner::Execute`, beside `raw_two_commits`: the same business statements on raw "
                   "libpqxx with the same two commits and no key table, and beside `leach_four_commits`: Leach's "
                   "design (a key row and four SERIALIZABLE transactions, the charge inside the third). One "
                   "connection per client, distinct keys. Ratios are phasekey / raw: rps below 1 and latency "
                   "above 1 are the engine's cost. Goal: within 15% of the baseline (rps ratio >= 0.87, p50 "
                   "ratio <= 1.15).\n\n"
                   "| clients | variant | rps | p50 ms | p99 ms | commits/request | WAL bytes/request | client CPU "
                   "µs/request | failed requests | rps ratio vs raw | p50 ratio vs raw |\n"
                   "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::vector<std::string> misses;
  for (int clients : {1, 4, 16}) {
    const std::string c = "clients:" + std::to_string(clients);
    const Run* raw = f.Find("raw_two_commits", c);
    for (const char* variant : {"raw_two_commits", "phasekey", "leach_four_commits"}) {
      const Run* r = f.Find(variant, c);
      if (r == nullptr) continue;
      if (!r->error.empty()) {
        md += fmt::format("| {} | {} | {} |||||||||\n", clients, variant, Failed(r));
        continue;
      }
      md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", clients, variant,
                        Num(r->Counter("rps"), 0), Num(r->Counter("p50_ms")), Num(r->Counter("p99_ms")),
                        Num(r->Counter("commits_per_req")), Num(r->Counter("wal_bytes_per_req"), 0),
                        Num(r->Counter("client_cpu_us_per_req"), 0), Num(r->Counter("failures"), 0),
                        raw ? Ratio(r->Counter("rps"), raw->Counter("rps")) : "-",
                        raw ? Ratio(r->Counter("p50_ms"), raw->Counter("p50_ms")) : "-");
      if (std::string(variant) == "phasekey" && raw != nullptr && raw->Counter("rps") > 0) {
        const double rr = r->Counter("rps") / raw->Counter("rps");
        if (rr < 0.87) misses.push_back(fmt::format("{} clients: rps ratio {}", clients, Num(rr)));
      }
    }
  }
  md += "\nDurable commits per request: phasekey 2 (the claim shares its transaction with `create_ride`; the "
        "charge's outcome is recorded with `send_receipt`), the raw baseline 2 by construction, Leach's design 4. "
        "Leach's failed requests are serialization failures (40001) answered 409 although every key is distinct: "
        "SERIALIZABLE's predicate locks cover index pages, not single keys, so concurrent first requests for "
        "neighbouring keys abort each other (its commits/request drops below 4 by as much). Client CPU is this "
        "process's user+system time (all threads) per request; the server's is not in it.\n\n";
  const Run* raw16 = f.Find("raw_two_commits", "clients:16");
  const Run* pk16 = f.Find("phasekey", "clients:16");
  if (!misses.empty()) {
    md += "**Goal missed** (" + fmt::format("{}", fmt::join(misses, "; ")) + "). ";
    if (raw16 != nullptr && pk16 != nullptr && raw16->error.empty() && pk16->error.empty()) {
      md += fmt::format(
          "At 16 clients phasekey writes {} as much WAL per request as the baseline ({} vs {} bytes) and spends "
          "{} as much client CPU ({} vs {} µs). ",
          Ratio(pk16->Counter("wal_bytes_per_req"), raw16->Counter("wal_bytes_per_req")),
          Num(pk16->Counter("wal_bytes_per_req"), 0), Num(raw16->Counter("wal_bytes_per_req"), 0),
          Ratio(pk16->Counter("client_cpu_us_per_req"), raw16->Counter("client_cpu_us_per_req")),
          Num(pk16->Counter("client_cpu_us_per_req"), 0), Num(raw16->Counter("client_cpu_us_per_req"), 0));
    }
    md += "What limits it: with the gateway in process and free, a request is nothing but its two transactions, "
          "and phasekey adds work to both. Round trips: 10 per request (BEGIN, the claim's `INSERT ... ON "
          "CONFLICT`, the ride INSERT, the fenced move, COMMIT; BEGIN, the ride UPDATE, the job INSERT, the "
          "fenced finish, COMMIT) against the baseline's 7. Writes: the key row (request body, fingerprint, "
          "outcomes) is inserted with four index entries and then updated twice, each a new row version; the "
          "finish changes `state` and `finished_at`, which partial indexes read, so it is not a HOT update and "
          "adds four index entries again. That is the extra WAL. Client side: RFC 8785 canonicalization and SHA-256 of the body (family 5: a few "
          "microseconds), JSON outcomes, libpqxx parameter conversion, and a wake-up of the deadline watchdog's "
          "thread on every transaction (`Watchdog::Arm` notifies it each time). None of it is fsync: both sides "
          "make two commits. On two cores shared with other builds, the server's and the client's CPU per request "
          "is what the requests queue for, so the ratio follows CPU per request. A `perf record` of a run (server "
          "and client) puts about four fifths of the CPU in the server, most of it executing the statements and "
          "writing WAL; the client is mostly in the kernel waiting on `poll` inside `PQgetResult` (round trips). "
          "The same profile found one avoidable cost, now gone: PostgreSQL deserializes and plans every CHECK "
          "constraint of a table again for each statement that writes it, and the key row had fourteen (12% of "
          "all CPU); the engine now checks the single-column limits itself (migration 0003), which made a ride "
          "request about 1.5 times faster. The four constraints tying the state machine's columns together "
          "remain (about 4%). With a real gateway (tens to hundreds of milliseconds per "
          "charge) the same absolute cost (well under a millisecond at 1 client) is a few percent of a request.\n\n";
  } else {
    md += "Goal met at every client count.\n\n";
  }
  return md;
}

std::string ContentionSection(const Input& in, const std::string& plot) {
  const std::string title = "2. Lock contention on one key";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md =
      "## " + title + "\n\n" +
      "Each round, N requests with one new key are released at the same instant, one thread and one connection "
      "each; the winner's gateway call sleeps a fixed 20 ms, so an answer that waited for it shows. Strategies: "
      "`phasekey` (`Runner::Execute`, claim by `INSERT ... ON CONFLICT DO NOTHING` under READ COMMITTED, then "
      "a lease); `leach_serializable` (Leach's SELECT then INSERT in a SERIALIZABLE transaction, unique index, "
      "40001 answered 409 without retry); `advisory_lock` (READ COMMITTED, `pg_advisory_xact_lock` on "
      "`hashtextextended(account/key)`, then SELECT and INSERT, no unique index); `naive` (READ COMMITTED SELECT "
      "then INSERT, no unique index). Executions are gateway calls; every one past the first in a round is a "
      "duplicate charge, counted here, not hidden. Losers are all requests but the executions; \"loser p99 / "
      "call\" below 1 means no loser waited for the foreign call.\n\n" +
      fmt::format("![loser latency vs clients per strategy]({})\n\n", plot) +
      "| N | strategy | executions/round | duplicate executions | rounds with duplicates | loser p50 ms | loser "
      "p99 ms | loser p99 / call | winner p50 ms | 409 | replayed | serialization failures (409) | errors | "
      "server rollbacks |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  std::vector<std::string> problems;
  for (const Run& r : f.runs) {
    if (r.parts.size() < 3) continue;
    const std::string n = r.parts[2].substr(r.parts[2].find(':') + 1);
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
      problems.push_back(fmt::format("phasekey's loser p99 ({} ms) reached the 20 ms call at N={}",
                                     Num(r.Counter("loser_p99_ms")), n));
    }
  }
  md += "\n";
  if (problems.empty()) {
    md += "phasekey, Leach's design and the advisory lock ran every key exactly once at every N; the naive "
          "strategy's duplicates are in the table. No phasekey loser waited for the foreign call.\n\n";
  } else {
    md += "**Goal missed:** " + fmt::format("{}", fmt::join(problems, "; ")) + ".\n\n";
    md += "What limits phasekey here: a loser's claim transaction finds the key taken (the `INSERT ... ON "
          "CONFLICT` waits only for the winner's claim to commit) and then reads the row with `SELECT ... FOR "
          "UPDATE` (`KeyGetForUpdate`) before it can answer 409. That row lock is a write: each loser's "
          "transaction gets a transaction id, writes WAL and waits for its own commit flush, and the losers take "
          "the lock one after another. N losers therefore queue for about N short write transactions, and the "
          "winner's fenced finish (an UPDATE of the same row) waits in the same queue, which is why the winner's "
          "latency grows with N too. The advisory-lock baseline answers its losers with a plain SELECT after the "
          "lock and stays flat; Leach's design answers fast but only because SERIALIZABLE aborts the racers "
          "(serialization failures, rolled back). The fix belongs in the engine, not here: answer an in-progress "
          "or finished key from an unlocked read and take the row lock only when the lease is free or expired "
          "(a takeover).\n\n";
  }
  return md;
}

std::string ThroughputSection(const Input& in, const std::string& plot) {
  const std::string title = "3. Throughput with distinct keys";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md = "## " + title + "\n\n" +
                   "phasekey records a key and its response (the one-phase `record` flow: claim and stored "
                   "response in one transaction, one commit per request) beside the cheapest way to record a key "
                   "at all: one prepared, autocommitted `INSERT ... ON CONFLICT DO NOTHING RETURNING id` per "
                   "request. One client thread per connection. Goal: ratio >= 0.8 at 16 connections.\n\n" +
                   fmt::format("![throughput vs connections]({})\n\n", plot) +
                   "| connections | raw INSERT rps | phasekey rps | ratio | raw p50 ms | phasekey p50 ms | raw p99 "
                   "ms | phasekey p99 ms | raw / phasekey WAL bytes per request | raw / phasekey client CPU µs per "
                   "request |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  double ratio16 = 0;
  for (int c : {1, 2, 4, 8, 16}) {
    const std::string p = "connections:" + std::to_string(c);
    const Run* raw = f.Find("raw_insert_on_conflict", p);
    const Run* pk = f.Find("phasekey", p);
    if (raw == nullptr || pk == nullptr) continue;
    if (!raw->error.empty() || !pk->error.empty()) {
      md += fmt::format("| {} | {} | {} ||||||||\n", c, Failed(raw), Failed(pk));
      continue;
    }
    if (c == 16) ratio16 = pk->Counter("rps") / raw->Counter("rps");
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} |\n", c, Num(raw->Counter("rps"), 0),
                      Num(pk->Counter("rps"), 0), Ratio(pk->Counter("rps"), raw->Counter("rps")),
                      Num(raw->Counter("p50_ms")), Num(pk->Counter("p50_ms")), Num(raw->Counter("p99_ms")),
                      Num(pk->Counter("p99_ms")), Num(raw->Counter("wal_bytes_per_req"), 0),
                      Num(pk->Counter("wal_bytes_per_req"), 0), Num(raw->Counter("client_cpu_us_per_req"), 0),
                      Num(pk->Counter("client_cpu_us_per_req"), 0));
  }
  md += "\n";
  if (ratio16 >= 0.8) {
    md += fmt::format("Goal met: {} at 16 connections.\n\n", Num(ratio16));
  } else if (ratio16 > 0) {
    md += fmt::format(
        "**Goal missed:** {} at 16 connections (goal 0.8). What limits it is not group commit: both sides make "
        "one commit per request, and PostgreSQL groups the fsyncs of concurrent commits for both alike. It is "
        "work per request on two shared cores. The baseline is one round trip and one index insert; phasekey's "
        "request is four round trips (BEGIN, the claim's INSERT ... ON CONFLICT, the finishing UPDATE that "
        "stores the response, COMMIT); a wider row (request body, fingerprint, response) written twice, and the "
        "finishing UPDATE changes `state` and `finished_at`, which the partial indexes read, so it cannot be a "
        "HOT update: four index entries on the INSERT and four more on the UPDATE against the baseline's two "
        "(hence the WAL column); and RFC 8785 canonicalization plus SHA-256 of the body on the client. Once the two cores are busy, and at 16 connections they are (server backends plus client "
        "threads, beside other engineers' builds), the ratio approaches the ratio of CPU per request, not of "
        "fsyncs. Fewer round trips (the claim and the finish in one statement for one-phase flows, or "
        "pipelining BEGIN with the claim) would narrow it; that is engine work, not tuning of the baseline.\n\n",
        Num(ratio16));
  }
  return md;
}

std::string RedriveSection(const Input& in) {
  const std::string title = "4. Re-drive of abandoned keys";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md = "## " + title + "\n\n" +
                   "Keys left at `ride_created` (the gateway was down and the client gave up) are finished by 1, "
                   "2 and 4 re-drive workers (`RedriveWorker::RunOnce` in a loop; each worker has its own Runner "
                   "and connections and 4 keys in flight), and, as the baseline, by clients retrying the same keys "
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
  md += "\nScaling is bounded by the machine: every key costs two commits plus its share of a batch claim, all "
        "server CPU, and two cores are shared by the server, the workers' threads and other builds. More workers "
        "add keys in flight (4 per worker), not cores.\n\n";
  return md;
}

std::string FingerprintSection(const Input& in) {
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
      "takes {} µs and a 64 KiB body {} µs: for typical request bodies far below one commit's round trips, for "
      "the largest ones about one commit's worth.\n\n",
      small ? Num(small->real_time, 0) : "-", big ? Num(big->real_time, 0) : "-");
  return md;
}

std::string GrowthSection(const Input& in) {
  const std::string title = "6. Growth: latency with many existing keys";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md = "## " + title + "\n\n" +
                   "Claim (a new key through the one-phase `record` flow) and replay (an existing finished key, "
                   "picked at random) with 10^3, 10^5 and 10^6 finished keys in `phasekey.idempotency_keys`, one "
                   "client. The baseline is the smallest table: ratios are mean latency at N / mean latency at 10^3. On this "
                   "loaded machine single-client latencies cluster at multiples of 4 ms, the kernel's scheduler tick: "
                   "a client woken by the server's answer waits for a core that a build is using. Growth below that "
                   "granularity does not show; a figure that moved by whole ticks moved by load, not by the table.\n\n"
                   "| existing keys | claim p50 ms | claim p99 ms | claim mean ms | claim mean ratio | replay p50 ms "
                   "| replay p99 ms | replay mean ms | replay mean ratio |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  const Run* claim0 = f.Find("claim", "existing_keys:1000");
  const Run* replay0 = f.Find("replay", "existing_keys:1000");
  for (const char* n : {"1000", "100000", "1000000"}) {
    const std::string p = std::string("existing_keys:") + n;
    const Run* c = f.Find("claim", p);
    const Run* r = f.Find("replay", p);
    if (c == nullptr || r == nullptr) continue;
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", n, Num(c->Counter("p50_ms")),
                      Num(c->Counter("p99_ms")), Num(c->Counter("mean_ms")),
                      claim0 ? Ratio(c->Counter("mean_ms"), claim0->Counter("mean_ms")) : "-", Num(r->Counter("p50_ms")),
                      Num(r->Counter("p99_ms")), Num(r->Counter("mean_ms")),
                      replay0 ? Ratio(r->Counter("mean_ms"), replay0->Counter("mean_ms")) : "-");
  }
  md += "\nEvery lookup is a unique-index probe on (bucket, account, key), so the cost grows with the depth of a "
        "B-tree (logarithmically) and with how much of the table stays in shared_buffers. A replay is not "
        "read-only: it locks the key row (`SELECT ... FOR UPDATE`), so it writes and commits like a claim does.\n\n";
  return md;
}

std::string PeerSection(const Input& in) {
  const std::string title = "7. Peer: DBOS Transact";
  if (!in.family) return Missing(title, in);
  const Family& f = *in.family;
  std::string md = "## " + title + "\n\n" +
                   "The same three-step ride flow written for DBOS Transact (`bench/dbos/ride_flow.mjs`, "
                   "@dbos-inc/dbos-sdk 5.3.0 on Node.js " + f.Context("dbos.node") + "; a workflow whose ID is the "
                   "idempotency key, three `DBOS.runStep` steps with the same SQL statements) against the same "
                   "PostgreSQL server and database, driven by the same binary (`bench_peer`): it starts the DBOS "
                   "side as a child process with the same request count and warm-up and computes every figure "
                   "from the returned latencies with the same code as for phasekey. Server transactions and WAL "
                   "per request come from the server (`pg_stat_database`, `pg_current_wal_lsn`). DBOS status: " +
                   f.Context("dbos.status") + ".\n\n"
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
  md += "\nWhat differs by design: phasekey commits the claim with the first step's SQL and records the charge with "
        "the last step's, two commits per request; DBOS records the workflow's status, its input, each step's "
        "output and the final status in its own tables, each step's SQL committing separately. Its steps are "
        "at-least-once (a crash between a step's SQL and its checkpoint re-runs the step); exactly-once SQL on "
        "DBOS needs a datasource package's transactions, not used here. Server transactions include read-only "
        "ones. Node.js runs one thread; phasekey's clients are threads.\n\n";
  return md;
}

}  // namespace phasekey::bench::report
