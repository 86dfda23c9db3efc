// Tests whose environment lacks what they need (root, iptables, crash points
// compiled in): skipped on a developer's machine, failed in CI. A skipped
// fault test leaves a green CI run claiming what it never checked, so when
// the environment variable CI is set (to anything, as CI services do) the
// missing prerequisite is a failure.
#ifndef PHASEKEY_TESTS_SUPPORT_PREREQUISITES_H_
#define PHASEKEY_TESTS_SUPPORT_PREREQUISITES_H_

#include <gtest/gtest.h>

namespace phasekey::testing {

// Whether this is a CI run: the environment variable CI is set.
bool RunningInCi();

// kFatalFailure in a CI run, else kSkip.
::testing::TestPartResult::Type MissingPrerequisiteResult();

// "" outside CI; in CI, the words that say why a skip became a failure.
const char* MissingPrerequisitePrefix();

}  // namespace phasekey::testing

// Use like GTEST_SKIP(), in a test body or a void function it calls, with
// the reason streamed in:
//   if (::geteuid() != 0) PHASEKEY_SKIP_OR_FAIL_IN_CI() << "needs root";
// Outside CI it skips the test; with CI set it fails it. Either way it
// returns from the current function.
#define PHASEKEY_SKIP_OR_FAIL_IN_CI()                                                                            \
  return ::testing::internal::AssertHelper(::phasekey::testing::MissingPrerequisiteResult(), __FILE__, __LINE__, \
                                           ::phasekey::testing::MissingPrerequisitePrefix()) = ::testing::Message()

#endif  // PHASEKEY_TESTS_SUPPORT_PREREQUISITES_H_
