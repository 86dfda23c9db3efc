// The chaos run's timed events (chaos/events.h): parsing --event, and the
// unavailability window measured from the clients' attempts.
#include "chaos/events.h"

#include <gtest/gtest.h>

namespace ride_booking {
namespace {

using std::chrono::milliseconds;
using Attempt = ChaosAttemptLog::Attempt;

TEST(ChaosEventsTest, ParsesFractionAndCommand) {
  auto e = ParseChaosEvent("0.5:tests/ha/formation.sh kill-primary");
  ASSERT_TRUE(e.has_value()) << e.error().ToString();
  EXPECT_DOUBLE_EQ(e->at, 0.5);
  EXPECT_EQ(e->command, "tests/ha/formation.sh kill-primary");
  EXPECT_EQ(ParseChaosEvent("0.25:echo a:b")->command, "echo a:b") << "only the first colon separates";
}

TEST(ChaosEventsTest, RejectsSpecsWithoutAFractionInRangeOrACommand) {
  for (const char* bad : {"kill", "0.5", "0.5:", "x:cmd", "0.5x:cmd", "1:cmd", "-0.1:cmd"}) {
    EXPECT_FALSE(ParseChaosEvent(bad).has_value()) << bad;
  }
}

// Attempts at the given offsets (ms from `t0`); negative offsets are failures.
std::vector<Attempt> At(ChaosClock::time_point t0, std::initializer_list<int> offsets) {
  std::vector<Attempt> out;
  for (int ms : offsets) out.push_back({t0 + milliseconds(ms < 0 ? -ms : ms), ms < 0});
  return out;
}

ChaosEventResult Ran(ChaosClock::time_point started, ChaosClock::time_point ended) {
  ChaosEventResult r;
  r.ran = true;
  r.started = started;
  r.ended = ended;
  return r;
}

TEST(ChaosEventsTest, TheWindowIsTheLongestStretchOfFailuresAroundTheEvent) {
  const auto t0 = ChaosClock::now();
  // A short blip before the event, then the outage: failures from 1100 ms
  // to 3000 ms, answers again at 3200 ms.
  std::vector<ChaosEventResult> results = {Ran(t0 + milliseconds(1000), t0 + milliseconds(2000))};
  MeasureWindows(At(t0, {100, -150, 200, 900, -1100, -1500, -3000, 3200, 3300}), &results);
  ASSERT_TRUE(results[0].has_window);
  EXPECT_EQ(results[0].window_start - t0, milliseconds(1100));
  EXPECT_EQ(results[0].window_end - t0, milliseconds(3200));
  EXPECT_EQ(results[0].failed_in_window, 3);
}

TEST(ChaosEventsTest, AnEventIsNotBlamedForFailuresAfterTheNextOneStarted) {
  const auto t0 = ChaosClock::now();
  std::vector<ChaosEventResult> results = {Ran(t0, t0 + milliseconds(100)),
                                           Ran(t0 + milliseconds(1000), t0 + milliseconds(1100))};
  MeasureWindows(At(t0, {50, 500, -1200, -1800, 2000}), &results);
  EXPECT_FALSE(results[0].has_window) << "the failures came after the second event started";
  ASSERT_TRUE(results[1].has_window);
  EXPECT_EQ(results[1].window_end - results[1].window_start, milliseconds(800));
}

TEST(ChaosEventsTest, AnEventThatNeverRanFailsTheReport) {
  ChaosEventResult r;
  r.event.command = "true";
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  EXPECT_FALSE(PrintChaosEvents(out, {r}, ChaosClock::now()));
  ChaosEventResult failed = Ran(ChaosClock::now(), ChaosClock::now());
  failed.exit_code = 1;
  EXPECT_FALSE(PrintChaosEvents(out, {failed}, ChaosClock::now()));
  EXPECT_TRUE(PrintChaosEvents(out, {Ran(ChaosClock::now(), ChaosClock::now())}, ChaosClock::now()));
  std::fclose(out);
}

}  // namespace
}  // namespace ride_booking
