// PHASEKEY_SKIP_OR_FAIL_IN_CI: a skip on a developer's machine, a failure
// when CI is set.
#include "support/prerequisites.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace phasekey::testing {
namespace {

void NeedsRoot() { PHASEKEY_SKIP_OR_FAIL_IN_CI() << "needs root"; }

// Sets the environment variable CI to `value`, or unsets it for nullopt.
void SetCi(const std::optional<std::string>& value) {
  if (value) {
    ::setenv("CI", value->c_str(), 1);
  } else {
    ::unsetenv("CI");
  }
}

// What NeedsRoot() reports with CI set to `ci` (or unset), intercepted so
// this test itself is neither skipped nor failed.
::testing::TestPartResult Reported(const std::optional<std::string>& ci) {
  const char* saved = std::getenv("CI");
  const std::optional<std::string> restore = saved ? std::optional<std::string>(saved) : std::nullopt;
  SetCi(ci);
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    NeedsRoot();
  }
  SetCi(restore);
  return results.GetTestPartResult(0);
}

TEST(PrerequisitesTest, AMissingPrerequisiteSkipsOutsideCi) {
  const ::testing::TestPartResult r = Reported(std::nullopt);
  EXPECT_TRUE(r.skipped()) << r;
  EXPECT_NE(std::string(r.message()).find("needs root"), std::string::npos) << r;
}

TEST(PrerequisitesTest, AMissingPrerequisiteFailsWhenCiIsSet) {
  for (const char* value : {"true", "1", ""}) {
    const ::testing::TestPartResult r = Reported(std::string(value));
    EXPECT_TRUE(r.fatally_failed()) << "CI=" << value << ": " << r;
    EXPECT_NE(std::string(r.message()).find("needs root"), std::string::npos) << r;
    EXPECT_NE(std::string(r.message()).find("CI is set"), std::string::npos) << r;
  }
}

}  // namespace
}  // namespace phasekey::testing
