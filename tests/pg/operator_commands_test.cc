// The operator's commands as an operator runs them: real processes against a
// real database. Find a stuck key, see why, retry it; release a lease.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "admin/key_admin.h"
#include "phasekey/runner.h"
#include "phasekey/tools/stored_responses.h"
#include "support/ride_flow.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

struct CliRun {
  int exit_code = -1;
  std::string out;
};

CliRun RunCli(const std::string& binary, const std::string& args, const std::string& stdin_text = "") {
  const std::string cmd = "printf '%s' '" + stdin_text + "' | " + binary + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  CliRun r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) r.out += buf.data();
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class OperatorCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    auto insert = [&](const std::string& key, const std::string& extra_cols, const std::string& extra_vals) {
      tx.exec0(
          "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method,"
          " request_path, request_body, request_fingerprint, recovery_point" +
          extra_cols + ") VALUES ('acct', '" + key + "', " + std::to_string(AccountBucket("acct", 16)) +
          ", 'create_ride', 'POST', '/rides', '{}', decode(repeat('00', 32), 'hex'), 'ride_created'" + extra_vals +
          ")");
    };
    insert("dead-key", ", state, attempts, last_error",
           ", 'dead', 10, 'gateway unavailable | dead-lettered: 10 attempts'");
    insert("stuck-key", ", owner_token, locked_at, lease_expires_at, attempts",
           ", gen_random_uuid(), now() - interval '1 hour', now() - interval '50 minutes', 4");
    insert("live-key", ", owner_token, locked_at, lease_expires_at, attempts",
           ", '11111111-2222-4333-8444-555555555555', now(), now() + interval '1 hour', 1");
    tx.commit();
  }
  // The audit rows of one key, oldest first, as "actor|action|succeeded|outcome".
  std::vector<std::string> Audit(const std::string& key) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    std::vector<std::string> out;
    for (const auto& r : tx.exec_params("SELECT actor, action, succeeded, outcome FROM phasekey.operator_audit "
                                        "WHERE account = 'acct' AND idempotency_key = $1 ORDER BY id",
                                        key)) {
      out.push_back(r[0].as<std::string>() + "|" + r[1].as<std::string>() + "|" + (r[2].as<bool>() ? "ok" : "refused") +
                    "|" + r[3].as<std::string>());
    }
    return out;
  }
  TestDatabase db_;
};

TEST_F(OperatorCommandsTest, RetryAndReleaseAreAuditedWithTheOsUserOrTheActorGiven) {
  const passwd* pw = ::getpwuid(::geteuid());
  ASSERT_NE(pw, nullptr);
  const std::string me = pw->pw_name;
  ASSERT_TRUE(Audit("dead-key").empty());
  ASSERT_EQ(RunCli(PHASEKEY_CLI_PATH, "keys retry acct dead-key --database-url '" + db_.url() + "'").exit_code, 0);
  ASSERT_EQ(RunCli(PHASEKEY_CLI_PATH, "keys retry acct dead-key --database-url '" + db_.url() + "'").exit_code, 3);
  const std::vector<std::string> retries = Audit("dead-key");
  ASSERT_EQ(retries.size(), 2u);
  EXPECT_EQ(retries[0], me + "|retry|ok|back to re-drive at ride_created");
  EXPECT_EQ(retries[1].rfind(me + "|retry|refused|", 0), 0u) << retries[1] << ": a refusal is audited too";

  CliRun released =
      RunCli(PHASEKEY_CLI_PATH,
             "keys release acct live-key --yes --actor 'alice (on call)' --database-url '" + db_.url() + "'");
  ASSERT_EQ(released.exit_code, 0) << released.out;
  const std::vector<std::string> releases = Audit("live-key");
  ASSERT_EQ(releases.size(), 1u);
  EXPECT_EQ(releases[0].rfind("alice (on call)|release|ok|lease released at ", 0), 0u) << releases[0];
  EXPECT_EQ(RunCli(PHASEKEY_CLI_PATH, "keys release acct live-key --database-url '" + db_.url() + "'", "n\n").exit_code,
            3)
      << "no lease left: refused before anything is done";
  EXPECT_EQ(Audit("live-key").size(), 1u) << "nothing was attempted, nothing audited";
}

TEST_F(OperatorCommandsTest, ListsStuckKeysAndShowsWhy) {
  CliRun stuck = RunCli(PHASEKEY_CLI_PATH, "keys list --stuck --json --database-url '" + db_.url() + "'");
  ASSERT_EQ(stuck.exit_code, 0) << stuck.out;
  auto rows = nlohmann::json::parse(stuck.out);
  ASSERT_EQ(rows.size(), 1u) << stuck.out;
  EXPECT_EQ(rows[0]["key"], "stuck-key");
  EXPECT_EQ(rows[0]["lease_expired"], true);
  CliRun table = RunCli(PHASEKEY_CLI_PATH, "keys list --state dead --database-url '" + db_.url() + "'");
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find("dead-key"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("live-key"), std::string::npos) << table.out;
  CliRun show = RunCli(PHASEKEY_CLI_PATH, "keys show acct dead-key --database-url '" + db_.url() + "'");
  EXPECT_EQ(show.exit_code, 0);
  EXPECT_NE(show.out.find("last_error:"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("dead-lettered: 10 attempts"), std::string::npos) << show.out;
}

TEST_F(OperatorCommandsTest, ShowsTheTraceTheKeysFirstRequestBelongedTo) {
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET trace_parent = "
      "'00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' WHERE idempotency_key = 'dead-key'");
  auto json = nlohmann::json::parse(
      RunCli(PHASEKEY_CLI_PATH, "keys show acct dead-key --json --database-url '" + db_.url() + "'").out);
  EXPECT_EQ(json["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(json["trace_parent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  CliRun table = RunCli(PHASEKEY_CLI_PATH, "keys show acct dead-key --database-url '" + db_.url() + "'");
  EXPECT_NE(table.out.find("trace_id:"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("4bf92f3577b34da6a3ce929d0e0e4736"), std::string::npos) << table.out;
  auto untraced = nlohmann::json::parse(
      RunCli(PHASEKEY_CLI_PATH, "keys show acct live-key --json --database-url '" + db_.url() + "'").out);
  EXPECT_TRUE(untraced["trace_id"].is_null()) << "a key whose request had no traceparent";
}

TEST_F(OperatorCommandsTest, RetriesADeadLetteredKey) {
  CliRun r = RunCli(PHASEKEY_CLI_PATH, "keys retry acct dead-key --database-url '" + db_.url() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ride_created"), std::string::npos);
  auto show = nlohmann::json::parse(
      RunCli(PHASEKEY_CLI_PATH, "keys show acct dead-key --json --database-url '" + db_.url() + "'").out);
  EXPECT_EQ(show["state"], "active");
  EXPECT_EQ(show["failures"], "0");
  EXPECT_FALSE(show["rearmed_at"].is_null()) << "its give-up time counts from the retry";
  EXPECT_EQ(RunCli(PHASEKEY_CLI_PATH, "keys retry acct dead-key --database-url '" + db_.url() + "'").exit_code, 3)
      << "only dead keys can be retried";
}

TEST_F(OperatorCommandsTest, AKeyParkedForAnOperatorIsRetriedOnlyOnceVerifiedWithAFreshProviderWindow) {
  {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec0(
        "UPDATE phasekey.idempotency_keys SET state = 'needs_operator', point_reached_at = now() - interval "
        "'30 hours' WHERE idempotency_key = 'dead-key'");
    tx.commit();
  }
  CliRun refused = RunCli(PHASEKEY_CLI_PATH, "keys retry acct dead-key --database-url '" + db_.url() + "'");
  EXPECT_EQ(refused.exit_code, 3) << refused.out;
  EXPECT_NE(refused.out.find("--verified-not-charged"), std::string::npos) << refused.out;
  CliRun r =
      RunCli(PHASEKEY_CLI_PATH, "keys retry acct dead-key --verified-not-charged --database-url '" + db_.url() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  pqxx::connection conn(db_.url());
  pqxx::nontransaction tx(conn);
  pqxx::row row = tx.exec1(
      "SELECT state::text, point_reached_at > now() - interval '1 minute' FROM "
      "phasekey.idempotency_keys WHERE idempotency_key = 'dead-key'");
  EXPECT_EQ(row[0].as<std::string>(), "active");
  EXPECT_TRUE(row[1].as<bool>()) << "the provider window starts again";
}

TEST_F(OperatorCommandsTest, ReleasesALeaseOnlyWhenConfirmed) {
  CliRun no = RunCli(PHASEKEY_CLI_PATH, "keys release acct live-key --database-url '" + db_.url() + "'", "n\n");
  EXPECT_EQ(no.exit_code, 4) << no.out;
  CliRun yes = RunCli(PHASEKEY_CLI_PATH, "keys release acct live-key --database-url '" + db_.url() + "'", "y\n");
  ASSERT_EQ(yes.exit_code, 0) << yes.out;
  auto show = nlohmann::json::parse(
      RunCli(PHASEKEY_CLI_PATH, "keys show acct live-key --json --database-url '" + db_.url() + "'").out);
  EXPECT_TRUE(show["owner_token"].is_null());
  EXPECT_EQ(RunCli(PHASEKEY_CLI_PATH, "keys release acct live-key --yes --database-url '" + db_.url() + "'").exit_code,
            3);
}

TEST_F(OperatorCommandsTest, ReportsStatsAndWhatTheReaperWouldDelete) {
  CliRun stats = RunCli(PHASEKEY_CLI_PATH, "stats --json --database-url '" + db_.url() + "'");
  ASSERT_EQ(stats.exit_code, 0) << stats.out;
  auto s = nlohmann::json::parse(stats.out);
  EXPECT_EQ(s["dead_lettered"], 1);
  EXPECT_EQ(s["redrive_backlog"], 1) << "the stuck key is due; the live one is leased";
  CliRun reap = RunCli(PHASEKEY_CLI_PATH, "reap --dry-run --json --database-url '" + db_.url() + "'");
  ASSERT_EQ(reap.exit_code, 0) << reap.out;
  EXPECT_EQ(nlohmann::json::parse(reap.out)["would_delete"], 0);
}

TEST_F(OperatorCommandsTest, FailsClearlyOnUnknownKeysAndFlows) {
  CliRun missing = RunCli(PHASEKEY_CLI_PATH, "keys show acct nope --database-url '" + db_.url() + "'");
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_EQ(missing.out.rfind("phasekey keys show: ", 0), 0u) << missing.out;
  CliRun graph = RunCli(PHASEKEY_CLI_PATH, "flows graph create_ride");
  EXPECT_EQ(graph.exit_code, 1);
  EXPECT_NE(graph.out.find("known: none"), std::string::npos) << graph.out;
}

// Keys that differ in one field each from "base" (flow create_ride, state
// active, recovery point ride_created, no error, account acct, 2 hours old),
// for the filters of `keys list`.
class KeyFiltersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Key("base", "");
    Key("other-flow", "flow = 'refund'");
    Key("dead", "state = 'dead'");
    Key("other-point", "recovery_point = 'charge_created'");
    Key("unclassified", "error_class = 'unclassified', last_error = 'phase threw'");
    Key("parked", "state = 'needs_operator', error_class = 'needs_operator', last_error = 'unverified'");
    Key("old", "created_at = now() - interval '3 days'");
    Key("new", "created_at = now() - interval '10 seconds'");
    Key("other-account", "account = 'acct-2', bucket = " + std::to_string(AccountBucket("acct-2", 16)));
  }
  // Inserts "base" as `key`, then applies `set` (an UPDATE's SET list) to it.
  void Key(const std::string& key, const std::string& set) {
    db_.Exec(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, "
        "request_path, request_body, request_fingerprint, recovery_point, created_at) VALUES ('acct', '" +
        key + "', " + std::to_string(AccountBucket("acct", 16)) +
        ", 'create_ride', 'POST', '/rides', '{}', decode(repeat('00', 32), 'hex'), 'ride_created', "
        "now() - interval '2 hours')");
    if (!set.empty())
      db_.Exec("UPDATE phasekey.idempotency_keys SET " + set + " WHERE idempotency_key = '" + key + "'");
  }
  // The keys `keys list` prints with `filters`, sorted.
  std::vector<std::string> Listed(const std::string& filters) {
    CliRun r = RunCli(PHASEKEY_CLI_PATH, "keys list --json " + filters + " --database-url '" + db_.url() + "'");
    EXPECT_EQ(r.exit_code, 0) << filters << ": " << r.out;
    std::vector<std::string> keys;
    for (const auto& row : nlohmann::json::parse(r.out, nullptr, false)) keys.push_back(row["key"]);
    std::sort(keys.begin(), keys.end());
    return keys;
  }
  TestDatabase db_;
};

TEST_F(KeyFiltersTest, EachFilterOfKeysListNarrowsToTheKeysItNames) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Listed("").size(), 9u);
  EXPECT_EQ(Listed("--flow refund"), V{"other-flow"});
  EXPECT_EQ(Listed("--state dead"), V{"dead"});
  EXPECT_EQ(Listed("--state needs_operator"), V{"parked"});
  EXPECT_EQ(Listed("--recovery-point charge_created"), V{"other-point"});
  EXPECT_EQ(Listed("--error-class unclassified"), V{"unclassified"});
  EXPECT_EQ(Listed("--error-class needs_operator --state needs_operator"), V{"parked"});
  EXPECT_EQ(Listed("--error-class retryable"), V{});
  EXPECT_EQ(Listed("--older-than 86400"), V{"old"});
  EXPECT_EQ(Listed("--newer-than 60"), V{"new"});
  EXPECT_EQ(Listed("--older-than 60 --newer-than 86400").size(), 7u) << "neither the old key nor the new one";
  EXPECT_EQ(Listed("--account acct-2"), V{"other-account"});
  EXPECT_EQ(Listed("--account acct --flow create_ride --state active --recovery-point ride_created "
                   "--older-than 3600 --newer-than 7300"),
            (V{"base", "unclassified"}));
}

TEST_F(KeyFiltersTest, KeysListShowsTheErrorClassAndTheLeaseHolder) {
  CliRun r = RunCli(PHASEKEY_CLI_PATH, "keys list --json --state needs_operator --database-url '" + db_.url() + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json row = nlohmann::json::parse(r.out).at(0);
  EXPECT_EQ(row["error_class"], "needs_operator") << r.out;
  EXPECT_TRUE(row["owner_token"].is_null()) << r.out;
  CliRun table = RunCli(PHASEKEY_CLI_PATH, "keys list --error-class unclassified --database-url '" + db_.url() + "'");
  EXPECT_NE(table.out.find("error_class"), std::string::npos) << table.out;
}

TEST_F(KeyFiltersTest, AnUnknownStateOrErrorClassFailsInOneLine) {
  for (const char* bad : {"--state bogus", "--error-class bogus", "--older-than 60 --newer-than 30"}) {
    CliRun r = RunCli(PHASEKEY_CLI_PATH, std::string("keys list ") + bad + " --database-url '" + db_.url() + "'");
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.out;
    EXPECT_EQ(r.out.rfind("phasekey keys list: ", 0), 0u) << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
  }
  CliRun r = RunCli(PHASEKEY_CLI_PATH, "keys list --error-class bogus --database-url '" + db_.url() + "'");
  EXPECT_NE(r.out.find("unknown error class 'bogus' (one of retryable, outcome_unknown,"), std::string::npos) << r.out;
}

TEST_F(KeyFiltersTest, TheErrorClassesTheToolsKnowAreTheDatabases) {
  std::vector<std::string> in_database;
  pqxx::connection conn(db_.url());
  pqxx::nontransaction tx(conn);
  for (const auto& r : tx.exec("SELECT unnest(enum_range(NULL::phasekey.error_class))::text")) {
    in_database.push_back(r[0].as<std::string>());
  }
  EXPECT_EQ(in_database, admin::ErrorClasses());
  std::vector<std::string> states;
  for (const auto& r : tx.exec("SELECT unnest(enum_range(NULL::phasekey.key_state))::text")) {
    states.push_back(r[0].as<std::string>());
  }
  EXPECT_EQ(states, admin::KeyStates());
}

// Keys whose bodies were sealed by a runner with a key-encryption key, as
// an operator meets them: "finished-key" (its request body dropped, its
// response and outcome sealed) and "open-key" (stopped at ride_created, its
// request sealed). The flow masks /card/number.
class SealedKeysTest : public ::testing::Test {
 protected:
  static constexpr const char* kBody = R"({"origin_lat": 1.5, "origin_lon": 2, "target_lat": 3, "target_lon": 4, )"
                                       R"("card": {"number": "4242424242424242"}, "note": "visible-note-7f3a"})";

  void SetUp() override {
    old_kek_ = KekFile("old", "kek-1 " + std::string(64, 'a') + "\n");
    testing::CreateRideTables(db_.url());
    RunnerOptions o;
    o.database.url = db_.url();
    o.encryption.kek_file = old_kek_;
    o.backoff_base = std::chrono::milliseconds(5);
    o.backoff_cap = std::chrono::milliseconds(20);
    auto runner = Runner::Open(o, {testing::MakeRideFlow(&gateway_, std::chrono::milliseconds(2000))});
    ASSERT_TRUE(runner.has_value()) << runner.error().ToString();
    ASSERT_EQ((*runner)->Execute("create_ride", Request{"acct", "finished-key", "POST", "/rides", kBody}).kind,
              Reply::Kind::kCompleted);
    gateway_.fail_retryable = 100;
    ASSERT_EQ((*runner)->Execute("create_ride", Request{"acct", "open-key", "POST", "/rides", kBody}).kind,
              Reply::Kind::kRetryLater);
    db_.Exec(
        "INSERT INTO phasekey.flow_masks (flow, pointers) VALUES ('create_ride', '{/card/number}') "
        "ON CONFLICT (flow) DO UPDATE SET pointers = EXCLUDED.pointers");
  }

  // A file of key-encryption keys, mode 0600.
  static std::string KekFile(const std::string& name, const std::string& lines) {
    const std::string path = ::testing::TempDir() + "operator_kek_" + name + "_" + std::to_string(::getpid());
    std::ofstream(path, std::ios::trunc) << lines;
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::replace);
    return path;
  }

  CliRun Cli(const std::string& args, const std::string& stdin_text = "") {
    return RunCli(PHASEKEY_CLI_PATH, args + " --database-url '" + db_.url() + "'", stdin_text);
  }

  // The audit rows of `key`, oldest first, as "actor|action|succeeded|outcome".
  std::vector<std::string> Audit(const std::string& key) {
    pqxx::connection conn(db_.url());
    pqxx::nontransaction tx(conn);
    std::vector<std::string> out;
    for (const auto& r : tx.exec_params("SELECT actor, action, succeeded, outcome FROM phasekey.operator_audit "
                                        "WHERE idempotency_key = $1 ORDER BY id",
                                        key)) {
      out.push_back(r[0].as<std::string>() + "|" + r[1].as<std::string>() + "|" + (r[2].as<bool>() ? "ok" : "refused") +
                    "|" + r[3].as<std::string>());
    }
    return out;
  }

  TestDatabase db_;
  testing::TestGateway gateway_;
  std::string old_kek_;
};

TEST_F(SealedKeysTest, KeysShowSummarizesTheBodiesAndNeverShowsThem) {
  db_.Exec(
      "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, "
      "request_path, request_body, request_fingerprint, recovery_point) VALUES ('acct', 'plain-key', " +
      std::to_string(AccountBucket("acct", 16)) +
      ", 'create_ride', 'POST', '/rides', convert_to('{\"note\": \"plain-note-9b1c\"}', 'UTF8'), "
      "decode(repeat('00', 32), 'hex'), 'ride_created')");
  CliRun plain = Cli("keys show acct plain-key --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("plain-note-9b1c"), std::string::npos) << "a body stored in clear is not shown either";
  EXPECT_EQ(nlohmann::json::parse(plain.out)["request_body"]["stored"], "plain") << plain.out;
  CliRun table = Cli("keys show acct open-key");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  CliRun json = Cli("keys show acct open-key --json");
  ASSERT_EQ(json.exit_code, 0) << json.out;
  for (const CliRun& run : {table, json}) {
    EXPECT_EQ(run.out.find("visible-note-7f3a"), std::string::npos) << run.out;
    EXPECT_EQ(run.out.find("4242424242424242"), std::string::npos) << run.out;
  }
  const nlohmann::json open = nlohmann::json::parse(json.out);
  EXPECT_EQ(open["request_body"]["stored"], "sealed") << json.out;
  EXPECT_GT(open["request_body"]["bytes"].get<int>(), 0);
  EXPECT_EQ(open["response_body"]["stored"], "none");
  const nlohmann::json finished = nlohmann::json::parse(Cli("keys show acct finished-key --json").out);
  EXPECT_EQ(finished["request_body"]["stored"], "dropped") << finished.dump();
  EXPECT_EQ(finished["response_body"]["stored"], "sealed");
  EXPECT_EQ(finished["outcomes"]["charge_created"]["stored"], "sealed") << finished.dump();
  EXPECT_EQ(finished.dump().find("ch_1"), std::string::npos) << "the charge id is in the sealed outcome and response";
  EXPECT_TRUE(Audit("open-key").empty()) << "showing summaries is not a reveal";
}

TEST_F(SealedKeysTest, RevealShowsTheBodiesMaskedAndIsAudited) {
  CliRun r = Cli("keys show acct open-key --reveal --json --actor ann --kek-file " + old_kek_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json row = nlohmann::json::parse(r.out);
  const nlohmann::json request = nlohmann::json::parse(row["request_body"].get<std::string>());
  EXPECT_EQ(request["card"]["number"], "***") << r.out;
  EXPECT_EQ(request["note"], "visible-note-7f3a");
  EXPECT_EQ(r.out.find("4242424242424242"), std::string::npos) << r.out;
  EXPECT_EQ(Audit("open-key"), std::vector<std::string>{"ann|reveal|ok|request, response, outcomes shown"});

  CliRun finished = Cli("keys show acct finished-key --reveal --kek-file " + old_kek_);
  ASSERT_EQ(finished.exit_code, 0) << finished.out;
  EXPECT_NE(finished.out.find("ch_1"), std::string::npos) << "the response and the outcome, opened: " << finished.out;
}

TEST_F(SealedKeysTest, StoredResponsesOpenWithTheKeysForToolsThatCheckThem) {
  DatabaseOptions database;
  database.url = db_.url();
  EncryptionOptions keys;
  keys.kek_file = old_kek_;
  auto opened = ReadStoredResponses(database, keys, {{"acct", "finished-key"}, {"acct", "open-key"}});
  ASSERT_TRUE(opened.has_value()) << opened.error().ToString();
  ASSERT_EQ(opened->size(), 1u) << "the open key has no response yet";
  EXPECT_NE(opened->at({"acct", "finished-key"}).find("\"charge_id\":\"ch_1\""), std::string::npos)
      << opened->at({"acct", "finished-key"});
  auto without = ReadStoredResponses(database, EncryptionOptions{}, {{"acct", "finished-key"}});
  ASSERT_FALSE(without.has_value());
  EXPECT_EQ(without.error().code(), StatusCode::kFailedPrecondition) << without.error().ToString();
  EXPECT_TRUE(Audit("finished-key").empty()) << "for tools, not people: nothing shown, nothing audited";
}

TEST_F(SealedKeysTest, RevealOfASealedKeyWithoutKeyEncryptionKeysFailsInOneLineAndIsAuditedAsRefused) {
  CliRun r = Cli("keys show acct open-key --reveal --actor ann");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out.rfind("phasekey keys show: ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
  EXPECT_NE(r.out.find("--kek-file"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("visible-note-7f3a"), std::string::npos) << r.out;
  const std::vector<std::string> audit = Audit("open-key");
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(audit[0].rfind("ann|reveal|refused|", 0), 0u) << audit[0];
  EXPECT_NE(Cli("keys show acct open-key --kek-file " + old_kek_).exit_code, 0) << "--kek-file needs --reveal";
}

TEST_F(SealedKeysTest, ARevealWhoseAuditRowCannotBeWrittenShowsNothing) {
  db_.Exec(
      "CREATE FUNCTION no_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
      "RAISE EXCEPTION 'the audit trail is full'; END $$; "
      "CREATE TRIGGER no_audit BEFORE INSERT ON phasekey.operator_audit FOR EACH ROW EXECUTE FUNCTION no_audit()");
  CliRun r = Cli("keys show acct open-key --reveal --kek-file " + old_kek_);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the audit trail is full"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("visible-note-7f3a"), std::string::npos) << r.out;
}

TEST_F(SealedKeysTest, EraseAsksFirstThenErasesTheAccountParksItsUnfinishedKeyAndIsAudited) {
  CliRun no = Cli("keys erase --account acct", "n\n");
  EXPECT_EQ(no.exit_code, 4) << no.out;
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE erased_at IS NOT NULL"), "0");

  CliRun r = Cli("keys erase --account acct --yes --json --actor 'dpo (ticket 7)'");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["data_keys_destroyed"], 1) << r.out;
  EXPECT_EQ(report["keys_erased"], 2);
  EXPECT_EQ(report["keys_stopped"], 1);
  const std::vector<std::string> audit = Audit("*");
  ASSERT_EQ(audit.size(), 1u);
  EXPECT_EQ(audit[0].rfind("dpo (ticket 7)|erase|ok|", 0), 0u) << audit[0];

  const nlohmann::json open = nlohmann::json::parse(Cli("keys show acct open-key --json").out);
  EXPECT_EQ(open["state"], "needs_operator");
  EXPECT_EQ(open["request_body"]["stored"], "erased");
  CliRun reveal = Cli("keys show acct open-key --reveal --kek-file " + old_kek_);
  EXPECT_EQ(reveal.exit_code, 1) << reveal.out;
  EXPECT_NE(reveal.out.find("erased"), std::string::npos) << reveal.out;

  CliRun table = Cli("keys erase --account acct --yes");
  EXPECT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("keys_erased"), std::string::npos) << "a second erasure finds nothing more: " << table.out;
}

TEST_F(SealedKeysTest, RotateKekRewrapsSoThatTheNewKeyAloneRevealsAnOldKey) {
  const std::string both = KekFile("both", "kek-2 " + std::string(64, 'b') + "\nkek-1 " + std::string(64, 'a') + "\n");
  const std::string new_only = KekFile("new", "kek-2 " + std::string(64, 'b') + "\n");
  EXPECT_NE(Cli("keys show acct open-key --reveal --kek-file " + new_only).exit_code, 0)
      << "before the rotation the new key alone does not open the data key";
  CliRun r = Cli("keys rotate-kek --json --actor ann --kek-file " + both);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["current_kek"], "kek-2");
  EXPECT_EQ(report["rewrapped"], 1);
  EXPECT_EQ(report["retired_keks"], nlohmann::json::array({"kek-1"}));
  EXPECT_EQ(Audit("*").at(Audit("*").size() - 1).rfind("ann|rotate_kek|ok|", 0), 0u);

  CliRun reveal = Cli("keys show acct open-key --reveal --json --kek-file " + new_only);
  ASSERT_EQ(reveal.exit_code, 0) << reveal.out;
  EXPECT_NE(reveal.out.find("visible-note-7f3a"), std::string::npos) << reveal.out;
  EXPECT_NE(Cli("keys show acct open-key --reveal --kek-file " + old_kek_).exit_code, 0)
      << "the old key alone no longer opens it";
  CliRun none = Cli("keys rotate-kek");
  EXPECT_NE(none.exit_code, 0) << "a rotation needs --kek-file or --kek-command: " << none.out;
}

}  // namespace
}  // namespace phasekey
