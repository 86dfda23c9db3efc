// Helpers shared by the files that render the sections of
// docs/benchmarks.md (sections.cc, ride_sections.cc).
#ifndef PHASEKEY_BENCH_REPORT_SECTION_UTIL_H_
#define PHASEKEY_BENCH_REPORT_SECTION_UTIL_H_

#include <string>

#include "report/sections.h"

namespace phasekey::bench::report {

// After a ratio between two families that come from different runs.
inline constexpr const char* kDifferentRuns = " (from two runs: one family was re-run alone; not judged)";

// A section saying why its family has no results.
std::string Missing(const std::string& title, const Input& in);
// a / b as Num(), or "-" when either is not positive.
std::string Ratio(double a, double b);
// "failed: <reason>" for a run that failed, else "".
std::string Failed(const Run* r);

}  // namespace phasekey::bench::report

#endif  // PHASEKEY_BENCH_REPORT_SECTION_UTIL_H_
