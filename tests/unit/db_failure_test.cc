// The classifier on synthetic libpqxx exceptions; tests/pg/db_failure_test.cc
// produces each class from a real induced failure.
#include "pg/db_failure.h"

#include <gtest/gtest.h>

#include <pqxx/except>

namespace phasekey::pg {
namespace {

template <class E>
DbFailure ClassifyThrown(E e, CallStage stage = CallStage::kBeforeCommit, bool fired = false) {
  try {
    throw e;
  } catch (...) {
    return ClassifyDbException(std::current_exception(), stage, fired);
  }
}

TEST(DbFailureTest, SqlStatesFallIntoTheDocumentedKinds) {
  for (const char* s : {"40001", "40P01", "57P01", "57P02", "57P03", "53300", "55P03", "25006"}) {
    EXPECT_EQ(ClassifySqlState(s, CallStage::kBeforeCommit), DbFailureKind::kRetryable) << s;
  }
  for (const char* s : {"40003", "08007"}) {
    EXPECT_EQ(ClassifySqlState(s, CallStage::kBeforeCommit), DbFailureKind::kOutcomeUnknown) << s;
  }
  for (const char* s : {"23505", "42601", "22P02", "42P01"}) {
    EXPECT_EQ(ClassifySqlState(s, CallStage::kBeforeCommit), DbFailureKind::kTerminal) << s;
  }
  EXPECT_EQ(ClassifySqlState("08006", CallStage::kBeforeCommit), DbFailureKind::kRetryable);
  EXPECT_EQ(ClassifySqlState("08006", CallStage::kCommitting), DbFailureKind::kOutcomeUnknown);
}

TEST(DbFailureTest, PqxxClassesOutsideSqlErrorAreStillClassified) {
  EXPECT_EQ(ClassifyThrown(pqxx::serialization_failure("x")).kind, DbFailureKind::kRetryable);
  EXPECT_EQ(ClassifyThrown(pqxx::deadlock_detected("x")).kind, DbFailureKind::kRetryable);
  EXPECT_EQ(ClassifyThrown(pqxx::statement_completion_unknown("x")).kind, DbFailureKind::kOutcomeUnknown);
  EXPECT_EQ(ClassifyThrown(pqxx::in_doubt_error("x")).kind, DbFailureKind::kOutcomeUnknown);
  EXPECT_TRUE(ClassifyThrown(pqxx::in_doubt_error("x")).connection_unusable);
}

TEST(DbFailureTest, ALostConnectionIsRetryableOnlyBeforeCommit) {
  auto before = ClassifyThrown(pqxx::broken_connection("gone"), CallStage::kBeforeCommit);
  EXPECT_EQ(before.kind, DbFailureKind::kRetryable);
  EXPECT_TRUE(before.connection_unusable);
  auto during = ClassifyThrown(pqxx::broken_connection("gone"), CallStage::kCommitting);
  EXPECT_EQ(during.kind, DbFailureKind::kOutcomeUnknown);
}

TEST(DbFailureTest, ADeadlineMakesTheConnectionUnusable) {
  auto f = ClassifyThrown(pqxx::broken_connection("shut down"), CallStage::kBeforeCommit, true);
  EXPECT_TRUE(f.deadline_exceeded);
  EXPECT_TRUE(f.connection_unusable);
  EXPECT_TRUE(ToStatus(f).IsDeadlineExceeded());
  auto c = ClassifyThrown(pqxx::broken_connection("shut down"), CallStage::kCommitting, true);
  EXPECT_TRUE(ToStatus(c).IsOutcomeUnknown());
}

TEST(DbFailureTest, AReadOnlyServerIsRetryableOnAnotherConnection) {
  // What a write gets from the old primary after a failover, now a standby.
  auto f = ClassifyThrown(pqxx::sql_error("cannot execute INSERT in a read-only transaction", "INSERT", "25006"));
  EXPECT_EQ(f.kind, DbFailureKind::kRetryable);
  EXPECT_TRUE(f.connection_unusable) << "a read-only connection must not go back to the pool";
  EXPECT_TRUE(ToStatus(f).IsRetryable());
}

TEST(DbFailureTest, OtherExceptionsAreTerminal) {
  EXPECT_EQ(ClassifyThrown(std::runtime_error("boom")).kind, DbFailureKind::kTerminal);
  EXPECT_TRUE(ToStatus(ClassifyThrown(pqxx::usage_error("bad"))).IsTerminal());
}

}  // namespace
}  // namespace phasekey::pg
