// The test support's ChildProcess: what a child gets (environment, stdout)
// and what it must not get (another child's pipe).
#include "support/child_process.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

namespace phasekey::testing {
namespace {

// The pipes this process holds open, as /proc names them ("pipe:[N]").
std::set<std::string> OurPipes() {
  std::set<std::string> pipes;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code link_ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), link_ec).string();
    if (!link_ec && target.starts_with("pipe:[")) pipes.insert(target);
  }
  return pipes;
}

TEST(ChildProcessTest, AChildHoldsNoOtherChildsPipe) {
  const std::set<std::string> before = OurPipes();
  ChildProcess first({"/bin/sleep", "30"});
  std::set<std::string> first_pipe = OurPipes();
  for (const std::string& p : before) first_pipe.erase(p);
  ASSERT_EQ(first_pipe.size(), 1u) << "want the read end of the first child's stdout, and nothing else";

  const RunResult second = RunToEnd({"/bin/ls", "-l", "/proc/self/fd/"});
  ASSERT_EQ(second.exit_code, 0) << second.out;
  EXPECT_EQ(second.out.find(*first_pipe.begin()), std::string::npos)
      << "the second child inherited the first child's pipe:\n"
      << second.out;
}

TEST(ChildProcessTest, AChildGetsOurEnvironmentWithItsOwnSettingsApplied) {
  ASSERT_EQ(::setenv("PHASEKEY_CHILD_KEPT", "ours", 1), 0);
  ASSERT_EQ(::setenv("PHASEKEY_CHILD_REPLACED", "ours", 1), 0);
  ASSERT_EQ(::setenv("PHASEKEY_CHILD_REMOVED", "ours", 1), 0);
  ChildProcess env({"/usr/bin/env"},
                   {"PHASEKEY_CHILD_REPLACED=theirs", "PHASEKEY_CHILD_NEW=1", "PHASEKEY_CHILD_REMOVED"});
  const std::string out = "\n" + env.ReadAll();
  EXPECT_EQ(env.Wait(), 0);
  EXPECT_NE(out.find("\nPHASEKEY_CHILD_KEPT=ours\n"), std::string::npos) << out;
  EXPECT_NE(out.find("\nPHASEKEY_CHILD_REPLACED=theirs\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("PHASEKEY_CHILD_REPLACED=ours"), std::string::npos) << out;
  EXPECT_NE(out.find("\nPHASEKEY_CHILD_NEW=1\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("PHASEKEY_CHILD_REMOVED"), std::string::npos) << out;
  EXPECT_EQ(std::string(std::getenv("PHASEKEY_CHILD_REPLACED")), "ours") << "our own environment is left alone";
}

TEST(ChildProcessTest, AStderrFileThatCannotBeOpenedEndsTheChildWith126) {
  ChildProcess child({"/bin/true"}, {}, "/nonexistent-dir/stderr.log");
  EXPECT_EQ(child.Wait(), 126);
}

TEST(ChildProcessTest, AProgramThatCannotBeRunEndsTheChildWith127) {
  ChildProcess child({"/nonexistent-program"});
  EXPECT_EQ(child.Wait(), 127);
}

}  // namespace
}  // namespace phasekey::testing
