// A client process SIGKILLed at each step of an intent, then started again
// with the same command, against the real ride booking service (`ride_booking
// serve` and `fake_gateway` on loopback, a real PostgreSQL). The client is
// `phasekey request --journal J --intent NAME`, killed at its crash points
// (PHASEKEY_CRASH_AT=client.<step>, see ClientOptions::on_step):
//   client.created       the intent is journaled, nothing sent yet
//   client.attempt.sent  the request is written; the gateway answers after
//                        2 s, so the service is inside the gateway call when
//                        the client dies
//   client.answered      the 201 is read, the journal does not know it yet
// Each time the restarted command must end with one ride and one charge,
// sent under the key of the first run. Each test first proves its fault
// happened (a SIGKILL, and the state the service or journal was left in).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "phasekey/client/journal.h"
#include "phasekey/crash_point.h"
#include "support/child_process.h"
#include "support/prerequisites.h"
#include "support/ride_service_fixture.h"
#include "support/wait.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::ChildProcess;
using testing::ReadFile;

class ClientCrashTest : public testing::RideServiceTest {
 protected:
  // Runs the client's command to its end, with `crash_at` armed unless
  // empty; returns its exit status (137 for SIGKILL). Its stdout goes to
  // *out, its stderr to "<dir>/client-<run>.log" (read back into *err).
  int RunClient(const std::string& crash_at, std::string* out = nullptr, std::string* err = nullptr) {
    const std::string log = (dir_ / ("client-" + std::to_string(++runs_) + ".log")).string();
    std::vector<std::string> env;
    if (!crash_at.empty()) env.push_back("PHASEKEY_CRASH_AT=" + crash_at);
    ChildProcess client({PHASEKEY_CLI_PATH, "request", "--journal", journal_path(), "--intent", "ride-1", "-v", "-H",
                         "Authorization: Bearer tok_user_1", "-H", "Content-Type: application/json", "--data",
                         testing::kRideBody, "--deadline-s", "60", "POST", RidesUrl()},
                        env, log);
    const std::string printed = client.ReadAll();
    const int status = client.Wait();
    if (out != nullptr) *out = printed;
    if (err != nullptr) *err = ReadFile(log);
    return status;
  }

  std::string journal_path() const { return (dir_ / "journal.db").string(); }

  // The journal's one intent (the test fails if there is not exactly one).
  client::IntentRecord TheIntent() {
    auto journal = client::OpenSqliteJournal(journal_path());
    auto record = journal->Find("ride-1");
    if (!record) throw std::runtime_error("the journal has no intent ride-1");
    return *record;
  }

  int Rides() { return std::stoi(world_->Value("SELECT count(*) FROM rides")); }

  // After the restarted client's answer `body`: one ride, one charge, both
  // under the first run's key, and the journal holds the answer.
  void ExpectOneRideOneChargeUnder(const std::string& key, const std::string& body) {
    const nlohmann::json ledger = world_->Ledger();
    ASSERT_EQ(ledger.size(), 1u) << ledger.dump();
    ASSERT_EQ(Rides(), 1);
    EXPECT_EQ(world_->Value("SELECT charge_id FROM rides"), ledger[0]["id"].get<std::string>());
    EXPECT_NE(world_->Value("SELECT idempotency_key FROM rides").find(key), std::string::npos);
    const auto answer = nlohmann::json::parse(body, nullptr, false);
    ASSERT_TRUE(answer.is_object()) << body;
    EXPECT_EQ(answer["charge_id"], ledger[0]["id"]);
    const client::IntentRecord intent = TheIntent();
    EXPECT_EQ(intent.key, key);
    ASSERT_TRUE(intent.answer.has_value());
    EXPECT_EQ(intent.answer->status, 201);
  }

  bool CrashPointsMissing() { return !CrashPointsCompiledIn(); }

  int runs_ = 0;
};

#define REQUIRE_CRASH_POINTS()                                                           \
  if (CrashPointsMissing()) {                                                            \
    PHASEKEY_SKIP_OR_FAIL_IN_CI() << "crash points are not compiled in: configure with " \
                                     "-DPHASEKEY_CRASH_POINTS=ON (./run.sh test does)";  \
  }

TEST_F(ClientCrashTest, KilledBeforeTheFirstSendTheRestartSendsTheJournaledKeyOnce) {
  REQUIRE_CRASH_POINTS();
  ASSERT_EQ(RunClient("client.created"), 128 + SIGKILL);
  // The fault: the intent is journaled and nothing reached the service.
  const client::IntentRecord journaled = TheIntent();
  EXPECT_FALSE(journaled.answer.has_value());
  EXPECT_EQ(Rides(), 0);
  EXPECT_EQ(world_->Ledger().size(), 0u);

  std::string body, err;
  ASSERT_EQ(RunClient("", &body, &err), 0) << err;
  ExpectOneRideOneChargeUnder(journaled.key, body);
}

TEST_F(ClientCrashTest, KilledDuringTheGatewayCallTheRestartGetsTheOneRideAndOneCharge) {
  REQUIRE_CRASH_POINTS();
  ASSERT_TRUE(world_->SetGatewayFaults({{"latency_ms", 2000}}));
  ASSERT_EQ(RunClient("client.attempt.sent"), 128 + SIGKILL);
  // The fault: the client is dead while the service has created the ride
  // and is waiting for the gateway (no charge in the ledger yet).
  ASSERT_TRUE(testing::WaitUntil([&] { return Rides() == 1; }, milliseconds(10000)));
  EXPECT_EQ(world_->Ledger().size(), 0u) << "the charge was already made: the kill was not during the call";
  const client::IntentRecord journaled = TheIntent();
  EXPECT_FALSE(journaled.answer.has_value());

  std::string body, err;
  ASSERT_EQ(RunClient("", &body, &err), 0) << err;
  ExpectOneRideOneChargeUnder(journaled.key, body);
}

TEST_F(ClientCrashTest, KilledAfterTheAnswerBeforeTheJournalKnowsItTheRestartGetsTheReplay) {
  REQUIRE_CRASH_POINTS();
  ASSERT_EQ(RunClient("client.answered"), 128 + SIGKILL);
  // The fault: the ride and charge exist, the journal still calls the
  // intent unfinished.
  EXPECT_EQ(Rides(), 1);
  EXPECT_EQ(world_->Ledger().size(), 1u);
  const client::IntentRecord journaled = TheIntent();
  EXPECT_FALSE(journaled.answer.has_value());

  std::string body, err;
  ASSERT_EQ(RunClient("", &body, &err), 0) << err;
  EXPECT_NE(err.find("replayed"), std::string::npos) << err;
  ExpectOneRideOneChargeUnder(journaled.key, body);
  // Once done, a third run answers from the journal.
  std::string third_err;
  ASSERT_EQ(RunClient("", nullptr, &third_err), 0);
  EXPECT_NE(third_err.find("from the journal"), std::string::npos) << third_err;
}

}  // namespace
}  // namespace phasekey
