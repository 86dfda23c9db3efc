// Runs the built `phasekey canonicalize` binary (PHASEKEY_CLI_PATH) with
// chosen stdin bytes and checks its stdout, stderr and exit status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "support/testdata.h"

namespace phasekey {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kTestData = phasekey::testing::JcsTestDataDir();

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `phasekey canonicalize <args>` with `input` on stdin. Files are named
// by pid so that concurrently running test processes do not collide.
CommandResult RunCanonicalize(std::string_view input, const std::string& args = "") {
  static int calls = 0;
  std::string base = ::testing::TempDir() + "/canonicalize_" + std::to_string(getpid()) + "_" + std::to_string(++calls);
  std::string in_path = base + ".in", err_path = base + ".err";
  std::ofstream(in_path, std::ios::binary) << input;
  std::string command =
      std::string("'") + PHASEKEY_CLI_PATH + "' canonicalize " + args + " < '" + in_path + "' 2> '" + err_path + "'";
  CommandResult run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) run.out.append(buf, n);
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.err = ReadFile(err_path);
  std::remove(in_path.c_str());
  std::remove(err_path.c_str());
  return run;
}

// Checks the contract for refused input: exit 2, nothing on stdout, exactly
// one line on stderr, prefixed with the command, containing `reason`.
void ExpectRefused(const CommandResult& run, std::string_view reason) {
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.out, "");
  EXPECT_THAT(run.err, StartsWith("phasekey canonicalize: "));
  EXPECT_THAT(run.err, HasSubstr(std::string(reason)));
  EXPECT_THAT(run.err, EndsWith("\n"));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST(CanonicalizeCommandTest, WritesTheCanonicalFormWithoutATrailingNewline) {
  CommandResult run = RunCanonicalize("{ \"b\": [1.0, 2e0], \"a\": \"\\u00e9\" }\n");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, "{\"a\":\"\xc3\xa9\",\"b\":[1,2]}");
  EXPECT_EQ(run.err, "");
}

TEST(CanonicalizeCommandTest, WritesTheRfc8785WeirdVectorByteForByte) {
  CommandResult run = RunCanonicalize(ReadFile(kTestData + "/input/weird.json"));
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, ReadFile(kTestData + "/output/weird.json"));
}

TEST(CanonicalizeCommandTest, WritesTheSha256HexDigestAndANewlineWithSha256) {
  CommandResult run = RunCanonicalize(R"({"currency":"usd","amount":1e3})", "--sha256");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, "a223b60dc6adbc2911e7c073889b220df1181c5534fa6be58c3a70981c354c54\n");
  EXPECT_EQ(run.err, "");
}

TEST(CanonicalizeCommandTest, ExitsWithTwoAndOneLineOnMalformedJson) {
  ExpectRefused(RunCanonicalize("{\"a\":1,}"), "invalid JSON at byte");
  ExpectRefused(RunCanonicalize(""), "invalid JSON");
  ExpectRefused(RunCanonicalize("[1]\n[2]\n"), "invalid JSON");
}

TEST(CanonicalizeCommandTest, ExitsWithTwoOnADuplicateMemberName) {
  ExpectRefused(RunCanonicalize(R"({"x":{"a":1,"a":2}})"), "duplicate member name \"a\" in object at /x");
}

TEST(CanonicalizeCommandTest, ExitsWithTwoOnALoneSurrogateOrBadUtf8) {
  ExpectRefused(RunCanonicalize(R"(["\ud800"])"), "lone surrogate");
  // The bad bytes must not leak into the message.
  CommandResult run = RunCanonicalize("[\"\xff\xfe\n\"]");
  ExpectRefused(run, "invalid UTF-8");
  EXPECT_EQ(run.err.find('\xff'), std::string::npos);
}

TEST(CanonicalizeCommandTest, ExitsWithTwoOnANumberThatOverflowsADouble) {
  ExpectRefused(RunCanonicalize("[1e400]"), "number out of range");
}

TEST(CanonicalizeCommandTest, ExitsWithTwoOnNestingOneHundredThousandDeep) {
  ExpectRefused(RunCanonicalize(std::string(100000, '[') + std::string(100000, ']')), "nesting deeper than");
}

}  // namespace
}  // namespace phasekey
