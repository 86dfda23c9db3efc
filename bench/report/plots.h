// PNG plots drawn with gnuplot: the data and script are written beside the
// results, then gnuplot renders them into docs/img.
#ifndef PHASEKEY_BENCH_REPORT_PLOTS_H_
#define PHASEKEY_BENCH_REPORT_PLOTS_H_

#include <string>

#include "report/results.h"

namespace phasekey::bench::report {

// Loser latency p50 and p99 vs clients, one line per strategy. Returns ""
// on success, else why no plot was drawn.
std::string PlotContention(const Family& f, const std::string& work_dir, const std::string& png);

// Requests per second vs connections, phasekey and the raw INSERT, with the
// ratio on the second axis.
std::string PlotThroughput(const Family& f, const std::string& work_dir, const std::string& png);

}  // namespace phasekey::bench::report

#endif  // PHASEKEY_BENCH_REPORT_PLOTS_H_
