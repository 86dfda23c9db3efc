// The console's limit on failed logins (console/login_limit.h), on a clock
// the test moves: counted per address group at admission, for a window from
// the first attempt, cleared by a success; IPv6 grouped by /64.
#include "console/login_limit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace phasekey::console {
namespace {

using std::chrono::seconds;

TEST(LoginLimitTest, BlocksAnAddressAfterItsFailuresUntilItsWindowEnds) {
  LoginLimit limit(3, seconds(60));
  const auto t0 = LoginLimit::Clock::time_point{} + seconds(1000);
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(limit.Admit("10.0.0.1", t0 + seconds(i)).has_value()) << "attempt " << i;
  }
  ASSERT_EQ(limit.Admit("10.0.0.1", t0 + seconds(10)), seconds(50)) << "the window counts from the first attempt";
  EXPECT_FALSE(limit.Admit("10.0.0.2", t0 + seconds(10)).has_value()) << "another address is not blocked";
  EXPECT_EQ(limit.Admit("10.0.0.1", t0 + seconds(59) + std::chrono::milliseconds(500)), seconds(1))
      << "rounded up, never 0";
  EXPECT_FALSE(limit.Admit("10.0.0.1", t0 + seconds(61)).has_value()) << "the window is over: a new one starts";
  EXPECT_FALSE(limit.Admit("10.0.0.1", t0 + seconds(62)).has_value());
  EXPECT_FALSE(limit.Admit("10.0.0.1", t0 + seconds(63)).has_value());
  EXPECT_TRUE(limit.Admit("10.0.0.1", t0 + seconds(64)).has_value());
}

TEST(LoginLimitTest, ASuccessClearsTheAddressesFailures) {
  LoginLimit limit(2, seconds(60));
  const auto t0 = LoginLimit::Clock::time_point{} + seconds(1000);
  ASSERT_FALSE(limit.Admit("::1", t0).has_value());
  limit.Succeeded("::1");
  ASSERT_FALSE(limit.Admit("::1", t0 + seconds(1)).has_value());
  ASSERT_FALSE(limit.Admit("::1", t0 + seconds(2)).has_value());
  EXPECT_TRUE(limit.Admit("::1", t0 + seconds(3)).has_value());
}

TEST(LoginLimitTest, ConcurrentAttemptsCannotSlipPastTheLimit) {
  constexpr int kMax = 5;
  LoginLimit limit(kMax, seconds(600));
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&] {
      if (!limit.Admit("10.0.0.9").has_value()) ++admitted;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), kMax);
}

TEST(LoginLimitTest, AnIpv6SlashSixtyFourIsOneClient) {
  EXPECT_EQ(LoginLimit::GroupOf("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
  EXPECT_EQ(LoginLimit::GroupOf("2001:db8:1:2:ffff:1:2:3"), "2001:db8:1:2::/64");
  EXPECT_EQ(LoginLimit::GroupOf("::ffff:10.0.0.1"), "10.0.0.1");
  EXPECT_EQ(LoginLimit::GroupOf("10.0.0.1"), "10.0.0.1");
  LoginLimit limit(2, seconds(60));
  ASSERT_FALSE(limit.Admit("2001:db8:1:2::a").has_value());
  ASSERT_FALSE(limit.Admit("2001:db8:1:2::b").has_value());
  EXPECT_TRUE(limit.Admit("2001:db8:1:2::c").has_value()) << "a new address in the same /64 is the same client";
  EXPECT_FALSE(limit.Admit("2001:db8:1:3::a").has_value()) << "another /64 is another client";
}

}  // namespace
}  // namespace phasekey::console
