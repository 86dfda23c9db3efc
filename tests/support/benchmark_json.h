// Google Benchmark's JSON results as nlohmann::json, for the two readers of
// docs/results/benchmarks: bench_report (bench/report) and the docs' tables
// rendered by tests/doc_results. Header only: neither links the other.
#ifndef PHASEKEY_TESTS_SUPPORT_BENCHMARK_JSON_H_
#define PHASEKEY_TESTS_SUPPORT_BENCHMARK_JSON_H_

#include <nlohmann/json.hpp>

#include <regex>
#include <string>

namespace phasekey::testing {

// Parses a results file's text. Google Benchmark writes NaN and inf (e.g.
// the cv of a counter that is always 0), which JSON does not allow; they
// read as null. A text that is still not JSON gives a discarded value
// (is_discarded()), never an exception.
inline nlohmann::json ParseBenchmarkJson(const std::string& text) {
  static const std::regex kNonFinite(R"(:\s*-?(NaN|nan|inf|Infinity)\b)");
  return nlohmann::json::parse(std::regex_replace(text, kNonFinite, ": null"), nullptr, false);
}

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_BENCHMARK_JSON_H_
