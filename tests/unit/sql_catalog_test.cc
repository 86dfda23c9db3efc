#include "sql/sql_catalog.h"

#include <gtest/gtest.h>

#include <set>

namespace phasekey::sql {
namespace {

TEST(SqlCatalogTest, SplitsAFileIntoNamedStatements) {
  SqlFile f{"x.sql", "-- comment before\n\n-- name: First\nSELECT 1;\n\n-- name: Second\n-- doc line\nSELECT\n  2;\n"};
  std::vector<NamedQuery> out;
  std::string error;
  ASSERT_TRUE(ParseNamedQueries(f, &out, &error)) << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "First");
  EXPECT_EQ(out[0].text, "SELECT 1");
  EXPECT_EQ(out[1].name, "Second");
  EXPECT_EQ(out[1].text, "-- doc line\nSELECT\n  2");
}

TEST(SqlCatalogTest, RejectsSqlBeforeTheFirstHeader) {
  SqlFile f{"x.sql", "SELECT 1;\n-- name: A\nSELECT 2;\n"};
  std::vector<NamedQuery> out;
  std::string error;
  EXPECT_FALSE(ParseNamedQueries(f, &out, &error));
  EXPECT_NE(error.find("before the first"), std::string::npos);
}

TEST(SqlCatalogTest, RejectsDuplicateAndEmptyQueries) {
  std::vector<NamedQuery> out;
  std::string error;
  EXPECT_FALSE(ParseNamedQueries({"x.sql", "-- name: A\nSELECT 1;\n-- name: A\nSELECT 2;\n"}, &out, &error));
  out.clear();
  EXPECT_FALSE(ParseNamedQueries({"x.sql", "-- name: A\n\n-- name: B\nSELECT 2;\n"}, &out, &error));
}

TEST(SqlCatalogTest, ParsesMigrationFileNames) {
  Migration m;
  std::string error;
  ASSERT_TRUE(ParseMigration({"0007_add_things.sql", "CREATE TABLE t ()"}, &m, &error)) << error;
  EXPECT_EQ(m.version, 7);
  EXPECT_EQ(m.name, "add_things");
  EXPECT_FALSE(ParseMigration({"add_things.sql", ""}, &m, &error));
  EXPECT_FALSE(ParseMigration({"0000_zero.sql", ""}, &m, &error));
  EXPECT_FALSE(ParseMigration({"0001_x.txt", ""}, &m, &error));
}

TEST(SqlCatalogTest, EngineQueriesHaveUniqueNamesAndText) {
  std::set<std::string> names;
  ASSERT_FALSE(EngineQueries().empty());
  for (const auto& q : EngineQueries()) {
    EXPECT_TRUE(names.insert(q.name).second) << q.name;
    EXPECT_FALSE(q.text.empty()) << q.name;
  }
  EXPECT_EQ(Query(q::MigrationRecord).rfind("INSERT", 0), 0u);
}

// The generated handles (sql/generate_query_handles.py) and the catalog the
// engine parses at run time split the same files: same names, same order
// (a handle's index finds its query), same protocol.
TEST(SqlCatalogTest, TheGeneratedHandlesListTheCatalogInItsOrder) {
  const std::vector<NamedQuery>& queries = EngineQueries();
  ASSERT_EQ(q::kAll.size(), queries.size());
  for (std::size_t i = 0; i < queries.size(); ++i) {
    EXPECT_EQ(q::kAll[i].name, queries[i].name) << "at " << i;
    EXPECT_EQ(q::kAll[i].simple, queries[i].simple) << queries[i].name;
    EXPECT_EQ(&QueryAt(i, q::kAll[i].name), &queries[i]);
  }
  static_assert(decltype(q::MigrationRecord)::kParameters == 3);
  static_assert(decltype(q::DeploymentBuckets)::kParameters == 0);
}

TEST(SqlCatalogDeathTest, AHandleThatDoesNotNameItsQueryAborts) {
  EXPECT_DEATH(QueryAt(q::KeyClaim.index, "NotKeyClaim"), "does not match the embedded catalog");
  EXPECT_DEATH(QueryAt(EngineQueries().size(), "KeyClaim"), "does not match the embedded catalog");
}

TEST(SqlCatalogTest, EngineMigrationsAreNumberedFromOneWithoutGaps) {
  const auto& set = EngineMigrations();
  ASSERT_FALSE(set.migrations.empty());
  EXPECT_EQ(set.component, "phasekey");
  for (std::size_t i = 0; i < set.migrations.size(); ++i) {
    EXPECT_EQ(set.migrations[i].version, static_cast<int>(i + 1));
  }
  // The schema as it is, in one file (sql/migrations/0001_baseline.sql); the
  // migrations after it are the upgrade history.
  EXPECT_EQ(set.migrations.front().name, "baseline");
}

}  // namespace
}  // namespace phasekey::sql
