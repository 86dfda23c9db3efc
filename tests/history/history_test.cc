// A chaos run's history and its independent checker (docs/reliability.md,
// "The history and its checker"): an unmodified run passes
// tests/history/check_history.py, and a run of a build with a planted bug
// (engine/src/util/planted_bug.h, switched on by PHASEKEY_PLANTED_BUG in a build
// with crash points) fails it, each with the check the bug breaks. A checker
// that passed every planted bug would be broken itself.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fstream>

#include <nlohmann/json.hpp>

#include "doc_results/doc_results.h"
#include "phasekey/crash_point.h"
#include "support/child_process.h"
#include "support/prerequisites.h"
#include "support/test_database.h"

namespace {

namespace fs = std::filesystem;
using phasekey::testing::ChildProcess;
using phasekey::testing::TestDatabase;

struct Verdict {
  int exit_code = -1;
  std::string out;
};

// A folder of its own for one run's history, removed after the test.
class HistoryDir {
 public:
  explicit HistoryDir(const std::string& name)
      : path_(fs::temp_directory_path() / ("phasekey-history-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
  }
  ~HistoryDir() {
    if (!::testing::Test::HasFailure()) fs::remove_all(path_);
  }
  std::string path() const { return path_.string(); }

 private:
  fs::path path_;
};

// A short chaos run (by default three SIGKILLs; many dropped gateway
// responses, so that charges are retried) writing its history into `dir`,
// with `bug` planted ("" for none) and `extra` flags. Returns chaos's own
// verdict.
Verdict RunChaos(const std::string& dir, const std::string& bug,
                 const std::vector<std::string>& extra = {"--kills", "3"}) {
  TestDatabase db(TestDatabase::Schema::kMigrated);
  std::vector<std::string> env;
  if (!bug.empty()) env.push_back("PHASEKEY_PLANTED_BUG=" + bug);
  std::vector<std::string> argv = {
      RIDE_BOOKING_PATH, "chaos", "--database-url",       db.url(), "--clients", "4", "--requests",   "8",
      "--seed",          "7",     "--drop-response-rate", "0.3",    "--history", dir, "--no-progress"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ChildProcess chaos(argv, env);
  Verdict v;
  v.out = chaos.ReadAll();
  v.exit_code = chaos.Wait();
  return v;
}

// Runs the checker on `dir`; its figures go to history_<run>.json
// (doc_results.h: docs/reliability.md renders them when recorded).
Verdict Check(const std::string& dir, const std::string& run) {
  const std::string figures = dir + "/figures.json";
  ChildProcess checker({PYTHON3_PATH, CHECK_HISTORY_PATH, dir, "--json", figures});
  Verdict v;
  v.out = checker.ReadAll();
  v.exit_code = checker.Wait();
  std::ifstream in(figures);
  const nlohmann::json result = nlohmann::json::parse(in, nullptr, false);
  if (result.is_discarded()) {
    ADD_FAILURE() << "the checker wrote no figures\n" << v.out;
    return v;
  }
  try {
    phasekey::doc_results::RecordResult(PHASEKEY_SOURCE_DIR, PHASEKEY_TEST_BINARY_DIR, "history_" + run + ".json",
                                        result);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the figures were not recorded: " << e.what();
  }
  return v;
}

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!phasekey::CrashPointsCompiledIn()) {
      PHASEKEY_SKIP_OR_FAIL_IN_CI() << "planted bugs need a build with crash points (PHASEKEY_CRASH_POINTS=ON)";
    }
  }

  // Runs chaos with `bug` planted and expects the checker to fail naming `check`.
  void ExpectCaught(const std::string& bug, const std::string& check) {
    HistoryDir dir(bug);
    const Verdict run = RunChaos(dir.path(), bug);
    ASSERT_TRUE(fs::exists(dir.path() + "/keys.jsonl")) << "the run wrote no history\n" << run.out;
    const Verdict v = Check(dir.path(), bug);
    EXPECT_EQ(v.exit_code, 1) << "the checker passed a run with " << bug << " planted\n" << v.out;
    EXPECT_NE(v.out.find(check), std::string::npos) << v.out;
    EXPECT_NE(v.out.find("planted bug: " + bug), std::string::npos) << v.out;
  }
};

TEST_F(HistoryTest, AnUnmodifiedRunPassesTheChecker) {
  HistoryDir dir("none");
  const Verdict run = RunChaos(dir.path(), "");
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const Verdict v = Check(dir.path(), "none");
  EXPECT_EQ(v.exit_code, 0) << v.out;
  EXPECT_NE(v.out.find("history: OK: 32 keys"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("kill 3, restart 3"), std::string::npos) << "the history lacks the kills\n" << v.out;
  EXPECT_NE(v.out.find("planted bug: none; violations 0"), std::string::npos) << v.out;
}

// Two services behind the balancer and two workers: one key's attempts land
// on several processes, and each of the four is killed once.
TEST_F(HistoryTest, ARunOfSeveralServicesAndWorkersPassesTheChecker) {
  HistoryDir dir("many");
  const Verdict run = RunChaos(dir.path(), "", {"--services", "2", "--workers", "2", "--kills", "4"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const Verdict v = Check(dir.path(), "many");
  EXPECT_EQ(v.exit_code, 0) << v.out;
  EXPECT_NE(v.out.find("kill 4, restart 4"), std::string::npos) << v.out;
}

TEST_F(HistoryTest, TheCheckerCatchesAReplayThatRerunsTheFlow) { ExpectCaught("replay_reruns", "identical-2xx"); }

TEST_F(HistoryTest, TheCheckerCatchesARetryUnderANewProviderKey) {
  ExpectCaught("new_provider_key", "one-effect-per-key");
}

TEST_F(HistoryTest, TheCheckerCatchesAFinishThatDropsTheStoredResponse) {
  ExpectCaught("finish_drops_response", "identical-2xx");
}

}  // namespace
