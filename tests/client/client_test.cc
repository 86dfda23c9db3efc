// The client (client/src/client.cc) against a scripted loopback server: one
// key per intent on every attempt, the retry table applied, the journal
// consulted and updated, the asynchronous interface.
#include "phasekey/client/client.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/use_future.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <set>
#include <thread>

#include "client/scripted_server.h"
#include "http_exchange.h"

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

Request Post(const ScriptedServer& server, const std::string& body = R"({"x": 1})") {
  return Request{"POST", server.Url("/rides"), {{"Content-Type", "application/json"}}, body};
}

std::string TempDir() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("phasekey-client-" + std::to_string(::getpid()) + "-" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(ClientTest, EveryAttemptOfAnIntentCarriesItsOneKeyThroughEveryKindOfFailure) {
  ScriptedServer server([](const SeenRequest&, int i) -> ScriptedAnswer {
    switch (i) {
      case 0: return Respond(409, "{}", "Retry-After: 0\r\n");
      case 1: return Respond(503);
      case 2: return ScriptedAnswer{"", true, milliseconds(0)};  // hang up
      case 3: return Respond(502);
      default: return Respond(201, R"({"ride_id": 7})");
    }
  });
  Client client(FastOptions());
  const Intent intent = client.NewIntent(Post(server));
  const Answer answer = client.Send(intent);
  ASSERT_TRUE(answer.ok()) << answer.problem;
  EXPECT_EQ(answer.status, 201);
  EXPECT_EQ(answer.body, R"({"ride_id": 7})");
  EXPECT_EQ(answer.attempts, 5);
  EXPECT_EQ(answer.key, intent.key());
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 5u);
  for (const SeenRequest& r : seen) {
    EXPECT_EQ(r.headers.at("idempotency-key"), intent.key());
    EXPECT_EQ(r.body, R"({"x": 1})");
    EXPECT_EQ(r.target, "/rides");
    EXPECT_EQ(r.headers.at("content-type"), "application/json");
  }
}

TEST(ClientTest, TwoIntentsForTheSameRequestGetTwoKeys) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201); });
  Client client(FastOptions());
  const Intent a = client.NewIntent(Post(server));
  const Intent b = client.NewIntent(Post(server));
  EXPECT_NE(a.key(), b.key());
  EXPECT_LT(a.key(), b.key());  // time-ordered
}

TEST(ClientTest, AConflictWaitsForTheServersRetryAfterBeforeTheNextAttempt) {
  ScriptedServer server([](const SeenRequest&, int i) {
    return i == 0 ? Respond(409, "{}", "Retry-After: 1\r\n") : Respond(200);
  });
  Client client(FastOptions());
  const auto start = std::chrono::steady_clock::now();
  const Answer answer = client.Send(client.NewIntent(Post(server)));
  EXPECT_TRUE(answer.ok());
  EXPECT_EQ(answer.attempts, 2);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(1000));
}

TEST(ClientTest, AFinal4xxEndsTheIntentAtOnceWithTheProblemBody) {
  for (int status : {400, 401, 403, 404, 422}) {
    const std::string problem = R"({"type": "about:blank", "status": )" + std::to_string(status) + "}";
    ScriptedServer server([&](const SeenRequest&, int) {
      return Respond(status, problem, "Content-Type: application/problem+json\r\n");
    });
    Client client(FastOptions());
    const Intent intent = client.NewIntent(Post(server));
    const Answer answer = client.Send(intent);
    EXPECT_EQ(answer.outcome, Outcome::kFailed) << status;
    EXPECT_EQ(answer.status, status);
    EXPECT_EQ(answer.problem, problem);
    EXPECT_EQ(answer.attempts, 1);
    EXPECT_EQ(server.seen().size(), 1u);
    // Done: sending it again answers from the journal, sending nothing.
    const Answer again = client.Send(intent);
    EXPECT_TRUE(again.from_journal);
    EXPECT_EQ(again.status, status);
    EXPECT_EQ(server.seen().size(), 1u);
  }
}

TEST(ClientTest, TheAnswerSaysWhenTheServerReplayedIt) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201, "{}", "Idempotent-Replayed: true\r\n"); });
  Client client(FastOptions());
  const Answer answer = client.Send(client.NewIntent(Post(server)));
  EXPECT_TRUE(answer.ok());
  EXPECT_TRUE(answer.replayed);
}

TEST(ClientTest, AttemptsThatTimeOutAreRetriedWithTheSameKey) {
  ScriptedServer server([](const SeenRequest&, int i) {
    ScriptedAnswer a = Respond(200);
    if (i == 0) a.delay = milliseconds(700);
    return a;
  });
  ClientOptions options = FastOptions();
  options.retry.attempt_timeout = milliseconds(300);
  Client client(options);
  const Answer answer = client.Send(client.NewIntent(Post(server)));
  EXPECT_TRUE(answer.ok()) << answer.problem;
  EXPECT_GE(answer.attempts, 2);
  const auto seen = server.seen();
  EXPECT_EQ(seen.front().headers.at("idempotency-key"), seen.back().headers.at("idempotency-key"));
}

TEST(ClientTest, PastTheDeadlineTheIntentStaysUnfinishedAndTheNextSendResumesItsKey) {
  std::atomic<bool> healthy{false};
  ScriptedServer server([&](const SeenRequest&, int) { return healthy ? Respond(201) : Respond(503); });
  ClientOptions options = FastOptions();
  options.retry.deadline = milliseconds(300);
  Client client(options);
  const Intent intent = client.NewIntent(Post(server));
  const Answer gave_up = client.Send(intent);
  EXPECT_EQ(gave_up.outcome, Outcome::kGaveUp);
  EXPECT_GE(gave_up.attempts, 2);
  EXPECT_NE(gave_up.problem.find("HTTP 503"), std::string::npos) << gave_up.problem;
  ASSERT_EQ(client.Unfinished().size(), 1u);
  EXPECT_EQ(client.Unfinished()[0].key(), intent.key());
  healthy = true;
  const Answer answer = client.Send(client.Unfinished()[0]);
  EXPECT_TRUE(answer.ok());
  EXPECT_TRUE(client.Unfinished().empty());
  std::set<std::string> keys;
  for (const auto& r : server.seen()) keys.insert(r.headers.at("idempotency-key"));
  EXPECT_EQ(keys, std::set<std::string>{intent.key()});
}

TEST(ClientTest, ARefusedConnectionIsRetriedUntilTheDeadline) {
  std::uint16_t port;
  { ScriptedServer gone([](const SeenRequest&, int) { return Respond(200); }); port = gone.port(); }
  ClientOptions options = FastOptions();
  options.retry.deadline = milliseconds(200);
  Client client(options);
  const Answer answer =
      client.Send(client.NewIntent(Request{"POST", "http://127.0.0.1:" + std::to_string(port) + "/x", {}, ""}));
  EXPECT_EQ(answer.outcome, Outcome::kGaveUp);
  EXPECT_GE(answer.attempts, 2);
  EXPECT_NE(answer.problem.find("connecting"), std::string::npos) << answer.problem;
}

TEST(ClientTest, ANamedIntentKeepsItsKeyAcrossClientsOnOneJournalFile) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201); });
  const std::string path = TempDir() + "/journal.db";
  std::string key;
  {
    ClientOptions options = FastOptions();
    options.journal = OpenSqliteJournal(path);
    Client first(options);
    key = first.IntentNamed("ride-42", Post(server)).key();
  }  // "crashed" before sending
  ClientOptions options = FastOptions();
  options.journal = OpenSqliteJournal(path);
  Client second(options);
  const auto unfinished = second.Unfinished();
  ASSERT_EQ(unfinished.size(), 1u);
  EXPECT_EQ(unfinished[0].key(), key);
  EXPECT_EQ(second.IntentNamed("ride-42", Post(server)).key(), key);
  EXPECT_TRUE(second.Send(unfinished[0]).ok());
  EXPECT_EQ(server.seen().at(0).headers.at("idempotency-key"), key);
}

TEST(ClientTest, ANameCannotBeReusedForAnotherRequest) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201); });
  Client client(FastOptions());
  client.IntentNamed("authorize-1", Post(server, R"({"amount": 10})"));
  EXPECT_THROW(client.IntentNamed("authorize-1", Post(server, R"({"capture": 10})")), std::invalid_argument);
}

TEST(ClientTest, ARequestThatCannotBeSentIsRefusedAtCreation) {
  Client client(FastOptions());
  EXPECT_THROW(client.NewIntent(Request{"POST", "https://example.com/", {}, ""}), std::invalid_argument);
  EXPECT_THROW(client.NewIntent(Request{"", "http://127.0.0.1:1/", {}, ""}), std::invalid_argument);
  EXPECT_THROW(client.NewIntent(Request{"POST", "http://127.0.0.1:1/", {{"idempotency-key", "mine"}}, ""}),
               std::invalid_argument);
  EXPECT_THROW(client.IntentNamed("", Request{"POST", "http://127.0.0.1:1/", {}, ""}), std::invalid_argument);
}

TEST(ClientTest, StepsAreReportedInOrder) {
  ScriptedServer server([](const SeenRequest&, int i) { return i == 0 ? Respond(503) : Respond(200); });
  std::mutex mu;
  std::vector<std::string> steps;
  ClientOptions options = FastOptions();
  options.on_step = [&](std::string_view step, const Intent&) {
    std::lock_guard lock(mu);
    steps.emplace_back(step);
  };
  Client client(options);
  client.Send(client.NewIntent(Post(server)));
  EXPECT_EQ(steps, (std::vector<std::string>{"created", "attempt.sent", "attempt.sent", "answered", "done"}));
}

TEST(ClientTest, AsyncSendDeliversTheAnswerToAFutureAndToACallback) {
  ScriptedServer server([](const SeenRequest&, int i) { return i % 2 == 0 ? Respond(503) : Respond(201); });
  Client client(FastOptions());
  std::future<Answer> future = client.AsyncSend(client.NewIntent(Post(server)), boost::asio::use_future);
  EXPECT_TRUE(future.get().ok());
  std::promise<Answer> got;
  client.AsyncSend(client.NewIntent(Post(server)),
                   [&](std::exception_ptr error, Answer answer) {
                     EXPECT_FALSE(error);
                     got.set_value(std::move(answer));
                   });
  const Answer answer = got.get_future().get();
  EXPECT_TRUE(answer.ok());
  EXPECT_EQ(answer.attempts, 2);
}

TEST(ClientTest, ManyThreadsSendTheirOwnIntentsThroughOneClient) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201); });
  Client client(FastOptions());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) ok += client.Send(client.NewIntent(Post(server))).ok() ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 40);
  std::set<std::string> keys;
  for (const auto& r : server.seen()) keys.insert(r.headers.at("idempotency-key"));
  EXPECT_EQ(keys.size(), 40u);
}

TEST(HttpUrlTest, UrlsAreSplitIntoHostPortAndTarget) {
  std::string why;
  auto u = internal::ParseHttpUrl("http://127.0.0.1:8080/rides?x=1", &why);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, "8080");
  EXPECT_EQ(u->target, "/rides?x=1");
  u = internal::ParseHttpUrl("HTTP://example.com", &why);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, "80");
  EXPECT_EQ(u->target, "/");
  u = internal::ParseHttpUrl("http://[::1]:9/a", &why);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->host_header, "[::1]:9");
  for (const char* bad : {"https://x/", "http://", "http://:80/", "http://u@h/", "http://h:99999/", "http://h/#f"}) {
    EXPECT_FALSE(internal::ParseHttpUrl(bad, &why)) << bad;
  }
}

}  // namespace
}  // namespace phasekey::client
