// Reading one sample out of Metrics::Exposition() (the Prometheus text
// format), for tests and benchmarks; header-only, shared by tests/ and bench/.
#ifndef PHASEKEY_TESTS_SUPPORT_EXPOSITION_H_
#define PHASEKEY_TESTS_SUPPORT_EXPOSITION_H_

#include <string>
#include <string_view>

namespace phasekey::testing {

// The value of the sample named `series` in `exposition`: the metric's name
// followed by its labels exactly as the exposition writes them, e.g.
// `phasekey_commits_total` or `phasekey_claims_total{flow="create_ride",outcome="inserted"}`.
// 0 when no such sample is there (a counter not incremented yet).
inline double SampleOf(std::string_view exposition, std::string_view series) {
  std::size_t at = 0;
  while (at < exposition.size()) {
    std::size_t end = exposition.find('\n', at);
    if (end == std::string_view::npos) end = exposition.size();
    const std::string_view line = exposition.substr(at, end - at);
    if (line.size() > series.size() && line.substr(0, series.size()) == series && line[series.size()] == ' ') {
      return std::stod(std::string(line.substr(series.size() + 1)));
    }
    at = end + 1;
  }
  return 0;
}

}  // namespace phasekey::testing

#endif  // PHASEKEY_TESTS_SUPPORT_EXPOSITION_H_
