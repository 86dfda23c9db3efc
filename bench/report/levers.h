// "What each change bought": the section of docs/benchmarks.md rendered from
// bench/levers.sh's results (<results>/levers/): the durability family's
// phasekey and raw_two_commits runs at each commit of levers.txt, all
// measured in one window, each row set against the row above it.
#ifndef PHASEKEY_BENCH_REPORT_LEVERS_H_
#define PHASEKEY_BENCH_REPORT_LEVERS_H_

#include <optional>
#include <string>

#include "report/results.h"
#include "report/sections.h"

namespace phasekey::bench::report {

// The section, or one saying that bench/levers.sh has not been run.
std::string LeversSection(const std::string& results_dir);

// Its second part: the levers measured on the SQL alone (the pgbench
// family's lever variants) and the re-drive poll with and without the
// indexes that read `state` (the growth family), or why there are none.
std::string SqlLeversSection(const std::optional<Family>& pgbench, const std::optional<Family>& growth);

}  // namespace phasekey::bench::report

#endif  // PHASEKEY_BENCH_REPORT_LEVERS_H_
