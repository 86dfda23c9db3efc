// Batch retry and release as an operator runs them (`keys retry/release
// --all-matching`, admin/key_batch.h): real processes against a real
// database. The dry run counts and changes nothing; acting needs that count
// and is refused, changing nothing, when the keys moved; one audit row per
// batch; a live lease of a holder the operator did not name is never freed.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "admin/key_batch.h"
#include "phasekey/runner.h"
#include "support/key_rows.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::TestDatabase;

constexpr char kLiveHolder[] = "11111111-2222-4333-8444-555555555555";
constexpr char kNamedHolder[] = "22222222-2222-4333-8444-555555555555";

struct CliRun {
  int exit_code = -1;
  std::string out;
};

class KeyBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) Key("dead-" + std::to_string(i), "dead", "'unclassified'");
    Key("dead-retryable", "dead", "'retryable'");
    Key("dead-other-flow", "dead", "'unclassified'", "flow = 'refund'");
    Key("parked", "needs_operator", "'needs_operator'");
    Key("expired", "active", "'retryable'",
        "owner_token = gen_random_uuid(), locked_at = now() - interval '1 hour', "
        "lease_expires_at = now() - interval '50 minutes'");
    Key("live", "active", "NULL",
        std::string("owner_token = '") + kLiveHolder +
            "', locked_at = now(), lease_expires_at = now() + interval '1 hour'");
    Key("named", "active", "NULL",
        std::string("owner_token = '") + kNamedHolder +
            "', locked_at = now(), lease_expires_at = now() + interval '1 hour'");
  }
  void Key(const std::string& key, const std::string& state, const std::string& error_class,
           const std::string& set = "") {
    db_.Exec(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, "
        "request_path, request_body, request_fingerprint, recovery_point, state, error_class, last_error) VALUES "
        "('acct', '" +
        key + "', " + std::to_string(AccountBucket("acct", 16)) +
        ", 'create_ride', 'POST', '/rides', '{}', decode(repeat('00', 32), 'hex'), 'ride_created', '" + state + "', " +
        error_class + ", 'failed')");
    if (!set.empty())
      db_.Exec("UPDATE phasekey.idempotency_keys SET " + set + " WHERE idempotency_key = '" + key + "'");
  }
  CliRun Cli(const std::string& args) {
    const std::string cmd = std::string(PHASEKEY_CLI_PATH) + " " + args + " --database-url '" + db_.url() + "' 2>&1";
    FILE* p = ::popen(cmd.c_str(), "r");
    CliRun r;
    std::array<char, 4096> buf{};
    while (std::fgets(buf.data(), buf.size(), p) != nullptr) r.out += buf.data();
    const int status = ::pclose(p);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
  }
  // Every key's state, lease holder (or "-") and last error, in key order:
  // what a batch may change.
  std::string Keys() {
    return db_.Value(
        "SELECT string_agg(idempotency_key || ':' || state || ':' || coalesce(owner_token::text, '-') || ':' || "
        "coalesce(last_error, ''), ', ' ORDER BY idempotency_key) FROM phasekey.idempotency_keys");
  }
  std::string Audit() {
    return db_.Value(
        "SELECT coalesce(string_agg(actor || '|' || action || '|' || account || '|' || idempotency_key || '|' || "
        "succeeded || '|' || outcome, E'\\n' ORDER BY id), '') FROM phasekey.operator_audit");
  }
  TestDatabase db_;
};

TEST_F(KeyBatchTest, TheDryRunCountsTheKeysTheActionWouldChangeAndChangesNothing) {
  const std::string before = Keys();
  CliRun r = Cli("keys retry --all-matching --error-class unclassified --flow create_ride --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["matching"], 3) << r.out;
  EXPECT_EQ(out["dry_run"], true);
  EXPECT_EQ(out["filter"], (nlohmann::json{{"error_class", "unclassified"}, {"flow", "create_ride"}}));
  CliRun table = Cli("keys retry --all-matching --dry-run --state dead");
  ASSERT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("5 keys match; nothing done"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("--confirm-count 5"), std::string::npos) << table.out;
  EXPECT_EQ(nlohmann::json::parse(Cli("keys retry --all-matching --verified-not-charged --json").out)["matching"], 6)
      << "verified: the parked key too";
  EXPECT_EQ(nlohmann::json::parse(Cli("keys release --all-matching --json").out)["matching"], 1)
      << "only the expired lease";
  EXPECT_EQ(Keys(), before);
  EXPECT_EQ(Audit(), "") << "a count is no action";
}

TEST_F(KeyBatchTest, ABatchRetryActsInOneTransactionWithOneAuditRowNamingItsFilter) {
  CliRun r =
      Cli("keys retry --all-matching --error-class unclassified --flow create_ride --confirm-count 3 "
          "--actor 'ann (on call)' --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["done"], 3);
  EXPECT_EQ(db_.Value("SELECT string_agg(idempotency_key, ',' ORDER BY idempotency_key) FROM "
                      "phasekey.idempotency_keys WHERE state = 'active' AND failures = 0 AND rearmed_at IS NOT NULL "
                      "AND last_error LIKE '%put back to re-drive by an operator (batch)'"),
            "dead-0,dead-1,dead-2");
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'dead'"), "2")
      << "the other flow's and the other class's stay dead";
  const std::string audit = Audit();
  EXPECT_EQ(audit.find('\n'), std::string::npos) << "one row: " << audit;
  EXPECT_EQ(audit.rfind("ann (on call)|batch_retry|*|*|true|", 0), 0u) << audit;
  const nlohmann::json outcome = nlohmann::json::parse(audit.substr(audit.rfind('|') + 1));
  EXPECT_EQ(outcome["filter"], (nlohmann::json{{"error_class", "unclassified"}, {"flow", "create_ride"}}));
  EXPECT_EQ(outcome["matched"], 3);
  EXPECT_EQ(outcome["confirmed_count"], 3);
}

TEST_F(KeyBatchTest, AStaleCountIsRefusedAndChangesNothing) {
  const std::string before = Keys();
  CliRun r = Cli("keys retry --all-matching --state dead --confirm-count 4 --actor ann");
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_EQ(r.out.rfind("phasekey keys retry: ", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line: " << r.out;
  EXPECT_NE(r.out.find("5 keys match now, not the 4 confirmed"), std::string::npos) << r.out;
  EXPECT_EQ(Keys(), before);
  const std::string audit = Audit();
  EXPECT_EQ(audit.rfind("ann|batch_retry|*|*|false|", 0), 0u) << "the refusal is audited: " << audit;
  EXPECT_EQ(audit.find('\n'), std::string::npos) << audit;
  // A key moved between the dry run and the confirmation: refused too.
  const long long seen =
      nlohmann::json::parse(Cli("keys release --all-matching --json").out)["matching"].get<long long>();
  db_.Exec(
      "UPDATE phasekey.idempotency_keys SET lease_expires_at = now() + interval '1 hour' "
      "WHERE idempotency_key = 'expired'");
  EXPECT_EQ(Cli("keys release --all-matching --confirm-count " + std::to_string(seen)).exit_code, 4);
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE owner_token IS NULL AND state = 'active'"),
            "0");
}

// One batch is one transaction holding every changed key's row lock: past
// admin::kMaxBatchKeys the dry run says to narrow the filters, and a
// confirmation of that many is refused in one line (exit 2) before
// anything runs: nothing changed, nothing audited.
TEST_F(KeyBatchTest, MoreKeysThanOneBatchActsOnAreRefusedBeforeAnythingRuns) {
  const long long n = admin::kMaxBatchKeys + 1;
  testing::InsertDeadKeys(db_, "many", n);
  CliRun dry = Cli("keys retry --all-matching --account many");
  ASSERT_EQ(dry.exit_code, 0) << dry.out;
  EXPECT_NE(dry.out.find(std::to_string(n) + " keys match; nothing done. " + std::to_string(n) +
                         " keys are more than one batch acts on (" + std::to_string(admin::kMaxBatchKeys) + ")"),
            std::string::npos)
      << dry.out;
  EXPECT_EQ(nlohmann::json::parse(Cli("keys retry --all-matching --account many --json").out)["max_batch"],
            admin::kMaxBatchKeys);
  CliRun refused =
      Cli("keys retry --all-matching --account many --confirm-count " + std::to_string(n) + " --actor ann");
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  EXPECT_EQ(refused.out.rfind("phasekey keys retry: ", 0), 0u) << refused.out;
  EXPECT_EQ(refused.out.find('\n'), refused.out.size() - 1) << "one line: " << refused.out;
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE account = 'many' AND state = 'dead'"),
            std::to_string(n));
  EXPECT_EQ(Audit(), "");
}

TEST_F(KeyBatchTest, ABatchReleaseNeverFreesALiveLeaseOfAHolderNotNamed) {
  CliRun r = Cli("keys release --all-matching --state active --owner-token " + std::string(kNamedHolder) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_EQ(nlohmann::json::parse(r.out)["matching"], 2) << "the expired lease and the named holder's";
  r = Cli("keys release --all-matching --state active --owner-token " + std::string(kNamedHolder) +
          " --confirm-count 2 --actor ann --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["done"], 2);
  EXPECT_EQ(db_.Value("SELECT string_agg(idempotency_key || ':' || coalesce(owner_token::text, 'free'), ',' ORDER BY "
                      "idempotency_key) FROM phasekey.idempotency_keys WHERE state = 'active'"),
            std::string("expired:free,live:") + kLiveHolder + ",named:free");
  const std::string audit = Audit();
  EXPECT_EQ(audit.rfind("ann|batch_release|*|*|true|", 0), 0u) << audit;
  EXPECT_NE(audit.find(kNamedHolder), std::string::npos) << "the holders named are in the audit row: " << audit;
  // Nothing else can free the live lease: no filter matches it.
  EXPECT_EQ(nlohmann::json::parse(Cli("keys release --all-matching --json").out)["matching"], 0);
}

TEST_F(KeyBatchTest, ABatchTakesFiltersNotAKeyAndBadValuesFailInOneLine) {
  EXPECT_EQ(Cli("keys retry acct dead-0 --all-matching").exit_code, 2);
  EXPECT_EQ(Cli("keys retry").exit_code, 2) << "neither a key nor --all-matching";
  CliRun bad = Cli("keys retry --all-matching --error-class bogus --confirm-count 1");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_EQ(bad.out.find('\n'), bad.out.size() - 1) << "one line: " << bad.out;
  CliRun token = Cli("keys release --all-matching --owner-token not-a-uuid");
  EXPECT_EQ(token.exit_code, 2) << token.out;
  EXPECT_NE(token.out.find("not a UUID"), std::string::npos) << token.out;
  EXPECT_NE(Cli("keys retry --flow refund").exit_code, 0) << "a filter needs --all-matching";
  EXPECT_EQ(Audit(), "");
}

}  // namespace
}  // namespace phasekey
