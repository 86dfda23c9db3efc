// The console's key filters and batch actions (console/batch_routes.cc,
// console/key_filter_form.cc) over real HTTP against a real PostgreSQL:
// each filter narrows the keys table, a bad value is a 400 problem, and a
// batch retry or release shows its count, acts only with that count (one
// audit row), is refused with nothing changed when the count moved, and is
// refused in read-only mode and without the CSRF token.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "admin/key_batch.h"
#include "console/console_server.h"
#include "console/web.h"
#include "phasekey/runner.h"
#include "support/console_session.h"
#include "support/key_rows.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::ConsoleSession;
using testing::TestDatabase;

const std::string kToken = "console-batch-test-token-0123456789";

class ConsoleBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Key("dead-1", "dead", "'unclassified'");
    Key("dead-2", "dead", "'unclassified'");
    Key("dead-retryable", "dead", "'retryable'", "recovery_point = 'started'");
    Key("parked", "needs_operator", "'needs_operator'", "created_at = now() - interval '3 days'");
    Key("expired", "active", "'retryable'",
        "owner_token = gen_random_uuid(), locked_at = now() - interval '1 hour', "
        "lease_expires_at = now() - interval '50 minutes'");
    Key("live", "active", "NULL",
        "owner_token = gen_random_uuid(), locked_at = now(), lease_expires_at = now() + interval '1 hour'");
  }
  void Key(const std::string& key, const std::string& state, const std::string& error_class,
           const std::string& set = "") {
    db_.Exec(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method, "
        "request_path, request_body, request_fingerprint, recovery_point, state, error_class, last_error, "
        "created_at) VALUES ('acct', '" +
        key + "', " + std::to_string(AccountBucket("acct", 16)) +
        ", 'create_ride', 'POST', '/rides', '{}', decode(repeat('00', 32), 'hex'), 'ride_created', '" + state + "', " +
        error_class + ", 'failed', now() - interval '1 hour')");
    if (!set.empty())
      db_.Exec("UPDATE phasekey.idempotency_keys SET " + set + " WHERE idempotency_key = '" + key + "'");
  }
  void Start(bool read_only = false) {
    console::ConsoleOptions o;
    o.database_url = db_.url();
    o.port = 0;
    o.token = kToken;
    o.read_only = read_only;
    server_ = std::make_unique<console::ConsoleServer>(o);
    ASSERT_TRUE(server_->Start().ok());
    session_ = std::make_unique<ConsoleSession>(server_->port(), kToken);
    ASSERT_TRUE(session_->LogIn("ann"));
  }
  // The keys the keys table shows for `query`, sorted.
  std::set<std::string> Shown(const std::string& query) {
    testing::HttpResult r = session_->Get("/keys?" + query);
    EXPECT_EQ(r.status, 200) << query << ": " << r.body;
    std::set<std::string> keys;
    const std::regex link("class=\"key\" href=\"[^\"]*\">([^<]*)</a>");
    for (auto it = std::sregex_iterator(r.body.begin(), r.body.end(), link); it != std::sregex_iterator(); ++it) {
      keys.insert((*it)[1]);
    }
    return keys;
  }
  std::string States() {
    return db_.Value(
        "SELECT string_agg(idempotency_key || ':' || state || ':' || (owner_token IS NULL), ',' ORDER BY "
        "idempotency_key) FROM phasekey.idempotency_keys");
  }
  std::string Audit() {
    return db_.Value(
        "SELECT coalesce(string_agg(actor || '|' || action || '|' || succeeded || '|' || outcome, E'\\n' ORDER BY "
        "id), '') FROM phasekey.operator_audit");
  }
  // The batch form: its fields as the confirmation page carries them.
  std::string BatchForm(const std::string& action, const std::string& filters, long long count) {
    return "csrf=" + session_->Csrf() + "&action=" + action + "&confirm_count=" + std::to_string(count) + filters;
  }

  TestDatabase db_;
  std::unique_ptr<console::ConsoleServer> server_;
  std::unique_ptr<ConsoleSession> session_;
};

TEST_F(ConsoleBatchTest, EachFilterOfTheKeysPageNarrowsTheTable) {
  Start();
  using S = std::set<std::string>;
  EXPECT_EQ(Shown("").size(), 6u);
  EXPECT_EQ(Shown("state=dead"), (S{"dead-1", "dead-2", "dead-retryable"}));
  EXPECT_EQ(Shown("error_class=unclassified"), (S{"dead-1", "dead-2"}));
  EXPECT_EQ(Shown("recovery_point=started"), (S{"dead-retryable"}));
  EXPECT_EQ(Shown("older_than_s=86400"), (S{"parked"}));
  EXPECT_EQ(Shown("newer_than_s=86400&state=active"), (S{"expired", "live"}));
  EXPECT_EQ(Shown("flow=refund"), S{});
  EXPECT_EQ(Shown("account=acct&state=needs_operator&error_class=needs_operator"), (S{"parked"}));
  EXPECT_EQ(Shown("account=other"), S{});
  testing::HttpResult page = session_->Get("/keys?error_class=unclassified");
  EXPECT_NE(page.body.find("<option value=\"unclassified\" selected>"), std::string::npos) << "the form keeps it";
  EXPECT_NE(page.body.find(console::Html("/keys/batch?action=retry&error_class=unclassified")), std::string::npos)
      << page.body;
}

TEST_F(ConsoleBatchTest, AnUnknownFilterValueIsA400Problem) {
  Start();
  for (const std::string bad : {"state=bogus", "error_class=bogus", "older_than_s=abc", "newer_than_s=-1"}) {
    testing::HttpResult r = session_->Get("/keys?" + bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_EQ(r.Header("content-type"), "application/problem+json") << bad;
    const nlohmann::json problem = nlohmann::json::parse(r.body, nullptr, false);
    EXPECT_EQ(problem["type"], "https://phasekey.dev/docs/console#bad-filter") << r.body;
    EXPECT_EQ(problem["status"], 400);
    EXPECT_EQ(r.Header("x-content-type-options"), "nosniff") << "the console's headers too";
    EXPECT_EQ(session_->Get("/keys/batch?action=retry&" + bad).status, 400) << bad;
  }
  const nlohmann::json problem = nlohmann::json::parse(session_->Get("/keys?error_class=bogus").body);
  EXPECT_NE(problem["detail"].get<std::string>().find("unknown error class 'bogus'"), std::string::npos);
}

TEST_F(ConsoleBatchTest, ABatchRetryShowsItsCountAndActsOnlyWithItOnceAudited) {
  Start();
  const std::string before = States();
  testing::HttpResult confirm = session_->Get("/keys/batch?action=retry&error_class=unclassified");
  ASSERT_EQ(confirm.status, 200) << confirm.body;
  EXPECT_NE(confirm.body.find("Retry 2 matching keys"), std::string::npos) << confirm.body;
  EXPECT_NE(confirm.body.find("name=\"confirm_count\" value=\"2\""), std::string::npos) << confirm.body;
  EXPECT_NE(confirm.body.find("name=\"error_class\" value=\"unclassified\""), std::string::npos) << confirm.body;
  EXPECT_EQ(States(), before) << "showing the count changes nothing";
  EXPECT_EQ(Audit(), "");

  // A stale count: refused, nothing changed, the refusal audited.
  testing::HttpResult stale = session_->Post("/keys/batch", BatchForm("retry", "&error_class=unclassified", 3));
  EXPECT_EQ(stale.status, 409) << stale.body;
  EXPECT_NE(stale.body.find("2 keys match now, not the 3 confirmed"), std::string::npos) << stale.body;
  EXPECT_EQ(States(), before);
  EXPECT_EQ(Audit().rfind("ann|batch_retry|false|", 0), 0u) << Audit();

  testing::HttpResult done = session_->Post("/keys/batch", BatchForm("retry", "&error_class=unclassified", 2));
  ASSERT_EQ(done.status, 303) << done.body;
  EXPECT_EQ(done.Header("location"), "/keys?batch=retry&batch_done=2&error_class=unclassified");
  EXPECT_EQ(db_.Value("SELECT string_agg(idempotency_key, ',' ORDER BY idempotency_key) FROM "
                      "phasekey.idempotency_keys WHERE state = 'active' AND rearmed_at IS NOT NULL"),
            "dead-1,dead-2");
  const std::string audit = Audit();
  ASSERT_EQ(audit.find("ann|batch_retry|true|"), audit.find('\n') + 1) << "one row for the batch: " << audit;
  const nlohmann::json outcome = nlohmann::json::parse(audit.substr(audit.rfind('|') + 1));
  EXPECT_EQ(outcome["filter"], (nlohmann::json{{"error_class", "unclassified"}}));
  EXPECT_EQ(outcome["matched"], 2);
  EXPECT_NE(session_->Get(done.Header("location")).body.find("id=\"batch-done\""), std::string::npos);
}

// One batch is one transaction holding every changed key's row lock: past
// admin::kMaxBatchKeys the page says to narrow the filter and offers no
// button, and a POST of that count is refused with nothing changed.
TEST_F(ConsoleBatchTest, ABatchOfMoreKeysThanOneBatchActsOnIsRefusedAndChangesNothing) {
  testing::InsertDeadKeys(db_, "many", admin::kMaxBatchKeys + 1);
  Start();
  const std::string before = States();
  const long long n = admin::kMaxBatchKeys + 1;
  testing::HttpResult confirm = session_->Get("/keys/batch?action=retry&account=many");
  ASSERT_EQ(confirm.status, 200) << confirm.body;
  EXPECT_NE(confirm.body.find("id=\"too-many\""), std::string::npos) << confirm.body;
  EXPECT_NE(confirm.body.find("id=\"confirm\" disabled"), std::string::npos) << "no button to press";
  testing::HttpResult refused = session_->Post("/keys/batch", BatchForm("retry", "&account=many", n));
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_NE(refused.body.find("more than one batch acts on"), std::string::npos) << refused.body;
  EXPECT_EQ(States(), before);
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'dead' AND account = 'many'"),
            std::to_string(n));
}

TEST_F(ConsoleBatchTest, ABatchReleaseFreesOnlyExpiredLeases) {
  Start();
  testing::HttpResult confirm = session_->Get("/keys/batch?action=release&state=active");
  ASSERT_EQ(confirm.status, 200);
  EXPECT_NE(confirm.body.find("Release 1 matching lease"), std::string::npos) << confirm.body;
  ASSERT_EQ(session_->Post("/keys/batch", BatchForm("release", "&state=active", 1)).status, 303);
  EXPECT_EQ(db_.Value("SELECT string_agg(idempotency_key || ':' || (owner_token IS NULL), ',' ORDER BY "
                      "idempotency_key) FROM phasekey.idempotency_keys WHERE state = 'active'"),
            "expired:true,live:false");
  EXPECT_EQ(session_->Post("/keys/batch", BatchForm("release", "&state=active", 1)).status, 409)
      << "the live lease is never among them";
  EXPECT_EQ(db_.Value("SELECT owner_token IS NULL FROM phasekey.idempotency_keys WHERE idempotency_key = 'live'"), "f");
}

TEST_F(ConsoleBatchTest, AVerifiedBatchRetryWantsTheBoxTicked) {
  Start();
  EXPECT_NE(session_->Get("/keys/batch?action=retry_verified").body.find("Retry 4 matching keys (verified)"),
            std::string::npos);
  EXPECT_EQ(session_->Post("/keys/batch", BatchForm("retry_verified", "", 4)).status, 400);
  EXPECT_EQ(db_.Value("SELECT state FROM phasekey.idempotency_keys WHERE idempotency_key = 'parked'"),
            "needs_operator");
  ASSERT_EQ(session_->Post("/keys/batch", BatchForm("retry_verified", "&verified=yes", 4)).status, 303);
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.idempotency_keys WHERE state = 'active'"), "6");
}

TEST_F(ConsoleBatchTest, ReadOnlyAndMissingCsrfAreRefusedAndChangeNothing) {
  Start(/*read_only=*/true);
  const std::string before = States();
  testing::HttpResult keys = session_->Get("/keys");
  EXPECT_EQ(keys.body.find("/keys/batch"), std::string::npos) << "no batch links in read-only mode";
  EXPECT_EQ(session_->Get("/keys/batch?action=retry").status, 403);
  EXPECT_EQ(session_->Post("/keys/batch", BatchForm("retry", "", 3)).status, 403);
  server_.reset();
  Start();
  EXPECT_EQ(session_->Post("/keys/batch", "action=retry&confirm_count=3").status, 403) << "no CSRF token";
  EXPECT_EQ(session_->Get("/keys/batch?action=bogus").status, 400);
  EXPECT_EQ(States(), before);
  EXPECT_EQ(Audit(), "");
}

}  // namespace
}  // namespace phasekey
