// The journals (client/src/sqlite_journal.cc, memory_journal.cc): the same
// contract for both, plus the SQLite journal's durability settings and its
// survival across reopening.
#include "phasekey/client/journal.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace phasekey::client {
namespace {

std::string TempPath(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("phasekey-journal-" + std::to_string(::getpid()) + "-" +
                                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

IntentRecord Record(const std::string& name, const std::string& key, const std::string& body = "{}") {
  IntentRecord r;
  r.name = name;
  r.key = key;
  r.request = Request{"POST", "http://127.0.0.1:1/rides", {{"Authorization", "Bearer x"}}, body};
  r.created_unix_ms = 1000;
  return r;
}

class JournalContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::shared_ptr<Journal> Open() {
    if (GetParam() == "memory") return NewMemoryJournal();
    return OpenSqliteJournal(TempPath("journal.db"));
  }
};

TEST_P(JournalContractTest, CreatingUnderAnExistingNameReturnsTheExistingIntentUnchanged) {
  auto journal = Open();
  const IntentRecord first = journal->CreateOrGet(Record("ride-1", "key-a"));
  EXPECT_EQ(first.key, "key-a");
  const IntentRecord again = journal->CreateOrGet(Record("ride-1", "key-b", R"({"other": 1})"));
  EXPECT_EQ(again.key, "key-a");
  EXPECT_EQ(again.request.body, "{}");
  EXPECT_EQ(again.request.headers, (Headers{{"Authorization", "Bearer x"}}));
}

TEST_P(JournalContractTest, MarkDoneKeepsTheFirstAnswerAndTheIntentLeavesTheUnfinishedList) {
  auto journal = Open();
  journal->CreateOrGet(Record("a", "key-a"));
  journal->CreateOrGet(Record("b", "key-b"));
  ASSERT_EQ(journal->ListUnfinished().size(), 2u);
  journal->MarkDone("a", StoredAnswer{201, {{"Idempotent-Replayed", "true"}}, "ride", true, 3});
  journal->MarkDone("a", StoredAnswer{500, {}, "later", false, 1});
  const auto a = journal->Find("a");
  ASSERT_TRUE(a && a->answer);
  EXPECT_EQ(a->answer->status, 201);
  EXPECT_EQ(a->answer->body, "ride");
  EXPECT_TRUE(a->answer->replayed);
  EXPECT_EQ(a->answer->attempts, 3);
  EXPECT_EQ(a->answer->headers, (Headers{{"Idempotent-Replayed", "true"}}));
  const auto unfinished = journal->ListUnfinished();
  ASSERT_EQ(unfinished.size(), 1u);
  EXPECT_EQ(unfinished[0].name, "b");
}

TEST_P(JournalContractTest, MarkingAnUnknownIntentDoneIsAnError) {
  auto journal = Open();
  EXPECT_THROW(journal->MarkDone("nobody", StoredAnswer{}), JournalError);
  EXPECT_FALSE(journal->Find("nobody").has_value());
}

TEST_P(JournalContractTest, BodiesKeepEveryByte) {
  auto journal = Open();
  const std::string body("a\0b\xff\n", 5);
  journal->CreateOrGet(Record("bin", "key-bin", body));
  EXPECT_EQ(journal->Find("bin")->request.body, body);
}

TEST_P(JournalContractTest, ThreadsCreatingOneNameTogetherAllGetOneKey) {
  auto journal = Open();
  std::vector<std::thread> threads;
  std::vector<std::string> keys(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { keys[i] = journal->CreateOrGet(Record("same", "key-" + std::to_string(i))).key; });
  }
  for (auto& t : threads) t.join();
  for (const auto& k : keys) EXPECT_EQ(k, keys[0]);
}

INSTANTIATE_TEST_SUITE_P(BothJournals, JournalContractTest, ::testing::Values("memory", "sqlite"));

TEST(SqliteJournalTest, IntentsSurviveClosingAndReopeningTheFile) {
  const std::string path = TempPath("journal.db");
  {
    auto journal = OpenSqliteJournal(path);
    journal->CreateOrGet(Record("kept", "key-kept"));
    journal->CreateOrGet(Record("finished", "key-finished"));
    journal->MarkDone("finished", StoredAnswer{200, {}, "ok", false, 1});
  }
  auto journal = OpenSqliteJournal(path);
  const auto unfinished = journal->ListUnfinished();
  ASSERT_EQ(unfinished.size(), 1u);
  EXPECT_EQ(unfinished[0].name, "kept");
  EXPECT_EQ(unfinished[0].key, "key-kept");
  EXPECT_EQ(journal->Find("finished")->answer->body, "ok");
}

TEST(SqliteJournalTest, TheFileIsInWalModeAndAnotherConnectionSeesCommittedIntents) {
  const std::string path = TempPath("journal.db");
  auto journal = OpenSqliteJournal(path);
  journal->CreateOrGet(Record("seen", "key-seen"));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto scalar = [&](const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(stmt), SQLITE_ROW);
    std::string out(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    sqlite3_finalize(stmt);
    return out;
  };
  EXPECT_EQ(scalar("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(scalar("SELECT key FROM intents WHERE name = 'seen'"), "key-seen");
  sqlite3_close(db);
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
}

TEST_P(JournalContractTest, WhereTheKeyTravelsIsKeptWithTheRequest) {
  auto journal = Open();
  IntentRecord r = Record("booking", "k1");
  r.request.key_in_body = "/booking_reference";
  journal->CreateOrGet(r);
  EXPECT_EQ(journal->Find("booking")->request.key_in_body, "/booking_reference");
  EXPECT_EQ(journal->ListUnfinished().at(0).request, r.request);
}

// A journal file written before key_in_body existed opens, its intents keep
// their key in the header, and new ones can carry it in the body.
TEST(SqliteJournalTest, AFileFromBeforeKeysInTheBodyGetsTheColumnWhenOpened) {
  const std::string path = TempPath("old.db");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TABLE intents (name TEXT PRIMARY KEY, key TEXT NOT NULL UNIQUE, method TEXT NOT "
                           "NULL, url TEXT NOT NULL, headers TEXT NOT NULL, body BLOB NOT NULL, created_ms INTEGER "
                           "NOT NULL, done_ms INTEGER, status INTEGER, response_headers TEXT, response_body BLOB, "
                           "replayed INTEGER, attempts INTEGER);"
                           "INSERT INTO intents (name, key, method, url, headers, body, created_ms) VALUES "
                           "('old', 'k0', 'POST', 'http://127.0.0.1:1/rides', '[]', '{}', 1);",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto journal = OpenSqliteJournal(path);
  ASSERT_TRUE(journal->Find("old").has_value());
  EXPECT_EQ(journal->Find("old")->request.key_in_body, "");
  IntentRecord r = Record("new", "k1");
  r.request.key_in_body = "/ref";
  journal->CreateOrGet(r);
  journal.reset();
  EXPECT_EQ(OpenSqliteJournal(path)->Find("new")->request.key_in_body, "/ref");  // and opens again
}

TEST(SqliteJournalTest, AnUnwritablePathIsAJournalError) {
  EXPECT_THROW(OpenSqliteJournal("/nonexistent-dir/for/sure/journal.db"), JournalError);
}

}  // namespace
}  // namespace phasekey::client
