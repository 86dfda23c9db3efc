// What the client keeps on disk (issue 29): the SQLite journal and its WAL
// files are private (0600) and hold no credential header; an intent is its
// operation (method, URL, body), not its headers, so a rotated token
// resumes it under the same key; finished intents leave the journal after
// the retention.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <thread>

#include "client/scripted_server.h"
#include "phasekey/client/client.h"

namespace phasekey::client {
namespace {

using std::chrono::milliseconds;
using testing::Respond;
using testing::ScriptedAnswer;
using testing::ScriptedServer;
using testing::SeenRequest;

ClientOptions FastOptions() {
  ClientOptions o;
  o.retry.first_delay = milliseconds(10);
  o.retry.max_delay = milliseconds(50);
  o.retry.deadline = milliseconds(10000);
  o.retry.attempt_timeout = milliseconds(2000);
  return o;
}

std::string TempDir() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("phasekey-secrets-" + std::to_string(::getpid()) + "-" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 0777;
}

TEST(JournalSecretsTest, TheJournalAndItsWalFilesArePrivateAndHoldNoCredential) {
  const mode_t old_umask = ::umask(022);  // the usual one: files 0644 unless asked otherwise
  ScriptedServer server([](const SeenRequest&, int) {
    return Respond(201, R"({"ride": 1})", "Set-Cookie: session=cookie-from-the-server-555\r\n");
  });
  const std::string path = TempDir() + "/journal.db";
  ClientOptions options = FastOptions();
  options.journal = OpenSqliteJournal(path);
  options.secret_headers = {"X-Api-Key"};
  Client client(options);
  const Request request{"POST",
                        server.Url("/rides"),
                        {{"Authorization", "Bearer sekrit-token-111"},
                         {"cookie", "session=sekrit-cookie-222"},
                         {"Proxy-Authorization", "Basic sekrit-proxy-333"},
                         {"X-Api-Key", "sekrit-apikey-444"},
                         {"Content-Type", "application/json"}},
                        R"({"seats": 2})"};
  const Intent intent = client.IntentNamed("ride-1", request);
  const Answer answer = client.Send(intent);
  ASSERT_TRUE(answer.ok()) << answer.problem;
  // The credentials were sent: they are supplied at send time, not dropped.
  const SeenRequest seen = server.seen().at(0);
  EXPECT_EQ(seen.headers.at("authorization"), "Bearer sekrit-token-111");
  EXPECT_EQ(seen.headers.at("cookie"), "session=sekrit-cookie-222");
  EXPECT_EQ(seen.headers.at("proxy-authorization"), "Basic sekrit-proxy-333");
  EXPECT_EQ(seen.headers.at("x-api-key"), "sekrit-apikey-444");
  ::umask(old_umask);

  // While the journal is open its WAL files exist: all three are 0600 and
  // none holds a credential's bytes.
  for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
    ASSERT_TRUE(std::filesystem::exists(file)) << file;
    EXPECT_EQ(Mode(file), 0600u) << file << " is " << std::oct << Mode(file);
    const std::string bytes = Bytes(file);
    for (const char* secret : {"sekrit-token-111", "sekrit-cookie-222", "sekrit-proxy-333", "sekrit-apikey-444",
                               "cookie-from-the-server-555"}) {
      EXPECT_EQ(bytes.find(secret), std::string::npos) << file << " holds " << secret;
    }
  }
  // The rest of the request is journaled as it was.
  const std::optional<IntentRecord> stored = options.journal->Find("ride-1");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->request.headers, (Headers{{"Content-Type", "application/json"}}));
  EXPECT_EQ(stored->request.body, R"({"seats": 2})");
}

TEST(JournalSecretsTest, AnExistingPublicJournalIsMadePrivateWhenOpened) {
  const std::string path = TempDir() + "/journal.db";
  { std::ofstream(path).flush(); }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto journal = OpenSqliteJournal(path);
  EXPECT_EQ(Mode(path), 0600u);
}

TEST(JournalSecretsTest, CredentialsAJournalFromBeforeHeldAreRemovedWhenItIsOpened) {
  const std::string path = TempDir() + "/old.db";
  {
    // What an earlier client wrote: every header verbatim, answers too.
    auto journal = OpenSqliteJournal(path);
    IntentRecord r;
    r.name = "ride-1";
    r.key = "key-1";
    r.request = Request{"POST",
                        "http://127.0.0.1:1/rides",
                        {{"Authorization", "Bearer legacy-token-666"}, {"Content-Type", "application/json"}},
                        "{}"};
    r.created_unix_ms = 1000;
    journal->CreateOrGet(r);
    r.name = "ride-2";
    r.key = "key-2";
    r.request.headers = {{"COOKIE", "legacy-cookie-777"}};
    journal->CreateOrGet(r);
    journal->MarkDone("ride-2",
                      StoredAnswer{201, {{"Set-Cookie", "legacy-set-cookie-888"}, {"X-Id", "1"}}, "ok", false, 1});
  }
  ASSERT_NE(Bytes(path).find("legacy-token-666"), std::string::npos);  // the fault: it is in the file
  auto journal = OpenSqliteJournal(path);
  EXPECT_EQ(journal->Find("ride-1")->request.headers, (Headers{{"Content-Type", "application/json"}}));
  EXPECT_TRUE(journal->Find("ride-2")->request.headers.empty());
  EXPECT_EQ(journal->Find("ride-2")->answer->headers, (Headers{{"X-Id", "1"}}));
  EXPECT_EQ(journal->Find("ride-2")->answer->body, "ok");
  for (const std::string& file : {path, path + "-wal", path + "-shm"}) {
    const std::string bytes = Bytes(file);
    for (const char* secret : {"legacy-token-666", "legacy-cookie-777", "legacy-set-cookie-888"}) {
      EXPECT_EQ(bytes.find(secret), std::string::npos) << file << " holds " << secret;
    }
  }
}

// A payment API that charges once per key and accepts one token at a time:
// the token in force is `token`, the old one gets a final 401.
struct TokenGateway {
  std::mutex mu;
  std::string token = "Bearer tok-old";
  std::map<std::string, int> charges;  // key -> charges made under it
  bool drop_first_answer = true;

  ScriptedAnswer Handle(const SeenRequest& req) {
    std::lock_guard lock(mu);
    const auto auth = req.headers.find("authorization");
    if (auth == req.headers.end() || auth->second != token) return Respond(401, R"({"title": "bad token"})");
    const std::string key = req.headers.at("idempotency-key");
    const bool replay = charges.contains(key);
    if (!replay) charges[key] = 1;
    if (std::exchange(drop_first_answer, false)) return testing::HangUp();
    return Respond(201, R"({"charge": ")" + key + R"("})", replay ? "Idempotent-Replayed: true\r\n" : "");
  }
};

TEST(IntentIdentityTest, AResumedIntentWhoseTokenWasRotatedSendsTheSameKeyWithTheNewTokenAndChargesOnce) {
  TokenGateway gateway;
  ScriptedServer server([&](const SeenRequest& req, int) { return gateway.Handle(req); });
  const std::string path = TempDir() + "/journal.db";
  auto request = [&](const std::string& token) {
    return Request{"POST",
                   server.Url("/charges"),
                   {{"Authorization", token}, {"X-Request-Id", "req-" + token}},
                   R"({"amount": 10})"};
  };
  std::string key;
  {
    // The first run: the charge is made but its answer is lost, and the
    // process stops before a retry.
    ClientOptions options = FastOptions();
    options.journal = OpenSqliteJournal(path);
    Client first(options);
    const Intent intent = first.IntentNamed("charge-1", request("Bearer tok-old"));
    key = intent.key();
    std::stop_source stop;
    SendOptions send;
    send.stop = stop.get_token();
    send.on_attempt = [&](const AttemptReport&) { stop.request_stop(); };
    EXPECT_EQ(first.Send(intent, send).outcome, Outcome::kCancelled);
  }
  {
    std::lock_guard lock(gateway.mu);
    gateway.token = "Bearer tok-new";  // the old token is revoked
  }
  ClientOptions options = FastOptions();
  options.journal = OpenSqliteJournal(path);
  Client second(options);
  const Intent resumed = second.IntentNamed("charge-1", request("Bearer tok-new"));
  EXPECT_EQ(resumed.key(), key);
  const Answer answer = second.Send(resumed);
  EXPECT_TRUE(answer.ok()) << answer.status << " " << answer.problem;
  EXPECT_TRUE(answer.replayed);
  const std::vector<SeenRequest> seen = server.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].headers.at("idempotency-key"), key);
  EXPECT_EQ(seen[1].headers.at("authorization"), "Bearer tok-new");
  EXPECT_EQ(seen[1].headers.at("x-request-id"), "req-Bearer tok-new");
  std::lock_guard lock(gateway.mu);
  EXPECT_EQ(gateway.charges.size(), 1u);
}

TEST(IntentIdentityTest, AnUnfinishedIntentIsSentWithTheCredentialsGivenAtSendTime) {
  TokenGateway gateway;
  gateway.drop_first_answer = false;
  ScriptedServer server([&](const SeenRequest& req, int) { return gateway.Handle(req); });
  const std::string path = TempDir() + "/journal.db";
  std::string key;
  {
    ClientOptions options = FastOptions();
    options.journal = OpenSqliteJournal(path);
    Client first(options);
    key = first
              .IntentNamed(
                  "charge-1",
                  Request{"POST", server.Url("/charges"), {{"Authorization", "Bearer tok-old"}}, R"({"amount": 10})"})
              .key();
  }  // "crashed" before sending
  {
    std::lock_guard lock(gateway.mu);
    gateway.token = "Bearer tok-new";
  }
  ClientOptions options = FastOptions();
  options.journal = OpenSqliteJournal(path);
  Client second(options);
  const std::vector<Intent> unfinished = second.Unfinished();
  ASSERT_EQ(unfinished.size(), 1u);
  EXPECT_TRUE(unfinished[0].request().headers.empty());  // the journal had no token to give back
  SendOptions send;
  send.headers = {{"authorization", "Bearer tok-new"}};
  const Answer answer = second.Send(unfinished[0], send);
  EXPECT_TRUE(answer.ok()) << answer.status << " " << answer.problem;
  ASSERT_EQ(server.seen().size(), 1u);
  EXPECT_EQ(server.seen()[0].headers.at("idempotency-key"), key);
  EXPECT_EQ(server.seen()[0].headers.at("authorization"), "Bearer tok-new");
}

TEST(IntentIdentityTest, TheSameNameForAnotherMethodUrlOrBodyIsStillRefused) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201); });
  Client client(FastOptions());
  const Request first{"POST", server.Url("/charges"), {{"Authorization", "Bearer a"}}, R"({"amount": 10})"};
  client.IntentNamed("charge-1", first);
  Request other_body = first;
  other_body.body = R"({"amount": 11})";
  Request other_url = first;
  other_url.url = server.Url("/refunds");
  Request other_method = first;
  other_method.method = "PUT";
  Request key_in_body = first;
  key_in_body.key_in_body = "/ref";
  for (const Request& r : {other_body, other_url, other_method, key_in_body}) {
    EXPECT_THROW(client.IntentNamed("charge-1", r), std::invalid_argument) << r.method << " " << r.url << r.body;
  }
}

TEST(JournalRetentionTest, FinishedIntentsArePrunedAfterTheRetentionAndUnfinishedOnesStay) {
  const std::string path = TempDir() + "/journal.db";
  auto journal = OpenSqliteJournal(path, SqliteJournalOptions{milliseconds(200)});
  auto record = [](const std::string& name) {
    IntentRecord r;
    r.name = name;
    r.key = "key-" + name;
    r.request = Request{"POST", "http://127.0.0.1:1/rides", {}, "secret-response-to-forget"};
    r.created_unix_ms = 1000;
    return r;
  };
  journal->CreateOrGet(record("done-early"));
  journal->CreateOrGet(record("unfinished"));
  journal->MarkDone("done-early", StoredAnswer{201, {}, "old-answer", false, 1});
  EXPECT_TRUE(journal->Find("done-early").has_value());  // within the retention
  std::this_thread::sleep_for(milliseconds(400));
  journal->CreateOrGet(record("done-late"));
  journal->MarkDone("done-late", StoredAnswer{201, {}, "new-answer", false, 1});  // prunes
  EXPECT_FALSE(journal->Find("done-early").has_value());
  EXPECT_TRUE(journal->Find("done-late").has_value());
  EXPECT_TRUE(journal->Find("unfinished").has_value());
  // Opening the journal prunes too.
  std::this_thread::sleep_for(milliseconds(400));
  journal.reset();
  auto reopened = OpenSqliteJournal(path, SqliteJournalOptions{milliseconds(200)});
  EXPECT_FALSE(reopened->Find("done-late").has_value());
  EXPECT_EQ(reopened->ListUnfinished().size(), 1u);
}

TEST(JournalRetentionTest, TheDefaultRetentionIsSevenDays) {
  EXPECT_EQ(SqliteJournalOptions{}.retention, std::chrono::hours(24 * 7));
}

}  // namespace
}  // namespace phasekey::client
