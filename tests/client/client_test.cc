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
#include <stop_token>
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
  const auto dir =
      std::filesystem::temp_directory_path() / ("phasekey-client-" + std::to_string(::getpid()) + "-" +
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
      case 2: return testing::HangUp();  // hang up
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

TEST(ClientTest, TwoSendsToOneServerShareOneKeptAliveConnection) {
  ScriptedServer server([](const SeenRequest&, int) { return testing::Answer(201); });
  Client client(FastOptions());
  const Intent first = client.NewIntent(Post(server));
  const Intent second = client.NewIntent(Post(server));
  ASSERT_TRUE(client.Send(first).ok());
  ASSERT_TRUE(client.Send(second).ok());
  EXPECT_EQ(server.accepts(), 1);
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].connection, 0);
  EXPECT_EQ(seen[1].on_connection, 1);
  EXPECT_EQ(seen[0].headers.at("idempotency-key"), first.key());
  EXPECT_EQ(seen[1].headers.at("idempotency-key"), second.key());
  EXPECT_FALSE(seen[1].headers.contains("connection"));
}

TEST(ClientTest, AConnectionTheServerClosesIsNotReusedAndTheNextSendOpensAnother) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201); });
  Client client(FastOptions());
  ASSERT_TRUE(client.Send(client.NewIntent(Post(server))).ok());
  ASSERT_TRUE(client.Send(client.NewIntent(Post(server))).ok());
  EXPECT_EQ(server.accepts(), 2);
  EXPECT_EQ(server.seen().at(1).on_connection, 0);
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
  ScriptedServer server(
      [](const SeenRequest&, int i) { return i == 0 ? Respond(409, "{}", "Retry-After: 1\r\n") : Respond(200); });
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

// A phasekey server answers a key it gave up, or parked for an operator,
// with a 500 that is not stored (no Idempotent-Replayed) but final: its
// problem type says so, and the client stops at the first one. An internal
// error's 500 is retried.
TEST(ClientTest, AFinal500ByItsProblemTypeEndsTheIntentAtOnce) {
  for (const std::string slug : {"abandoned", "operation-unverified"}) {
    const std::string problem = R"({"type":"https://phasekey.dev/docs/idempotency#)" + slug + R"(","status":500})";
    ScriptedServer server([&](const SeenRequest&, int) {
      return Respond(500, problem, "Content-Type: application/problem+json; charset=utf-8\r\n");
    });
    Client client(FastOptions());
    const Answer answer = client.Send(client.NewIntent(Post(server)));
    EXPECT_EQ(answer.outcome, Outcome::kFailed) << slug;
    EXPECT_EQ(answer.attempts, 1) << slug;
    EXPECT_EQ(server.seen().size(), 1u) << slug;
  }
  ScriptedServer internal([](const SeenRequest&, int i) {
    return i == 0 ? Respond(500, R"({"type":"https://phasekey.dev/docs/idempotency#internal-error"})",
                            "Content-Type: application/problem+json\r\n")
                  : Respond(201);
  });
  Client client(FastOptions());
  const Answer answer = client.Send(client.NewIntent(Post(internal)));
  EXPECT_TRUE(answer.ok());
  EXPECT_EQ(answer.attempts, 2);
}

// The reason a client gives up is the last attempt's that ended on its
// own: here a 503, then an attempt the server never answers, cut short by
// the intent's deadline. Without the rule the problem would read "timed
// out", which hides the 503 (and, over TLS, a refused certificate).
TEST(ClientTest, AnAttemptTheDeadlineCutShortDoesNotHideTheReasonBeforeIt) {
  ScriptedServer server(
      [](const SeenRequest&, int i) { return i == 0 ? Respond(503) : testing::HangUp(milliseconds(5000)); });
  ClientOptions options = FastOptions();
  options.retry.deadline = milliseconds(500);
  options.retry.attempt_timeout = milliseconds(2000);
  Client client(options);
  const Answer gave_up = client.Send(client.NewIntent(Post(server)));
  EXPECT_EQ(gave_up.outcome, Outcome::kGaveUp);
  EXPECT_EQ(gave_up.attempts, 2);
  EXPECT_NE(gave_up.problem.find("HTTP 503"), std::string::npos) << gave_up.problem;
  EXPECT_EQ(gave_up.problem.find("timed out"), std::string::npos) << gave_up.problem;
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
  EXPECT_GE(server.seen().size(), 2u);  // every one answered 503
  // The problem names the last attempt that said something: a 503 (an
  // attempt the deadline cut short only says the deadline came).
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
  {
    ScriptedServer gone([](const SeenRequest&, int) { return Respond(200); });
    port = gone.port();
  }
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
  EXPECT_THROW(client.NewIntent(Request{"POST", "ftp://example.com/", {}, ""}), std::invalid_argument);
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
  client.AsyncSend(client.NewIntent(Post(server)), [&](std::exception_ptr error, Answer answer) {
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

// An API that takes its key from the body (KeySource::BodyField): every
// attempt carries the intent's key at the pointer, and no header.
TEST(ClientTest, AKeyInTheBodyTravelsAtItsPointerOnEveryAttemptAndNotInAHeader) {
  ScriptedServer server([](const SeenRequest&, int i) { return i < 2 ? Respond(503) : Respond(201); });
  Client client(FastOptions());
  Request request = Post(server, R"({"origin": {"lat": 1}, "seats": 2})");
  request.key_in_body = "/booking/reference";
  const Intent intent = client.NewIntent(request);
  EXPECT_EQ(intent.request().body, R"({"origin": {"lat": 1}, "seats": 2})");  // stays as given
  const Answer answer = client.Send(intent);
  ASSERT_TRUE(answer.ok()) << answer.problem;
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 3u);
  for (const SeenRequest& r : seen) {
    EXPECT_EQ(r.headers.count("idempotency-key"), 0u);
    EXPECT_EQ(r.body, R"({"booking":{"reference":")" + intent.key() + R"("},"origin":{"lat":1},"seats":2})");
  }
}

TEST(ClientTest, AKeyInTheBodyNeedsAnObjectBodyWithNothingAtItsPointer) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201); });
  Client client(FastOptions());
  for (const auto& [body, pointer] : std::vector<std::pair<std::string, std::string>>{
           {"[1]", "/ref"}, {"not json", "/ref"}, {R"({"ref": "mine"})", "/ref"}, {"{}", "ref"}}) {
    Request request = Post(server, body);
    request.key_in_body = pointer;
    EXPECT_THROW(client.NewIntent(request), std::invalid_argument) << body << " " << pointer;
  }
  EXPECT_TRUE(server.seen().empty());
}

TEST(ClientTest, AKeyInTheBodySurvivesTheJournalFile) {
  const std::string path = TempDir() + "/journal.db";
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201); });
  std::string key;
  {
    ClientOptions options = FastOptions();
    options.journal = OpenSqliteJournal(path);
    Client client(options);
    Request request = Post(server);
    request.key_in_body = "/ref";
    key = client.IntentNamed("booking-1", request).key();
  }
  ClientOptions options = FastOptions();
  options.journal = OpenSqliteJournal(path);
  Client restarted(options);
  const std::vector<Intent> unfinished = restarted.Unfinished();
  ASSERT_EQ(unfinished.size(), 1u);
  EXPECT_EQ(unfinished[0].request().key_in_body, "/ref");
  ASSERT_TRUE(restarted.Send(unfinished[0]).ok());
  ASSERT_EQ(server.seen().size(), 1u);
  EXPECT_EQ(server.seen()[0].body, R"({"ref":")" + key + R"(","x":1})");
  EXPECT_EQ(server.seen()[0].headers.count("idempotency-key"), 0u);
}

TEST(ClientTest, EveryAttemptIsReportedWithItsStatusReplayErrorAndVerdict) {
  std::uint16_t gone_port;
  {
    ScriptedServer gone([](const SeenRequest&, int) { return Respond(200); });
    gone_port = gone.port();
  }
  ScriptedServer server([](const SeenRequest&, int i) -> ScriptedAnswer {
    switch (i) {
      case 0: return Respond(409, R"({"type":"busy"})", "Retry-After: 0\r\n");
      case 1: return Respond(500, "{}");
      default: return Respond(422, R"({"type":"bad"})", "Idempotent-Replayed: true\r\n");
    }
  });
  Client client(FastOptions());
  std::vector<AttemptReport> seen;
  std::vector<std::string> bodies;
  SendOptions send;
  send.on_attempt = [&](const AttemptReport& r) {
    seen.push_back(r);
    bodies.emplace_back(r.body);
  };
  const Answer answer = client.Send(client.NewIntent(Post(server)), send);
  EXPECT_EQ(answer.outcome, Outcome::kFailed);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].attempt, 1);
  EXPECT_EQ(seen[0].status, 409);
  EXPECT_TRUE(seen[0].retry);
  EXPECT_EQ(bodies[0], R"({"type":"busy"})");
  EXPECT_EQ(seen[1].status, 500);
  EXPECT_TRUE(seen[1].retry);
  EXPECT_EQ(seen[2].attempt, 3);
  EXPECT_EQ(seen[2].status, 422);
  EXPECT_TRUE(seen[2].replayed);
  EXPECT_FALSE(seen[2].retry);

  ClientOptions options = FastOptions();
  options.retry.deadline = milliseconds(100);
  Client refused(options);
  std::vector<AttemptReport> failures;
  std::vector<std::string> errors;
  send.on_attempt = [&](const AttemptReport& r) {
    failures.push_back(r);
    errors.emplace_back(r.error);
  };
  refused.Send(refused.NewIntent(Request{"POST", "http://127.0.0.1:" + std::to_string(gone_port) + "/x", {}, ""}),
               send);
  ASSERT_FALSE(failures.empty());
  EXPECT_EQ(failures[0].transport, AttemptResult::Transport::kConnectFailed);
  EXPECT_EQ(failures[0].status, 0);
  EXPECT_TRUE(failures[0].retry);
  EXPECT_NE(errors[0].find("connecting"), std::string::npos) << errors[0];
}

// A stop ends the Send without a final answer; the intent keeps its key
// and the next Send resumes it.
TEST(ClientTest, AStopCutsABackoffShortAndLeavesTheIntentUnfinished) {
  std::atomic<bool> healthy{false};
  ScriptedServer server(
      [&](const SeenRequest&, int) { return healthy ? Respond(201) : Respond(503, "{}", "Retry-After: 3600\r\n"); });
  ClientOptions options = FastOptions();
  options.retry.deadline = std::chrono::hours(2);  // only the stop can end the first Send
  Client client(options);
  const Intent intent = client.NewIntent(Post(server));
  std::stop_source stop;
  std::atomic<int> attempts{0};
  SendOptions send;
  send.stop = stop.get_token();
  send.on_attempt = [&](const AttemptReport&) { ++attempts; };
  std::thread stopper([&] {
    while (attempts.load() == 0) std::this_thread::sleep_for(milliseconds(1));
    stop.request_stop();  // during the hour-long wait the 503 asked for
  });
  const Answer stopped = client.Send(intent, send);
  stopper.join();
  EXPECT_EQ(stopped.outcome, Outcome::kCancelled);
  EXPECT_EQ(stopped.attempts, 1);
  EXPECT_NE(stopped.problem.find("stopped after 1 attempt"), std::string::npos) << stopped.problem;
  ASSERT_EQ(client.Unfinished().size(), 1u);

  const Answer before_any = client.Send(intent, send);  // already stopped: nothing is sent
  EXPECT_EQ(before_any.outcome, Outcome::kCancelled);
  EXPECT_EQ(before_any.attempts, 0);
  EXPECT_EQ(server.seen().size(), 1u);

  healthy = true;
  const Answer answer = client.Send(intent);
  EXPECT_TRUE(answer.ok());
  EXPECT_EQ(server.seen().back().headers.at("idempotency-key"), intent.key());
}

// The caller's own attempt limit, from the callback: what the chaos demo's
// clients do ("give up after N attempts").
TEST(ClientTest, TheAttemptCallbackCanStopTheSendAfterNAttempts) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(409, "{}", "Retry-After: 0\r\n"); });
  Client client(FastOptions());
  std::stop_source stop;
  SendOptions send;
  send.stop = stop.get_token();
  send.on_attempt = [&](const AttemptReport& r) {
    if (r.attempt >= 3) stop.request_stop();
  };
  const Answer answer = client.Send(client.NewIntent(Post(server)), send);
  EXPECT_EQ(answer.outcome, Outcome::kCancelled);
  EXPECT_EQ(answer.attempts, 3);
  EXPECT_EQ(server.seen().size(), 3u);
}

TEST(ClientTest, AsyncSendTakesSendOptions) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(201); });
  Client client(FastOptions());
  std::atomic<int> reported{0};
  SendOptions send;
  send.on_attempt = [&](const AttemptReport& r) { reported += r.status; };
  std::future<Answer> f = client.AsyncSend(client.NewIntent(Post(server)), send, boost::asio::use_future);
  EXPECT_TRUE(f.get().ok());
  EXPECT_EQ(reported.load(), 201);
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
  EXPECT_FALSE(u->tls);
  u = internal::ParseHttpUrl("https://api.example.com/charges", &why);
  ASSERT_TRUE(u) << why;
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->host, "api.example.com");
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->target, "/charges");
  u = internal::ParseHttpUrl("HTTPS://[::1]:8443", &why);
  ASSERT_TRUE(u) << why;
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, "8443");
  for (const char* bad :
       {"ftp://x/", "https://", "http://", "http://:80/", "http://u@h/", "http://h:99999/", "http://h/#f"}) {
    EXPECT_FALSE(internal::ParseHttpUrl(bad, &why)) << bad;
  }
}

}  // namespace
}  // namespace phasekey::client
