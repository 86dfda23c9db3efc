// The deploy gate (phasekey/deploy_gate.h, issue 28) against a real
// PostgreSQL. Version 1 of a trip flow runs real requests until keys wait at
// each of its points:
//
//   started --(atomic book)--> booked --(foreign pay)--> paid
//           --(atomic confirm)--> finished
//
// (a key whose name starts "wait-booked" finds its provider down, one
// starting "wait-paid" finds the database busy when confirming). Version 2
// renames `booked` to `reserved` and drops `paid` (pay responds): the gate
// lists the keys at both until v2 declares them (Renamed, Retired). Keys
// that are not active, and keys of other flows, never count. Then the same
// gate as operators run it: `flows describe`, `phasekey flows check`,
// `stats` and the console's overview.
#include "phasekey/deploy_gate.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "console/console_server.h"
#include "phasekey/runner.h"
#include "phasekey/tools/operator_commands.h"
#include "support/console_session.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;

constexpr RecoveryPoint kBooked{"booked"};
constexpr RecoveryPoint kPaid{"paid"};
constexpr RecoveryPoint kReserved{"reserved"};

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

PhaseResult Book(RecoveryPoint next, AtomicContext&) { return GoTo{next}; }

PhaseResult Pay(RecoveryPoint next, const PhaseContext& ctx) {
  if (StartsWith(ctx.idempotency_key(), "wait-booked")) return Retry("provider down");
  if (next == kFinished) return Respond{JsonResponse(201, {{"paid", true}})};
  return GoTo{next, {{"payment_id", "pay_" + ctx.idempotency_key()}}};
}

PhaseResult Confirm(AtomicContext& ctx) {
  if (StartsWith(ctx.idempotency_key(), "wait-paid")) return Retry("database busy");
  return Respond{JsonResponse(201, {{"paid", true}})};
}

std::shared_ptr<const Flow> Must(Result<std::shared_ptr<const Flow>> built) {
  EXPECT_TRUE(built.has_value()) << built.error().ToString();
  return built ? *built : nullptr;
}

std::shared_ptr<const Flow> TripV1() {
  return Must(Flow::Builder("trip")
                  .Atomic(kStarted, "book", [](AtomicContext& c) { return Book(kBooked, c); }, {kBooked})
                  .Foreign(
                      kBooked, "pay", [](const PhaseContext& c) { return Pay(kPaid, c); }, {kPaid}, milliseconds(2000))
                  .Atomic(kPaid, "confirm", Confirm, {kFinished})
                  .Build());
}

// Version 2: `booked` is now `reserved`, and `paid` is gone. With
// `declared`, it says so (Renamed, Retired); without, it forgets them.
std::shared_ptr<const Flow> TripV2(bool declared) {
  Flow::Builder b("trip");
  b.Atomic(kStarted, "book", [](AtomicContext& c) { return Book(kReserved, c); }, {kReserved})
      .Foreign(
          kReserved, "pay", [](const PhaseContext& c) { return Pay(kFinished, c); }, {kFinished}, milliseconds(2000));
  if (declared) b.Renamed(kBooked, kReserved).Retired(kPaid, Retirement::StopForOperator());
  return Must(b.Build());
}

// Another application's flow, with its own `booked` point; its keys all wait there.
std::shared_ptr<const Flow> Other() {
  return Must(
      Flow::Builder("other")
          .Atomic(kStarted, "book", [](AtomicContext& c) { return Book(kBooked, c); }, {kBooked})
          .Foreign(
              kBooked, "pay", [](const PhaseContext&) { return Retry("always down"); }, {kFinished}, milliseconds(2000))
          .Build());
}

struct CliRun {
  int exit_code = -1;
  std::string out;
};

CliRun RunCli(const std::string& args) {
  FILE* p = ::popen((std::string(PHASEKEY_CLI_PATH) + " " + args + " 2>&1").c_str(), "r");
  CliRun r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) r.out += buf.data();
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "flow/point=keys" per stranded point, in the gate's order.
std::vector<std::string> Listed(const Result<std::vector<StrandedPoint>>& r) {
  EXPECT_TRUE(r.has_value()) << r.error().ToString();
  std::vector<std::string> out;
  if (!r) return out;
  for (const StrandedPoint& p : *r) out.push_back(p.flow + "/" + p.recovery_point + "=" + std::to_string(p.keys));
  return out;
}

class DeployGateTest : public ::testing::Test {
 protected:
  // Keys of v1 at every point: two waiting at booked, one at paid, one
  // finished, one dead at booked; and two of `other` waiting at booked.
  void SetUp() override {
    RunnerOptions o;
    o.database.url = db_.url();
    o.database.pool_size = 2;
    o.backoff_base = milliseconds(1);
    o.backoff_cap = milliseconds(2);
    o.redrive_delay = milliseconds(1);
    auto runner = Runner::Open(o, {TripV1(), Other()});
    ASSERT_TRUE(runner.has_value()) << runner.error().ToString();
    auto run = [&](const std::string& flow, const std::string& key) {
      return (*runner)->Execute(flow, Request{"acct", key, "POST", "/trips", R"({"to": "x"})"}).kind;
    };
    for (const std::string key : {"wait-booked-1", "wait-booked-2", "wait-paid-1", "wait-booked-dead"}) {
      ASSERT_EQ(run("trip", key), Reply::Kind::kRetryLater) << key;
    }
    ASSERT_EQ(run("trip", "done-1"), Reply::Kind::kCompleted);
    ASSERT_EQ(run("other", "wait-booked-other-1"), Reply::Kind::kRetryLater);
    ASSERT_EQ(run("other", "wait-booked-other-2"), Reply::Kind::kRetryLater);
    db_.Exec(
        "UPDATE phasekey.idempotency_keys SET state = 'dead', owner_token = NULL, locked_at = NULL,"
        " lease_expires_at = NULL WHERE idempotency_key = 'wait-booked-dead'");
    ASSERT_EQ(db_.Value("SELECT string_agg(flow || '/' || recovery_point || '/' || state, ',' ORDER BY"
                        " flow, idempotency_key) FROM phasekey.idempotency_keys"),
              "other/booked/active,other/booked/active,trip/finished/finished,trip/booked/active,"
              "trip/booked/active,trip/booked/dead,trip/paid/active");
  }

  // The descriptions of `flows` in a file, as `<binary> flows describe
  // --output` writes it (run in this process, with these flows).
  std::string DescribeToFile(const std::vector<std::shared_ptr<const Flow>>& flows, const std::string& name) {
    const std::string path = (std::filesystem::temp_directory_path() / (db_.name() + "-" + name + ".json")).string();
    files_.push_back(path);
    EXPECT_EQ(RunOperatorCommand("app", {"flows", "describe", "--output", path}, flows), 0);
    return path;
  }
  void TearDown() override {
    for (const auto& f : files_) std::filesystem::remove(f);
  }

  TestDatabase db_;
  std::vector<std::string> files_;
};

TEST_F(DeployGateTest, ListsTheKeysAtPointsTheNewVersionDropsUntilItDeclaresThem) {
  EXPECT_EQ(Listed(FindStrandedKeys(db_.url(), {TripV2(false)})),
            (std::vector<std::string>{"trip/booked=2", "trip/paid=1"}))
      << "the dead key at booked, the finished key and other's keys at booked do not count";
  auto renamed_only =
      Must(Flow::Builder("trip")
               .Atomic(kStarted, "book", [](AtomicContext& c) { return Book(kReserved, c); }, {kReserved})
               .Foreign(
                   kReserved, "pay", [](const PhaseContext& c) { return Pay(kFinished, c); }, {kFinished},
                   milliseconds(2000))
               .Renamed(kBooked, kReserved)
               .Build());
  EXPECT_EQ(Listed(FindStrandedKeys(db_.url(), {renamed_only})), (std::vector<std::string>{"trip/paid=1"}));
  EXPECT_TRUE(Listed(FindStrandedKeys(db_.url(), {TripV2(true)})).empty());
  EXPECT_TRUE(Listed(FindStrandedKeys(db_.url(), {TripV1(), Other()})).empty()) << "v1 knows every point";
}

TEST_F(DeployGateTest, ChecksOnlyTheFlowsNamed) {
  // `other` has keys at booked; a description of it without that point
  // strands them, and only then.
  const nlohmann::json other_v2 = {{"name", "other"}, {"points", {"started", "finished"}}};
  EXPECT_EQ(Listed(FindStrandedKeys(db_.url(), std::vector<nlohmann::json>{other_v2})),
            (std::vector<std::string>{"other/booked=2"}));
  EXPECT_EQ(Listed(FindStrandedKeys(db_.url(), std::vector<nlohmann::json>{TripV1()->Describe(), other_v2})),
            (std::vector<std::string>{"other/booked=2"}));
  const nlohmann::json unknown = {{"name", "no_such_flow"}, {"points", nlohmann::json::array()}};
  EXPECT_TRUE(Listed(FindStrandedKeys(db_.url(), std::vector<nlohmann::json>{unknown})).empty());
  EXPECT_TRUE(Listed(FindStrandedKeys(db_.url(), std::vector<std::shared_ptr<const Flow>>{})).empty());
}

TEST_F(DeployGateTest, GivesTheLongestWaitAtEachPoint) {
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET point_reached_at = now() - interval '2 hours'"
      " WHERE idempotency_key = 'wait-booked-2'");
  auto r = FindStrandedKeys(db_.url(), {TripV2(false)});
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_GE((*r)[0].longest_wait.count(), 7200);
  EXPECT_LT((*r)[0].longest_wait.count(), 7200 + 600);
  EXPECT_LT((*r)[1].longest_wait.count(), 600) << "paid's key has waited only since SetUp";
}

TEST_F(DeployGateTest, RefusesMalformedDescriptionsNamingTheProblem) {
  const nlohmann::json ok = {{"name", "other"}, {"points", {"started"}}};
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {nlohmann::json::array(), "not a JSON object"},
      {{{"points", {"started"}}}, "\"name\""},
      {{{"name", "trip"}}, "\"points\" must be an array"},
      {{{"name", "trip"}, {"points", {"started", 3}}}, "\"points\" holds 3"},
      {{{"name", "trip"}, {"points", {"started"}}, {"renamed", {{"booked", nullptr}}}}, "\"renamed\" maps 'booked'"},
      {{{"name", "trip"}, {"points", {"started"}}, {"retired", {"paid"}}}, "\"retired\" must be an object"},
  };
  for (const auto& [description, message] : bad) {
    auto r = FindStrandedKeys(db_.url(), std::vector<nlohmann::json>{ok, description});
    ASSERT_FALSE(r.has_value()) << description.dump();
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(message), std::string::npos) << r.error().message();
  }
  auto twice = FindStrandedKeys(db_.url(), std::vector<nlohmann::json>{ok, ok});
  ASSERT_FALSE(twice.has_value());
  EXPECT_NE(twice.error().message().find("'other' is described twice"), std::string::npos) << twice.error().message();
  const nlohmann::json stop = {
      {"name", "trip"}, {"points", {"started"}}, {"retired", {{"booked", nullptr}, {"paid", "started"}}}};
  EXPECT_TRUE(FindStrandedKeys(db_.url(), std::vector<nlohmann::json>{stop}).has_value())
      << "retired points resume somewhere or stop for an operator (null)";
}

TEST_F(DeployGateTest, FlowsDescribeWritesWhatFlowDescribeSays) {
  const std::string path = DescribeToFile({TripV2(true), Other()}, "described");
  const nlohmann::json written = nlohmann::json::parse(Read(path));
  EXPECT_EQ(written, nlohmann::json::array({TripV2(true)->Describe(), Other()->Describe()}));
  EXPECT_EQ(written[0]["renamed"], (nlohmann::json{{"booked", "reserved"}}));
  CliRun none = RunCli("flows describe");
  EXPECT_EQ(none.exit_code, 0) << none.out;
  EXPECT_EQ(nlohmann::json::parse(none.out), nlohmann::json::array()) << "phasekey itself has no flows";
}

TEST_F(DeployGateTest, PhasekeyFlowsCheckExitsOneListingStrandedKeysAndZeroOnceDeclared) {
  const std::string url = " --database-url '" + db_.url() + "'";
  CliRun before = RunCli("flows check --flows " + DescribeToFile({TripV2(false)}, "v2") + url);
  EXPECT_EQ(before.exit_code, 1) << before.out;
  EXPECT_NE(before.out.find("flow trip point booked: 2 keys (longest wait "), std::string::npos) << before.out;
  EXPECT_NE(before.out.find("flow trip point paid: 1 keys (longest wait "), std::string::npos) << before.out;
  EXPECT_EQ(before.out.find("other"), std::string::npos) << before.out;

  CliRun json = RunCli("flows check --json --flows " + DescribeToFile({TripV2(false)}, "v2") + url);
  EXPECT_EQ(json.exit_code, 1) << json.out;
  const nlohmann::json rows = nlohmann::json::parse(json.out.substr(0, json.out.rfind("]") + 1));
  ASSERT_EQ(rows.size(), 2u) << json.out;
  EXPECT_EQ(rows[0]["recovery_point"], "booked");
  EXPECT_EQ(rows[0]["keys"], 2);

  CliRun after = RunCli("flows check --flows " + DescribeToFile({TripV2(true)}, "v2-declared") + url);
  EXPECT_EQ(after.exit_code, 0) << after.out;
  EXPECT_EQ(after.out, "no key would be stranded (1 flows checked)\n");
}

TEST_F(DeployGateTest, PhasekeyFlowsCheckRefusesToRunWithoutFlowsInOneLine) {
  const std::string url = " --database-url '" + db_.url() + "'";
  CliRun none = RunCli("flows check" + url);
  EXPECT_EQ(none.exit_code, 2) << none.out;
  EXPECT_EQ(std::count(none.out.begin(), none.out.end(), '\n'), 1) << none.out;
  EXPECT_NE(none.out.find("pass --flows FILE"), std::string::npos) << none.out;

  const std::string garbage = (std::filesystem::temp_directory_path() / (db_.name() + "-garbage.json")).string();
  files_.push_back(garbage);
  std::ofstream(garbage) << "{\"name\": \"trip\"}";
  CliRun bad = RunCli("flows check --flows " + garbage + url);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("not a JSON array"), std::string::npos) << bad.out;
  std::ofstream(garbage) << "[{\"name\": \"trip\", \"points\": \"started\"}]";
  bad = RunCli("flows check --flows " + garbage + url);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("\"points\" must be an array"), std::string::npos) << bad.out;
}

TEST_F(DeployGateTest, StatsShowsStrandedKeysOnlyWhenItHasFlows) {
  const std::string url = " --database-url '" + db_.url() + "'";
  CliRun plain = RunCli("stats --json" + url);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("stranded")) << "phasekey has no flows to compare with";
  CliRun with = RunCli("stats --json --flows " + DescribeToFile({TripV2(false)}, "v2") + url);
  ASSERT_EQ(with.exit_code, 0) << with.out;
  const nlohmann::json stranded = nlohmann::json::parse(with.out)["stranded"];
  ASSERT_EQ(stranded.size(), 2u) << with.out;
  EXPECT_EQ(stranded[1]["recovery_point"], "paid");
  CliRun table = RunCli("stats --flows " + DescribeToFile({TripV2(false)}, "v2") + url);
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("stranded (active keys at points these flows do not know):"), std::string::npos)
      << table.out;
  CliRun declared = RunCli("stats --flows " + DescribeToFile({TripV2(true)}, "v2-declared") + url);
  EXPECT_NE(declared.out.find("do not know): none"), std::string::npos) << declared.out;
}

TEST_F(DeployGateTest, TheConsoleOverviewShowsTheStrandedPoints) {
  const std::string token = "deploy-gate-test-token-0123456789";
  auto overview = [&](std::vector<std::shared_ptr<const Flow>> flows) {
    console::ConsoleOptions o;
    o.database_url = db_.url();
    o.port = 0;
    o.token = token;
    o.flows = std::move(flows);
    console::ConsoleServer server(o);
    EXPECT_TRUE(server.Start().ok());
    testing::ConsoleSession s(server.port(), token);
    EXPECT_TRUE(s.LogIn());
    const std::string body = s.Get("/overview/live").body;
    server.Stop();
    return body.find("id=\"stranded\"") == std::string::npos ? std::string()
                                                             : body.substr(body.find("id=\"stranded\""));
  };
  const std::string stranded = overview({TripV2(false)});
  EXPECT_NE(stranded.find("<td>trip</td><td>booked</td><td>2</td>"), std::string::npos) << stranded;
  EXPECT_NE(stranded.find("<td>trip</td><td>paid</td><td>1</td>"), std::string::npos) << stranded;
  EXPECT_NE(overview({TripV2(true)}).find("none: every active key"), std::string::npos);
  EXPECT_EQ(overview({}), "") << "a console without flows cannot tell, and shows no such section";
}

}  // namespace
}  // namespace phasekey
