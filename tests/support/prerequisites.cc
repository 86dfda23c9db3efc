#include "support/prerequisites.h"

#include <cstdlib>

namespace phasekey::testing {

bool RunningInCi() { return std::getenv("CI") != nullptr; }

::testing::TestPartResult::Type MissingPrerequisiteResult() {
  return RunningInCi() ? ::testing::TestPartResult::kFatalFailure : ::testing::TestPartResult::kSkip;
}

const char* MissingPrerequisitePrefix() {
  return RunningInCi() ? "CI is set, so a missing prerequisite fails the test instead of skipping it: " : "";
}

}  // namespace phasekey::testing
