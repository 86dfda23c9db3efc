// The retry table (client/src/retry_policy.cc), row by row, and the backoff.
#include "phasekey/client/retry_policy.h"

#include <gtest/gtest.h>

#include <chrono>

namespace phasekey::client {
namespace {

using std::chrono::milliseconds;
using Transport = AttemptResult::Transport;

const auto kNow = std::chrono::system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT

AttemptResult Status(int status, bool replayed = false) {
  AttemptResult r;
  r.status = status;
  r.replayed = replayed;
  return r;
}

struct Row {
  int status;
  bool retry;
};

TEST(RetryPolicyTest, EachStatusOfTheTableIsRetriedOrFinalAsDocumented) {
  const Row rows[] = {
      {200, false}, {201, false}, {204, false}, {301, false}, {304, false}, {400, false}, {401, false},
      {403, false}, {404, false}, {405, false}, {410, false}, {413, false}, {415, false}, {422, false},
      {451, false}, {408, true},  {409, true},  {425, true},  {429, true},  {500, true},  {502, true},
      {503, true},  {504, true},  {501, false}, {505, false}, {507, false}, {511, false},
  };
  const RetryOptions options;
  for (const Row& row : rows) {
    EXPECT_EQ(DecideRetry(Status(row.status), 0, options, kNow).retry, row.retry) << row.status;
  }
}

TEST(RetryPolicyTest, EveryTransportFailureIsRetried) {
  const RetryOptions options;
  for (Transport t : {Transport::kConnectFailed, Transport::kTimedOut, Transport::kBroken}) {
    AttemptResult r;
    r.transport = t;
    EXPECT_TRUE(DecideRetry(r, 0, options, kNow).retry);
  }
}

TEST(RetryPolicyTest, AReplayed500IsTheStoredFinalAnswer) {
  EXPECT_FALSE(DecideRetry(Status(500, true), 0, RetryOptions{}, kNow).retry);
  // A replayed 503 or 409 does not exist on a phasekey server, but the flag
  // never stops a status that is retryable for other reasons.
  EXPECT_TRUE(DecideRetry(Status(503, true), 0, RetryOptions{}, kNow).retry);
}

TEST(RetryPolicyTest, A500WhoseProblemTypeIsAFinalStateIsFinal) {
  for (const char* type : {"https://phasekey.dev/docs/idempotency#abandoned",
                           "https://phasekey.dev/docs/idempotency#operation-unverified"}) {
    AttemptResult r = Status(500);
    r.problem_type = type;
    EXPECT_FALSE(DecideRetry(r, 0, RetryOptions{}, kNow).retry) << type;
  }
  AttemptResult internal = Status(500);
  internal.problem_type = "https://phasekey.dev/docs/idempotency#internal-error";
  EXPECT_TRUE(DecideRetry(internal, 0, RetryOptions{}, kNow).retry);
}

TEST(RetryPolicyTest, FiveHundredsInARowStopAtTheConfiguredCount) {
  RetryOptions options;
  options.max_consecutive_500 = 3;
  EXPECT_TRUE(DecideRetry(Status(500), 0, options, kNow).retry);
  EXPECT_TRUE(DecideRetry(Status(500), 1, options, kNow).retry);
  EXPECT_FALSE(DecideRetry(Status(500), 2, options, kNow).retry);
  // Other retryable statuses ignore the count.
  EXPECT_TRUE(DecideRetry(Status(503), 2, options, kNow).retry);
}

TEST(RetryPolicyTest, RetryAfterInSecondsBecomesTheLeastWait) {
  AttemptResult r = Status(429);
  r.retry_after = "7";
  const RetryDecision d = DecideRetry(r, 0, RetryOptions{}, kNow);
  ASSERT_TRUE(d.retry);
  ASSERT_TRUE(d.at_least.has_value());
  EXPECT_EQ(*d.at_least, milliseconds(7000));
}

TEST(RetryPolicyTest, RetryAfterAsAnHttpDateIsAWaitUntilThatDate) {
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:49:47 GMT", kNow), milliseconds(10000));
  EXPECT_EQ(ParseRetryAfter("Sunday, 06-Nov-94 08:49:47 GMT", kNow), milliseconds(10000));
  EXPECT_EQ(ParseRetryAfter("Sun Nov  6 08:49:47 1994", kNow), milliseconds(10000));
  // A date in the past: retry now.
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:00:00 GMT", kNow), milliseconds(0));
}

TEST(RetryPolicyTest, AMalformedRetryAfterIsIgnored) {
  EXPECT_EQ(ParseRetryAfter("soon", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("-1", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("", kNow), std::nullopt);
  EXPECT_EQ(ParseRetryAfter(" 2 ", kNow), milliseconds(2000));
  AttemptResult r = Status(503);
  r.retry_after = "tomorrow-ish";
  const RetryDecision d = DecideRetry(r, 0, RetryOptions{}, kNow);
  EXPECT_TRUE(d.retry);
  EXPECT_FALSE(d.at_least.has_value());
}

TEST(RetryPolicyTest, AHugeRetryAfterIsCappedAtADay) {
  EXPECT_EQ(ParseRetryAfter("999999999", kNow), milliseconds(86400000));
}

TEST(RetryPolicyTest, BackoffIsFullJitterUnderADoublingCeilingAndTheCap) {
  RetryOptions options;
  options.first_delay = milliseconds(100);
  options.max_delay = milliseconds(1000);
  EXPECT_EQ(BackoffDelay(0, options, 0.0), milliseconds(0));
  EXPECT_EQ(BackoffDelay(0, options, 0.5), milliseconds(50));
  EXPECT_EQ(BackoffDelay(1, options, 0.5), milliseconds(100));
  EXPECT_EQ(BackoffDelay(2, options, 0.5), milliseconds(200));
  EXPECT_EQ(BackoffDelay(3, options, 0.999), milliseconds(799));
  EXPECT_EQ(BackoffDelay(4, options, 0.999), milliseconds(999));   // capped at 1000
  EXPECT_EQ(BackoffDelay(1000, options, 0.5), milliseconds(500));  // no overflow
}

TEST(RetryPolicyTest, RetryAfterRaisesTheBackoffButNeverLowersIt) {
  RetryOptions options;
  options.first_delay = milliseconds(100);
  options.max_delay = milliseconds(1000);
  EXPECT_EQ(BackoffDelay(0, options, 0.5, milliseconds(3000)), milliseconds(3000));  // above the cap too
  EXPECT_EQ(BackoffDelay(3, options, 0.5, milliseconds(10)), milliseconds(400));
}

}  // namespace
}  // namespace phasekey::client
