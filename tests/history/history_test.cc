// A chaos run's history and its independent checker (docs/reliability.md,
// "The history and its checker"): an unmodified run passes
// tests/history/check_history.py, and a run of a build with a planted bug
// (engine/src/util/planted_bug.h, switched on by PHASEKEY_PLANTED_BUG in a build
// with crash points) fails it, each with the check the bug breaks. A checker
// that passed every planted bug would be broken itself.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <iterator>
#include <string>
#include <utility>
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
  // Keys and the final rows are for the owner's eyes only.
  EXPECT_EQ(fs::status(dir.path()).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(dir.path() + "/history.jsonl").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
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

// A run against a server of its own (the nemeses that restart or cut off
// the database need one), with `nemesis` faults: a pause of a service past
// its lease, then one fault of each kind named.
Verdict RunWithNemesis(const HistoryDir& dir, const std::string& nemesis, const std::string& bug = "", int faults = 1) {
  // DATABASE_URL empty: the run starts a server of its own, even under
  // ctest's shared one.
  std::vector<std::string> env = {"DATABASE_URL="};
  if (!bug.empty()) env.push_back("PHASEKEY_PLANTED_BUG=" + bug);
  // The gateway is slow (300 ms a charge), so a paused or cut-off service
  // always holds keys in the middle of their flows.
  ChildProcess chaos({RIDE_BOOKING_PATH, "chaos", "--pg-dir", dir.path() + "-pg", "--clients", "6", "--requests", "10",
                      "--seed", "5", "--latency-ms", "300", "--nemesis", nemesis, "--faults", std::to_string(faults),
                      "--history", dir.path(), "--no-progress"},
                     env, dir.path() + ".stderr");
  Verdict v;
  v.out = chaos.ReadAll();
  v.exit_code = chaos.Wait();
  std::ifstream err(dir.path() + ".stderr");
  v.out += std::string(std::istreambuf_iterator<char>(err), {});  // the schedule and the replay command
  fs::remove(dir.path() + ".stderr");
  fs::remove_all(dir.path() + "-pg");
  return v;
}

// Each nemesis in a short run of its own: the fault is in the history with
// its end (so it happened, and was undone), and the checker passes.
class NemesisTest : public HistoryTest, public ::testing::WithParamInterface<std::array<std::string, 3>> {};

TEST_P(NemesisTest, ARunWithThisFaultPassesTheChecker) {
  const auto& [nemesis, starts, ends] = GetParam();
  if (nemesis == "partition" && ::geteuid() != 0)
    PHASEKEY_SKIP_OR_FAIL_IN_CI() << "the partition needs root (iptables)";
  HistoryDir dir("nemesis-" + nemesis);
  const Verdict run = RunWithNemesis(dir, nemesis);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const Verdict v = Check(dir.path(), "nemesis_" + nemesis);
  EXPECT_EQ(v.exit_code, 0) << v.out;
  EXPECT_NE(v.out.find(starts + " 1"), std::string::npos) << "the history lacks the fault\n" << v.out;
  EXPECT_NE(v.out.find(ends + " 1"), std::string::npos) << "the fault was never undone\n" << v.out;
}

INSTANTIATE_TEST_SUITE_P(EveryNemesis, NemesisTest,
                         ::testing::Values(std::array<std::string, 3>{"pause", "pause", "resume"},
                                           std::array<std::string, 3>{"db-restart", "db-crash", "db-start"},
                                           std::array<std::string, 3>{"partition", "partition", "heal"},
                                           std::array<std::string, 3>{"clock-jump", "clock-jump", "clock-back"}),
                         [](const auto& info) {
                           std::string name = info.param[0];
                           name.erase(std::remove(name.begin(), name.end(), '-'), name.end());
                           return name;
                         });

// Fencing switched off: a service paused past its lease wakes and writes
// over the work of the holder that took its keys over, which sends a
// second receipt. The harness's own report does not see it; the checker
// does.
TEST_F(HistoryTest, TheCheckerCatchesAPausedHolderThatIsNotFenced) {
  HistoryDir dir("no_fencing");
  const Verdict run = RunWithNemesis(dir, "pause", "no_fencing");
  ASSERT_TRUE(fs::exists(dir.path() + "/receipts.jsonl")) << "the run wrote no history\n" << run.out;
  const Verdict v = Check(dir.path(), "no_fencing");
  EXPECT_EQ(v.exit_code, 1) << "the checker passed a run with no_fencing planted\n" << v.out;
  EXPECT_NE(v.out.find("one-receipt-per-ride"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("planted bug: no_fencing"), std::string::npos) << v.out;
}

// A failing run prints the command that replays its faults, and that
// command draws the same schedule.
TEST_F(HistoryTest, AFailingRunPrintsACommandThatReplaysItsFaults) {
  HistoryDir dir("replay");
  const Verdict run = RunWithNemesis(dir, "kill,pause", "replay_reruns", 2);
  ASSERT_NE(run.exit_code, 0) << run.out;
  const std::string marker = "chaos: replay this run's faults with: ";
  const auto at = run.out.find(marker);
  ASSERT_NE(at, std::string::npos) << run.out;
  std::string command = run.out.substr(at + marker.size(), run.out.find('\n', at) - at - marker.size());
  EXPECT_NE(command.find("--seed 5"), std::string::npos) << command;
  auto schedule = [](const std::string& out) {
    const auto from = out.find("chaos: faults: ");
    return from == std::string::npos ? std::string() : out.substr(from, out.find('\n', from) - from);
  };
  ASSERT_FALSE(schedule(run.out).empty()) << run.out;
  // The same command, with its history elsewhere.
  HistoryDir again("replay-again");
  ASSERT_NE(command.find(dir.path()), std::string::npos) << command;
  for (auto p = command.find(dir.path()); p != std::string::npos; p = command.find(dir.path(), p)) {
    command.replace(p, dir.path().size(), again.path());  // its --history and --pg-dir
    p += again.path().size();
  }
  ChildProcess replay({"/bin/sh", "-c", command + " 2>&1"}, {"DATABASE_URL=", "PHASEKEY_PLANTED_BUG=replay_reruns"});
  const std::string out = replay.ReadAll();
  replay.Wait();
  fs::remove_all(again.path() + "-pg");
  EXPECT_EQ(schedule(out), schedule(run.out)) << out;
}

TEST_F(HistoryTest, TheCheckerCatchesAReplayThatRerunsTheFlow) { ExpectCaught("replay_reruns", "identical-2xx"); }

TEST_F(HistoryTest, TheCheckerCatchesARetryUnderANewProviderKey) {
  ExpectCaught("new_provider_key", "one-effect-per-key");
}

TEST_F(HistoryTest, TheCheckerCatchesAFinishThatDropsTheStoredResponse) {
  ExpectCaught("finish_drops_response", "identical-2xx");
}

}  // namespace
