// `phasekey request` against the real ride booking service with the
// gateway failing and dropping answers (fake_gateway's fail_rate and
// drop_response_rate): every intent, run the way a shell script would (the
// same command again while it exits 3), ends with exactly one charge.
// Three scripts run side by side on one journal file, so the SQLite journal
// is shared by several processes too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "phasekey/client/journal.h"
#include "support/child_process.h"
#include "support/http_client.h"
#include "support/ride_service_fixture.h"

namespace phasekey {
namespace {

using testing::ChildProcess;
using testing::ReadFile;

constexpr int kScripts = 3;
constexpr int kIntentsPerScript = 5;

struct IntentRun {
  std::string intent;
  int exit_code = -1;
  int runs = 0;      // commands started for the intent
  int attempts = 0;  // HTTP attempts over all of them (from -v)
  std::string body;
  std::string log;
};

class RequestServiceTest : public testing::RideServiceTest {};

TEST_F(RequestServiceTest, WithGatewayFailuresAndDropsEveryIntentEndsWithExactlyOneCharge) {
  // A worker finishes keys a client left behind; the client's retries
  // should make it unnecessary, but a real deployment runs one.
  auto worker = world_->StartWorker();
  ASSERT_TRUE(world_->SetGatewayFaults({{"fail_rate", 0.3}, {"drop_response_rate", 0.3}}));

  const std::string journal = (dir_ / "journal.db").string();
  const std::string url = RidesUrl();
  std::vector<IntentRun> runs(kScripts * kIntentsPerScript);
  std::vector<std::thread> scripts;
  for (int s = 0; s < kScripts; ++s) {
    scripts.emplace_back([&, s] {
      for (int i = 0; i < kIntentsPerScript; ++i) {
        IntentRun& run = runs[s * kIntentsPerScript + i];
        run.intent = "ride-" + std::to_string(s) + "-" + std::to_string(i);
        // What a shell script does: `until phasekey request ...; [ $? -ne 3 ]`.
        do {
          const std::string log = (dir_ / (run.intent + "-" + std::to_string(run.runs) + ".log")).string();
          ChildProcess client(
              {PHASEKEY_CLI_PATH, "request", "--journal", journal, "--intent", run.intent, "-v", "-H",
               "Authorization: Bearer tok_user_" + std::to_string(s + 1), "-H", "Content-Type: application/json",
               "--data", testing::kRideBody, "--deadline-s", "30", "POST", url},
              std::vector<std::string>{}, log);
          run.body = client.ReadAll();
          run.exit_code = client.Wait();
          ++run.runs;
          run.log = ReadFile(log);
          std::smatch m;
          if (std::regex_search(run.log, m, std::regex("after (\\d+) attempt"))) run.attempts += std::stoi(m[1]);
        } while (run.exit_code == 3 && run.runs < 5);
      }
    });
  }
  for (auto& t : scripts) t.join();

  int attempts = 0;
  std::set<std::string> charges_answered;
  for (const IntentRun& run : runs) {
    EXPECT_EQ(run.exit_code, 0) << run.intent << " after " << run.runs << " run(s): " << run.log;
    attempts += run.attempts;
    const auto body = nlohmann::json::parse(run.body, nullptr, false);
    if (body.is_object() && body.contains("charge_id")) charges_answered.insert(body["charge_id"].get<std::string>());
  }
  // The faults happened: the charge phase met failed or dropped gateway
  // calls and retried them (the service's phase outcomes of kind "retry");
  // the service does so inside the request, so the clients mostly see a
  // slower 201 rather than a 503.
  const testing::HttpResult metrics = testing::HttpCall(port_, "GET", "/metrics", {}, "");
  ASSERT_EQ(metrics.status, 200);
  double phase_retries = 0;
  const std::regex retry_line(R"(phasekey_phase_outcomes_total\{[^}]*kind="retry"[^}]*\} ([0-9.e+]+))");
  for (std::sregex_iterator m(metrics.body.begin(), metrics.body.end(), retry_line), end; m != end; ++m) {
    phase_retries += std::stod((*m)[1]);
  }
  EXPECT_GT(phase_retries, 0) << "no gateway call failed: were the faults on?\n" << metrics.body;
  EXPECT_GE(attempts, static_cast<int>(runs.size()));

  // Exactly one charge per intent: the ledger, the rides and the answers
  // agree, and no provider key was charged twice.
  const nlohmann::json ledger = world_->Ledger();
  EXPECT_EQ(ledger.size(), runs.size()) << ledger.dump();
  EXPECT_EQ(world_->Value("SELECT count(*) FROM rides"), std::to_string(runs.size()));
  std::set<std::string> ledger_ids;
  for (const auto& charge : ledger) ledger_ids.insert(charge["id"].get<std::string>());
  EXPECT_EQ(ledger_ids.size(), ledger.size()) << "a charge id twice";
  EXPECT_EQ(charges_answered, ledger_ids);
  for (const std::string& row : world_->Rows("SELECT charge_id FROM rides")) {
    EXPECT_TRUE(ledger_ids.contains(row)) << "a ride without its charge: " << row;
  }
  // Every intent is done in the journal, each with its own key.
  auto journal_reader = client::OpenSqliteJournal(journal);
  EXPECT_TRUE(journal_reader->ListUnfinished().empty());
  std::set<std::string> keys;
  for (const IntentRun& run : runs) keys.insert(journal_reader->Find(run.intent)->key);
  EXPECT_EQ(keys.size(), runs.size());
}

}  // namespace
}  // namespace phasekey
