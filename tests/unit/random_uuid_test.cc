// util/hex.h: RandomUuid hands out bytes from a per-thread pool; every
// UUID is a version 4 UUID, none repeats, and a forked child never repeats
// its parent's (owner tokens fence writes: two equal ones would let a stale
// holder write).
#include "util/hex.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <string>

namespace phasekey::util {
namespace {

TEST(RandomUuidTest, EveryUuidIsVersionFourAndNoneRepeatsAcrossManyPoolRefills) {
  const std::regex v4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 5000; ++i) {  // 5000 x 16 bytes: the 4 KiB pool refills about 20 times
    const std::string u = RandomUuid();
    ASSERT_TRUE(std::regex_match(u, v4)) << u;
    ASSERT_TRUE(seen.insert(u).second) << "repeated: " << u;
  }
}

TEST(RandomUuidTest, AForkedChildDoesNotHandOutTheUuidsItsParentHandsOutNext) {
  RandomUuid();  // the parent's pool is filled and partly used before the fork
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    std::string drawn;
    for (int i = 0; i < 8; ++i) drawn += RandomUuid() + "\n";
    const bool ok = ::write(fds[1], drawn.data(), drawn.size()) == static_cast<ssize_t>(drawn.size());
    ::_exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  std::string from_child;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) from_child.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ(from_child.size(), 8u * 37u);
  for (int i = 0; i < 8; ++i) {
    const std::string mine = RandomUuid();
    EXPECT_EQ(from_child.find(mine), std::string::npos) << "the child handed out " << mine << " too";
  }
}

}  // namespace
}  // namespace phasekey::util
