// The 409 watch (engine/src/runner/conflict_watch.h) on a clock the test
// moves: which keys it suspects, when, and that a client coming back clears
// its key.
#include "runner/conflict_watch.h"

#include <gtest/gtest.h>

namespace phasekey::runner {
namespace {

using std::chrono::seconds;
using Clock = ConflictWatch::Clock;

const Clock::time_point t0{};

TEST(ConflictWatchTest, AKeyAnswered409AndNeverSeenAgainIsSuspectedOnceAfterTheSilence) {
  ConflictWatch watch(seconds(60), 100);
  EXPECT_TRUE(watch.Saw("create_ride", "acct", "k1", 7, true, t0, t0).empty());
  EXPECT_TRUE(watch.Saw("create_ride", "acct", "other", 8, false, t0 + seconds(59), t0 + seconds(59)).empty());
  const auto suspects = watch.Saw("create_ride", "acct", "other", 8, false, t0 + seconds(60), t0 + seconds(60));
  ASSERT_EQ(suspects.size(), 1u);
  EXPECT_EQ(suspects[0].flow, "create_ride");
  EXPECT_EQ(suspects[0].account, "acct");
  EXPECT_EQ(suspects[0].key, "k1");
  EXPECT_EQ(suspects[0].key_id, 7);
  EXPECT_EQ(suspects[0].last_conflict, t0);
  EXPECT_TRUE(watch.Saw("create_ride", "acct", "other", 8, false, t0 + seconds(600), t0 + seconds(600)).empty())
      << "counted once";
  EXPECT_EQ(watch.watched(), 0u);
}

TEST(ConflictWatchTest, ASuspectCarriesTheTraceIdOfItsLast409) {
  ConflictWatch watch(seconds(60), 100);
  watch.Saw("f", "acct", "k1", 1, true, t0, t0, "4bf92f3577b34da6a3ce929d0e0e4736");
  const auto suspects = watch.Saw("f", "acct", "other", 2, false, t0 + seconds(60), t0 + seconds(60));
  ASSERT_EQ(suspects.size(), 1u);
  EXPECT_EQ(suspects[0].trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
}

TEST(ConflictWatchTest, AClientThatComesBackWithTheKeyIsNotSuspected) {
  ConflictWatch watch(seconds(60), 100);
  watch.Saw("f", "acct", "k1", 1, true, t0, t0);
  // The retry: another 409 restarts the silence, a final answer ends it.
  EXPECT_TRUE(watch.Saw("f", "acct", "k1", 1, true, t0 + seconds(30), t0 + seconds(30)).empty());
  EXPECT_TRUE(watch.Saw("f", "acct", "other", 2, false, t0 + seconds(80), t0 + seconds(80)).empty());
  EXPECT_TRUE(watch.Saw("f", "acct", "k1", 1, false, t0 + seconds(85), t0 + seconds(85)).empty());
  EXPECT_TRUE(watch.Saw("f", "acct", "other", 2, false, t0 + seconds(1000), t0 + seconds(1000)).empty());
  EXPECT_EQ(watch.watched(), 0u);
}

TEST(ConflictWatchTest, TheRequestHoldingTheKeyFinishingIsNotTheClientComingBack) {
  ConflictWatch watch(seconds(60), 100);
  // The holder arrived at t0; a second request for its key got the 409 at
  // t0 + 5 s; the holder's own answer at t0 + 10 s does not end the silence.
  watch.Saw("f", "acct", "k1", 1, true, t0 + seconds(5), t0 + seconds(5));
  EXPECT_TRUE(watch.Saw("f", "acct", "k1", 1, false, t0, t0 + seconds(10)).empty());
  EXPECT_EQ(watch.watched(), 1u);
  EXPECT_EQ(watch.Saw("f", "acct", "x", 2, false, t0 + seconds(70), t0 + seconds(70)).size(), 1u);
}

TEST(ConflictWatchTest, KeysAreScopedToTheirAccount) {
  ConflictWatch watch(seconds(60), 100);
  watch.Saw("f", "acct_1", "k", 1, true, t0, t0);
  watch.Saw("f", "acct_2", "k", 2, false, t0 + seconds(1), t0 + seconds(1));  // another account's key of the same name
  const auto suspects = watch.Saw("f", "acct_2", "x", 3, false, t0 + seconds(61), t0 + seconds(61));
  ASSERT_EQ(suspects.size(), 1u);
  EXPECT_EQ(suspects[0].account, "acct_1");
}

TEST(ConflictWatchTest, PastItsCapacityTheOldestKeyIsForgottenNotSuspected) {
  ConflictWatch watch(seconds(60), 2);
  watch.Saw("f", "a", "k1", 1, true, t0, t0);
  watch.Saw("f", "a", "k2", 2, true, t0 + seconds(1), t0 + seconds(1));
  watch.Saw("f", "a", "k3", 3, true, t0 + seconds(2), t0 + seconds(2));
  EXPECT_EQ(watch.watched(), 2u);
  EXPECT_EQ(watch.forgotten(), 1u);
  const auto suspects = watch.Saw("f", "a", "x", 4, false, t0 + seconds(100), t0 + seconds(100));
  ASSERT_EQ(suspects.size(), 2u);
  EXPECT_EQ(suspects[0].key, "k2");
  EXPECT_EQ(suspects[1].key, "k3");
}

}  // namespace
}  // namespace phasekey::runner
