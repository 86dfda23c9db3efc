// Every named query of sql/queries stays on one shard of a PostgreSQL
// distributed by bucket (docs/protocol.md): a statement on a bucketed table
// filters on the bucket in each WHERE clause that follows a bucketed table's
// name (the outer one of a batch UPDATE or DELETE included) and an INSERT
// writes the bucket, unless
// the query is listed below, with its reason, as an operator query that
// spans the buckets on purpose.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "sql/sql_catalog.h"

namespace phasekey::sql {
namespace {

// The tables distributed by bucket (key_audit_counted too), phasekey.key_rows
// and phasekey.key_rows_v2, views of the first, and phasekey.key_regeneration_pairs, a function over it whose rows
// have the bucket of their two keys (sql/migrations/0001_baseline.sql).
const std::vector<std::string> kBucketedTables = {"phasekey.idempotency_keys",
                                                  "phasekey.key_rows",
                                                  "phasekey.key_rows_v2",
                                                  "phasekey.staged_jobs",
                                                  "phasekey.inbox_events",
                                                  "phasekey.data_keys",
                                                  "phasekey.key_regeneration_pairs",
                                                  "phasekey.key_audit_counted"};

// Queries allowed to span buckets, and why.
const std::map<std::string, std::string> kAcrossBuckets = {
    {"AdminKeysList", "operator listing (phasekey keys list): the keys a filter matches in every bucket"},
    {"AdminBatchCount",
     "operator dry run (keys retry/release --all-matching): the keys a filter matches in every bucket"},
    {"AdminBatchRetry", "operator batch action (keys retry --all-matching): the keys a filter matches in every bucket"},
    {"AdminBatchRelease",
     "operator batch action (keys release --all-matching): the keys a filter matches in every bucket"},
    {"AdminStatsByFlow", "operator statistics (phasekey stats) over the whole table"},
    {"AdminStatsSummary", "operator statistics (phasekey stats) over the whole table"},
    {"AdminSuspectedRegenerations", "operator statistics (phasekey stats): recent keys of every bucket"},
    {"AdminReapPreview", "operator preview (phasekey reap --dry-run) over the whole table"},
    {"ConsoleKeysPage", "operator console: one page of keys, walking the primary key across buckets"},
    {"ConsoleAttention", "operator console: stuck, dead and parked keys of every bucket"},
    {"ConsoleSummary", "operator console: the overview's counts over the whole table"},
    {"ConsolePhaseCounts", "operator console: keys per recovery point and state over the whole table"},
    {"SealerKeks",
     "start-up check of the key-encryption keys: whether any bucket still has a data key wrapped by each"},
    {"RotateNextDataKeys",
     "operator action (phasekey keys rotate-kek): data keys of every bucket still wrapped by an older key"},
    {"RotateForgetKeks",
     "operator action (phasekey keys rotate-kek): key-encryption keys no data key of any bucket is wrapped by"},
    {"DeployGateStrandedKeys",
     "the deploy gate (phasekey flows check): active keys of the flows checked in every bucket"},
    {"ReconcileKeysSince",
     "operator check after a restore (phasekey keys reconcile): keys of every bucket that may have called since T"},
};

// The statement without comments, and without aggregate FILTER (WHERE ...)
// clauses, which select within rows already chosen.
std::string WithoutComments(const std::string& sql) {
  const std::string bare = std::regex_replace(sql, std::regex("--[^\n]*"), "");
  return std::regex_replace(bare, std::regex("FILTER\\s*\\(\\s*WHERE", std::regex::icase), "FILTER (");
}

bool TouchesBucketedTable(const std::string& sql) {
  for (const auto& t : kBucketedTables) {
    if (sql.find(t) != std::string::npos) return true;
  }
  return false;
}

// Why `sql` may leave its shard ("" when it stays on one).
std::string ShardProblem(const std::string& sql) {
  static const std::regex kWhere("\\bWHERE\\b", std::regex::icase);
  static const std::regex kBucketPredicate("\\bbucket\\s*=\\s*\\$[0-9]+");
  static const std::regex kInsert(
      "INSERT\\s+INTO\\s+phasekey\\.(idempotency_keys|staged_jobs|inbox_events|data_keys|key_audit_counted)\\s*\\(([^)]"
      "*)\\)",
      std::regex::icase);
  std::smatch insert;
  if (std::regex_search(sql, insert, kInsert)) {
    if (insert[2].str().find("bucket") == std::string::npos) return "an INSERT without the bucket column";
    return "";
  }
  std::vector<std::string> clauses;
  for (std::sregex_token_iterator it(sql.begin(), sql.end(), kWhere, -1), end; it != end; ++it) clauses.push_back(*it);
  if (clauses.size() < 2) return "no WHERE clause: the statement reads or writes every bucket";
  // A WHERE clause must name the bucket when a bucketed table is named since
  // the WHERE before it; one that filters only a CTE's rows or none (a
  // claim's gate) selects within rows already chosen.
  static const std::regex kBucketedName(
      "phasekey\\.(idempotency_keys|key_rows(_v2)?|staged_jobs|inbox_events|data_keys|key_regeneration_pairs|key_audit_"
      "counted)\\b");
  for (std::size_t i = 1; i < clauses.size(); ++i) {
    if (!std::regex_search(clauses[i - 1], kBucketedName)) continue;
    if (!std::regex_search(clauses[i], kBucketPredicate))
      return "WHERE clause " + std::to_string(i) + " has no bucket = $n";
  }
  return "";
}

TEST(SingleShardQueriesTest, EveryQueryOnABucketedTableFiltersOnItsBucketUnlessListedWithItsReason) {
  int checked = 0;
  for (const NamedQuery& q : EngineQueries()) {
    const std::string sql = WithoutComments(q.text);
    if (!TouchesBucketedTable(sql)) continue;
    if (kAcrossBuckets.count(q.name) > 0) continue;
    ++checked;
    EXPECT_EQ(ShardProblem(sql), "") << q.name << ":\n" << q.text;
  }
  EXPECT_GE(checked, 20) << "the catalog holds the engine's key, job and inbox queries";
}

TEST(SingleShardQueriesTest, EveryListedExceptionIsARealQuery) {
  for (const auto& [name, reason] : kAcrossBuckets) {
    bool found = false;
    for (const NamedQuery& q : EngineQueries()) found = found || q.name == name;
    EXPECT_TRUE(found) << name << " is listed (" << reason << ") but no longer exists";
  }
}

TEST(SingleShardQueriesTest, TheCheckCatchesABatchWhoseOuterWhereLacksTheBucket) {
  EXPECT_NE(ShardProblem("UPDATE phasekey.idempotency_keys SET state = 'dead' WHERE (bucket, account, id) IN ("
                         "SELECT bucket, account, id FROM phasekey.idempotency_keys WHERE bucket = $1 LIMIT 10)"),
            "");
  EXPECT_NE(ShardProblem("INSERT INTO phasekey.staged_jobs (job_name, job_args) VALUES ($1, $2)"), "");
  EXPECT_NE(ShardProblem("UPDATE phasekey.idempotency_keys SET state = (SELECT 'dead') WHERE id = $1"), "");
  EXPECT_EQ(ShardProblem("WITH k AS (SELECT * FROM phasekey.key_rows WHERE bucket = $3 AND account = $1), "
                         "g AS (SELECT 1 AS one WHERE NOT EXISTS (SELECT 1 FROM k)) SELECT * FROM g WHERE one = 1"),
            "");
  EXPECT_NE(ShardProblem("SELECT count(*) FROM phasekey.inbox_events"), "");
  EXPECT_EQ(ShardProblem("DELETE FROM phasekey.staged_jobs WHERE bucket = $1 AND id IN ("
                         "SELECT id FROM phasekey.staged_jobs WHERE bucket = $1 LIMIT $2)"),
            "");
}

}  // namespace
}  // namespace phasekey::sql
