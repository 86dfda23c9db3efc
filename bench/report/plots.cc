#include "report/plots.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <vector>

namespace phasekey::bench::report {
namespace {

int Param(const Run& r) { return std::atoi(r.parts[2].substr(r.parts[2].find(':') + 1).c_str()); }

std::string RunGnuplot(const std::string& script) {
  const std::string cmd = "gnuplot '" + script + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  return rc == 0 ? "" : fmt::format("gnuplot failed (exit status {}) on {}", rc, script);
}

}  // namespace

std::string PlotContention(const Family& f, const std::string& work_dir, const std::string& png) {
  std::map<std::string, std::vector<const Run*>> by_strategy;
  std::vector<std::string> order;
  for (const Run& r : f.runs) {
    if (r.parts.size() > 1 && r.parts[1] == "select_one") continue;        // a yardstick, not a strategy
    if (r.parts.size() < 3 || !r.error.empty() || Param(r) < 2) continue;  // N=1 has no losers
    if (!by_strategy.count(r.parts[1])) order.push_back(r.parts[1]);
    by_strategy[r.parts[1]].push_back(&r);
  }
  if (order.empty()) return "no contention results with losers";
  const std::string dat = work_dir + "/contention.dat";
  std::ofstream out(dat);
  for (const auto& s : order) {
    out << "# " << s << "\n";
    for (const Run* r : by_strategy[s]) {
      out << Param(*r) << " " << r->Counter("loser_p50_ms") << " " << r->Counter("loser_p99_ms") << "\n";
    }
    out << "\n\n";
  }
  out.close();
  const std::string gp = work_dir + "/contention.gp";
  std::ofstream script(gp);
  script << "set terminal pngcairo noenhanced size 1100,450 font ',10'\n"
         << "set output '" << png << "'\n"
         << "set multiplot layout 1,2 title \"Same key, N concurrent requests, 20 ms foreign call: losers' answer "
            "latency\"\n"
         << "set logscale x 2\nset logscale y\nset xlabel 'concurrent requests (N)'\nset ylabel 'ms'\n"
         << "set grid\nset key top left\nset xrange [1.5:80]\n";
  for (const char* which : {"p50", "p99"}) {
    const int col = std::string(which) == "p50" ? 2 : 3;
    script << "set title 'loser " << which << "'\nplot ";
    for (std::size_t i = 0; i < order.size(); ++i) {
      script << (i ? ", " : "") << "'" << dat << "' index " << i << " using 1:" << col
             << " with linespoints lw 2 title '" << order[i] << "'";
    }
    script << ", 20 with lines dt 2 lc rgb 'gray' title 'foreign call (20 ms)'\n";
  }
  script << "unset multiplot\n";
  script.close();
  return RunGnuplot(gp);
}

std::string PlotThroughput(const Family& f, const std::string& work_dir, const std::string& png) {
  const std::string dat = work_dir + "/throughput.dat";
  std::ofstream out(dat);
  int rows = 0;
  for (int c : {1, 2, 4, 8, 16}) {
    const std::string p = "connections:" + std::to_string(c);
    const Run* raw = f.Find("raw_insert_on_conflict", p);
    const Run* pk = f.Find("phasekey", p);
    if (raw == nullptr || pk == nullptr || !raw->error.empty() || !pk->error.empty()) continue;
    out << c << " " << raw->Counter("rps") << " " << pk->Counter("rps") << " "
        << pk->Counter("rps") / raw->Counter("rps") << "\n";
    ++rows;
  }
  out.close();
  if (rows == 0) return "no throughput results";
  const std::string gp = work_dir + "/throughput.gp";
  std::ofstream script(gp);
  script << "set terminal pngcairo noenhanced size 800,450 font ',10'\n"
         << "set output '" << png << "'\n"
         << "set title 'Distinct keys: requests per second vs connections'\n"
         << "set logscale x 2\nset xlabel 'connections'\nset ylabel 'requests/s'\nset y2label 'ratio phasekey / raw'\n"
         << "set y2range [0:1.2]\nset y2tics\nset ytics nomirror\nset yrange [0:*]\nset grid\nset key top left\n"
         << "plot '" << dat << "' using 1:2 with linespoints lw 2 title 'raw INSERT ... ON CONFLICT', "
         << "'' using 1:3 with linespoints lw 2 title 'phasekey (record flow)', "
         << "'' using 1:4 axes x1y2 with linespoints dt 2 title 'ratio (right axis)', "
         << "0.8 axes x1y2 with lines dt 3 lc rgb 'gray' title 'goal 0.8'\n";
  script.close();
  return RunGnuplot(gp);
}

}  // namespace phasekey::bench::report
