// The sections of docs/benchmarks.md, one function per family, each a
// Markdown table with the ratios against that family's baseline and, when a
// figure misses its goal, a paragraph saying so and what limits it. A family
// without results gets a section saying why.
#ifndef PHASEKEY_BENCH_REPORT_SECTIONS_H_
#define PHASEKEY_BENCH_REPORT_SECTIONS_H_

#include <optional>
#include <string>

#include "report/goals.h"
#include "report/results.h"

namespace phasekey::bench::report {

// A family's results, or why there are none.
struct Input {
  std::optional<Family> family;
  std::string missing;  // set when !family
  // When the family was re-run alone after the full run (bench/run_all.sh
  // --only): that run's start; empty for the full run. A ratio between two
  // families with different values compares two runs, and no goal is
  // judged on it.
  std::string rerun;
};

// Each section with a goal adds it to `goals` (see goals.h). `floor` is the
// pgbench family (bench/pgbench): its rows sit beside the raw baseline's.
std::string DurabilitySection(const Input& in, const Input& floor, Goals* goals);
// The service as deployed (bench/http), beside the durability family's
// in-process phasekey flow of the same run.
std::string HttpSection(const Input& in, const Input& durability, Goals* goals);
// The same service with its provider 20 ms away over plain HTTP or TLS, the
// pool on or off (bench/http's deployed variants).
std::string DeployedSection(const Input& http, const Input& durability, Goals* goals);
std::string ContentionSection(const Input& in, const std::string& plot, Goals* goals);
std::string ThroughputSection(const Input& in, const std::string& plot, Goals* goals);
std::string RedriveSection(const Input& in);
std::string FingerprintSection(const Input& in, Goals* goals);
std::string GrowthSection(const Input& in, Goals* goals);
std::string PeerSection(const Input& in, Goals* goals);

// "1.23" / "-" for a missing figure.
std::string Num(double v, int decimals = 2);

}  // namespace phasekey::bench::report

#endif  // PHASEKEY_BENCH_REPORT_SECTIONS_H_
