#include "report/wal_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "report/sections.h"

namespace phasekey::bench::report {
namespace {

// What the engine's schema (phasekey.*) had written per request in
// phasekey's probe, and that noticing client mistakes (issue 19) is not
// among it: the reaper's audit only reads, through indexes the request path
// keeps up anyway, and the 409 watch is the runner's memory. A table or
// index written for it would be listed here.
std::string EngineRelationsLine(const std::map<std::string, std::map<std::string, double>>& by_what) {
  std::vector<std::string> written;
  for (const auto& [what, per] : by_what) {
    if (what.rfind("phasekey.", 0) == 0 && per.count("phasekey") && per.at("phasekey") >= 0.5) {
      written.push_back("`" + what + "`");
    }
  }
  if (written.empty()) return "";
  return fmt::format(
      "The engine's own relations a request writes, as measured: {}. Noticing the client mistakes of "
      "docs/clients.md (a new key for a retry, a 409 taken as final) writes nothing on the request path: the "
      "reaper's audit reads the recent keys through `idempotency_keys_redrive` and `idempotency_keys_reap`, "
      "which the request path keeps up anyway, and the 409 watch lives in the runner's memory.\n\n",
      fmt::join(written, ", "));
}

}  // namespace

std::string WalByRelationTable(const Family& f) {
  const char* variants[] = {"raw_two_commits", "phasekey", "leach_four_commits"};
  std::map<std::string, std::map<std::string, double>> by_what;  // what -> variant -> bytes
  std::map<std::string, double> totals;
  for (const char* v : variants) {
    const Run* r = f.Find("client_sends", v);
    if (r == nullptr || !r->error.empty()) continue;
    for (const auto& [key, bytes] : r->counters) {
      if (key.rfind("wal:", 0) != 0) continue;
      by_what[key.substr(4)][v] = bytes;
      totals[v] += bytes;
    }
  }
  if (by_what.empty()) return "";
  std::vector<std::pair<std::string, double>> order;  // by phasekey's bytes, largest first
  for (const auto& [what, per] : by_what) {
    order.emplace_back(what, per.count("phasekey") ? per.at("phasekey") : 0);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string md =
      "Where the WAL goes: the same one-client probes read their own WAL back with `pg_walinspect` and sum it by "
      "the relation each record changed (full-page images apart; commit records are `transaction`). Bytes per "
      "request; relations a variant does not touch are blank.\n\n"
      "| WAL of | raw_two_commits | phasekey | leach_four_commits |\n|---|---:|---:|---:|\n";
  auto cell = [&](const std::string& what, const char* v) {
    const auto& per = by_what[what];
    return per.count(v) && per.at(v) >= 0.5 ? Num(per.at(v), 0) : std::string();
  };
  for (const auto& [what, unused] : order) {
    md += fmt::format("| `{}` | {} | {} | {} |\n", what, cell(what, variants[0]), cell(what, variants[1]),
                      cell(what, variants[2]));
  }
  md += fmt::format("| all | {} | {} | {} |\n\n", Num(totals[variants[0]], 0), Num(totals[variants[1]], 0),
                    Num(totals[variants[2]], 0));
  // phasekey's own record of the key: the key table and its indexes.
  const std::string table = "phasekey.idempotency_keys";
  double heap = 0, indexes = 0;
  for (const auto& [what, per] : by_what) {
    if (!per.count("phasekey") || what.rfind(table, 0) != 0 || what.ends_with("_seq")) continue;
    (what == table ? heap : indexes) += per.at("phasekey");
  }
  if (totals["phasekey"] > 0 && totals[variants[0]] > 0) {
    md += fmt::format(
        "Of phasekey's {} bytes, the key row takes {} in the table (its insert at the first move, with the "
        "request, and the finish that stores the response) and {} in the key table's indexes: {}% of its WAL. The rest "
        "({} bytes) "
        "is the ride's own, against the raw baseline's {}.\n\n",
        Num(totals["phasekey"], 0), Num(heap, 0), Num(indexes, 0), Num(100 * (heap + indexes) / totals["phasekey"], 0),
        Num(totals["phasekey"] - heap - indexes, 0), Num(totals[variants[0]], 0));
  }
  md += EngineRelationsLine(by_what);
  return md;
}

}  // namespace phasekey::bench::report
