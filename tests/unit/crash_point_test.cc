#include "phasekey/crash_point.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

namespace phasekey {
namespace {

// Runs `hits` hits of point `name` in a child with PHASEKEY_CRASH_AT=`armed`;
// returns the signal that ended it, or 0 for a normal exit.
int ChildHits(const char* armed, const char* name, int hits) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("PHASEKEY_CRASH_AT", armed, 1);
    for (int i = 0; i < hits; ++i) ReachCrashPoint(name);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

TEST(CrashPointTest, KillsTheProcessWithSigkillAtTheArmedPoint) {
  EXPECT_EQ(ChildHits("claim.before_commit", "claim.before_commit", 1), SIGKILL);
}

TEST(CrashPointTest, KillsOnlyAtTheArmedHit) {
  EXPECT_EQ(ChildHits("x@3", "x", 2), 0);
  EXPECT_EQ(ChildHits("x@3", "x", 3), SIGKILL);
}

TEST(CrashPointTest, IgnoresOtherPoints) { EXPECT_EQ(ChildHits("claim.after_commit", "claim.before_commit", 5), 0); }

TEST(CrashPointTest, ReportsWhetherTheBuildHasThem) {
#ifdef PHASEKEY_CRASH_POINTS
  EXPECT_TRUE(CrashPointsCompiledIn());
#else
  EXPECT_FALSE(CrashPointsCompiledIn());
#endif
}

}  // namespace
}  // namespace phasekey
