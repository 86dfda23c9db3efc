// `phasekey request` (cli/request_command.cc) as a process against a
// scripted loopback server: what it prints, its exit statuses, and an
// intent resumed by running the same command again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "client/scripted_server.h"
#include "support/child_process.h"

namespace phasekey {
namespace {

using testing::Respond;
using testing::RunResult;
using testing::RunToEnd;
using testing::ScriptedAnswer;
using testing::ScriptedServer;
using testing::SeenRequest;

RunResult Request(std::vector<std::string> args) {
  args.insert(args.begin(), {PHASEKEY_CLI_PATH, "request"});
  return RunToEnd(args);
}

std::string TempDir() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("phasekey-request-" + std::to_string(::getpid()) + "-" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

TEST(RequestCommandTest, A2xxPrintsTheBodyAndExitsZero) {
  ScriptedServer server([](const SeenRequest&, int i) { return i == 0 ? Respond(409) : Respond(201, R"({"id":1})"); });
  const RunResult r = Request({"-H", "Authorization: Bearer t", "-H", "Content-Type: application/json", "--data",
                               R"({"a":1})", "POST", server.Url("/things")});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, R"({"id":1})");
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].target, "/things");
  EXPECT_EQ(seen[0].headers.at("authorization"), "Bearer t");
  EXPECT_EQ(seen[0].headers.at("content-type"), "application/json");
  EXPECT_EQ(seen[0].body, R"({"a":1})");
  EXPECT_EQ(seen[0].headers.at("idempotency-key"), seen[1].headers.at("idempotency-key"));
}

TEST(RequestCommandTest, AFinalNon2xxPrintsTheBodyAndExitsOne) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(422, R"({"type":"key-reused"})"); });
  const RunResult r = Request({"POST", server.Url()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, R"({"type":"key-reused"})");
  EXPECT_EQ(server.seen().size(), 1u);
}

TEST(RequestCommandTest, UsageErrorsExitTwoAndSendNothing) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(200); });
  const std::string url = server.Url();
  const std::vector<std::vector<std::string>> usages = {
      {},
      {"POST"},
      {"--bogus", "POST", url},
      {"POST", url, "extra"},
      {"--intent", "x", "POST", url},
      {"--data", "a", "--data-file", "/dev/null", "POST", url},
      {"--data-file", "/nonexistent/body", "POST", url},
      {"--deadline-s", "soon", "POST", url},
      {"--deadline-s", "0", "POST", url},
      {"-H", "no colon", "POST", url},
      {"-H", "Idempotency-Key: mine", "POST", url},
      {"POST", "ftp://example.com/"},
  };
  for (const auto& args : usages) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    EXPECT_EQ(Request(args).exit_code, 2) << joined;
  }
  EXPECT_TRUE(server.seen().empty());
}

TEST(RequestCommandTest, NoFinalAnswerExitsThreeAndTheSameCommandResumesTheSameKey) {
  std::atomic<bool> healthy{false};
  ScriptedServer server([&](const SeenRequest&, int) { return healthy ? Respond(201, "booked") : Respond(503); });
  const std::string journal = TempDir() + "/journal.db";
  const std::vector<std::string> command = {"--journal", journal,  "--intent", "ride-1", "--deadline-s",
                                            "0.3",       "--data", "{}",       "POST",   server.Url("/rides")};
  EXPECT_EQ(Request(command).exit_code, 3);
  healthy = true;
  const RunResult second = Request(command);
  EXPECT_EQ(second.exit_code, 0);
  EXPECT_EQ(second.out, "booked");
  // Done: a third run prints the journal's answer and sends nothing.
  const std::size_t sent = server.seen().size();
  const RunResult third = Request(command);
  EXPECT_EQ(third.exit_code, 0);
  EXPECT_EQ(third.out, "booked");
  EXPECT_EQ(server.seen().size(), sent);
  std::set<std::string> keys;
  for (const auto& r : server.seen()) keys.insert(r.headers.at("idempotency-key"));
  EXPECT_EQ(keys.size(), 1u);
}

TEST(RequestCommandTest, ARerunWithARotatedTokenResumesTheSameKeyWithTheNewTokenAndTheJournalHoldsNoToken) {
  // The API charges once per key and answers 503 (the charge ran, its
  // answer did not arrive) until the token is rotated; then the old token
  // is revoked (a final 401).
  std::mutex mu;
  std::set<std::string> charged;
  std::string token = "Bearer tok-old-7f3a";
  ScriptedServer server([&](const SeenRequest& req, int) {
    std::lock_guard lock(mu);
    if (req.headers.at("authorization") != token) return Respond(401, "revoked");
    charged.insert(req.headers.at("idempotency-key"));
    return token == "Bearer tok-old-7f3a" ? Respond(503) : Respond(201, "charged");
  });
  const std::string journal = TempDir() + "/journal.db";
  auto command = [&](const std::string& auth) {
    return std::vector<std::string>{"--journal",    journal, "--intent", "charge-1",
                                    "--deadline-s", "0.3",   "-H",       "Authorization: " + auth,
                                    "--data",       "{}",    "POST",     server.Url("/charges")};
  };
  EXPECT_EQ(Request(command("Bearer tok-old-7f3a")).exit_code, 3);
  {
    std::lock_guard lock(mu);
    token = "Bearer tok-new-9c1e";
  }
  const RunResult second = Request(command("Bearer tok-new-9c1e"));
  EXPECT_EQ(second.exit_code, 0);
  EXPECT_EQ(second.out, "charged");
  const auto seen = server.seen();
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.back().headers.at("authorization"), "Bearer tok-new-9c1e");
  EXPECT_EQ(seen.back().headers.at("idempotency-key"), seen.front().headers.at("idempotency-key"));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(charged.size(), 1u);
  }
  for (const std::string& file : {journal, journal + "-wal", journal + "-shm"}) {
    if (!std::filesystem::exists(file)) continue;
    EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write)
        << file;
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(bytes.find("tok-old-7f3a"), std::string::npos) << file;
    EXPECT_EQ(bytes.find("tok-new-9c1e"), std::string::npos) << file;
  }
}

TEST(RequestCommandTest, WithoutAnIntentNameEveryRunIsANewKey) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(200); });
  const std::string journal = TempDir() + "/journal.db";
  EXPECT_EQ(Request({"--journal", journal, "POST", server.Url()}).exit_code, 0);
  EXPECT_EQ(Request({"--journal", journal, "POST", server.Url()}).exit_code, 0);
  const auto seen = server.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0].headers.at("idempotency-key"), seen[1].headers.at("idempotency-key"));
}

TEST(RequestCommandTest, TheBodyCanComeFromAFile) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(200); });
  const std::string path = TempDir() + "/body.json";
  std::ofstream(path) << R"({"from": "file"})";
  EXPECT_EQ(Request({"--data-file", path, "PUT", server.Url()}).exit_code, 0);
  ASSERT_EQ(server.seen().size(), 1u);
  EXPECT_EQ(server.seen()[0].method, "PUT");
  EXPECT_EQ(server.seen()[0].body, R"({"from": "file"})");
}

TEST(RequestCommandTest, AnIntentNameCannotBeReusedForAnotherRequest) {
  ScriptedServer server([](const SeenRequest&, int) { return Respond(200); });
  const std::string journal = TempDir() + "/journal.db";
  EXPECT_EQ(Request({"--journal", journal, "--intent", "op", "--data", "1", "POST", server.Url()}).exit_code, 0);
  EXPECT_EQ(Request({"--journal", journal, "--intent", "op", "--data", "2", "POST", server.Url()}).exit_code, 2);
  EXPECT_EQ(server.seen().size(), 1u);
}

}  // namespace
}  // namespace phasekey
