#include <fmt/format.h>

#include <string>

#include "report/levers.h"
#include "report/section_util.h"

namespace phasekey::bench::report {
namespace {

constexpr const char* kClientParams[] = {"clients:1", "clients:4", "clients:16"};
constexpr const char* kSizes[] = {"existing_keys:1000", "existing_keys:100000", "existing_keys:1000000"};

struct Variant {
  const char* name;   // the pgbench family's variant
  const char* lever;  // what it changes, for the table
};

constexpr Variant kVariants[] = {
    {"phasekey_statements", "none: the engine's statements and schema as they are"},
    {"phasekey_statements_hot_finish",
     "HOT finish: no index reads a column the finish changes (the re-drive, reap and attention indexes, which "
     "read `state`, replaced by one on `(bucket, created_at)`)"},
    {"phasekey_statements_request_apart",
     "the request (method, path, body, fingerprint) in a table of its own, written once at the first move; the "
     "key row the finish rewrites is narrower"},
    {"phasekey_statements_functions",
     "another way to send them: each statement a PL/pgSQL function of its own, called with a SELECT (the "
     "engine sends `EXECUTE` of statements prepared with SQL `PREPARE`)"},
};

double Rps(const Family& f, const std::string& variant, const char* clients) {
  const Run* r = f.Find(variant, clients);
  return r != nullptr && r->error.empty() ? r->Counter("rps") : 0;
}

std::string LeverRows(const Family& pgb) {
  std::string md =
      "| lever | rps / pgbench floor 1 / 4 / 16 clients | rps / engine's statements, 16 clients | WAL bytes per "
      "ride, 16 clients | server CPU µs per ride, 16 clients | finishes that were HOT updates |\n"
      "|---|---|---:|---:|---:|---:|\n";
  const double base16 = Rps(pgb, "phasekey_statements", "clients:16");
  for (const Variant& v : kVariants) {
    std::string floors;
    for (const char* c : kClientParams) {
      floors += (floors.empty() ? "" : " / ") + Ratio(Rps(pgb, v.name, c), Rps(pgb, "raw_two_commits", c));
    }
    const Run* r16 = pgb.Find(v.name, "clients:16");
    md += fmt::format("| {} (`{}`) | {} | {} | {} | {} | {} |\n", v.lever, v.name, floors,
                      Ratio(Rps(pgb, v.name, "clients:16"), base16),
                      r16 ? Num(r16->Counter("wal_bytes_per_req"), 0) : "-",
                      r16 ? Num(r16->Counter("server_cpu_us_per_req"), 0) : "-",
                      r16 ? Num(r16->Counter("hot_update_share") * 100, 0) + " %" : "-");
  }
  return md + "\n";
}

// Renders the poll table; the largest size with a figure and its two p50s
// come back through the pointers.
std::string PollRows(const Family& growth, double* keys, double* with_largest, double* without_largest) {
  std::string md =
      "| existing keys | poll p50 ms, the engine's indexes | poll p50 ms, no index reading `state` | ratio |\n"
      "|---:|---:|---:|---:|\n";
  for (const char* size : kSizes) {
    const Run* with = growth.Find("redrive_poll", size);
    const Run* without = growth.Find("redrive_poll_without_state_indexes", size);
    const double a = with && with->error.empty() ? with->Counter("p50_ms") : 0;
    const double b = without && without->error.empty() ? without->Counter("p50_ms") : 0;
    if (a <= 0 && b <= 0) continue;
    md += fmt::format("| {} | {} | {} | {} |\n", std::string(size).substr(14), Num(a, 3), Num(b, 3), Ratio(b, a));
    *keys = with ? with->Counter("existing_keys") : without->Counter("existing_keys");
    *with_largest = a;
    *without_largest = b;
  }
  return md + "\n";
}

}  // namespace

std::string SqlLeversSection(const std::optional<Family>& pgbench, const std::optional<Family>& growth) {
  std::string md = "### Levers measured on the SQL alone, not taken\n\n";
  if (!pgbench) return md + "No results: the pgbench family did not run.\n\n";
  md +=
      "Two levers the issue names, and one other way of sending the statements, were measured before writing "
      "them into the engine: the pgbench family (section 1) runs `phasekey_statements`, the engine's key-row "
      "statements in the floor's script, against a copy of its database changed as the lever would change it, "
      "with the same statements (`bench/pgbench_bench.cc`, `LeverSchema`), or calling them as functions "
      "(`CreateStatementFunctions`). The first row is the engine as it is. \"Finishes that were HOT updates\" is "
      "PostgreSQL's own count (`pg_stat_user_tables.n_tup_hot_upd` of the key table; the finish is the script's "
      "only update).\n\n" +
      LeverRows(*pgbench);
  const double base = Rps(*pgbench, "phasekey_statements", "clients:16");
  const double hot = Rps(*pgbench, "phasekey_statements_hot_finish", "clients:16");
  const double apart = Rps(*pgbench, "phasekey_statements_request_apart", "clients:16");
  const double functions = Rps(*pgbench, "phasekey_statements_functions", "clients:16");
  if (!growth) return md + "The re-drive poll was not measured: the growth family did not run.\n\n";
  double keys = 0, with_largest = 0, without_largest = 0;
  md +=
      "A HOT finish needs every index on the key table to leave out the columns the finish changes, `state` "
      "included, and the re-drive worker finds its keys by `state` (`RedriveClaimBatch`, "
      "`sql/queries/redrive_worker.sql`). The growth family (section 6) measures the worker's poll of one "
      "bucket at each table size, with the engine's indexes and, in a transaction rolled back afterwards, "
      "without the indexes that read `state`, the statement bounded on `created_at` by the give-up horizon "
      "(every key of the horizon, finished or not, is a candidate it must read). No seeded key is due, so "
      "each poll claims nothing and costs its scan alone.\n\n" +
      PollRows(*growth, &keys, &with_largest, &without_largest);
  const double poll_ratio = with_largest > 0 && without_largest > 0 ? without_largest / with_largest : 0;
  md += fmt::format(
      "So, at 16 clients, a HOT finish changes the statements' rps by a factor of {} (its WAL and server CPU are "
      "in the table), and without an index reading `state` one re-drive poll of one bucket at the largest size "
      "takes {} ms instead of {} ms ({} times); the worker polls every bucket each round, and the statements' "
      "own rate above fills a table of that size in {} minutes, well within the default give-up horizon of 12 "
      "hours. ",
      Ratio(hot, base), Num(without_largest, 1), Num(with_largest, 2), Ratio(without_largest, with_largest),
      base > 0 ? Num(keys / base / 60, 1) : "-");
  md += poll_ratio >= 10 ? "Not taken: the re-drive scan cannot do without `state`. "
                         : "The poll's cost does not rule the lever out in this run; it is still not taken. ";
  md += fmt::format("The request in a table of its own changes the rps by a factor of {} ", Ratio(apart, base));
  md += base > 0 && apart / base < 1.05
            ? "(one more heap tuple and index entry at the first move against a narrower finish): not taken.\n\n"
            : "in this run, a gain the engine has not taken yet.\n\n";
  md += fmt::format(
      "Of the ways to send the engine's statements with the BEGIN and COMMIT that must be sent anyway, the engine "
      "uses one simple-protocol query (`BEGIN; EXECUTE ...` and `EXECUTE ...; COMMIT`, the statements prepared "
      "once per connection with SQL `PREPARE`), and a phase's statements that need no result travel in the "
      "COMMIT's query too (`AtomicContext::ExecAtCommit`; section 1 counts the sends per ride). A "
      "PL/pgSQL function per statement would travel the same way; on the SQL alone it changes the rps by a factor "
      "of {} at 16 clients. {} libpq's pipeline mode is out of reach: libpqxx 6.4 keeps its connection's `PGconn` "
      "private, and phases run their statements on libpqxx's connection.\n\n",
      Ratio(functions, base),
      base > 0 && functions / base < 1.05 ? "Not taken." : "A gain the engine has not taken yet.");
  return md;
}

}  // namespace phasekey::bench::report
