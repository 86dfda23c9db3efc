// UUIDv7 (client/src/uuid7.cc): RFC 9562's layout, time order, uniqueness.
#include "phasekey/client/uuid7.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <regex>
#include <set>
#include <thread>
#include <vector>

namespace phasekey::client {
namespace {

std::int64_t NowMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(Uuid7Test, VersionIsSevenAndVariantIsTenInEveryUuid) {
  for (int i = 0; i < 1000; ++i) {
    const Uuid u = NewUuidV7();
    EXPECT_EQ(u[6] >> 4, 7);
    EXPECT_EQ(u[8] >> 6, 0b10);
  }
}

TEST(Uuid7Test, TheTimestampIsTheUnixTimeInMillisecondsBigEndian) {
  const std::int64_t before = NowMillis();
  const Uuid u = NewUuidV7();
  const std::int64_t after = NowMillis();
  // Monotonicity may borrow a millisecond ahead under a burst, never more
  // than the burst's length.
  EXPECT_GE(UuidV7UnixMillis(u), before);
  EXPECT_LE(UuidV7UnixMillis(u), after + 1);
  // Big-endian: the first byte is the most significant of 48 bits.
  EXPECT_EQ(u[0], static_cast<std::uint8_t>(UuidV7UnixMillis(u) >> 40));
}

TEST(Uuid7Test, TheTextFormIsLowercaseHexEightFourFourFourTwelve) {
  const std::string text = NewUuidV7Text();
  EXPECT_TRUE(std::regex_match(text, std::regex("[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")))
      << text;
  Uuid fixed{};
  fixed[0] = 0x01;
  fixed[15] = 0xAB;
  EXPECT_EQ(FormatUuid(fixed), "01000000-0000-0000-0000-0000000000ab");
}

TEST(Uuid7Test, EveryUuidSortsAfterThePreviousOneEvenWithinOneMillisecond) {
  std::vector<std::string> texts;
  std::vector<Uuid> raw;
  for (int i = 0; i < 20000; ++i) {
    raw.push_back(NewUuidV7());
    texts.push_back(FormatUuid(raw.back()));
  }
  for (std::size_t i = 1; i < raw.size(); ++i) {
    ASSERT_LT(raw[i - 1], raw[i]) << i;
    ASSERT_LT(texts[i - 1], texts[i]) << i;
  }
}

TEST(Uuid7Test, ThreadsMakingUuidsTogetherNeverGetTheSameOne) {
  std::mutex mu;
  std::set<Uuid> all;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<Uuid> mine;
      for (int i = 0; i < 5000; ++i) mine.push_back(NewUuidV7());
      // Each thread sees its own UUIDs in increasing order too.
      EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
      std::lock_guard lock(mu);
      all.insert(mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(all.size(), 20000u);
}

TEST(Uuid7Test, TheRandomBitsDifferAcrossMilliseconds) {
  const Uuid a = NewUuidV7();
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  const Uuid b = NewUuidV7();
  ASSERT_LT(UuidV7UnixMillis(a), UuidV7UnixMillis(b));
  // 74 random bits: equal tails would mean no randomness.
  EXPECT_FALSE(std::equal(a.begin() + 8, a.end(), b.begin() + 8));
}

// MinUuidV7 is the floor of its millisecond: the keys made since a moment
// are those at or above it, with no prefix in the keys (the chaos report
// selects its run's keys so).
TEST(Uuid7Test, TheFloorOfAMomentSortsBelowEveryLaterUuidAndAboveEveryEarlierMillisecond) {
  const auto start = std::chrono::system_clock::now();
  const Uuid floor = MinUuidV7(start);
  EXPECT_EQ(floor[6] >> 4, 7);
  EXPECT_EQ(floor[8] >> 6, 0b10);
  EXPECT_EQ(UuidV7UnixMillis(floor),
            std::chrono::duration_cast<std::chrono::milliseconds>(start.time_since_epoch()).count());
  EXPECT_EQ(FormatUuid(floor).substr(14), "7000-8000-000000000000");
  for (int i = 0; i < 1000; ++i) {
    const std::string later = NewUuidV7Text();
    ASSERT_GE(later, FormatUuid(floor));
    ASSERT_LT(later, FormatUuid(MinUuidV7(start + std::chrono::hours(1))));
  }
  const Uuid earlier = MinUuidV7(start - std::chrono::milliseconds(1));
  EXPECT_LT(FormatUuid(earlier), FormatUuid(floor));
  EXPECT_LT(earlier, floor);
  EXPECT_EQ(UuidV7UnixMillis(MinUuidV7(std::chrono::system_clock::time_point{})), 0);
}

}  // namespace
}  // namespace phasekey::client
