#include "report/levers.h"

#include <fmt/format.h>

#include <fstream>
#include <vector>

#include "report/results.h"
#include "report/sections.h"

namespace phasekey::bench::report {
namespace {

constexpr int kClients[] = {1, 4, 16};

struct Lever {
  std::string commit;
  std::string change;
  // Means over the rounds; 0 when no round had the figure.
  double ratio[3] = {0, 0, 0};  // phasekey / raw rps at kClients
  double wal = 0;               // phasekey WAL bytes per ride, 16 clients
  double raw_wal = 0;
  double cpu = 0;  // phasekey client CPU µs per ride, 16 clients
  double raw_cpu = 0;
  int rounds = 0;
};

std::vector<Lever> ReadLevers(const std::string& dir) {
  std::vector<Lever> out;
  std::ifstream in(dir + "/levers.txt");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.find(' ');
    out.push_back({line.substr(0, space), space == std::string::npos ? "" : line.substr(space + 1)});
  }
  return out;
}

void Measure(const std::string& dir, Lever* l) {
  double sums[7] = {0, 0, 0, 0, 0, 0, 0};
  for (int round = 1;; ++round) {
    std::string why;
    auto f = ReadFamily(dir, l->commit + "-" + std::to_string(round), &why);
    if (!f) break;
    f->name = "durability";
    for (int i = 0; i < 3; ++i) {
      const std::string c = "clients:" + std::to_string(kClients[i]);
      const Run* pk = f->Find("phasekey", c);
      const Run* raw = f->Find("raw_two_commits", c);
      if (pk && raw && raw->Counter("rps") > 0) sums[i] += pk->Counter("rps") / raw->Counter("rps");
      if (i == 2 && pk && raw) {
        sums[3] += pk->Counter("wal_bytes_per_req");
        sums[4] += raw->Counter("wal_bytes_per_req");
        sums[5] += pk->Counter("client_cpu_us_per_req");
        sums[6] += raw->Counter("client_cpu_us_per_req");
      }
    }
    l->rounds = round;
  }
  if (l->rounds == 0) return;
  for (int i = 0; i < 3; ++i) l->ratio[i] = sums[i] / l->rounds;
  l->wal = sums[3] / l->rounds;
  l->raw_wal = sums[4] / l->rounds;
  l->cpu = sums[5] / l->rounds;
  l->raw_cpu = sums[6] / l->rounds;
}

std::string Delta(double now, double before, int decimals) {
  if (before <= 0 || now <= 0) return "";
  return fmt::format(" ({}{})", now >= before ? "+" : "", Num(now - before, decimals));
}

}  // namespace

std::string LeversSection(const std::string& results_dir) {
  const std::string dir = results_dir + "/levers";
  std::vector<Lever> levers = ReadLevers(dir);
  std::string md = "## 8. What each change bought\n\n";
  if (levers.empty()) {
    return md + "No results: `bench/levers.sh` has not been run (it writes " + dir + ").\n\n";
  }
  for (auto& l : levers) Measure(dir, &l);
  md +=
      "The durability family (section 1, phasekey and `raw_two_commits` only) built at the commit before the "
      "performance changes and after each of them (`bench/levers.txt`), every build run in turn against one "
      "server in one window by `bench/levers.sh`; each figure is the mean over the rounds of that commit's own "
      "in-process ratio, and each row's change in brackets is against the row above. Ratios are phasekey / raw "
      "rps (goal >= " +
      Num(kRawRpsGoal) +
      "); WAL and client CPU are per ride at 16 clients.\n\n"
      "| commit | change | rounds | ratio 1 client | ratio 4 clients | ratio 16 clients | WAL bytes phasekey / "
      "raw | client CPU µs phasekey / raw |\n|---|---|---:|---:|---:|---:|---:|---:|\n";
  const Lever* prev = nullptr;
  for (const auto& l : levers) {
    std::string row = fmt::format("| `{}` | {} | {} |", l.commit, l.change, l.rounds);
    for (int i = 0; i < 3; ++i) {
      row += " " + Num(l.ratio[i]) + (prev ? Delta(l.ratio[i], prev->ratio[i], 2) : "") + " |";
    }
    row += fmt::format(" {}{} / {} | {}{} / {} |\n", Num(l.wal, 0), prev ? Delta(l.wal, prev->wal, 0) : "",
                       Num(l.raw_wal, 0), Num(l.cpu, 0), prev ? Delta(l.cpu, prev->cpu, 0) : "", Num(l.raw_cpu, 0));
    md += row;
    prev = &l;
  }
  return md + "\n";
}

}  // namespace phasekey::bench::report
