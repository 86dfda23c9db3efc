// The console's limit on failed logins (console/login_limit.h), on a clock
// the test moves: counted per address, for a window from the first failure,
// cleared by a success.
#include "console/login_limit.h"

#include <gtest/gtest.h>

namespace phasekey::console {
namespace {

using std::chrono::seconds;

TEST(LoginLimitTest, BlocksAnAddressAfterItsFailuresUntilItsWindowEnds) {
  LoginLimit limit(3, seconds(60));
  const auto t0 = LoginLimit::Clock::time_point{} + seconds(1000);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(limit.Blocked("10.0.0.1", t0 + seconds(i)).has_value()) << "failure " << i;
    limit.Failed("10.0.0.1", t0 + seconds(i));
  }
  ASSERT_EQ(limit.Blocked("10.0.0.1", t0 + seconds(10)), seconds(50)) << "the window counts from the first failure";
  EXPECT_FALSE(limit.Blocked("10.0.0.2", t0 + seconds(10)).has_value()) << "another address is not blocked";
  EXPECT_EQ(limit.Blocked("10.0.0.1", t0 + seconds(59) + std::chrono::milliseconds(500)), seconds(1))
      << "rounded up, never 0";
  EXPECT_FALSE(limit.Blocked("10.0.0.1", t0 + seconds(60)).has_value()) << "the window is over";
  limit.Failed("10.0.0.1", t0 + seconds(61));
  EXPECT_FALSE(limit.Blocked("10.0.0.1", t0 + seconds(62)).has_value()) << "a new window starts with one failure";
}

TEST(LoginLimitTest, ASuccessClearsTheAddressesFailures) {
  LoginLimit limit(2, seconds(60));
  const auto t0 = LoginLimit::Clock::time_point{} + seconds(1000);
  limit.Failed("::1", t0);
  limit.Succeeded("::1");
  limit.Failed("::1", t0 + seconds(1));
  EXPECT_FALSE(limit.Blocked("::1", t0 + seconds(2)).has_value());
  limit.Failed("::1", t0 + seconds(2));
  EXPECT_TRUE(limit.Blocked("::1", t0 + seconds(3)).has_value());
}

}  // namespace
}  // namespace phasekey::console
