// How named queries reach the server: the unprepared mode's parameter
// substitution, every engine query in that mode against the migrated
// schema, and the reason the mode exists, PgBouncer in transaction mode.
#include "pg/statements.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>
#include <vector>

#include "phasekey/runner.h"
#include "sql/sql_catalog.h"
#include "support/child_process.h"
#include "support/pgbouncer.h"
#include "support/prerequisites.h"
#include "support/ride_flow.h"
#include "support/test_database.h"

namespace phasekey::pg {
namespace {

using testing::TestDatabase;

TEST(SubstituteParametersTest, ReplacesEachParameterByItsLiteralWhereverItRecurs) {
  EXPECT_EQ(
      SubstituteParameters("SELECT $1, $2::int, $10 || $1", {"'a'", "'2'", "3", "4", "5", "6", "7", "8", "9", "'ten'"}),
      "SELECT 'a', '2'::int, 'ten' || 'a'");
}

TEST(SubstituteParametersTest, LeavesDollarSignsInQuotedLiteralsAndCommentsAlone) {
  EXPECT_EQ(SubstituteParameters("SELECT 'it''s $1' -- the caller's $2\n, $1", {"NULL"}),
            "SELECT 'it''s $1' -- the caller's $2\n, NULL");
}

TEST(SubstituteParametersTest, RefusesAParameterWithoutAValue) {
  EXPECT_THROW(SubstituteParameters("SELECT $2", {"'a'"}), pqxx::usage_error);
  EXPECT_THROW(SubstituteParameters("SELECT $0", {"'a'"}), pqxx::usage_error);
}

TEST(CheckOneStatementTest, AcceptsOneStatementWithATrailingSemicolonAndComments) {
  EXPECT_NO_THROW(CheckOneStatement("INSERT INTO t VALUES ($1)"));
  EXPECT_NO_THROW(CheckOneStatement("INSERT INTO t VALUES ('a;b', \"c;d\") ; -- done; really\n /* ; */ "));
  EXPECT_NO_THROW(CheckOneStatement("SELECT 'it''s; fine'"));
}

TEST(CheckOneStatementTest, RefusesASecondStatement) {
  EXPECT_THROW(CheckOneStatement("INSERT INTO t VALUES (1); COMMIT"), pqxx::usage_error);
  EXPECT_THROW(CheckOneStatement("SELECT 'a'';'; DELETE FROM t"), pqxx::usage_error);
  EXPECT_THROW(CheckOneStatement("SELECT 1 /* c */;/* c */SELECT 2"), pqxx::usage_error);
}

// True for a statement EXPLAIN accepts: its first word, past comments, is
// SELECT, WITH, INSERT, UPDATE or DELETE.
bool Explainable(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (text.compare(i, 2, "--") == 0) {
      i = text.find('\n', i);
      if (i == std::string::npos) return false;
    } else {
      break;
    }
  }
  for (const char* word : {"SELECT", "WITH", "INSERT", "UPDATE", "DELETE"}) {
    if (text.compare(i, std::strlen(word), word) == 0) return true;
  }
  return false;
}

TEST(StatementsTest, EveryEngineQueryPlansUnpreparedAgainstTheMigratedSchema) {
  TestDatabase db;
  pqxx::connection conn(db.url());
  const std::vector<std::string> nulls(20, "NULL");
  for (const auto& q : sql::EngineQueries()) {
    if (q.name.rfind("Migration", 0) == 0) continue;  // the migrator's DDL never goes through a Pool
    const std::string text = SubstituteParameters(q.text, nulls);
    if (!Explainable(text)) continue;  // SAVEPOINT and the like take no parameters
    pqxx::work tx(conn);
    EXPECT_NO_THROW(tx.exec("EXPLAIN " + text)) << q.name;
  }
}

// Every named query goes through Exec/ExecuteText, so the statement mode
// holds everywhere: no engine source outside statements.h calls libpqxx's
// exec_prepared itself.
TEST(StatementsTest, NoEngineSourceRunsAPreparedStatementAroundTheStatementMode) {
  const std::filesystem::path src = std::filesystem::path(PHASEKEY_SOURCE_DIR) / "engine";
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(src)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cc" && ext != ".h") continue;
    ++files;
    if (entry.path().filename() == "statements.h") continue;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      const std::size_t at = line.find("exec_prepared");
      if (at == std::string::npos || line.find("//") < at) continue;  // comments may name it
      ADD_FAILURE() << entry.path().string() << ":" << n << ": use pg::Exec (pg/statements.h): " << line;
    }
  }
  EXPECT_GT(files, 50) << "found too few engine sources under " << src;
}

// Runs `n` rides over `threads` threads through `url`; returns how many completed.
int RunRides(const std::string& url, bool prepared, testing::TestGateway* gateway, const std::string& prefix) {
  RunnerOptions o;
  o.database.url = url;
  o.database.pool_size = 4;
  o.database.prepared_statements = prepared;
  o.attempts_per_request = 1;
  auto runner = Runner::Open(o, {testing::MakeRideFlow(gateway, std::chrono::milliseconds(2000))});
  if (!runner) return 0;
  std::atomic<int> completed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        Reply r = (*runner)->Execute("create_ride", Request{"acct_" + std::to_string(t), prefix + std::to_string(i),
                                                            "POST", "/rides", R"({"origin_lat":1})"});
        if (r.kind == Reply::Kind::kCompleted) ++completed;
      }
    });
  }
  for (auto& th : threads) th.join();
  return completed.load();
}

// PgBouncer in transaction mode with 2 server connections behind 4 client
// connections: statements prepared on one server session are missing on the
// next (asserted first: prepared, rides fail), and unprepared every ride
// completes, each charged once.
TEST(StatementsTest, ThroughPgBouncerInTransactionModeRidesRunUnprepared) {
  TestDatabase db;
  testing::CreateRideTables(db.url());
  testing::PgBouncerOptions bouncer_options;
  bouncer_options.pool_size = 2;
  auto bouncer = testing::PgBouncer::Start(db.url(), bouncer_options);
  if (!bouncer) PHASEKEY_SKIP_OR_FAIL_IN_CI() << bouncer.error().message();

  testing::TestGateway prepared_gateway;
  const int prepared = RunRides((*bouncer)->url(), true, &prepared_gateway, "prepared-");
  ASSERT_LT(prepared, 40) << "prepared statements survived transaction pooling: nothing to prove";

  testing::TestGateway gateway;
  EXPECT_EQ(RunRides((*bouncer)->url(), false, &gateway, "unprepared-"), 40) << (*bouncer)->Log();
  EXPECT_EQ(gateway.charges(), 40);
}

// The same pooler with prepared statements left on: the runner and
// `phasekey worker` refuse to start, with one line that names the flag,
// instead of retrying "cannot connect" forever.
TEST(StatementsTest, ThroughPgBouncerInTransactionModePreparedStatementsAreRefusedAtStart) {
  TestDatabase db;
  testing::CreateRideTables(db.url());
  auto bouncer = testing::PgBouncer::Start(db.url());
  if (!bouncer) PHASEKEY_SKIP_OR_FAIL_IN_CI() << bouncer.error().message();
  RunnerOptions o;
  o.database.url = (*bouncer)->url();
  testing::TestGateway gateway;
  auto runner = Runner::Open(o, {testing::MakeRideFlow(&gateway, std::chrono::milliseconds(2000))});
  ASSERT_FALSE(runner.has_value()) << "opened through a transaction pooler with prepared statements";
  EXPECT_EQ(runner.error().code(), StatusCode::kFailedPrecondition) << runner.error().ToString();
  EXPECT_NE(runner.error().message().find("--no-prepared-statements"), std::string::npos) << runner.error().message();
  EXPECT_EQ(runner.error().message().find('\n'), std::string::npos) << runner.error().message();

  const testing::RunResult worker =
      testing::RunToEnd({PHASEKEY_CLI_PATH, "worker", "--reap", "--database-url", (*bouncer)->url()});
  EXPECT_EQ(worker.exit_code, 1) << "it must stop at start, not run (its one line is in the test log)";

  o.database.prepared_statements = false;
  EXPECT_TRUE(Runner::Open(o, {testing::MakeRideFlow(&gateway, std::chrono::milliseconds(2000))}).has_value());
}

}  // namespace
}  // namespace phasekey::pg
