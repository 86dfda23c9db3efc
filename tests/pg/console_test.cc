// The operator console over real HTTP on loopback against a real
// PostgreSQL: logging in, what is refused without a session or CSRF token,
// escaping of hostile keys and bodies, read-only mode, keyset pagination,
// and actions with their audit trail. (The browser drives it in
// console_browser_test.cc.)
#include "console/console_server.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <regex>
#include <set>

#include "console/web.h"
#include "phasekey/runner.h"
#include "support/child_process.h"
#include "support/console_session.h"
#include "support/ride_flow.h"
#include "support/test_database.h"

namespace phasekey {
namespace {

using testing::ConsoleSession;
using testing::HttpCall;
using testing::TestDatabase;

const std::string kToken = "console-test-token-0123456789";
const std::string kHostileKey = "<script>alert('key')</script>";
const std::string kHostileError = "</pre><img src=x onerror=alert(1)>";
const std::string kHostileBody = R"({"note": "</pre><script>alert(2)</script>"})";
const std::string kCardBody = R"({"origin_lat": 1.5, "origin_lon": 2, "target_lat": 3, "target_lon": 4, )"
                              R"("card": {"number": "4242424242424242"}, "note": "visible-note-7f3a"})";

class ConsoleTest : public ::testing::Test {
 protected:
  // One key row; `extra` are more columns and their values.
  void Insert(const std::string& account, const std::string& key, const std::string& state,
              const std::string& extra_cols = "", const std::string& extra_vals = "", const std::string& body = "{}") {
    pqxx::connection conn(db_.url());
    pqxx::work tx(conn);
    tx.exec_params0(
        "INSERT INTO phasekey.idempotency_keys (account, idempotency_key, bucket, flow, request_method,"
        " request_path, request_body, request_fingerprint, recovery_point, state" +
            extra_cols +
            ") VALUES ($1, $2, $3, 'create_ride', 'POST', '/rides', $4, decode(repeat('00', 32), 'hex'),"
            " 'ride_created', $5::phasekey.key_state" +
            extra_vals + ")",
        account, key, AccountBucket(account, 16), body, state);
    tx.commit();
  }

  void Start(bool read_only = false, int login_attempts = 10, const std::string& kek_file = "") {
    console::ConsoleOptions o;
    o.encryption.kek_file = kek_file;
    o.database_url = db_.url();
    o.port = 0;
    o.token = kToken;
    o.read_only = read_only;
    o.login_attempts = login_attempts;
    o.flows = {testing::MakeRideFlow(&gateway_, std::chrono::milliseconds(2000))};
    server_ = std::make_unique<console::ConsoleServer>(o);
    ASSERT_TRUE(server_->Start().ok());
  }

  std::string KeyTarget(const std::string& account, const std::string& key) {
    return "/key?account=" + console::UrlEncode(account) + "&key=" + console::UrlEncode(key);
  }
  std::string ActionForm(const std::string& csrf, const std::string& action, const std::string& account,
                         const std::string& key) {
    return "csrf=" + csrf + "&action=" + action + "&account=" + console::UrlEncode(account) +
           "&key=" + console::UrlEncode(key);
  }
  std::string RevealForm(const std::string& csrf, const std::string& account, const std::string& key) {
    return "csrf=" + csrf + "&account=" + console::UrlEncode(account) + "&key=" + console::UrlEncode(key);
  }
  // A file of key-encryption keys, mode 0600.
  static std::string KekFile(const std::string& lines) {
    const std::string path = ::testing::TempDir() + "console_kek_" + std::to_string(::getpid());
    std::ofstream(path, std::ios::trunc) << lines;
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::replace);
    return path;
  }
  // "open-key" of account "acct", stopped at ride_created by a runner that
  // sealed its request (kCardBody) under `kek_file`; the flow masks
  // /card/number.
  void SealOpenKey(const std::string& kek_file) {
    testing::CreateRideTables(db_.url());
    RunnerOptions o;
    o.database.url = db_.url();
    o.encryption.kek_file = kek_file;
    o.backoff_base = std::chrono::milliseconds(5);
    o.backoff_cap = std::chrono::milliseconds(20);
    auto runner = Runner::Open(o, {testing::MakeRideFlow(&gateway_, std::chrono::milliseconds(2000))});
    ASSERT_TRUE(runner.has_value()) << runner.error().ToString();
    gateway_.fail_retryable = 100;
    ASSERT_EQ((*runner)->Execute("create_ride", Request{"acct", "open-key", "POST", "/rides", kCardBody}).kind,
              Reply::Kind::kRetryLater);
    gateway_.fail_retryable = 0;
    db_.Exec(
        "INSERT INTO phasekey.flow_masks (flow, pointers) VALUES ('create_ride', '{/card/number}') "
        "ON CONFLICT (flow) DO UPDATE SET pointers = EXCLUDED.pointers");
  }
  std::string State(const std::string& key) {
    return db_.Value("SELECT state FROM phasekey.idempotency_keys WHERE idempotency_key = '" + key + "'");
  }

  TestDatabase db_;
  testing::TestGateway gateway_;
  std::unique_ptr<console::ConsoleServer> server_;
};

TEST_F(ConsoleTest, LoginSetsAStrictHttpOnlyCookieAndNothingShowsWithoutIt) {
  Start();
  testing::HttpResult anonymous = HttpCall(server_->port(), "GET", "/", {}, "");
  EXPECT_EQ(anonymous.status, 303);
  EXPECT_EQ(anonymous.Header("location"), "/login");
  EXPECT_EQ(HttpCall(server_->port(), "GET", "/keys", {}, "").status, 303);
  EXPECT_EQ(HttpCall(server_->port(), "GET", "/overview/live", {}, "").status, 303);

  ConsoleSession wrong(server_->port(), "not-the-token");
  EXPECT_FALSE(wrong.LogIn());
  EXPECT_EQ(wrong.Get("/").status, 303);

  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn());
  EXPECT_NE(s.set_cookie().find("HttpOnly"), std::string::npos) << s.set_cookie();
  EXPECT_NE(s.set_cookie().find("SameSite=Strict"), std::string::npos) << s.set_cookie();
  testing::HttpResult overview = s.Get("/");
  EXPECT_EQ(overview.status, 200);
  EXPECT_NE(overview.body.find("Needs attention"), std::string::npos);
  // The policy forbids inline script and style; the page has neither.
  const std::string csp = overview.Header("content-security-policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(std::regex_search(overview.body, std::regex("<script(?![^>]*\\bsrc=)")), false);
  EXPECT_EQ(overview.body.find(" style="), std::string::npos);
  EXPECT_EQ(overview.Header("x-content-type-options"), "nosniff");

  // Logging out ends the session on the server, not only in the browser.
  const std::string csrf = s.Csrf();
  EXPECT_EQ(s.Post("/logout", "csrf=" + csrf).status, 303);
  EXPECT_EQ(s.Get("/").status, 303);
}

TEST_F(ConsoleTest, WrongTokensFromOneAddressLockItsLoginsOutWithAProblemAndRetryAfter) {
  Start(false, 3);
  const std::vector<std::pair<std::string, std::string>> form_type = {
      {"Content-Type", "application/x-www-form-urlencoded"}};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(HttpCall(server_->port(), "POST", "/login", form_type, "name=x&token=wrong-" + std::to_string(i)).status,
              401)
        << "attempt " << i;
  }
  // The right token now: refused as well, or the limit would only slow a
  // guesser down until it guessed.
  testing::HttpResult locked =
      HttpCall(server_->port(), "POST", "/login", form_type, "name=x&token=" + console::UrlEncode(kToken));
  ASSERT_EQ(locked.status, 429) << locked.body;
  EXPECT_EQ(locked.Header("content-type"), "application/problem+json");
  EXPECT_TRUE(locked.Header("set-cookie").empty()) << "no session";
  const int retry_after = std::stoi(locked.Header("retry-after"));
  EXPECT_GE(retry_after, 1);
  EXPECT_LE(retry_after, 300) << "the window is 300 s";
  const nlohmann::json problem = nlohmann::json::parse(locked.body);
  EXPECT_EQ(problem["status"], 429);
  EXPECT_EQ(problem["type"], "https://phasekey.dev/docs/console#too-many-login-attempts");
  EXPECT_EQ(problem["title"], "Too many login attempts");
  EXPECT_NE(problem["detail"].get<std::string>().find("3 wrong tokens"), std::string::npos) << problem;
  EXPECT_NE(locked.Header("content-security-policy").find("default-src 'none'"), std::string::npos);
  EXPECT_EQ(ConsoleSession(server_->port(), kToken).LogIn(), false) << "the session-making form is refused too";
}

TEST_F(ConsoleTest, ALoginWithTheRightTokenClearsTheAddressesFailures) {
  Start(false, 3);
  const std::vector<std::pair<std::string, std::string>> form_type = {
      {"Content-Type", "application/x-www-form-urlencoded"}};
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(HttpCall(server_->port(), "POST", "/login", form_type, "name=x&token=wrong").status, 401);
    }
    ConsoleSession s(server_->port(), kToken);
    ASSERT_TRUE(s.LogIn()) << "round " << round << ": 2 failures, then the right token, each time";
  }
}

TEST_F(ConsoleTest, TenCrossOriginLoginPostsDoNotLockTheOperatorOut) {
  Start(false, 3);
  const std::vector<std::pair<std::string, std::string>> cross_origin = {
      {"Content-Type", "application/x-www-form-urlencoded"}, {"Origin", "https://attacker.example"}};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(HttpCall(server_->port(), "POST", "/login", cross_origin, "name=x&token=wrong").status, 403)
        << "post " << i << " from another site";
  }
  EXPECT_EQ(
      HttpCall(server_->port(), "POST", "/login", cross_origin, "name=x&token=" + console::UrlEncode(kToken)).status,
      403)
      << "not even the right token logs in from another site";
  ConsoleSession s(server_->port(), kToken);
  EXPECT_TRUE(s.LogIn()) << "the operator, from the console itself, is not locked out";
}

TEST_F(ConsoleTest, AnOperatorNameMustBeUtf8AndIsCutByCharacters) {
  Insert("acct", "dead-1", "dead");
  Start();
  const std::vector<std::pair<std::string, std::string>> form_type = {
      {"Content-Type", "application/x-www-form-urlencoded"}};
  EXPECT_EQ(
      HttpCall(server_->port(), "POST", "/login", form_type, "name=%FF&token=" + console::UrlEncode(kToken)).status,
      400);
  std::string long_name;
  for (int i = 0; i < 150; ++i) long_name += "\xC3\xA9";  // é, two bytes each
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn(console::UrlEncode(long_name)));
  ASSERT_EQ(s.Post("/key/action", ActionForm(s.Csrf(), "retry", "acct", "dead-1")).status, 303);
  EXPECT_EQ(State("dead-1"), "active");
  EXPECT_EQ(db_.Value("SELECT char_length(actor) || ',' || succeeded FROM phasekey.operator_audit"), "100,true")
      << "cut at 100 characters, never inside one, and audited with the action";
}

TEST_F(ConsoleTest, AnActionWhoseAuditRowCannotBeWrittenIsNotDone) {
  Insert("acct", "dead-1", "dead");
  Start();
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn("ann"));
  db_.Exec(
      "CREATE FUNCTION no_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
      "RAISE EXCEPTION 'the audit trail is full'; END $$; "
      "CREATE TRIGGER no_audit BEFORE INSERT ON phasekey.operator_audit FOR EACH ROW EXECUTE FUNCTION no_audit()");
  testing::HttpResult r = s.Post("/key/action", ActionForm(s.Csrf(), "retry", "acct", "dead-1"));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("the audit trail is full"), std::string::npos) << "the fault happened: " << r.body;
  EXPECT_EQ(State("dead-1"), "dead") << "the retry was rolled back with its audit row";
  db_.Exec("DROP TRIGGER no_audit ON phasekey.operator_audit");
  ASSERT_EQ(s.Post("/key/action", ActionForm(s.Csrf(), "retry", "acct", "dead-1")).status, 303);
  EXPECT_EQ(State("dead-1"), "active");
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.operator_audit"), "1");
}

TEST_F(ConsoleTest, ActionsWithoutSessionOrCsrfAreRefusedAndChangeNothing) {
  Insert("acct", "dead-1", "dead");
  Start();
  const std::string form_without = ActionForm("", "retry", "acct", "dead-1");
  EXPECT_EQ(HttpCall(server_->port(), "POST", "/key/action", {{"Content-Type", "application/x-www-form-urlencoded"}},
                     form_without)
                .status,
            401);
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn());
  const std::string csrf = s.Csrf();
  ASSERT_EQ(csrf.size(), 64u);
  EXPECT_EQ(s.Post("/key/action", "action=retry&account=acct&key=dead-1").status, 403);
  EXPECT_EQ(s.Post("/key/action", ActionForm(std::string(64, '0'), "retry", "acct", "dead-1")).status, 403);
  // Another session's token is no good either.
  ConsoleSession other(server_->port(), kToken);
  ASSERT_TRUE(other.LogIn());
  EXPECT_EQ(s.Post("/key/action", ActionForm(other.Csrf(), "retry", "acct", "dead-1")).status, 403);
  // A cross-origin POST carrying the right token (a forged form) is refused.
  testing::HttpResult cross = HttpCall(server_->port(), "POST", "/key/action",
                                       {{"Cookie", s.cookie()},
                                        {"Content-Type", "application/x-www-form-urlencoded"},
                                        {"Origin", "http://evil.example"}},
                                       ActionForm(csrf, "retry", "acct", "dead-1"));
  EXPECT_EQ(cross.status, 403);
  // Actions are POST only.
  EXPECT_EQ(s.Get("/key/action?" + ActionForm(csrf, "retry", "acct", "dead-1")).status, 405);
  EXPECT_EQ(State("dead-1"), "dead");
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.operator_audit"), "0");
}

TEST_F(ConsoleTest, HostileKeysErrorsAndBodiesRenderAsText) {
  Insert("<b>acct</b>", kHostileKey, "dead", ", last_error", ", '" + kHostileError + "'", kHostileBody);
  Start();
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn());
  for (const std::string& target :
       {std::string("/"), std::string("/overview/live"), std::string("/keys"), KeyTarget("<b>acct</b>", kHostileKey),
        "/key/confirm?action=retry&account=" + console::UrlEncode("<b>acct</b>") +
            "&key=" + console::UrlEncode(kHostileKey)}) {
    testing::HttpResult r = s.Get(target);
    ASSERT_EQ(r.status, 200) << target << "\n" << r.body;
    EXPECT_NE(r.body.find("&lt;script&gt;alert(&#39;key&#39;)&lt;/script&gt;"), std::string::npos) << target;
    EXPECT_EQ(r.body.find("<script>"), std::string::npos) << target;
    EXPECT_EQ(r.body.find("<b>acct"), std::string::npos) << target;
    EXPECT_EQ(r.body.find("<img"), std::string::npos) << target;
  }
  testing::HttpResult key = s.Get(KeyTarget("<b>acct</b>", kHostileKey));
  EXPECT_NE(key.body.find("&lt;/pre&gt;&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_EQ(key.body.find("alert(2)"), std::string::npos) << "bodies are shown only when revealed";
  testing::HttpResult revealed = s.Post("/key/reveal", RevealForm(s.Csrf(), "<b>acct</b>", kHostileKey));
  ASSERT_EQ(revealed.status, 200) << revealed.body;
  EXPECT_NE(revealed.body.find("&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;"), std::string::npos)
      << revealed.body;
  EXPECT_EQ(revealed.body.find("<script>"), std::string::npos);
  // The action on a hostile key works, and its audit row is escaped too.
  ASSERT_EQ(s.Post("/key/action", ActionForm(s.Csrf(), "retry", "<b>acct</b>", kHostileKey)).status, 303);
  EXPECT_EQ(State("<script>alert(''key'')</script>"), "active");
  key = s.Get(KeyTarget("<b>acct</b>", kHostileKey));
  EXPECT_NE(key.body.find("back to re-drive at ride_created"), std::string::npos);
  EXPECT_EQ(key.body.find("<script>"), std::string::npos);
}

TEST_F(ConsoleTest, ReadOnlyShowsNoActionsAndRefusesThem) {
  Insert("acct", "dead-1", "dead");
  Start(/*read_only=*/true);
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn());
  testing::HttpResult key = s.Get(KeyTarget("acct", "dead-1"));
  ASSERT_EQ(key.status, 200);
  EXPECT_EQ(key.body.find("/key/confirm"), std::string::npos);
  EXPECT_EQ(s.Get("/key/confirm?action=retry&account=acct&key=dead-1").status, 403);
  EXPECT_EQ(s.Post("/key/action", ActionForm(s.Csrf(), "retry", "acct", "dead-1")).status, 403);
  EXPECT_EQ(State("dead-1"), "dead");
  // Reading a key's bodies is privileged too.
  EXPECT_EQ(key.body.find("/key/reveal"), std::string::npos);
  testing::HttpResult reveal = s.Post("/key/reveal", RevealForm(s.Csrf(), "acct", "dead-1"));
  EXPECT_EQ(reveal.status, 403);
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.operator_audit"), "0");
}

TEST_F(ConsoleTest, TheKeyPageShowsTheTraceOfItsFirstRequest) {
  Insert("acct", "traced-1", "dead", ", trace_parent", ", '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'");
  Start();
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn("ann"));
  testing::HttpResult page = s.Get(KeyTarget("acct", "traced-1"));
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.body.find("<dt>trace_id</dt><dd>4bf92f3577b34da6a3ce929d0e0e4736</dd>"), std::string::npos)
      << page.body;
  EXPECT_NE(page.body.find("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), std::string::npos);
}

TEST_F(ConsoleTest, BodiesShowAsSummariesUntilARevealWhichIsMaskedAndAudited) {
  const std::string kek = KekFile("kek-1 " + std::string(64, 'a') + "\n");
  SealOpenKey(kek);
  Start(false, 10, kek);
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn("ann"));
  testing::HttpResult page = s.Get(KeyTarget("acct", "open-key"));
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(page.body.find("visible-note-7f3a"), std::string::npos) << page.body;
  EXPECT_EQ(page.body.find("4242424242424242"), std::string::npos);
  EXPECT_NE(page.body.find("<dt>request body</dt><dd>sealed, "), std::string::npos) << page.body;
  EXPECT_NE(page.body.find("id=\"reveal\""), std::string::npos);
  EXPECT_EQ(s.Get("/key/reveal?account=acct&key=open-key").status, 405) << "reveals are POST only";
  EXPECT_EQ(s.Post("/key/reveal", "account=acct&key=open-key").status, 403) << "no CSRF token";
  EXPECT_EQ(db_.Value("SELECT count(*) FROM phasekey.operator_audit"), "0");

  testing::HttpResult revealed = s.Post("/key/reveal", RevealForm(testing::CsrfOf(page.body), "acct", "open-key"));
  ASSERT_EQ(revealed.status, 200) << revealed.body;
  EXPECT_NE(revealed.body.find("visible-note-7f3a"), std::string::npos) << revealed.body;
  EXPECT_NE(revealed.body.find("&quot;number&quot;: &quot;***&quot;"), std::string::npos) << revealed.body;
  EXPECT_EQ(revealed.body.find("4242424242424242"), std::string::npos);
  EXPECT_EQ(db_.Value("SELECT actor || '|' || action || '|' || succeeded || '|' || outcome FROM "
                      "phasekey.operator_audit"),
            "ann|reveal|true|request, response, outcomes shown");
  EXPECT_NE(s.Get(KeyTarget("acct", "open-key")).body.find("<td>ann</td><td>reveal</td>"), std::string::npos)
      << "on the key's audit trail";
}

TEST_F(ConsoleTest, ARevealOfASealedKeyWithoutKeyEncryptionKeysIsRefusedWithAMessageAndAudited) {
  SealOpenKey(KekFile("kek-1 " + std::string(64, 'a') + "\n"));
  Start();
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn("ann"));
  testing::HttpResult r = s.Post("/key/reveal", RevealForm(s.Csrf(), "acct", "open-key"));
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("no key-encryption key was given (--kek-file or --kek-command)"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("visible-note-7f3a"), std::string::npos);
  EXPECT_EQ(db_.Value("SELECT actor || '|' || action || '|' || succeeded FROM phasekey.operator_audit"),
            "ann|reveal|false");
}

TEST_F(ConsoleTest, ARevealWhoseAuditRowCannotBeWrittenShowsNothing) {
  Insert("acct", "dead-1", "dead", "", "", kCardBody);
  Start();
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn("ann"));
  db_.Exec(
      "CREATE FUNCTION no_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
      "RAISE EXCEPTION 'the audit trail is full'; END $$; "
      "CREATE TRIGGER no_audit BEFORE INSERT ON phasekey.operator_audit FOR EACH ROW EXECUTE FUNCTION no_audit()");
  testing::HttpResult r = s.Post("/key/reveal", RevealForm(s.Csrf(), "acct", "dead-1"));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("the audit trail is full"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("visible-note-7f3a"), std::string::npos) << r.body;
  db_.Exec("DROP TRIGGER no_audit ON phasekey.operator_audit");
  r = s.Post("/key/reveal", RevealForm(s.Csrf(), "acct", "dead-1"));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("visible-note-7f3a"), std::string::npos) << "a plain row reveals without a key" << r.body;
}

TEST_F(ConsoleTest, KeysetPagesVisitEveryKeyOnceUnderAFilter) {
  std::set<std::string> dead, all;
  for (int i = 0; i < 130; ++i) {
    // Dotted accounts: the cursor holds the account after two dots.
    const std::string account = "acct." + std::to_string(i % 7), key = "k-" + std::to_string(i);
    const bool is_dead = i % 3 == 0;
    Insert(account, key, is_dead ? "dead" : "active");
    all.insert(key);
    if (is_dead) dead.insert(key);
  }
  Start();
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn());
  // `between` runs after the first page (new keys arriving meanwhile).
  auto walk = [&](std::string target, const std::function<void()>& between) {
    std::multiset<std::string> seen;
    int pages = 0;
    const std::regex key_link("class=\"key\" href=\"[^\"]*\">([^<]*)</a>");
    const std::regex next("id=\"next\" href=\"([^\"]*)\"");
    while (!target.empty() && pages < 20) {
      testing::HttpResult r = s.Get(target);
      EXPECT_EQ(r.status, 200) << r.body;
      if (++pages == 1 && between) between();
      for (auto it = std::sregex_iterator(r.body.begin(), r.body.end(), key_link); it != std::sregex_iterator(); ++it) {
        seen.insert((*it)[1]);
      }
      std::smatch m;
      target = std::regex_search(r.body, m, next) ? std::regex_replace(m[1].str(), std::regex("&amp;"), "&") : "";
    }
    return std::make_pair(seen, pages);
  };
  auto [seen_all, pages_all] = walk("/keys", nullptr);
  EXPECT_EQ(pages_all, 3);  // 50 + 50 + 30
  EXPECT_EQ(seen_all, std::multiset<std::string>(all.begin(), all.end()));
  // Keys inserted between pages shift nothing: every key present at the
  // start is shown exactly once (an OFFSET would repeat or skip some), and
  // a new one at most once.
  auto [seen_during, pages_during] = walk("/keys", [&] {
    for (int i = 0; i < 20; ++i) Insert("acct-new-" + std::to_string(i), "new-" + std::to_string(i), "active");
  });
  for (const std::string& k : all) EXPECT_EQ(seen_during.count(k), 1u) << k;
  for (const std::string& k : seen_during) EXPECT_EQ(seen_during.count(k), 1u) << k;
  EXPECT_GE(pages_during, 3);
  auto [seen_dead, pages_dead] = walk("/keys?state=dead", nullptr);
  EXPECT_EQ(pages_dead, 1);
  EXPECT_EQ(seen_dead, std::multiset<std::string>(dead.begin(), dead.end()));
  EXPECT_EQ(s.Get("/keys?after=1.x").status, 400);
  EXPECT_EQ(s.Get("/keys?after=1.2").status, 400);
  EXPECT_EQ(s.Get("/keys?state=bogus").status, 400);
}

TEST_F(ConsoleTest, RetryAndReleaseFollowTheCliRulesAndAreAudited) {
  Insert("acct", "dead-1", "dead");
  Insert("acct", "leased-1", "active", ", owner_token, locked_at, lease_expires_at",
         ", '11111111-2222-4333-8444-555555555555', now(), now() + interval '1 hour'");
  Start();
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn("ann"));
  const std::string csrf = s.Csrf();

  testing::HttpResult confirm = s.Get("/key/confirm?action=retry&account=acct&key=dead-1");
  ASSERT_EQ(confirm.status, 200);
  EXPECT_NE(confirm.body.find("Put dead-lettered key &quot;dead-1&quot;"), std::string::npos) << confirm.body;
  testing::HttpResult retried = s.Post("/key/action", ActionForm(csrf, "retry", "acct", "dead-1"));
  ASSERT_EQ(retried.status, 303);
  EXPECT_EQ(State("dead-1"), "active");
  // The same rule as `keys retry`: only a dead key goes back; a second try is
  // refused, and the refusal is audited as well.
  ASSERT_EQ(s.Post("/key/action", ActionForm(csrf, "retry", "acct", "dead-1")).status, 303);
  testing::HttpResult page = s.Get(KeyTarget("acct", "dead-1"));
  EXPECT_NE(page.body.find("<td>ann</td><td>retry</td><td>done: back to re-drive at ride_created"), std::string::npos)
      << page.body;
  EXPECT_NE(page.body.find("refused: not found: no dead-lettered key"), std::string::npos) << page.body;

  // Release is fenced on the owner the confirmation showed.
  confirm = s.Get("/key/confirm?action=release&account=acct&key=leased-1");
  EXPECT_NE(confirm.body.find("held by 11111111-2222-4333-8444-555555555555"), std::string::npos);
  ASSERT_EQ(s.Post("/key/action", ActionForm(csrf, "release", "acct", "leased-1") +
                                      "&owner_token=99999999-2222-4333-8444-555555555555")
                .status,
            303);
  EXPECT_EQ(db_.Value("SELECT owner_token IS NULL FROM phasekey.idempotency_keys WHERE idempotency_key = 'leased-1'"),
            "f");
  ASSERT_EQ(s.Post("/key/action", ActionForm(csrf, "release", "acct", "leased-1") +
                                      "&owner_token=11111111-2222-4333-8444-555555555555")
                .status,
            303);
  EXPECT_EQ(db_.Value("SELECT owner_token IS NULL FROM phasekey.idempotency_keys WHERE idempotency_key = 'leased-1'"),
            "t");
  EXPECT_EQ(db_.Value("SELECT string_agg(action || ':' || succeeded, ',' ORDER BY id) FROM phasekey.operator_audit"),
            "retry:true,retry:false,release:false,release:true");
}

TEST_F(ConsoleTest, TheKeyPageDrawsItsFlowWithTheCurrentPointHighlighted) {
  Insert("acct", "dead-1", "dead");
  Start();
  ConsoleSession s(server_->port(), kToken);
  ASSERT_TRUE(s.LogIn());
  testing::HttpResult page = s.Get(KeyTarget("acct", "dead-1"));
  ASSERT_EQ(page.status, 200);
  if (page.body.find("Graphviz `dot` is not available") != std::string::npos) {
    GTEST_SKIP() << "Graphviz dot is not installed";
  }
  ASSERT_NE(page.body.find("<svg"), std::string::npos);
  // The highlighted node: its title is the point, filled with the highlight.
  EXPECT_TRUE(std::regex_search(page.body, std::regex("<title>ride_created</title>\\s*<[a-z]+ fill=\"#ffd54f\"")))
      << page.body;
}

TEST(ConsoleCommandTest, RefusesANonLoopbackListenWithoutATokenFile) {
  const std::string log = ::testing::TempDir() + "console_refusal_" + std::to_string(::getpid()) + ".log";
  int exit_code = -1;
  {
    testing::ChildProcess child(
        {PHASEKEY_CLI_PATH, "console", "--database-url", "postgresql://x/y", "--listen", "0.0.0.0:0"}, {}, log);
    exit_code = child.Wait();
  }
  std::ifstream f(log);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::remove(log.c_str());
  EXPECT_EQ(exit_code, 2);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 1) << all;
  EXPECT_NE(all.find("refusing to listen on 0.0.0.0:0 without --token-file"), std::string::npos) << all;
}

TEST(ConsoleCommandTest, RefusesATokenFileThatGroupOrOthersCanRead) {
  const std::string dir = ::testing::TempDir() + "console_token_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string token = dir + "/console.token", log = dir + "/console.log";
  std::ofstream(token) << kToken << "\n";
  std::filesystem::permissions(token, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                                          std::filesystem::perms::group_read | std::filesystem::perms::others_read);
  int exit_code = -1;
  {
    testing::ChildProcess child({PHASEKEY_CLI_PATH, "console", "--database-url", "postgresql://x/y", "--listen",
                                 "127.0.0.1:0", "--token-file", token},
                                {}, log);
    exit_code = child.Wait();
  }
  std::ifstream f(log);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(exit_code, 2);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 1) << all;
  EXPECT_NE(all.find("is open to group or others (mode 0644): chmod 600"), std::string::npos) << all;
}

TEST(ConsoleCommandTest, PrintsAGeneratedTokenThatLogsIn) {
  TestDatabase db;
  testing::ChildProcess child({PHASEKEY_CLI_PATH, "console", "--database-url", db.url(), "--listen", "127.0.0.1:0"});
  const std::string token = child.WaitForLine("token: ", std::chrono::milliseconds(30000));
  ASSERT_EQ(token.size(), 64u) << token;
  const std::uint16_t port = child.WaitForListeningPort();
  ASSERT_NE(port, 0);
  ConsoleSession s(port, token);
  EXPECT_TRUE(s.LogIn());
  EXPECT_EQ(s.Get("/").status, 200);
  child.Signal(SIGTERM);
  EXPECT_EQ(child.Wait(), 0);
}

}  // namespace
}  // namespace phasekey
