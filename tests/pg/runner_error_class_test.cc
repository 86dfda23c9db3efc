// The class of a key's last error (phasekey.error_class,
// sql/migrations/0003_error_class.sql) as each kind of failure leaves it,
// and found again by the operator's filter (`keys list --error-class`): an
// order flow whose foreign phase fails as the key's name says.
//
//   started --(atomic place_order)--> placed --(foreign pay)--> paid
//           --(atomic confirm)--> finished
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "phasekey/data_protection.h"
#include "phasekey/runner.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using std::chrono::milliseconds;
using testing::TestDatabase;

constexpr RecoveryPoint kPlaced{"placed"};
constexpr RecoveryPoint kPaid{"paid"};

// The foreign phase: fails as its key says; "not-taken" and
// "lookup-required" fail retryably until their key is past give_up_after,
// when the engine lets them only look up.
PhaseResult Pay(const PhaseContext& ctx) {
  const std::string& k = ctx.idempotency_key();
  const bool look_up_only = ctx.send_policy() == SendPolicy::kLookUpOnly;
  if (k == "retryable") return Retry("provider down");
  if (k == "outcome-unknown") return OutcomeUnknown("timed out after sending");
  if (k == "terminal") return Terminal(JsonResponse(402, {{"error", "card_declined"}}), "card declined");
  if (k == "needs-operator") return NeedsOperator("the provider cannot say");
  if (k == "unclassified") throw std::runtime_error("a bug in the phase");
  if (k == "not-taken") return look_up_only ? NotTaken("no payment under the key") : Retry("provider down");
  if (k == "lookup-required") return Retry("provider down");
  return GoTo{kPaid, {{"payment_id", "pay_1"}}};
}

std::shared_ptr<const Flow> OrderFlow(const std::string& name, bool looks_up) {
  Flow::ForeignOptions pay_options;
  pay_options.timeout = milliseconds(2000);
  pay_options.looks_up = looks_up;
  auto flow =
      Flow::Builder(name)
          .Atomic(kStarted, "place_order", [](AtomicContext&) -> PhaseResult { return GoTo{kPlaced}; }, {kPlaced})
          .Foreign(kPlaced, "pay", Pay, {kPaid}, pay_options)
          .Atomic(kPaid, "confirm",
                  [](AtomicContext&) -> PhaseResult {
                    return Respond{JsonResponse(201, {{"ok", true}})};
                  },
                  {kFinished})
          .Build();
  EXPECT_TRUE(flow.has_value()) << flow.error().ToString();
  return *flow;
}

// The keys `keys list --error-class CLASS` prints, by key: their state.
std::map<std::string, std::string> Listed(const std::string& url, const std::string& error_class) {
  const std::string cmd = std::string(PHASEKEY_CLI_PATH) + " keys list --json --error-class " + error_class +
                          " --database-url '" + url + "' 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  const int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  std::map<std::string, std::string> keys;
  for (const auto& row : nlohmann::json::parse(out, nullptr, false)) {
    EXPECT_EQ(row["error_class"], error_class);
    keys[row["key"]] = row["state"];
  }
  return keys;
}

TEST(RunnerErrorClassTest, EachKindOfFailureLeavesItsClassAndTheFilterFindsIt) {
  TestDatabase db;
  RunnerOptions o;
  o.database.url = db.url();
  o.backoff_base = milliseconds(1);
  o.backoff_cap = milliseconds(2);
  auto runner = Runner::Open(o, {OrderFlow("order", true), OrderFlow("order_no_lookup", false)});
  ASSERT_TRUE(runner.has_value()) << runner.error().ToString();
  auto order = [&](const std::string& flow, const std::string& key) {
    return (*runner)->Execute(flow, Request{"acct", key, "POST", "/orders", R"({"amount": 1200})"}).kind;
  };
  EXPECT_EQ(order("order", "retryable"), Reply::Kind::kRetryLater);
  EXPECT_EQ(order("order", "outcome-unknown"), Reply::Kind::kRetryLater);
  EXPECT_EQ(order("order", "terminal"), Reply::Kind::kCompleted);
  EXPECT_EQ(order("order", "needs-operator"), Reply::Kind::kNeedsOperator);
  EXPECT_EQ(order("order", "unclassified"), Reply::Kind::kRetryLater);
  EXPECT_EQ(order("order", "not-taken"), Reply::Kind::kRetryLater);
  EXPECT_EQ(order("order_no_lookup", "lookup-required"), Reply::Kind::kRetryLater);
  EXPECT_EQ(order("order", "paid"), Reply::Kind::kCompleted);
  // Past give_up_after (12 hours by default) the pay phase may only look up.
  db.Exec(
      "UPDATE phasekey.idempotency_keys SET created_at = created_at - interval '13 hours', next_attempt_at = now() "
      "WHERE idempotency_key IN ('not-taken', 'lookup-required')");
  EXPECT_EQ(order("order", "not-taken"), Reply::Kind::kDeadLettered);
  EXPECT_EQ(order("order_no_lookup", "lookup-required"), Reply::Kind::kNeedsOperator);

  using M = std::map<std::string, std::string>;
  EXPECT_EQ(Listed(db.url(), "retryable"), (M{{"retryable", "active"}}));
  EXPECT_EQ(Listed(db.url(), "outcome_unknown"), (M{{"outcome-unknown", "active"}}));
  EXPECT_EQ(Listed(db.url(), "terminal"), (M{{"terminal", "finished"}}));
  EXPECT_EQ(Listed(db.url(), "needs_operator"), (M{{"needs-operator", "needs_operator"}}));
  EXPECT_EQ(Listed(db.url(), "unclassified"), (M{{"unclassified", "active"}}));
  EXPECT_EQ(Listed(db.url(), "not_taken"), (M{{"not-taken", "dead"}}));
  EXPECT_EQ(Listed(db.url(), "lookup_required"), (M{{"lookup-required", "needs_operator"}}));
  EXPECT_EQ(db.Value("SELECT failures FROM phasekey.idempotency_keys WHERE idempotency_key = 'unclassified'"), "1")
      << "only an unclassified failure counts towards the cap";
  EXPECT_EQ(db.Value("SELECT failures FROM phasekey.idempotency_keys WHERE idempotency_key = 'outcome-unknown'"), "0");
  EXPECT_EQ(db.Value("SELECT coalesce(error_class::text, 'none') || ' ' || coalesce(last_error, 'none') FROM "
                     "phasekey.idempotency_keys WHERE idempotency_key = 'paid'"),
            "none none")
      << "a success leaves no error";

  // An erasure parks the account's unfinished keys: erased, whatever they
  // failed of before.
  DatabaseOptions database;
  database.url = db.url();
  ASSERT_TRUE(EraseAccount(database, "acct", "test").has_value());
  EXPECT_EQ(
      Listed(db.url(), "erased"),
      (M{{"retryable", "needs_operator"}, {"outcome-unknown", "needs_operator"}, {"unclassified", "needs_operator"}}));
}

TEST(RunnerErrorClassTest, AnOperatorsRetryKeepsTheClassAndASuccessClearsIt) {
  TestDatabase db;
  RunnerOptions o;
  o.database.url = db.url();
  o.backoff_base = milliseconds(1);
  o.backoff_cap = milliseconds(2);
  auto runner = Runner::Open(o, {OrderFlow("order", true)});
  ASSERT_TRUE(runner.has_value()) << runner.error().ToString();
  ASSERT_EQ((*runner)->Execute("order", Request{"acct", "needs-operator", "POST", "/orders", "{}"}).kind,
            Reply::Kind::kNeedsOperator);
  const std::string cmd = std::string(PHASEKEY_CLI_PATH) +
                          " keys retry acct needs-operator --verified-not-charged --database-url '" + db.url() +
                          "' >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(db.Value("SELECT state || ' ' || error_class FROM phasekey.idempotency_keys"), "active needs_operator")
      << "an operator's note is no error: the class still says what the key last failed of";
  db.Exec("UPDATE phasekey.idempotency_keys SET idempotency_key = 'paid'");
  ASSERT_EQ((*runner)->Execute("order", Request{"acct", "paid", "POST", "/orders", "{}"}).kind,
            Reply::Kind::kCompleted);
  EXPECT_EQ(db.Value("SELECT state || ' ' || coalesce(error_class::text, 'none') FROM phasekey.idempotency_keys"),
            "finished none");
}

}  // namespace
}  // namespace phasekey
