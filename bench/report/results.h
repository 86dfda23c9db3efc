// The Google Benchmark JSON files of one bench run, read back for the
// report: per family, its context (how the results were produced) and its
// runs, one per benchmark name, with the median of every counter over the
// repetitions.
#ifndef PHASEKEY_BENCH_REPORT_RESULTS_H_
#define PHASEKEY_BENCH_REPORT_RESULTS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace phasekey::bench::report {

struct Run {
  std::string name;                        // "contention/naive/clients:16"
  std::vector<std::string> parts;          // split at '/' (a variant may span several)
  std::map<std::string, double> counters;  // medians over repetitions
  double real_time = 0;                    // median, in time_unit
  std::string time_unit;
  double bytes_per_second = 0;  // median (0 when not reported)
  int repetitions = 0;
  std::string error;  // non-empty when the run failed

  double Counter(const std::string& key) const;  // 0 when absent
};

struct Family {
  std::string name;
  std::map<std::string, std::string> context;  // Google Benchmark context + ours
  std::vector<Run> runs;                       // in the order they were registered

  // The run named "<name>/<variant>/<param>", or nullptr.
  const Run* Find(const std::string& variant, const std::string& param) const;
  std::string Context(const std::string& key) const;  // "" when absent
};

// Reads "<dir>/<family>.json"; nullopt when the file is missing or broken
// (`why` says which).
std::optional<Family> ReadFamily(const std::string& dir, const std::string& family, std::string* why);

}  // namespace phasekey::bench::report

#endif  // PHASEKEY_BENCH_REPORT_RESULTS_H_
